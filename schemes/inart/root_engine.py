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

Where a switch point has memory for fewer slots than the window, its contributions for the
other slots reach the root unaggregated, each worker as its own child (the switch's
agg_point_bypass: sender = bypass_base + the worker's index there). The root then has
different children per slot range, each range with its own fan-in:

    RootEngine.with_ranges(job=1, slots=64, ranges=[
        (0, 32, [(0, "10.0.2.1"), (1, "10.1.1.254")]),                  # the switch sums
        (32, 64, [(0, "10.0.2.1"), (2, "10.1.1.1"), (3, "10.1.1.2")]),   # it bypasses
    ])

A range's child indices are distinct and below 32 (the bitmap's width), not necessarily
0..fan_in-1: the switch's own index is unused where it bypasses. With one range (the plain
constructor) they are 0..fan_in-1 and the engine is the P4 root point, which has no ranges:
a switch root has no parent to fall back to.

Input: one UDP payload and its source IPv4 address. Output: the payloads to send and where
(a RESULT to every child on completion, with RETX if a re-send completed it; RESULT|RETX
to the sender of a duplicate of a completed copy). No clocks, no sockets: root_server.py
is the shell around it.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np

from control.agg_entries import EVENT_NAMES   # the switch's agg_events indices, by name
from workers import agg_packet as ap

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


@dataclass(frozen=True)
class SlotRange:
    """Slots [start, end) of the job and the children that contribute to them (fan-in: their
    number)."""
    start: int
    end: int
    children: tuple[Child, ...]

    @property
    def fan_in(self) -> int:
        return len(self.children)


def _parse_children(children, field: str) -> tuple[Child, ...]:
    out = []
    for i, c in enumerate(children):
        index, address = (c.index, c.address) if isinstance(c, Child) else c
        try:
            address = str(ipaddress.IPv4Address(address))
        except ValueError:
            raise ValueError(f"{field}[{i}].address: {address!r} is not an IPv4 address; "
                             "give the child's aggregation address or worker IP") from None
        out.append(Child(int(index), address))
    if len({c.address for c in out}) != len(out):
        raise ValueError(f"{field}: two children share an address; each child needs its own")
    return tuple(out)


def _children(children, fan_in: int) -> tuple[Child, ...]:
    out = _parse_children(children, "children")
    if sorted(c.index for c in out) != list(range(fan_in)):
        raise ValueError(f"children: indices {sorted(c.index for c in out)} must be 0..{fan_in - 1}, "
                         f"each once (fan_in {fan_in}); give every child its sender index")
    return out


def _range(r, i: int, slots: int) -> SlotRange:
    """One range from a SlotRange, a dict {"start", "end", "children"} or a (start, end,
    children) triple, checked on its own."""
    field = f"ranges[{i}]"
    if isinstance(r, SlotRange):
        start, end, children = r.start, r.end, r.children
    elif isinstance(r, dict) and set(r) == {"start", "end", "children"}:
        start, end, children = r["start"], r["end"], r["children"]
    elif isinstance(r, (tuple, list)) and len(r) == 3:
        start, end, children = r
    else:
        raise ValueError(f"{field}: expected (start, end, children) or "
                         f'{{"start": s, "end": e, "children": [...]}}, got {r!r}')
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= slots):
        raise ValueError(f"{field}: slots {start!r}..{end!r} must satisfy 0 <= start < end <= "
                         f"slots ({slots})")
    kids = _parse_children(children, f"{field}.children")
    if not 1 <= len(kids) <= MAX_FAN_IN:
        raise ValueError(f"{field}.children: fan-in {len(kids)} is out of range 1..{MAX_FAN_IN} "
                         "(the bitmap's width)")
    indices = [c.index for c in kids]
    clash = sorted({x for x in indices if indices.count(x) > 1})
    if clash:
        raise ValueError(f"{field}.children: index {clash[0]} is given to two children; each "
                         "child of a range needs its own sender index")
    wide = [x for x in indices if not 0 <= x < MAX_FAN_IN]
    if wide:
        raise ValueError(f"{field}.children: index {wide[0]} is out of range 0..{MAX_FAN_IN - 1} "
                         "(the bitmap's width)")
    return SlotRange(start, end, kids)


def _ranges(ranges, slots: int) -> tuple[SlotRange, ...]:
    """Ranges that cover slots 0..slots-1, each slot once, in slot order."""
    if not ranges:
        raise ValueError("ranges: none given; give the children of every slot range")
    out = sorted(((_range(r, i, slots), i) for i, r in enumerate(ranges)),
                 key=lambda x: (x[0].start, x[1]))
    at = 0
    for r, i in out:
        if r.start < at:
            raise ValueError(f"ranges[{i}]: slots {r.start}..{r.end - 1} overlap another range's; "
                             "give each slot one range")
        if r.start > at:
            raise ValueError(f"ranges: slots {at}..{r.start - 1} have no range; the ranges must "
                             f"cover the window 0..{slots - 1}")
        at = r.end
    if at < slots:
        raise ValueError(f"ranges: slots {at}..{slots - 1} have no range; the ranges must cover "
                         f"the window 0..{slots - 1}")
    return tuple(r for r, _ in out)


class RootEngine:
    """Root aggregation point of one job (module doc). `events` mirrors agg_events;
    `ignored` counts payloads the switch would not have aggregated here (not an
    aggregation header, or another job's), which it would have routed on. `ranges` are the
    slot ranges with their children; `fan_in` and `children` those of the range of slot 0."""

    def __init__(self, job: int, fan_in: int | None, slots: int, children=None, k: int = 32,
                 *, ranges=None):
        if not 0 <= job <= 255:
            raise ValueError(f"job: {job} is out of range 0..255")
        if ranges is None and not 1 <= fan_in <= MAX_FAN_IN:
            raise ValueError(f"fan_in: {fan_in} is out of range 1..{MAX_FAN_IN} (the bitmap's width)")
        if not 1 <= slots <= MAX_SLOTS:
            raise ValueError(f"slots: {slots} is out of range 1..{MAX_SLOTS}")
        if k not in KS:
            raise ValueError(f"k: {k} values per packet; the switch program supports {KS}")
        if ranges is None:
            self.ranges = (SlotRange(0, slots, _children(children, fan_in)),)
        elif fan_in is not None or children is not None:
            raise ValueError("ranges: give either fan_in and children (one range) or ranges")
        else:
            self.ranges = _ranges(ranges, slots)
        self.job, self.slots, self.k = job, slots, k
        self.fan_in, self.children = self.ranges[0].fan_in, self.ranges[0].children
        # per slot: its range and the sender indices it accepts (lists: a lookup per packet)
        self._range_of = [r for r in self.ranges for _ in range(r.start, r.end)]
        accepted = {r.start: frozenset(c.index for c in r.children) for r in self.ranges}
        self._index_ok = [accepted[r.start] for r in self._range_of]
        n = 2 * slots                       # copy index = (slot << 1) | shadow, as the registers
        self._gen = [0] * n
        self._bitmap = [0] * n
        self._count = [0] * n
        self._state = [0] * n               # OVERFLOW bit (a root never holds RESULT_VALID)
        self._vals = np.zeros((n, k), dtype=np.uint32)   # uint32: + wraps modulo 2^32 silently
        self.events = [0] * EVENT_SLOTS
        self.ignored = 0

    @classmethod
    def with_ranges(cls, job: int, slots: int, ranges, k: int = 32) -> "RootEngine":
        """A root whose children differ by slot range (module doc): `ranges` cover slots
        0..slots-1, each a SlotRange, (start, end, children) or {"start", "end", "children"}."""
        return cls(job, None, slots, None, k, ranges=ranges)

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
        rng = self._range_of[f.slot]
        if f.sender not in self._index_ok[f.slot]:     # one range: sender >= fan_in, as P4
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
        elif f.gen == cur and self._count[idx] == rng.fan_in:
            self.events[EV["dup_answer"]] += 1        # its sender lost the result: answer it alone
            return [(src_ip, self._result(f, idx, rng, ap.RESULT | ap.RETX, tail))]
        elif f.gen == cur:
            return self._count_event("dup_drop")     # already counted, result not known yet
        else:
            return self._count_event("stale")        # its sender has that generation's result
        if self._count[idx] < rng.fan_in:
            return []
        self.events[EV["complete"]] += 1
        self.events[EV["mcast"]] += 1
        # the completing packet's RETX bit, as the P4 root keeps it (docs/protocol.md, Karn)
        out = self._result(f, idx, rng, ap.RESULT | (f.flags & ap.RETX), tail)
        return [(c.address, out) for c in rng.children]

    def _count_event(self, name: str) -> list:
        self.events[EV[name]] += 1
        return []

    def _result(self, f: ap.AggFields, idx: int, rng: SlotRange, flags: int, tail: bytes) -> bytes:
        """The switch rewrites the arriving packet: flags (with the copy's OVERFLOW), fan_in
        and values change; job, slot, gen, offset, sender and exponent stay."""
        return ap.encode(f.job, flags | (self._state[idx] & ap.OVERFLOW), f.slot, f.gen,
                         f.offset, f.sender, rng.fan_in, f.exponent,
                         self._vals[idx].view(np.int32)) + tail

    def stats(self) -> dict:
        """Counters by name, for the server's report."""
        return {"events": {n: self.events[i] for i, n in enumerate(EVENT_NAMES)},
                "ignored": self.ignored}
