"""An actor that burns CPU in every tick (short slices, so heartbeats keep
flowing): the visible load for `ctl status`'s CPU column."""

import time

from memtree.actors.base import Actor, main_for


class Spinner(Actor):
    name = "test.spinner"
    singleton = False
    tick_interval_s = 0.0

    def on_tick(self) -> None:
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            pass


if __name__ == "__main__":
    main_for(Spinner)
