"""One STF test on one target: load the program, play the steps, compare the frames.

A target (target_softswitch.py, target_bmv2.py) is an object with
    load(p4_path, ports, inputs) -> ProgramInfo   ports the test names, those it sends into;
                                              raises Refused, TargetFailure
    command(text) -> (ok, reply)              one simple_switch_CLI command
    send(port, frame) ; wait()
    finish() -> (port -> [frames], notes)     stops the target, every frame it sent
    close()                                   releases everything (always called)

Outcomes, so a report can tell the target's misses from the test runner's limits:
    pass          every command accepted, every port sent exactly the expected frames
    fail          the target differs: frames, a refused runtime command, a table or action the
                  STF names that the target's program does not have, a crash
    refused       the target does not accept the program (front end or compiler), with its reason
    unsupported   the STF uses a statement this runner does not implement (the target never ran)
    error         the STF file itself is malformed, or the .p4 is missing
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from softswitch.stf import entries as E
from softswitch.stf.compare import compare_outputs
from softswitch.stf.grammar import (Add, CheckCounter, CliCommand, Packet, RemoveAll, SetDefault,
                                    StfSyntaxError, Unsupported, Wait, read_stf)

STATUSES = ("pass", "fail", "refused", "unsupported", "error")


class Refused(Exception):
    """The target does not accept the program; the message is its reason (one line)."""


class TargetFailure(Exception):
    """The target broke (could not start, died, timed out); the message says how."""


@dataclass
class Outcome:
    status: str          # one of STATUSES
    cause: str = ""      # one line, the same text for the same kind of problem (for grouping)
    detail: str = ""     # everything needed to see what happened
    seconds: float = 0.0

    def line(self) -> str:
        return self.status if not self.cause else f"{self.status}: {self.cause}"


_HANDLE_RE = re.compile(r"added with handle\s+(\d+)")
_PACKETS_RE = re.compile(r"packets\s*=\s*(\d+)|(\d+)\s+packets")
_BYTES_RE = re.compile(r"bytes\s*=\s*(\d+)|(\d+)\s+bytes")
_OPS = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
        ">": int.__gt__, ">=": int.__ge__}


def _first(regex, text):
    m = regex.search(text)
    return None if m is None else int(m.group(1) or m.group(2))


class _Play:
    """The steps of one test against one loaded target."""

    def __init__(self, target, info: E.ProgramInfo):
        self.target = target
        self.info = info
        self.ids: dict[str, int] = {}
        self.log: list[str] = []

    def cli(self, line: int, text: str) -> str:
        ok, reply = self.target.command(text)
        self.log.append(f"line {line}: {text} -> {reply.strip()[:200]}")
        if not ok:
            first = reply.strip().splitlines()[0] if reply.strip() else "(no reply)"
            raise _StepFailed(f"command refused: {text.split()[0]}",
                              f"line {line}: the target refused `{text}`: {first}")
        return reply

    def step(self, s) -> None:
        if isinstance(s, Packet):
            self.target.send(s.port, s.data)
        elif isinstance(s, Add):
            reply = self.cli(s.line, self._entry(E.add_command, s))
            if s.entry_id is not None:
                handle = _first(_HANDLE_RE, reply)
                if handle is None:
                    raise _StepFailed("no entry handle in reply", f"line {s.line}: no handle in {reply!r}")
                self.ids[s.entry_id] = handle
        elif isinstance(s, SetDefault):
            self.cli(s.line, self._entry(E.setdefault_command, s))
        elif isinstance(s, RemoveAll):
            for text in E.clear_commands(self.info):
                self.cli(s.line, text)
        elif isinstance(s, CliCommand):
            self.cli(s.line, s.text)
        elif isinstance(s, CheckCounter):
            self.check_counter(s)
        elif isinstance(s, Wait):
            self.target.wait()

    def _entry(self, build, s) -> str:
        try:
            return build(self.info, s)
        except E.EntryError as e:
            raise _StepFailed(f"entry: {_generic(str(e))}", f"line {s.line}: {e}") from None

    def check_counter(self, s: CheckCounter) -> None:
        index = s.index
        if index.startswith("$"):
            if index[1:] not in self.ids:
                raise _StepFailed("check_counter: unknown entry id",
                                  f"line {s.line}: no `add ... = {index[1:]}` before this check")
            index = str(self.ids[index[1:]])
        reply = self.cli(s.line, f"counter_read {s.counter} {index}")
        counts = {"packets": _first(_PACKETS_RE, reply), "bytes": _first(_BYTES_RE, reply)}
        kinds = [s.count_type] if s.count_type else ["packets", "bytes"]
        for kind in kinds:
            have = counts[kind]
            if have is None or not _OPS[s.op](have, s.value):
                raise _StepFailed("counter differs",
                                  f"line {s.line}: {s.counter}({s.index}) {kind} is {have}, "
                                  f"expected {s.op} {s.value}")


class _StepFailed(Exception):
    def __init__(self, cause: str, detail: str):
        super().__init__(detail)
        self.cause = cause
        self.detail = detail


def _generic(message: str) -> str:
    """The message with names and values left out, so equal problems group together."""
    message = re.sub(r"'[^']*'", "'…'", message)
    message = re.sub(r":\s.*$", "", message) if message.startswith(("no ", "table ")) else message
    return message


def refusal_cause(reason: str) -> str:
    """The refusal without its file:line prefix and program-specific names."""
    reason = reason.strip().splitlines()[0] if reason.strip() else "no reason given"
    reason = re.sub(r"^\S+:\d+(:\d+)?:\s*", "", reason)
    reason = re.sub(r"^\S+\.p4:\s*", "", reason)
    reason = re.sub(r"\S+\.p4(\(\d+\)|:\d+:\d+):\s*", "", reason)   # p4c's and cpp's file position
    reason = re.sub(r"'[^']*'", "'…'", reason)
    # names and widths of the program: equal problems of different programs group together
    reason = re.sub(r"<[0-9]+>", "<N>", reason)
    return re.sub(r"\b(action|table|function|extern function|instance|header|struct|control|parser) "
                  r"(?!(?:with|field|entry|entries|other)\b)[A-Za-z_][\w.$]*", r"\1 …", reason)


def _output_cause(problems: list[str]) -> str:
    if any("frame(s) sent" in p and "missing" in p for p in problems):
        return "frames missing"
    if any("first unexpected" in p for p in problems):
        return "unexpected frames"
    return "frame contents differ"


def run_test(stf_path, p4_path, target) -> Outcome:
    """Runs one test; never raises for a problem of the test or the target."""
    start = time.monotonic()
    outcome = _run(stf_path, p4_path, target)
    outcome.seconds = time.monotonic() - start
    return outcome


def _run(stf_path, p4_path, target) -> Outcome:
    if not os.path.exists(p4_path):
        return Outcome("error", "no .p4 beside the .stf", f"{p4_path} does not exist")
    try:
        test = read_stf(stf_path)
    except (StfSyntaxError, OSError) as e:
        return Outcome("error", "STF syntax", str(e))
    unsupported = [s for s in test.steps if isinstance(s, Unsupported)]
    if unsupported:
        u = unsupported[0]
        word = u.text.split()[0].lower()
        return Outcome("unsupported", f"STF statement '{word}'",
                       f"{stf_path}:{u.line}: {u.text}: {u.why}")
    try:
        try:
            info = target.load(str(p4_path), test.ports(), test.input_ports())
        except Refused as e:
            return Outcome("refused", refusal_cause(str(e)), str(e))
        play = _Play(target, info)
        try:
            for s in test.steps:
                play.step(s)
        except _StepFailed as e:
            target.finish()
            return Outcome("fail", e.cause, e.detail + _tail(play.log))
        sent, notes = target.finish()
        problems = compare_outputs(test.steps, test.ports(), sent)
        if problems:
            cause = _output_cause(problems)
            if notes:
                cause += f" ({notes[0]})"
            return Outcome("fail", cause, "\n".join(problems + notes) + _tail(play.log))
        return Outcome("pass")
    except TargetFailure as e:
        return Outcome("fail", f"target failure: {refusal_cause(str(e))}", str(e))
    finally:
        target.close()


def _tail(log: list[str], n: int = 5) -> str:
    return ("\ncommands (last %d):\n  " % min(n, len(log)) + "\n  ".join(log[-n:])) if log else ""
