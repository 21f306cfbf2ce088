"""An actor that crashes shortly after start, every time."""

import time

from memtree.actors.base import Actor, main_for


class Crashy(Actor):
    name = "test.crashy"
    singleton = False

    def on_start(self) -> None:
        time.sleep(0.05)
        raise RuntimeError("crashy crashes on purpose")


if __name__ == "__main__":
    main_for(Crashy)
