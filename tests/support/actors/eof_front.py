"""A stand-in for the MCP front: heartbeats, and exits when stdin reaches EOF."""

import os

import zmq

from memtree.actors.base import Actor, main_for


class EofFront(Actor):
    name = "mcp"
    singleton = False

    def on_start(self) -> None:
        self.poller.register(0, zmq.POLLIN)
        self._readers[0] = self._read_stdin

    def _read_stdin(self, fd) -> None:
        if not os.read(0, 65536):
            self.stop()


if __name__ == "__main__":
    main_for(EofFront)
