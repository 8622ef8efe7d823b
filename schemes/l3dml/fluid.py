"""Max-min fair fluid simulation of flows over directed links (pure, no networkx).

Between two events (a flow starts, a flow finishes) every active flow sends at a constant
rate: the max-min fair allocation with per-flow caps, found by progressive filling (all
unfrozen flows grow together until a link is full or a flow reaches its cap; those freeze;
repeat). Queues are not modelled: a fluid flow never sends above its share, so no link is
ever overloaded and no byte waits. This is the flow level of TCP-like or window-paced
senders in their steady state; slow start and loss recovery are left out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

# relative slack for "a link is full", "a flow reached its cap", "a flow has finished":
# progressive filling subtracts floats, so exact zeros are never reached
EPS = 1e-9


@dataclass(frozen=True)
class Flow:
    links: tuple[Hashable, ...]     # directed links it crosses, in order
    bytes: float
    start_s: float = 0.0
    cap_bps: float = math.inf       # its own rate limit (pacing)


@dataclass(frozen=True)
class Segment:
    """An interval with constant rates: rates_bps[i] of flow i (0 when not active)."""
    t0: float
    t1: float
    rates_bps: tuple[float, ...]


@dataclass(frozen=True)
class FluidResult:
    finish_s: tuple[float, ...]           # per flow: when its last byte left the source
    segments: tuple[Segment, ...]
    link_bytes: dict                      # link -> bytes carried


def check_flows(flows: Sequence[Flow], capacity_bps: Mapping) -> None:
    """Refuse what would make the simulation meaningless, saying what to fix."""
    for link, c in capacity_bps.items():
        if not c > 0 or math.isnan(c):
            raise ValueError(f"link {link!r} has capacity {c!r} bps: give every link a rate > 0")
    for i, f in enumerate(flows):
        if f.bytes < 0 or math.isnan(f.bytes) or math.isinf(f.bytes):
            raise ValueError(f"flow {i} has {f.bytes!r} bytes: give a finite volume >= 0")
        if math.isnan(f.start_s) or math.isinf(f.start_s):
            raise ValueError(f"flow {i} starts at {f.start_s!r}: give a finite start time")
        if not f.cap_bps > 0:
            raise ValueError(f"flow {i} has rate cap {f.cap_bps!r} bps: a cap must be > 0 "
                             "(use math.inf for no cap)")
        missing = [l for l in f.links if l not in capacity_bps]
        if missing:
            raise ValueError(f"flow {i} crosses link(s) {missing} that have no capacity")
        if not f.links and math.isinf(f.cap_bps):
            raise ValueError(f"flow {i} crosses no link and has no cap: its rate would be "
                             "infinite; give it a link or a cap")


def max_min_rates(flows: Sequence[Flow], active: Sequence[int], capacity_bps: Mapping) -> dict:
    """Max-min fair rates (bps) of the active flows, each at most its cap (progressive
    filling)."""
    rate = {i: 0.0 for i in active}
    residual = {}
    users: dict = {}
    for i in active:
        for l in flows[i].links:
            users.setdefault(l, set()).add(i)
            residual[l] = capacity_bps[l]
    unfrozen = set(active)
    while unfrozen:
        grow = min((residual[l] / len(u) for l, u in users.items() if u), default=math.inf)
        grow = min(grow, min(flows[i].cap_bps - rate[i] for i in unfrozen))
        for i in unfrozen:
            rate[i] += grow
        for l, u in users.items():
            residual[l] -= grow * len(u)
        done = {i for i in unfrozen if rate[i] >= flows[i].cap_bps * (1 - EPS)}
        for l, u in users.items():
            if u and residual[l] <= capacity_bps[l] * EPS:
                done |= u
        for l in users:
            users[l] -= done
        unfrozen -= done
    return rate


def simulate(flows: Sequence[Flow], capacity_bps: Mapping) -> FluidResult:
    """Run the flows to completion; event driven, so the cost is the number of starts and
    finishes times one progressive filling."""
    check_flows(flows, capacity_bps)
    n = len(flows)
    left = [f.bytes * 8.0 for f in flows]            # bits
    finish = [math.nan] * n
    pending = sorted(range(n), key=lambda i: flows[i].start_s)
    active: list[int] = []
    segments: list[Segment] = []
    link_bits: dict = {l: 0.0 for l in capacity_bps}
    t = flows[pending[0]].start_s if pending else 0.0
    while pending or active:
        while pending and flows[pending[0]].start_s <= t:
            i = pending.pop(0)
            if left[i] <= 0:
                finish[i] = max(t, flows[i].start_s)
            else:
                active.append(i)
        if not active:
            if pending:
                t = flows[pending[0]].start_s
            continue
        rate = max_min_rates(flows, active, capacity_bps)
        t_next = min((t + left[i] / rate[i] for i in active if rate[i] > 0), default=math.inf)
        if pending:
            t_next = min(t_next, flows[pending[0]].start_s)
        if math.isinf(t_next):      # cannot happen with positive capacities and caps
            raise RuntimeError("fluid simulation stalled: active flows with zero rate")
        dt = t_next - t
        rates = [0.0] * n
        for i in active:
            rates[i] = rate[i]
            sent = rate[i] * dt
            left[i] -= sent
            for l in flows[i].links:
                link_bits[l] += sent
        segments.append(Segment(t, t_next, tuple(rates)))
        t = t_next
        still = []
        for i in active:
            # done when what is left is below EPS of its volume, or would take less than
            # EPS of the clock: t + left / rate can round back to t (t large, flow tiny),
            # and a step of zero would never end
            if left[i] <= EPS * max(flows[i].bytes * 8.0, 1.0) or \
                    left[i] <= rate[i] * EPS * max(abs(t), 1.0):
                left[i], finish[i] = 0.0, t
            else:
                still.append(i)
        active = still
    return FluidResult(tuple(finish), tuple(segments), {l: b / 8.0 for l, b in link_bits.items()})


def sent_curve(result: FluidResult, i: int) -> tuple[list[float], list[float]]:
    """(times, bytes sent so far) of flow i at its segment boundaries: piecewise linear."""
    ts, bs, b = [], [], 0.0
    for s in result.segments:
        if not ts:
            ts.append(s.t0), bs.append(0.0)
        b += s.rates_bps[i] * (s.t1 - s.t0) / 8.0
        ts.append(s.t1), bs.append(b)
    return ts, bs
