"""policy.py is pure: restart intensity and backoff against an injected clock."""

from memtree.supervisor.policy import Backoff, RestartWindow


def test_more_than_max_restarts_within_the_period_is_too_many():
    w = RestartWindow(max_restarts=3, period=10.0)
    assert [w.add(t) for t in (0.0, 1.0, 2.0)] == [True, True, True]
    assert w.add(3.0) is False  # the 4th within 10 s


def test_restarts_older_than_the_period_leave_the_window():
    w = RestartWindow(max_restarts=2, period=10.0)
    assert w.add(0.0) and w.add(5.0)
    assert w.add(10.0) is True  # t=0 has left: [5, 10]
    assert w.count(10.0) == 2
    assert w.add(11.0) is False  # [5, 10, 11]


def test_reset_forgets_every_restart():
    w = RestartWindow(max_restarts=1, period=60.0)
    w.add(0.0)
    w.reset()
    assert w.add(1.0) is True and w.count(1.0) == 1


def test_backoff_doubles_up_to_the_cap_without_jitter():
    b = Backoff(initial=0.1, maximum=1.0, stable_after=10.0, jitter=0.25, rand=lambda: 0.0)
    assert [round(b.next_delay(), 3) for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_backoff_jitter_only_shortens_the_delay_by_at_most_the_jitter_fraction():
    b = Backoff(initial=1.0, maximum=1.0, stable_after=10.0, jitter=0.25, rand=lambda: 1.0)
    assert b.next_delay() == 0.75
    b = Backoff(initial=1.0, maximum=1.0, stable_after=10.0, jitter=0.25, rand=lambda: 0.5)
    assert b.next_delay() == 0.875


def test_backoff_resets_only_after_stable_after_seconds_running():
    b = Backoff(initial=0.1, maximum=5.0, stable_after=10.0, jitter=0.0)
    b.next_delay(), b.next_delay()
    assert b.on_running(running_since=100.0, now=109.9) is False
    assert round(b.next_delay(), 3) == 0.4  # not reset: still growing
    assert b.on_running(running_since=100.0, now=110.0) is True
    assert round(b.next_delay(), 3) == 0.1
    assert b.on_running(running_since=100.0, now=200.0) is True  # attempt 1 -> reset again
    assert b.on_running(running_since=100.0, now=300.0) is False  # nothing to reset
