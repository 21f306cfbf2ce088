"""An actor idle itself whose child process burns CPU (as the embed walker's
compute child does during a drain): work `ctl status` must show as the actor's."""

import subprocess
import sys

from memtree.actors.base import Actor, main_for


class SpinnerParent(Actor):
    name = "test.spinchild"
    singleton = False

    def on_start(self) -> None:
        self.child = subprocess.Popen([sys.executable, "-c", "while True: pass"])

    def on_stop(self) -> None:
        self.child.kill()
        self.child.wait(5)


if __name__ == "__main__":
    main_for(SpinnerParent)
