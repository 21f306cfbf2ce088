"""A self-pipe for a loop that sleeps in poll: ``signal.set_wakeup_fd(pipe.w)``
makes a signal end the poll at once (pyzmq retries an interrupted poll until
its timeout), and ``wake()`` does the same from code. Used by the supervisor
and by every actor's loop."""

from __future__ import annotations

import os


class WakePipe:
    def __init__(self):
        self.r, self.w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def wake(self) -> None:
        try:
            os.write(self.w, b"\0")
        except OSError:
            pass  # full (a wake is pending anyway) or closed

    def drain(self) -> None:
        try:
            while os.read(self.r, 512):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.r)
        os.close(self.w)
