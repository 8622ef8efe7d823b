"""Non-learned policies of L3DML's rate-synchronization routing (pure): an iteration
(flowmodel.Iteration) -> an allocation per datacenter (flowmodel.Allocation).

    none   no pacing, every partial sum on its route (the control plane's shortest path):
           what geo-ina does
    rule   rate synchronization: aim every datacenter at one arrival time T; a datacenter
           that makes T on its route alone is paced to r_d = V_d / (T - t_d - D_d)
           (D_d: its route's one-way delay); one that cannot (a straggler) is split over
           its candidate paths, each at what its path has left after the paced streams. T is the smallest target the flow model confirms (bisection
           between a lower bound and `none`'s last arrival), so the rule's last arrival
           is never later than `none`'s.
    drl    the DRL model set (modelset.py): the selector picks the agent of the iteration's
           regime, its action is decoded to allocations (encoding.py). Default set: the
           committed models/default.json; another with policy("drl", model_set=PATH).

The DRL model set is measured against `none` and `rule` (README.md).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict

from pathlib import Path

import schemes.l3dml.modelset as modelset
from schemes.l3dml.flowmodel import Allocation, Iteration, Outcome, Stream, route_split, simulate

BISECTION_ROUNDS = 14       # T to (none's last arrival - lower bound) / 16384
ON_TIME = 1e-6              # relative slack for "arrived by T" (float sums)


def none(it: Iteration) -> dict[int, Allocation]:
    return {s.dc: Allocation(route_split(s)) for s in it.streams}


def _wan_links(path) -> list:
    return list(zip(path, path[1:]))


def synchronized(it: Iteration, target_s: float) -> dict[int, Allocation]:
    """Every datacenter aimed at arriving at target_s (the module's rule for one T)."""
    paced: dict[int, float] = {}
    reserved: dict = defaultdict(float)
    slow = []
    for s in it.streams:
        route = s.paths[0]
        budget = target_s - s.start_s - it.path_delay_s(route)
        need = 8 * s.bytes / budget if budget > 0 else math.inf
        if need <= min(it.path_rate_bps(route), s.lan_bps, s.window_bps):
            paced[s.dc] = need
            for l in _wan_links(route):
                reserved[l] += need
        else:
            slow.append(s)
    # what is left on a link is shared by the slow subflows that may cross it
    crossing = Counter(l for s in slow for p in s.paths for l in _wan_links(p))
    out = {}
    for s in it.streams:
        if s.dc in paced:
            out[s.dc] = Allocation(route_split(s), paced[s.dc] if paced[s.dc] > 0 else None)
            continue
        # each subflow at its path's spare rate: the split in proportion to the spares and
        # the cap their sum, so no subflow takes from a paced stream (max-min would give
        # it a fair share of the paced stream's link) and all of them finish together
        spare = [min((max(0.0, it.wan.edges[l]["rate_bps"] - reserved[l]) / crossing[l]
                      for l in _wan_links(p)), default=s.lan_bps) for p in s.paths]
        total = sum(spare)
        out[s.dc] = Allocation(tuple(x / total for x in spare), total) if total > 0 \
            else Allocation(route_split(s))
    return out


def lower_bound_s(it: Iteration) -> float:
    """No allocation brings every partial sum in earlier: each datacenter alone, all its
    paths at full rate from its start."""
    def alone(s: Stream) -> float:
        rate = min(s.lan_bps, s.window_bps, sum(it.path_rate_bps(p) for p in s.paths))
        return s.start_s + min(it.path_delay_s(p) for p in s.paths) + 8 * s.bytes / rate
    return max(alone(s) for s in it.streams)


def rule(it: Iteration) -> dict[int, Allocation]:
    """Rate synchronization with the smallest common arrival time the flow model confirms."""
    base = none(it)
    hi = simulate(it, base).last_arrival_s
    lo = min(lower_bound_s(it), hi)
    best = None
    candidate = synchronized(it, hi)
    if simulate(it, candidate).last_arrival_s <= hi * (1 + ON_TIME):
        best = candidate
    for _ in range(BISECTION_ROUNDS):
        mid = (lo + hi) / 2
        candidate = synchronized(it, mid)
        if simulate(it, candidate).last_arrival_s <= mid * (1 + ON_TIME):
            hi, best = mid, candidate
        else:
            lo = mid
    return best if best is not None else base


def drl(it: Iteration, model_set=None) -> dict[int, Allocation]:
    """The model set's decision (a path to a set file; None: the committed default)."""
    return modelset.load_cached(str(Path(model_set or modelset.DEFAULT_PATH))).allocation(it)


POLICIES = {"none": none, "rule": rule, "drl": drl}


def policy(name: str, model_set=None):
    """The policy called `name`; model_set (a set file) only for `drl`."""
    if name not in POLICIES:
        raise ValueError(f"unknown l3dml policy {name!r}: use one of {sorted(POLICIES)}")
    if model_set is not None:
        if name != "drl":
            raise ValueError(f"model_set is an option of the drl policy, not of {name!r}")
        return lambda it: drl(it, model_set)
    return POLICIES[name]


def run(it: Iteration, name: str) -> Outcome:
    """The iteration under the named policy."""
    return simulate(it, policy(name)(it))
