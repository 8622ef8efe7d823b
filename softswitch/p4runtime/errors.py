"""The one error type of the P4Runtime service: a gRPC status code name and a message."""
from __future__ import annotations


class P4RuntimeError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code          # a google.rpc.Code name: INVALID_ARGUMENT, NOT_FOUND, ...
        self.message = message


# softswitch TableError / StateError codes -> the gRPC code P4Runtime (and BMv2's PI server) uses
STATE_CODES = {
    "DUPLICATE_ENTRY": "ALREADY_EXISTS", "TABLE_FULL": "RESOURCE_EXHAUSTED",
    "INVALID_HANDLE": "NOT_FOUND", "EXPIRED_HANDLE": "NOT_FOUND", "BAD_MATCH_KEY": "INVALID_ARGUMENT",
    "CONST_ENTRIES": "PERMISSION_DENIED", "DEFAULT_ACTION_IS_CONST": "PERMISSION_DENIED",
    "INVALID_ACTION_NAME": "INVALID_ARGUMENT", "INVALID_INDEX": "OUT_OF_RANGE",
    "INVALID_MGID": "INVALID_ARGUMENT",
}


def from_state_error(e) -> P4RuntimeError:
    return P4RuntimeError(STATE_CODES.get(getattr(e, "code", ""), "INVALID_ARGUMENT"), getattr(e, "message", str(e)))
