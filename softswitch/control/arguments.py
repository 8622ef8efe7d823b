"""Parsing simple_switch_CLI arguments into numbers, and numbers back into
the byte strings its replies print.

Values are read as simple_switch_CLI reads them (bmv2 tools/runtime_CLI.py
``parse_param``): for a 32-bit field a dotted quad, for 48 bits a MAC
``aa:bb:cc:dd:ee:ff``, for 128 bits an IPv6 address, otherwise ``int(s, 0)``
(decimal, ``0x..``, ``0o..``, ``0b..``). Unlike simple_switch_CLI, a value is
checked against the field's width in bits (BMv2 only checks whole bytes) and
negative numbers are refused instead of silently becoming 0.
"""
from __future__ import annotations

import ipaddress


class ArgError(Exception):
    """A bad argument; the message says which and why."""


def parse_value(text: str, width: int) -> int:
    if width == 32 and "." in text:
        parts = text.split(".")
        if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
            raise ArgError("Invalid IPv4 address")
        return int.from_bytes(bytes(int(p) for p in parts), "big")
    if width == 48 and ":" in text:
        parts = text.split(":")
        try:
            octets = [int(p, 16) for p in parts]
        except ValueError:
            raise ArgError("Invalid MAC address") from None
        if len(parts) != 6 or any(not 0 <= o < 256 or len(p) > 2 for o, p in zip(octets, parts)):
            raise ArgError("Invalid MAC address")
        return int.from_bytes(bytes(octets), "big")
    if width == 128 and ":" in text:
        try:
            return int(ipaddress.IPv6Address(text))
        except ValueError:
            raise ArgError("Invalid IPv6 address") from None
    try:
        v = int(text, 0)
    except ValueError:
        raise ArgError("Invalid input, could not cast to integer, try in hex with 0x prefix") from None
    if v < 0:
        raise ArgError("Invalid input, negative values are not allowed (use the two's complement in hex)")
    if v >> width:
        raise ArgError(f"Parameter is too large: {v} does not fit in {width} bits (max {(1 << width) - 1})")
    return v


def parse_int(text: str, what: str) -> int:
    """A plain decimal/hex integer argument (handle, index, port...)."""
    try:
        return int(text, 0)
    except ValueError:
        raise ArgError(f"Bad format for {what}, expected integer") from None


def nbytes(width: int) -> int:
    return (width + 7) // 8


def to_bytes(value: int, width: int) -> bytes:
    return value.to_bytes(nbytes(width), "big")


def colon_hex(value: int, width: int) -> str:
    """printable_byte_str: 0a:00:00:01"""
    return ":".join(f"{b:02x}" for b in to_bytes(value, width))


def plain_hex(value: int, width: int) -> str:
    """hexstr: 0a000001"""
    return to_bytes(value, width).hex()


def parse_match_field(text: str, kind: str, width: int):
    """One match field of table_add as the state's Table expects it.
    Raises ArgError with simple_switch_CLI's wording."""
    def val(s):
        try:
            return parse_value(s, width)
        except ArgError as e:
            raise ArgError(f"Error while parsing {s} - {e}") from None

    if kind == "exact":
        return val(text)
    if kind == "lpm":
        prefix, sep, length = text.partition("/")
        if not sep:
            raise ArgError(f"Invalid LPM value {text}, use '/' to separate prefix and length")
        try:
            plen = int(length)
        except ValueError:
            raise ArgError(f"Invalid LPM value {text}, prefix length {length!r} is not an integer") from None
        if not 0 <= plen <= width:
            raise ArgError(f"Invalid LPM value {text}, prefix length must be within 0..{width}")
        return val(prefix), plen
    if kind == "ternary":
        key, sep, mask = text.partition("&&&")
        if not sep:
            raise ArgError(f"Invalid ternary value {text}, use '&&&' to separate key and mask")
        return val(key), val(mask)
    if kind == "range":
        start, sep, end = text.partition("->")
        if not sep:
            raise ArgError(f"Invalid range value {text}, use '->' to separate range start and range end")
        lo, hi = val(start), val(end)
        if lo > hi:
            raise ArgError(f"start is greater than end in expression {text}")
        return lo, hi
    if kind == "optional":
        # a value, or '*' (BMv2 also accepts the ternary form with an all-ones or zero mask)
        full = (1 << width) - 1
        if text == "*":
            return 0, 0
        if "&&&" in text:
            v, m = parse_match_field(text, "ternary", width)
            if m not in (0, full):
                raise ArgError(f"Invalid optional value {text}, mask must be 0 or all ones")
            return v, m
        return val(text), full
    raise ArgError(f"unsupported match kind {kind}")


def match_to_str(kind: str, m, width: int) -> str:
    """How table_add echoes a match field (BmMatchParam.to_str)."""
    if kind == "exact":
        return "EXACT-" + colon_hex(m, width)
    if kind == "lpm":
        return f"LPM-{colon_hex(m[0], width)}/{m[1]}"
    if kind in ("ternary", "optional"):
        return f"TERNARY-{colon_hex(m[0], width)} &&& {colon_hex(m[1], width)}"
    return f"RANGE-{colon_hex(m[0], width)} -> {colon_hex(m[1], width)}"


def match_to_dump(kind: str, m, width: int) -> str:
    """How table_dump shows a match field."""
    if kind == "exact":
        return plain_hex(m, width)
    if kind == "lpm":
        return f"{plain_hex(m[0], width)}/{m[1]}"
    if kind in ("ternary", "optional"):
        return f"{plain_hex(m[0], width)} &&& {plain_hex(m[1], width)}"
    return f"{plain_hex(m[0], width)} -> {plain_hex(m[1], width)}"


def port_map_str(ports) -> str:
    """simple_pre's port map: a bit string, port 0 rightmost."""
    if not ports:
        return ""
    bits = ["0"] * (max(ports) + 1)
    for p in ports:
        bits[p] = "1"
    return "".join(reversed(bits))


def parse_rate(text: str) -> tuple[float, int]:
    """<rate>:<burst>, rate in units per microsecond, burst in units."""
    r, sep, b = text.partition(":")
    try:
        if not sep:
            raise ValueError
        rate, burst = float(r), int(b)
    except ValueError:
        raise ArgError(f"Error while parsing rates: {text!r} is not <rate>:<burst> "
                       f"(rate in units per microsecond, burst an integer)") from None
    if rate != rate or rate < 0 or burst < 0:   # NaN or negative
        raise ArgError(f"Error while parsing rates: {text!r} has a negative or invalid number")
    return rate, burst


class CmdError(Exception):
    """A malformed command (wrong argument count or format)."""


def expect_nargs(args, n, usage):
    if len(args) != n:
        raise CmdError(f"Wrong number of args, expected {n} but got {len(args)}; usage: {usage}")


def expect_min_args(args, n, usage):
    if len(args) < n:
        raise CmdError(f"Insufficient number of args; usage: {usage}")
