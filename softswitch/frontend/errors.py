"""The one error type of the P4 front end: a message tied to a source position.

Every stage (preprocessor, parser, type checker) raises `P4Error` so callers
print one uniform `file:line:col: message` with the offending line and a caret,
the way compilers do, and never a Python traceback.
"""
from __future__ import annotations

from softswitch.frontend.p4ast import NOLOC, Loc

UNSUPPORTED = "unsupported: "


class P4Error(Exception):
    """A front-end error at `loc`. `source_line` is the text of the offending
    line when known (read lazily from the file otherwise)."""

    def __init__(self, loc: Loc | None, message: str, source_line: str | None = None):
        self.loc = loc or NOLOC
        self.message = message
        self.source_line = source_line
        super().__init__(f"{self.loc}: {message}")

    def _line_text(self) -> str | None:
        if self.source_line is not None:
            return self.source_line
        if self.loc.line <= 0:
            return None
        try:
            with open(self.loc.file, encoding="utf-8", errors="replace") as f:
                for number, text in enumerate(f, 1):
                    if number == self.loc.line:
                        return text.rstrip("\n")
        except OSError:
            return None
        return None

    def format(self) -> str:
        """`file:line:col: message`, then the source line and a caret under col."""
        head = f"{self.loc}: {self.message}" if self.loc.line else f"{self.loc.file}: {self.message}"
        text = self._line_text()
        if text is None:
            return head
        # Keep tabs so the caret lines up under the same column in a terminal.
        pad = "".join("\t" if ch == "\t" else " " for ch in text[: max(self.loc.col - 1, 0)])
        return f"{head}\n{text}\n{pad}^"


def unsupported(loc: Loc | None, what: str) -> P4Error:
    """An error for a construct the softswitch does not implement yet."""
    return P4Error(loc, UNSUPPORTED + what)
