"""v1model externs at run time, as BMv2 simple_switch implements them: what the
generated code calls per packet (hashes, checksums, random, log_msg formatting) and the
exceptions and per-packet context it uses. The code generator that emits those calls is
softswitch.compiler.codegen_v1model; the names it may use are RUNTIME_NAMES.

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
