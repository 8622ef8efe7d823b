"""The root of an in-network aggregation tree on a host: InArt's parameter server, sans I/O.

A switch aggregation point running p4/aggregation.p4 can have a host as its parent: it sends
its completed partial sum there and multicasts the RESULT that comes back. `RootEngine` is
that host's side: exactly the root behaviour of the P4 program (docs/protocol.md, "Switch
behaviour", with is_root = 1), so a tree whose root is a server behaves as one whose root is
a switch. Per (slot, shadow) copy it keeps the generation, the bitmap of children counted,
their count, a state byte (OVERFLOW) and k values summed as the switch does, modulo 2^32
(bit<32> +), read and written as signed int32 on the wire.

    engine = RootEngine(job=1, fan_in=3, slots=64, children=[(0, "10.1.0.254"), ...])
    for dst_ip, payload in engine.handle(payload, src_ip): ...

Input: one UDP payload and its source IPv4 address. Output: the payloads to send and where
(a RESULT to every child on completion; RESULT|RETX to the sender of a duplicate of a
completed copy). No clocks, no sockets: root_server.py is the shell around it.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np

from workers import agg_packet as ap

# Indices of the switch's counter MyIngress.agg_events (EV_* in p4/aggregation.p4).
EVENT_NAMES = ("new", "add", "complete", "up", "mcast", "dup_answer", "dup_resend",
               "dup_drop", "stale", "result_store", "result_drop", "bad")
EV = {name: i for i, name in enumerate(EVENT_NAMES)}
EVENT_SLOTS = 16           # counter(16, ...) in the program: same length, for comparison
MAX_FAN_IN = 32            # bitmap width
MAX_SLOTS = 2 ** 15 - 1    # the header's 15-bit slot field (docs/protocol.md, Limits)
KS = (32, 64)              # values per packet the switch program compiles for


@dataclass(frozen=True)
class Child:
    """One child of the root: its sender index and where its results go (a switch
    aggregation point's address or a worker's IP)."""
    index: int
    address: str


def _children(children, fan_in: int) -> tuple[Child, ...]:
    out = []
    for i, c in enumerate(children):
        index, address = (c.index, c.address) if isinstance(c, Child) else c
        try:
            address = str(ipaddress.IPv4Address(address))
        except ValueError:
            raise ValueError(f"children[{i}].address: {address!r} is not an IPv4 address; "
                             "give the child's aggregation address or worker IP") from None
        out.append(Child(int(index), address))
    if sorted(c.index for c in out) != list(range(fan_in)):
        raise ValueError(f"children: indices {sorted(c.index for c in out)} must be 0..{fan_in - 1}, "
                         f"each once (fan_in {fan_in}); give every child its sender index")
    if len({c.address for c in out}) != len(out):
        raise ValueError("children: two children share an address; each child needs its own")
    return tuple(out)


class RootEngine:
    """Root aggregation point of one job (module doc). `events` mirrors agg_events;
    `ignored` counts payloads the switch would not have aggregated here (not an
    aggregation header, or another job's), which it would have routed on."""

    def __init__(self, job: int, fan_in: int, slots: int, children, k: int = 32):
        if not 0 <= job <= 255:
            raise ValueError(f"job: {job} is out of range 0..255")
        if not 1 <= fan_in <= MAX_FAN_IN:
            raise ValueError(f"fan_in: {fan_in} is out of range 1..{MAX_FAN_IN} (the bitmap's width)")
        if not 1 <= slots <= MAX_SLOTS:
            raise ValueError(f"slots: {slots} is out of range 1..{MAX_SLOTS}")
        if k not in KS:
            raise ValueError(f"k: {k} values per packet; the switch program supports {KS}")
        self.job, self.fan_in, self.slots, self.k = job, fan_in, slots, k
        self.children = _children(children, fan_in)
        n = 2 * slots                       # copy index = (slot << 1) | shadow, as the registers
        self._gen = [0] * n
        self._bitmap = [0] * n
        self._count = [0] * n
        self._state = [0] * n               # OVERFLOW bit (a root never holds RESULT_VALID)
        self._vals = np.zeros((n, k), dtype=np.uint32)   # uint32: + wraps modulo 2^32 silently
        self.events = [0] * EVENT_SLOTS
        self.ignored = 0

    def handle(self, payload: bytes, src_ip: str) -> list[tuple[str, bytes]]:
        """One arriving UDP payload from src_ip -> [(destination IP, payload)] to send."""
        if len(payload) < ap.AGG_HEADER_LEN or payload[0] != self.job:
            self.ignored += 1               # the switch: no agg header / agg_points miss -> route
            return []
        f = ap.decode(payload)
        if f is None or len(f.values) != self.k or f.slot >= self.slots or f.gen == 0 \
                or f.shadow != f.gen & 1:
            return self._count_event("bad")
        # The P4 parser takes exactly k values; bytes after them ride along unchanged.
        tail = payload[ap.AGG_HEADER_LEN + 4 * self.k:]
        idx = (f.slot << 1) | f.shadow
        if f.flags & ap.RESULT:
            return self._count_event("result_drop")   # nothing is above the root
        if f.sender >= self.fan_in:
            return self._count_event("bad")
        bit = 1 << f.sender
        cur = self._gen[idx]
        if f.gen > cur:
            self._gen[idx], self._bitmap[idx], self._count[idx] = f.gen, bit, 1
            self._state[idx] = f.flags & ap.OVERFLOW
            self._vals[idx] = f.values.view(np.uint32)
            self.events[EV["new"]] += 1
        elif f.gen == cur and not self._bitmap[idx] & bit:
            self._bitmap[idx] |= bit
            self._count[idx] += 1
            self._state[idx] |= f.flags & ap.OVERFLOW
            self._vals[idx] += f.values.view(np.uint32)
            self.events[EV["add"]] += 1
        elif f.gen == cur and self._count[idx] == self.fan_in:
            self.events[EV["dup_answer"]] += 1        # its sender lost the result: answer it alone
            return [(src_ip, self._result(f, idx, ap.RESULT | ap.RETX, tail))]
        elif f.gen == cur:
            return self._count_event("dup_drop")     # already counted, result not known yet
        else:
            return self._count_event("stale")        # its sender has that generation's result
        if self._count[idx] < self.fan_in:
            return []
        self.events[EV["complete"]] += 1
        self.events[EV["mcast"]] += 1
        out = self._result(f, idx, ap.RESULT, tail)
        return [(c.address, out) for c in self.children]

    def _count_event(self, name: str) -> list:
        self.events[EV[name]] += 1
        return []

    def _result(self, f: ap.AggFields, idx: int, flags: int, tail: bytes) -> bytes:
        """The switch rewrites the arriving packet: flags (with the copy's OVERFLOW), fan_in
        and values change; job, slot, gen, offset, sender and exponent stay."""
        return ap.encode(f.job, flags | (self._state[idx] & ap.OVERFLOW), f.slot, f.gen,
                         f.offset, f.sender, self.fan_in, f.exponent,
                         self._vals[idx].view(np.int32)) + tail

    def stats(self) -> dict:
        """Counters by name, for the server's report."""
        return {"events": {n: self.events[i] for i, n in enumerate(EVENT_NAMES)},
                "ignored": self.ignored}
