"""A regex compiled on first use.

Most texts trip few of the gate's rules, and compiling every rule up front is
most of the gate's import time (the hook imports it on its spool path).
"""

from __future__ import annotations

import re


class Lazy:
    """``re.compile(source, flags)``, done the first time ``rx()`` is asked for."""

    __slots__ = ("source", "flags", "_rx")

    def __init__(self, source: str, flags: int = 0):
        self.source, self.flags, self._rx = source, flags, None

    def rx(self) -> re.Pattern:
        if self._rx is None:
            self._rx = re.compile(self.source, self.flags)
        return self._rx
