"""Expected frames against the frames a target sent, port by port (p4c's BMv2 STF rules).

Each port's `expect` lines form a queue in file order; at the end of the test the frames that
left the port must be exactly that queue, in order. A pattern is hex digits with `*` for a
nibble that may be anything; the frame may be longer than the pattern unless it ends in `$`.
A port with an `expect PORT` line without data is not checked at all; a port the test sends
into but never expects on must stay silent.
"""
from __future__ import annotations

from softswitch.stf.grammar import Expect

MAX_LISTED_BYTES = 8


def frame_problem(pattern: str, exact_length: bool, frame: bytes) -> str | None:
    """None when the frame matches; else what differs, byte by byte."""
    got = frame.hex().upper()
    if exact_length and len(got) > len(pattern):
        return (f"{len(frame)} bytes, expected exactly {len(pattern) // 2}: "
                f"extra bytes {got[len(pattern):][:2 * MAX_LISTED_BYTES]}")
    if len(got) < len(pattern):
        return f"{len(frame)} bytes, expected at least {(len(pattern) + 1) // 2}"
    diffs = []
    for i in range(0, len(pattern), 2):
        want, have = pattern[i:i + 2], got[i:i + 2]
        if any(w != "*" and w != h for w, h in zip(want, have)):
            diffs.append(f"byte {i // 2}: expected {want}, got {have}")
    if not diffs:
        return None
    more = f" (and {len(diffs) - MAX_LISTED_BYTES} more)" if len(diffs) > MAX_LISTED_BYTES else ""
    return "; ".join(diffs[:MAX_LISTED_BYTES]) + more


def expectations(steps) -> dict[int, list[Expect] | None]:
    """port -> its expect queue, or None when the port is not checked (an `expect PORT` alone)."""
    out: dict[int, list[Expect] | None] = {}
    for s in steps:
        if isinstance(s, Expect):
            if s.pattern is None:
                out[s.port] = None
            elif out.get(s.port, []) is not None:
                out.setdefault(s.port, []).append(s)
    return out


def compare_outputs(steps, ports: set[int], sent: dict[int, list[bytes]]) -> list[str]:
    """Every difference between what the test expects and `sent` (port -> frames, in order)."""
    expected = expectations(steps)
    problems = []
    for port in sorted(ports):
        want = expected.get(port, [])
        if want is None:
            continue
        got = sent.get(port, [])
        for i, (exp, frame) in enumerate(zip(want, got)):
            problem = frame_problem(exp.pattern, exp.exact_length, frame)
            if problem:
                problems.append(f"port {port} frame {i} (expect on line {exp.line}): {problem}\n"
                                f"    expected {exp.pattern}{'$' if exp.exact_length else ''}\n"
                                f"    got      {frame.hex().upper()}")
        if len(got) < len(want):
            lines = ", ".join(str(e.line) for e in want[len(got):])
            problems.append(f"port {port}: {len(got)} frame(s) sent, {len(want)} expected "
                            f"(missing: expect on line(s) {lines})")
        elif len(got) > len(want):
            extra = got[len(want)]
            problems.append(f"port {port}: {len(got)} frame(s) sent, {len(want)} expected; first unexpected: "
                            f"{extra.hex().upper()[:64]}{'...' if len(extra) > 32 else ''}")
    return problems
