"""v1model externs as BMv2 simple_switch implements them: run-time helpers and
the code generator hooks that turn extern calls into Python.

Decisions where BMv2 is not a model to copy:
- `assert`/`assume` failing: BMv2 aborts the whole switch process. Here the
  packet is dropped, counted in stats['assert_failures'] and the P4 source
  location is logged; the switch keeps running.
- `hash(..., max)` with max == 0: BMv2 divides by zero; here the result is
  base + hash (no modulo), wrapped to the result width.
- field lists of clone/resubmit/recirculate: the user-metadata fields annotated
  `@field_list(i)` keep their values, as p4c builds the lists; the rest is reset.

Hash algorithms over the data's bits packed MSB-first, padded with zero bits to
a whole byte (BMv2 packs a field list the same way):
crc32 = CRC-32/ISO-HDLC (zlib), crc16 = CRC-16/ARC (poly 0x8005 reflected, init 0),
csum16 = Internet checksum (odd length: zero pad), xor16 = XOR of 16-bit words
(zero pad), identity = the first 8 bytes of the data as a big-endian number,
random = a random 32-bit value (BMv2 bm_sim/calculations.cpp defines the same).
"""
from __future__ import annotations

import random as _random
import zlib

from . import p4ast as A
from .codegen_expr import CodegenError, wrap
from .codegen_types import width_of, is_signed


# ---------------------------------------------------------------- run-time objects
class P4Exit(Exception):
    """`exit` statement: ends the current control."""


class ParserError(Exception):
    def __init__(self, code):
        self.code = code


class AssertFailed(Exception):
    def __init__(self, where):
        self.where = where


class Packet:
    """Per-packet context handed to every generated function as `_P`."""
    __slots__ = ("sm", "plen", "now", "payload", "clone_type", "clone_sess", "clone_fl",
                 "resubmit_fl", "recirc_fl", "truncate", "dmeter", "digests", "logs")

    def __init__(self, sm, plen, now, digests, logs):
        self.sm = sm
        self.plen = plen
        self.now = now
        self.payload = b""
        self.clone_type = None
        self.clone_sess = None
        self.clone_fl = None
        self.resubmit_fl = None
        self.recirc_fl = None
        self.truncate = None
        self.dmeter = 0
        self.digests = digests
        self.logs = logs


def csum16_int(x: int, nbits: int) -> int:
    """Internet checksum of the bytes of x (nbits wide, nbits % 8 == 0).

    Uses 2^16 = 1 (mod 0xFFFF): the ones'-complement sum of the 16-bit words is
    x mod 0xFFFF, except that a non-zero multiple gives 0xFFFF (not 0)."""
    if nbits % 16:
        x <<= 8
    if x == 0:
        return 0xFFFF
    s = x % 0xFFFF
    return 0xFFFF - (s or 0xFFFF)


def data_bytes(x: int, nbits: int) -> bytes:
    pad = (-nbits) % 8
    return (x << pad).to_bytes((nbits + pad) // 8, "big")


def _crc16_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xA001 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC16_T = _crc16_table()


def crc16(b: bytes) -> int:
    c = 0
    for byte in b:
        c = (c >> 8) ^ _CRC16_T[(c ^ byte) & 0xFF]
    return c


def crc32(b: bytes) -> int:
    return zlib.crc32(b)


def csum16(b: bytes) -> int:
    return csum16_int(int.from_bytes(b, "big"), len(b) * 8)


def xor16(b: bytes) -> int:
    if len(b) % 2:
        b = b + b"\0"
    r = 0
    for i in range(0, len(b), 2):
        r ^= (b[i] << 8) | b[i + 1]
    return r


def identity(b: bytes) -> int:
    # BMv2: the first (at most) 8 bytes, big-endian
    return int.from_bytes(b[:8], "big")


def random_hash(b: bytes) -> int:
    return _random.getrandbits(32)


HASHES = {"crc16": crc16, "crc32": crc32, "csum16": csum16, "xor16": xor16,
          "identity": identity, "random": random_hash,
          # custom polynomials are configured at run time in BMv2; defaults equal the plain ones
          "crc16_custom": crc16, "crc32_custom": crc32}


def p4_random(lo: int, hi: int) -> int:
    return _random.randint(lo, hi) if lo <= hi else lo


def format_log(msg: str, values) -> str:
    parts = msg.split("{}")
    out = [parts[0]]
    for i, p in enumerate(parts[1:]):
        out.append(str(values[i]) if i < len(values) else "{}")
        out.append(p)
    return "".join(out)


def noop_action(*args):
    return None


RUNTIME_NAMES = {
    "_noop_action": noop_action,
    "P4Exit": P4Exit, "ParserError": ParserError, "AssertFailed": AssertFailed,
    "_csum16_int": csum16_int, "_data_bytes": data_bytes, "_HASH": HASHES,
    "_p4_random": p4_random, "_format_log": format_log,
}


# ---------------------------------------------------------------- code generation
def _enum_name(e) -> str:
    if isinstance(e, A.Literal):
        return str(e.value)
    if isinstance(e, A.Member):
        return e.name
    raise CodegenError("expected an enum constant (e.g. HashAlgorithm.crc32)", getattr(e, "loc", None))


def flatten(e):
    """Scalar leaf expressions of a data list / struct / header, in order."""
    if isinstance(e, A.ListExpr):
        out = []
        for x in e.elems:
            out += flatten(x)
        return out
    t = e.type
    if isinstance(t, (A.HeaderT, A.StructT)):
        out = []
        for f in t.fields:
            out += flatten(A.Member(e, f.name, type=f.type, loc=e.loc))
        return out
    return [e]


def concat_code(g, e):
    """(python expr of all leaves' bits concatenated MSB-first, total width)."""
    leaves = flatten(e)
    terms, total = [], 0
    for x in reversed(leaves):
        t = x.type
        if isinstance(t, A.InfIntT):
            raise CodegenError("a data list element needs a width: cast the constant, e.g. (bit<8>)1", x.loc)
        w = width_of(t)
        v = g.expr(x)
        if isinstance(t, A.BoolT):
            v = f"(1 if {v} else 0)"
        elif is_signed(t):
            v = f"({v} & {hex((1 << w) - 1)})"
        terms.append(v if total == 0 else f"({v} << {total})")
        total += w
    if not terms:
        return "0", 0
    return "(" + " | ".join(reversed(terms)) + ")", total


class V1Gen:
    """Extern calls of v1model programs; `g` is the FnGen emitting the current function."""

    def __init__(self, unit):
        self.unit = unit

    # extern object methods ------------------------------------------------
    def method_stmt(self, g, e: A.MethodCall):
        tt = e.target.type
        ext = tt.name if isinstance(tt, A.ExternT) else None
        obj = g.expr(e.target)
        inst = self.unit.instance_obj(g.ctl, e.target)
        if ext == "register":
            vals = g.reg_values(obj)
            # Out-of-range index (BMv2): a read gives 0, a write does nothing. Indexes
            # are unsigned, so Python's IndexError is exactly "out of range"; a try
            # costs nothing when it does not fire, less than comparing every time.
            if e.method in ("read", "write"):
                ix = e.args[1] if e.method == "read" else e.args[0]
                if is_signed(ix.type):
                    raise CodegenError("unsupported: a signed register index; use bit<32>", e.loc)
            if e.method == "read":
                idx = g.expr(e.args[1])
                if isinstance(e.args[1], A.Literal):
                    g.assign(e.args[0], f"{vals}[{idx}]" if int(e.args[1].value) < inst.size else "0")
                    return
                g.line("try:")
                g.ind += 1
                g.assign(e.args[0], f"{vals}[{idx}]")
                g.ind -= 1
                g.line("except IndexError:")
                g.ind += 1
                g.assign(e.args[0], "0")
                g.ind -= 1
                return
            if e.method == "write":
                idx = g.expr(e.args[0])
                val = g.expr(e.args[1])
                if isinstance(e.args[0], A.Literal):
                    if int(e.args[0].value) < inst.size:
                        g.line(f"{vals}[{idx}] = {val}")
                else:
                    g.line("try:")
                    g.line(f"    {vals}[{idx}] = {val}")
                    g.line("except IndexError:")
                    g.line("    pass")
                return
        # counter and meter: an out-of-range index does nothing (meter color 0); a
        # constant index is checked here, once, not per packet
        if ext == "counter" and e.method == "count":
            idx = g.expr(e.args[0])
            bump = f"{obj}.packets[{idx}] += 1; {obj}.bytes[{idx}] += _P.plen"
            if not isinstance(e.args[0], A.Literal):
                g.line(f"if {idx} < {inst.size}: {bump}")
            elif int(e.args[0].value) < inst.size:
                g.line(bump)
            return
        if ext == "direct_counter" and e.method == "count":
            return  # counted by the table apply on a hit, as BMv2 does
        if ext == "meter" and e.method == "execute_meter":
            idx = g.expr(e.args[0])
            run = f"{obj}.execute({idx}, _P.plen, _P.now)"
            if not isinstance(e.args[0], A.Literal):
                g.assign(e.args[1], f"({run} if {idx} < {inst.size} else 0)")
            else:
                g.assign(e.args[1], run if int(e.args[0].value) < inst.size else "0")
            return
        if ext == "direct_meter" and e.method == "read":
            g.assign(e.args[0], "_P.dmeter")
            return
        raise CodegenError(f"unsupported: {ext or type(tt).__name__}.{e.method}", e.loc)

    def method_expr(self, g, e):
        raise CodegenError(f"unsupported: {e.method}() used as a value", e.loc)

    # extern functions -----------------------------------------------------
    def function_stmt(self, g, e: A.Call):
        name = e.func.name
        m = getattr(self, "f_" + name, None)
        if m is None:
            raise CodegenError(f"unsupported: extern function {name}", e.loc)
        m(g, e, *e.args)

    def f_mark_to_drop(self, g, e, sm=None):
        s = g.expr(sm) if sm is not None else "_P.sm"
        g.line(f"{s}.egress_spec = 511; {s}.mcast_grp = 0")

    def f_clone(self, g, e, ctype, session):
        g.line(f"_P.clone_type = {_enum_name(ctype)!r}; _P.clone_sess = {g.expr(session)}; _P.clone_fl = None")

    def f_clone_preserving_field_list(self, g, e, ctype, session, index):
        g.line(f"_P.clone_type = {_enum_name(ctype)!r}; _P.clone_sess = {g.expr(session)}; "
               f"_P.clone_fl = {g.expr(index)}")

    def f_resubmit_preserving_field_list(self, g, e, index):
        g.line(f"_P.resubmit_fl = {g.expr(index)}")

    def f_recirculate_preserving_field_list(self, g, e, index):
        g.line(f"_P.recirc_fl = {g.expr(index)}")

    # Old-style v1model names without field lists: nothing preserved.
    def f_resubmit(self, g, e, *args):
        g.line("_P.resubmit_fl = -1")

    def f_recirculate(self, g, e, *args):
        g.line("_P.recirc_fl = -1")

    def f_truncate(self, g, e, length):
        g.line(f"_P.truncate = {g.expr(length)}")

    def f_digest(self, g, e, receiver, data):
        leaves = flatten(data)
        tname = getattr(data.type, "name", "digest")
        vals = "(" + "".join(g.expr(x) + ", " for x in leaves) + ")"
        g.line(f"_P.digests.append(({tname!r}, {vals}))")

    def f_random(self, g, e, result, lo, hi):
        g.assign(result, f"_p4_random({g.expr(lo)}, {g.expr(hi)})")

    def f_log_msg(self, g, e, msg, data=None):
        vals = "()" if data is None else "(" + "".join(g.expr(x) + ", " for x in flatten(data)) + ")"
        g.line(f"_P.logs.append(_format_log({g.expr(msg)}, {vals}))")

    def _assert(self, g, e, cond):
        g.line(f"if not {g.expr(cond)}: raise AssertFailed({str(e.loc)!r})")

    f_assert = _assert
    f_assume = _assert

    def f_hash(self, g, e, result, algo, base, data, maxv):
        alg = _enum_name(algo)
        if alg not in HASHES:
            raise CodegenError(f"unsupported: hash algorithm {alg}", e.loc)
        x, w = concat_code(g, data)
        h = g.tmp()
        g.line(f"{h} = _HASH[{alg!r}](_data_bytes({x}, {w}))")
        m = g.tmp()
        g.line(f"{m} = {g.expr(maxv)}")
        g.assign(result, wrap(f"{g.expr(base)} + ({h} % {m} if {m} else {h})", result.type))

    def _checksum_code(self, g, data, algo, with_payload):
        alg = _enum_name(algo)
        if alg not in HASHES:
            raise CodegenError(f"unsupported: checksum algorithm {alg}", data.loc)
        x, w = concat_code(g, data)
        if with_payload:
            return f"_HASH[{alg!r}](_data_bytes({x}, {w}) + bytes(_P.payload))"
        if alg == "csum16" and w % 8 == 0:
            return f"_csum16_int({x}, {w})"
        return f"_HASH[{alg!r}](_data_bytes({x}, {w}))"

    def _verify(self, g, e, cond, data, cksum, algo, with_payload=False):
        c = self._checksum_code(g, data, algo, with_payload)
        w = width_of(cksum.type)
        sm = "_P.sm"
        g.line(f"if {g.expr(cond)} and ({c} & {hex((1 << w) - 1)}) != {g.expr(cksum)}:")
        g.line(f"    {sm}.checksum_error = 1")

    def _update(self, g, e, cond, data, cksum, algo, with_payload=False):
        c = self._checksum_code(g, data, algo, with_payload)
        w = width_of(cksum.type)
        g.line(f"if {g.expr(cond)}:")
        g.ind += 1
        g.assign(cksum, f"({c} & {hex((1 << w) - 1)})")
        g.ind -= 1

    def f_verify_checksum(self, g, e, *a):
        self._verify(g, e, *a)

    def f_update_checksum(self, g, e, *a):
        self._update(g, e, *a)

    def f_verify_checksum_with_payload(self, g, e, *a):
        self._verify(g, e, *a, with_payload=True)

    def f_update_checksum_with_payload(self, g, e, *a):
        self._update(g, e, *a, with_payload=True)
