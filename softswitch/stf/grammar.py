"""STF text -> a list of steps (p4c's simple test framework, as its BMv2 runner reads it).

STF is line-oriented: one statement per line, `#` starts a comment, the first word names the
statement (any case). What each statement means is the runner's business (runner.py); this
module only checks the syntax and turns the words into typed steps, each with its line number.

    packet PORT HEX...                   a frame into PORT (spaces between digits ignored)
    expect PORT [HEX...[$]]              the next frame out of PORT; '*' is a don't-care nibble,
                                         a final '$' requires the exact length (else a prefix);
                                         no data: anything may leave PORT
    add TABLE [PRIO] KEY:VAL... ACTION(ARG:VAL, ...) [= ID]
    setdefault TABLE ACTION(ARG:VAL, ...)
    remove all
    check_counter NAME(INDEX|$ID) [packets|bytes OP N]
    wait
    mirroring_add ID PORT, mc_mgrp_create G, mc_node_create RID PORT..., register_read R I, ...
                                         simple_switch_CLI commands passed through unchanged

A statement the runner does not implement becomes an `Unsupported` step (it is reported as
such, never as a failure of the target); malformed text raises `StfSyntaxError`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


class StfSyntaxError(ValueError):
    """`path:line: message`, ready to print."""


@dataclass(frozen=True)
class Packet:
    line: int
    port: int
    data: bytes


@dataclass(frozen=True)
class Expect:
    line: int
    port: int
    pattern: str | None   # upper-case hex digits and '*'; None: any frames may leave the port
    exact_length: bool = False


@dataclass(frozen=True)
class Add:
    line: int
    table: str
    priority: int | None
    keys: tuple           # ((name, value), ...); value "V" or "V/LEN"
    action: str
    args: tuple           # ((name, value), ...)
    entry_id: str | None = None


@dataclass(frozen=True)
class SetDefault:
    line: int
    table: str
    action: str
    args: tuple


@dataclass(frozen=True)
class RemoveAll:
    line: int


@dataclass(frozen=True)
class CheckCounter:
    line: int
    counter: str
    index: str            # a number, or '$ID' naming an `add ... = ID` entry (direct counters)
    count_type: str | None = None   # 'packets', 'bytes', or None: both
    op: str = "=="
    value: int = 0


@dataclass(frozen=True)
class Wait:
    line: int


@dataclass(frozen=True)
class CliCommand:
    """A simple_switch_CLI command the STF passes through word for word."""
    line: int
    words: tuple

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Unsupported:
    line: int
    text: str
    why: str


@dataclass
class StfTest:
    path: str
    steps: list = field(default_factory=list)

    def ports(self) -> set[int]:
        """The ports the test talks about: the only ones a BMv2 STF run gives an interface."""
        return {s.port for s in self.steps if isinstance(s, (Packet, Expect))}

    def input_ports(self) -> set[int]:
        return {s.port for s in self.steps if isinstance(s, Packet)}


_NUMBER = r"(?:0[xX][0-9a-fA-F*]+|0[bB][01*]+|0[oO][0-7*]+|[0-9]+)"
_NUM_RE = re.compile(_NUMBER + r"$")
_NAME_RE = re.compile(r'(?:"[^"]+"|[A-Za-z_$][A-Za-z0-9_$]*(?:\[[0-9]+\])?)'
                      r'(?:\.[A-Za-z_$][A-Za-z0-9_$]*(?:\[[0-9]+\])?)*$')
_ACTION_RE = re.compile(r"(?P<head>.*?)(?P<action>[^\s(]+)\s*\((?P<args>[^)]*)\)\s*(?:=\s*(?P<id>\S+))?\s*$")
_COUNTER_RE = re.compile(r"(?P<name>[^\s(]+)\s*\(\s*(?P<index>[^)\s]+)\s*\)\s*"
                         r"(?:(?P<type>packets|bytes)\s*(?P<op>==|!=|<=|>=|<|>)\s*(?P<value>[0-9]+|0[xX][0-9a-fA-F]+))?\s*$",
                         re.IGNORECASE)
_FLOAT = r"[0-9]+(?:\.[0-9]+)?"
_RATE = _FLOAT + ":" + "[0-9]+"

# simple_switch_CLI commands STF passes through (bmv2stf's direct commands), and the shape of
# their arguments: N a number, Q a qualified name, N+ one or more numbers, R+ meter rates
_CLI = {
    "mirroring_add": "N N", "mirroring_add_mc": "N N", "mirroring_delete": "N", "mirroring_get": "N",
    "mc_mgrp_create": "N", "mc_node_create": "N N+", "mc_node_update": "N N+",
    "mc_node_associate": "N N",
    "counter_read": "Q N", "counter_write": "Q N N N",
    "register_read": "Q N", "register_write": "Q N N", "register_reset": "Q",
    "meter_get_rates": "Q N", "meter_set_rates": "Q N R+", "meter_array_set_rates": "Q R+",
}
# statements p4c's STF grammar has that this runner does not implement, and why
_KNOWN_UNSUPPORTED = {
    "no_packet": "'no_packet' has no port to check (p4c's BMv2 runner cannot run it either)",
}


def _check_arg(kind: str, word: str) -> bool:
    if kind == "N":
        return bool(_NUM_RE.match(word)) and "*" not in word
    if kind == "Q":
        return bool(_NAME_RE.match(word))
    return bool(re.fullmatch(_RATE, word))


def _check_cli(cmd: str, words: list[str]) -> str | None:
    """None if `words` fit the command's shape, else what is wrong."""
    shape = _CLI[cmd].split()
    i = 0
    for kind in shape:
        if kind.endswith("+"):
            rest = words[i:]
            if not rest or not all(_check_arg(kind[0], w) for w in rest):
                return f"{cmd} expects {_CLI[cmd]} (N number, Q name, R rate:burst)"
            return None
        if i >= len(words) or not _check_arg(kind, words[i]):
            return f"{cmd} expects {_CLI[cmd]} (N number, Q name, R rate:burst)"
        i += 1
    if i != len(words):
        return f"{cmd} takes {len(shape)} argument(s), got {len(words)}"
    return None


def _int(word: str) -> int:
    return int(word, 0) if not word.isdigit() else int(word, 10)


def _args(text: str, where: str) -> tuple:
    text = text.strip()
    if not text:
        return ()
    out = []
    for part in text.split(","):
        name, sep, value = part.strip().partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or not _NUM_RE.match(value) or "*" in value:
            raise StfSyntaxError(f"{where}: action argument {part.strip()!r} is not NAME:NUMBER")
        out.append((name, value))
    return tuple(out)


def _key(word: str, where: str) -> tuple:
    name, sep, value = word.rpartition(":")
    if not sep or not name:
        raise StfSyntaxError(f"{where}: match {word!r} is not FIELD:VALUE")
    v, slash, plen = value.partition("/")
    if not _NUM_RE.match(v) or (slash and not plen.isdigit()):
        raise StfSyntaxError(f"{where}: match value {value!r} of {name} is not a number or NUMBER/PREFIX")
    return name.strip('"'), value


def _parse_add(rest: str, line: int, where: str) -> Add:
    m = _ACTION_RE.match(rest)
    if not m:
        raise StfSyntaxError(f"{where}: add needs TABLE [PRIORITY] KEY:VALUE... ACTION(ARGS)")
    head = m["head"].split()
    if not head:
        raise StfSyntaxError(f"{where}: add needs a table name")
    table, words = head[0], head[1:]
    priority = None
    if words and words[0].isdigit():
        priority = int(words[0])
        words = words[1:]
    if not words:
        raise StfSyntaxError(f"{where}: add {table}: no KEY:VALUE match")
    keys = tuple(_key(w, where) for w in words)
    return Add(line, table, priority, keys, m["action"], _args(m["args"], where), m["id"])


def _parse_setdefault(rest: str, line: int, where: str) -> SetDefault:
    m = _ACTION_RE.match(rest)
    head = m["head"].split() if m else []
    if not m or len(head) != 1 or m["id"]:
        raise StfSyntaxError(f"{where}: setdefault needs TABLE ACTION(ARGS)")
    return SetDefault(line, head[0], m["action"], _args(m["args"], where))


def _parse_hex(words: list[str], where: str, allow_dont_care: bool) -> tuple[str, bool]:
    data = "".join(words).upper()
    exact = data.endswith("$")
    if exact:
        if not allow_dont_care:
            raise StfSyntaxError(f"{where}: '$' may only end an expect line")
        data = data[:-1]
    allowed = "0123456789ABCDEF*" if allow_dont_care else "0123456789ABCDEF"
    bad = sorted({c for c in data if c not in allowed})
    if bad:
        raise StfSyntaxError(f"{where}: packet data may only hold hex digits"
                             f"{' and *' if allow_dont_care else ''}, found {''.join(bad)!r}")
    return data, exact


def parse_statement(text: str, line: int, path: str = "<stf>"):
    """One line (comment already removed, not blank) -> a step."""
    where = f"{path}:{line}"
    words = text.split()
    cmd = words[0].lower()
    rest = text.strip()[len(words[0]):].strip()
    if cmd in ("packet", "expect"):
        if len(words) < 2 or not words[1].isdigit():
            raise StfSyntaxError(f"{where}: {cmd} needs a port number first")
        port = int(words[1])
        if cmd == "packet":
            data, _ = _parse_hex(words[2:], where, allow_dont_care=False)
            if len(data) % 2:   # no data at all is an empty frame, as p4c's runner sends it
                raise StfSyntaxError(f"{where}: packet data must be a whole number of bytes "
                                     f"(got {len(data)} hex digits)")
            return Packet(line, port, bytes.fromhex(data))
        if len(words) == 2:
            return Expect(line, port, None)
        data, exact = _parse_hex(words[2:], where, allow_dont_care=True)
        return Expect(line, port, data, exact)
    if cmd == "add":
        return _parse_add(rest, line, where)
    if cmd == "setdefault":
        return _parse_setdefault(rest, line, where)
    if cmd == "remove":
        if rest.lower() == "all":
            return RemoveAll(line)
        return Unsupported(line, text.strip(), "only 'remove all' is defined (removing one entry is not)")
    if cmd == "wait":
        if rest:
            raise StfSyntaxError(f"{where}: wait takes no arguments")
        return Wait(line)
    if cmd == "check_counter":
        m = _COUNTER_RE.match(rest)
        if not m:
            raise StfSyntaxError(f"{where}: check_counter needs NAME(INDEX) [packets|bytes OP NUMBER]")
        if m["type"]:
            return CheckCounter(line, m["name"], m["index"], m["type"].lower(), m["op"], _int(m["value"]))
        return CheckCounter(line, m["name"], m["index"])
    if cmd in _CLI:
        problem = _check_cli(cmd, words[1:])
        if problem:
            raise StfSyntaxError(f"{where}: {problem}")
        return CliCommand(line, (cmd, *words[1:]))
    if cmd in _KNOWN_UNSUPPORTED:
        return Unsupported(line, text.strip(), _KNOWN_UNSUPPORTED[cmd])
    return Unsupported(line, text.strip(), f"'{words[0]}' is not an STF statement this runner knows")


def parse_stf(text: str, path: str = "<stf>") -> StfTest:
    test = StfTest(path)
    for n, raw in enumerate(text.splitlines(), start=1):
        body = raw.split("#", 1)[0]
        if body.strip():
            test.steps.append(parse_statement(body, n, path))
    return test


def read_stf(path) -> StfTest:
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_stf(f.read(), str(path))
