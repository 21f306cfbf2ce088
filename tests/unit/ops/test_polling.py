"""memtree.runtime.polling.poll_until: the first truthy value, or None at the deadline."""

from memtree.runtime.polling import poll_until


def test_poll_until_returns_the_first_truthy_value_and_none_once_the_deadline_passes():
    calls = []

    def third_time():
        calls.append(1)
        return {"up": True} if len(calls) >= 3 else {}

    assert poll_until(third_time, timeout=30, interval=0.001) == {"up": True} and len(calls) == 3
    never = []
    assert poll_until(lambda: never.append(1), timeout=0.05, interval=0.01) is None
    assert len(never) >= 2  # asked again until the deadline, and once at it
