"""Expected failures, each mapped to one protocol error code.

An expected error becomes an error reply (or a clear CLI/MCP message) and the
process lives; anything else is a bug: logged with its traceback, never shown.
"""

from __future__ import annotations

from memtree.protocol import ErrorCode


class MemtreeError(Exception):
    code = ErrorCode.INTERNAL

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadRequest(MemtreeError):
    code = ErrorCode.BAD_REQUEST


class NotFound(MemtreeError):
    code = ErrorCode.NOT_FOUND


class Refused(MemtreeError):
    code = ErrorCode.REFUSED


class Unavailable(MemtreeError):
    code = ErrorCode.UNAVAILABLE


class CallTimeout(MemtreeError):
    code = ErrorCode.TIMEOUT


class ConfigError(MemtreeError):
    code = ErrorCode.BAD_REQUEST


def from_code(code: str, message: str) -> MemtreeError:
    for cls in (BadRequest, NotFound, Refused, Unavailable, CallTimeout):
        if cls.code == code:
            return cls(message)
    return MemtreeError(message)
