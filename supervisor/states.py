"""Child states: the one Enum every part of the supervisor speaks."""

import enum


class State(enum.Enum):
    STARTING = "STARTING"  # spawned, no READY yet
    STANDBY = "STANDBY"  # alive, waiting on its singleton lock
    RUNNING = "RUNNING"  # READY arrived (first "running" heartbeat)
    BACKOFF = "BACKOFF"  # crashed; restart scheduled
    EXITED = "EXITED"  # ended and not restarted by policy
    STOPPING = "STOPPING"  # SIGTERM sent, waiting for the exit
    STOPPED = "STOPPED"  # stopped on purpose (operator or shutdown)
    FATAL = "FATAL"  # restart intensity exceeded; left down until an operator starts it


ALIVE = frozenset({State.STARTING, State.STANDBY, State.RUNNING, State.STOPPING})
DOWN = frozenset({State.BACKOFF, State.EXITED, State.STOPPED, State.FATAL})
