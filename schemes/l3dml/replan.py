"""Re-planning of l3dml's rate synchronization at run time (pure): what the controller
measured -> the flow model's iteration -> the policy's decision -> whether it differs enough
from the one in force to be installed (controller.py does the reading and installing).

    measured      per datacenter its slowest worker's compute time, averaged over its last
                  `window` finished iterations (worker progress events), and every WAN
                  link's rate (the htb class of each direction: bandwidth schedules)
    iteration     the plan's flow-model iteration with those start times (compute + the
                  worker -> gateway delay the plan computed) and link rates
    decision      the policy's allocation, its slot ranges per path and its pacing (chunk
                  synchronous or the policy's own caps): the same function the plan uses
    differs       slot ranges changed, a rate cap by more than `threshold` (relative), or a
                  start delay by more than `threshold` x the iteration's last arrival

All times and rates are real-world (the flow model's units); the controller converts.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

import schemes.l3dml.flowmodel as flowmodel
import schemes.l3dml.routing as routing
from schemes.l3dml.flowmodel import Allocation, Iteration


@dataclass(frozen=True)
class Decision:
    allocation: dict          # dc -> flowmodel.Allocation (the policy's, before pacing)
    ranges: dict              # dc -> ((lo, hi, path index), ...): slot ranges per path
    delays_s: dict            # dc -> start delay, s (chunk-synchronous pacing; else 0)
    caps_bps: dict            # dc -> the rate its partial sums are paced at, bps (absent: none)
    last_arrival_s: float     # the flow model's last arrival under the allocation
    completion_s: float       # ... and the iteration's end (the result back at the workers)

    def to_json(self) -> dict:
        return {"split": {dc: [round(f, 4) for f in a.split] for dc, a in self.allocation.items()},
                "slot_ranges": {dc: [list(r) for r in rs] for dc, rs in self.ranges.items()},
                "start_delay_s": {dc: round(d, 4) for dc, d in self.delays_s.items()},
                "rate_cap_mbps": {dc: round(c / 1e6, 4) for dc, c in self.caps_bps.items()},
                "last_arrival_s": round(self.last_arrival_s, 4),
                "completion_s": round(self.completion_s, 4)}


def decide(it: Iteration, policy: Callable[[Iteration], dict], window: int, sync: str,
           pace: bool = True) -> Decision:
    """The policy's decision on `it`, as the switches and workers apply it: slot ranges of
    a window of `window` slots, and with `pace` the start delays and rate caps of `sync`
    ("chunk": routing.chunk_synchronous; "policy": the allocation's own caps)."""
    alloc = policy(it)
    ranges = {s.dc: tuple(routing.slot_ranges(alloc[s.dc].split, window)) for s in it.streams}
    delays, caps = {}, {}
    if pace:
        if sync == "chunk":
            delays, caps = routing.chunk_synchronous(it, alloc)
        elif sync == "policy":
            caps = {dc: a.rate_bps for dc, a in alloc.items() if a.rate_bps is not None}
        else:
            raise ValueError(f"sync {sync!r}: use 'chunk' or 'policy'")
    out = flowmodel.simulate(it, alloc)
    return Decision(alloc, ranges, delays, caps, out.last_arrival_s, out.completion_s)


def paced_allocation(d: Decision) -> dict:
    """The allocation with the decision's caps (what the workers are paced at; none without
    pacing)."""
    return {dc: Allocation(a.split, d.caps_bps.get(dc)) for dc, a in d.allocation.items()}


def measured_compute_s(events: Mapping[str, list[dict]], dc_of: Mapping[str, int], window: int,
                       dilation: float) -> dict[int, float] | None:
    """dc -> the mean, over the last `window` iterations every one of its workers finished,
    of its slowest worker's compute time (real s: the events' are emulated, x dilation).
    None until every datacenter has finished one iteration."""
    if window < 1:
        raise ValueError(f"window must be >= 1 iteration (got {window})")
    per: dict[int, dict[int, dict[str, float]]] = {}
    for w, evs in events.items():
        if w not in dc_of:
            continue
        for e in evs:
            if e.get("event") == "iteration_end" and e.get("compute_s") is not None:
                per.setdefault(dc_of[w], {}).setdefault(e["iteration"], {})[w] = float(e["compute_s"])
    members: dict[int, set] = {}
    for w, dc in dc_of.items():
        members.setdefault(dc, set()).add(w)
    out = {}
    for dc, ws in members.items():
        done = sorted(i for i, got in per.get(dc, {}).items() if set(got) >= ws)
        if not done:
            return None
        last = done[-window:]
        out[dc] = sum(max(per[dc][i].values()) for i in last) / len(last) / dilation
    return out


def furthest_iteration(events: Mapping[str, list[dict]]) -> int:
    """The highest iteration any worker has started or finished (-1: none yet)."""
    return max((e["iteration"] for es in events.values() for e in es
                if e.get("event") in ("iteration_start", "iteration_end") and "iteration" in e),
               default=-1)


def measured_iteration(it: Iteration, lead_s: Mapping[int, float], compute_s: Mapping[int, float],
                       rates_bps: Mapping[tuple, float]) -> Iteration:
    """`it` with each datacenter starting at its measured compute + its lead (worker ->
    gateway delay) and each WAN link (directed gateway pair) at its measured rate (links
    not measured keep theirs)."""
    wan = it.wan.copy()
    for (u, v), bps in rates_bps.items():
        if wan.has_edge(u, v) and bps > 0:
            wan.edges[u, v]["rate_bps"] = float(bps)
    streams = tuple(replace(s, start_s=float(compute_s[s.dc] + lead_s[s.dc])) if s.dc in compute_s
                    else s for s in it.streams)
    return replace(it, wan=wan, streams=streams)


def differs(old: Decision, new: Decision, threshold: float) -> list[str]:
    """Why `new` should replace `old` (empty: it should not)."""
    why = []
    if old.ranges != new.ranges:
        why.append("paths")
    for dc in sorted(set(old.caps_bps) | set(new.caps_bps)):
        a, b = old.caps_bps.get(dc), new.caps_bps.get(dc)
        if (a is None) != (b is None) or (a is not None and abs(b - a) > threshold * a):
            why.append("rates")
            break
    scale = max(old.last_arrival_s, new.last_arrival_s, 1e-9)
    for dc in sorted(set(old.delays_s) | set(new.delays_s)):
        if abs(new.delays_s.get(dc, 0.0) - old.delays_s.get(dc, 0.0)) > threshold * scale:
            why.append("delays")
            break
    return why
