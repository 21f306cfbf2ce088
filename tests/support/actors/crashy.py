"""An actor that crashes shortly after start while its flag file exists.

The flag file is ``$CRASHY_FLAG`` (inherited through the supervisor's
environment); without the variable it always crashes.
"""

import os
import time

from memtree.actors.base import Actor, main_for


class Crashy(Actor):
    name = "test.crashy"
    singleton = False

    def on_start(self) -> None:
        flag = os.environ.get("CRASHY_FLAG")
        if flag is None or os.path.exists(flag):
            time.sleep(0.05)
            raise RuntimeError("crashy crashes on purpose")


if __name__ == "__main__":
    main_for(Crashy)
