"""A do-nothing singleton actor: heartbeats, holds its lock, stops on SIGTERM
(a front that never reads stdin, or one cheap actor to watch; never a stand-in
for a built-in: a missing one is a startup error).

Its lock is named after the name the supervisor gave it, so one module can
stand in for several actors.
"""

from memtree.actors.base import Actor, main_for


class Sleepy(Actor):
    name = "test.sleepy"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.name = ctx.name  # lock file <run_dir>/<name>.lock


if __name__ == "__main__":
    main_for(Sleepy)
