"""Time-varying WAN bandwidth: schedules -> a sorted list of (t_s, edge, mbps) events.

Two kinds, per WAN edge or for all of them (edge attribute `bandwidth_schedule`, set by
build_graph from the scenario):
- explicit: [{t_s, mbps, from_dc?}, ...]: at t_s the edge's rate becomes mbps (with
  from_dc, only the direction leaving that datacenter's end); before the first point the
  edge has its configured bandwidth_mbps;
- random {min_mbps, max_mbps, every_s, seed?, per_direction?, integer?}: as in NetStorm's
  emulation, the rate is redrawn uniformly in [min_mbps, max_mbps] at t = 0, every_s,
  2*every_s, ... Each edge has its own stream, seeded by (seed, datacenter indices of the
  edge), so adding an edge does not change the draws of the others and every run with the
  same seed is identical. With per_direction each direction u -> v of an edge is drawn on
  its own, from the stream (seed, D(u), D(v)) (so the lower-to-higher direction draws what
  the whole edge draws without per_direction), as NetStorm's script shapes each direction
  with its own `tc htb` and random.randint; integer draws whole Mbps in min..max inclusive
  (randint's semantics) instead of a real number.
An event either sets both directions of an edge (src None) or one direction: the one
leaving src, applied to src's egress interface toward the other end (tc shapes egress).
Rates as maps: `rate_key` names an edge "u-v" (both directions) or a direction "u>v", and
`apply_change` keeps a map {key: Mbps} with, per edge, either its "u-v" entry or its two
direction entries (the model and the analysis read schedules through these).
Events are in the graph's units: real-world for build_graph's graph; on a graph from
testbed.dilation.dilate_graph (factor s) times are multiplied by s and rates divided by s,
and horizon_s is then in emulated seconds too. Pure.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import networkx as nx
import numpy as np

from topologies.graph import wan_edges

RATE_DECIMALS = 3   # Mbps to the kbit/s, the resolution tc/htb takes
# Random schedules need a horizon; a run without duration_s uses this one (real s), and so
# does the model per schedule step (run.py predict)
DEFAULT_HORIZON_S = 3600.0


class BandwidthEvent(NamedTuple):
    t_s: float
    edge: tuple[str, str]   # WAN edge (u, v) with u in the lower-indexed datacenter
    mbps: float
    src: str | None = None  # None: both directions; else only the direction leaving src

    @property
    def direction(self) -> tuple[str, str] | None:
        """(src, dst) of a one-direction event, None for both directions."""
        if self.src is None:
            return None
        u, v = self.edge
        return (u, v) if self.src == u else (v, u)


def random_rates(seed: int, stream: tuple[int, ...], n: int, lo: float, hi: float,
                 integer: bool = False) -> list[float]:
    rng = np.random.default_rng([seed, *stream])
    if integer:
        return [float(x) for x in rng.integers(round(lo), round(hi), size=n, endpoint=True)]
    return [round(float(x), RATE_DECIMALS) for x in rng.uniform(lo, hi, size=n)]


def edge_events(g: nx.Graph, edge: tuple[str, str], horizon_s: float | None) -> list[BandwidthEvent]:
    sched = g.edges[edge]["bandwidth_schedule"]
    if sched is None:
        return []
    if isinstance(sched, list):
        pts = sorted(sched, key=lambda p: p["t_s"])
        return [BandwidthEvent(float(p["t_s"]), edge, float(p["mbps"]), _end_of(g, edge, p.get("from_dc")))
                for p in pts if horizon_s is None or p["t_s"] < horizon_s]
    if horizon_s is None:
        raise ValueError(f"edge {edge[0]}-{edge[1]} has a random bandwidth schedule: give the run's "
                         f"horizon_s (duration) so the redraws can be computed")
    every = float(sched["every_s"])
    n = max(1, math.ceil(horizon_s / every))
    seed = sched.get("seed")
    seed = g.graph.get("seed", 0) if seed is None else seed
    lo, hi, integer = float(sched["min_mbps"]), float(sched["max_mbps"]), bool(sched.get("integer"))
    d = lambda node: g.nodes[node]["dc_index"]
    u, v = edge
    if not sched.get("per_direction"):
        rates = random_rates(seed, (d(u), d(v)), n, lo, hi, integer)
        return [BandwidthEvent(k * every, edge, r) for k, r in enumerate(rates)]
    out = []
    for src, dst in ((u, v), (v, u)):
        rates = random_rates(seed, (d(src), d(dst)), n, lo, hi, integer)
        out += [BandwidthEvent(k * every, edge, r, src) for k, r in enumerate(rates)]
    return out


def _end_of(g: nx.Graph, edge: tuple[str, str], dc: str | None) -> str | None:
    """The end of the edge in datacenter dc (a point's from_dc), None for both directions."""
    if dc is None:
        return None
    for node in edge:
        if g.nodes[node].get("dc") == dc:
            return node
    ends = " and ".join(str(g.nodes[n].get("dc")) for n in edge)
    raise ValueError(f"bandwidth schedule of edge {edge[0]}-{edge[1]}: from_dc {dc!r} is not one of "
                     f"its datacenters ({ends}); name one of them, or leave from_dc out for both directions")


def bandwidth_events(g: nx.Graph, horizon_s: float | None = None) -> list[BandwidthEvent]:
    """All WAN bandwidth changes before horizon_s (needed for random schedules), sorted by
    time, then edge, then direction (both, from the lower, from the higher datacenter), in
    the graph's (possibly dilated) units."""
    s = float(g.graph.get("dilated", 1.0))
    real_horizon = None if horizon_s is None else horizon_s / s
    events = [ev for e in wan_edges(g) for ev in edge_events(g, e, real_horizon)]
    if s != 1.0:
        events = [ev._replace(t_s=ev.t_s * s, mbps=ev.mbps / s) for ev in events]
    d = lambda node: g.nodes[node]["dc_index"]
    return sorted(events, key=lambda ev: (ev.t_s, d(ev.edge[0]), d(ev.edge[1]),
                                          -1 if ev.src is None else d(ev.src)))


def rate_at(g: nx.Graph, events: list[BandwidthEvent], edge: tuple[str, str], t_s: float,
            src: str | None = None) -> float:
    """The rate of the edge's direction leaving src at time t_s: the last event at or before
    t_s that sets it (both directions or that one), else the configured rate. src None: the
    edge's rate, the lower of its two directions when they differ."""
    if src is None:
        return min(rate_at(g, events, edge, t_s, edge[0]), rate_at(g, events, edge, t_s, edge[1]))
    rate = g.edges[edge]["bandwidth_mbps"]
    key = frozenset(edge)
    for ev in events:
        if frozenset(ev.edge) == key and ev.t_s <= t_s and ev.src in (None, src):
            rate = ev.mbps
    return rate


# ---------------------------------------------------------------- rates as {key: Mbps}
def rate_key(edge, src: str | None = None) -> str:
    """ "u-v" for an edge (u, v) (both directions), "src>dst" for the direction leaving src.
    edge may already be a "u-v" string."""
    u, v = edge.split("-") if isinstance(edge, str) else edge
    if src is None:
        return f"{u}-{v}"
    if src not in (u, v):
        raise ValueError(f"{src} is not an end of edge {u}-{v}")
    return f"{u}>{v}" if src == u else f"{v}>{u}"


def apply_change(rates: dict, edge, mbps: float, src: str | None = None) -> None:
    """Apply one change to a map {rate_key: Mbps} that holds, per edge, either "u-v" or both
    directions "u>v" and "v>u": a change of both directions leaves the "u-v" entry alone; a
    change of one direction splits the edge into its two directions first (the other keeps
    the edge's rate). So min(rates.values()) is always the slowest direction of the WAN."""
    u, v = edge.split("-") if isinstance(edge, str) else edge
    both, fwd, rev = f"{u}-{v}", f"{u}>{v}", f"{v}>{u}"
    if src is None:
        rates.pop(fwd, None)
        rates.pop(rev, None)
        rates[both] = float(mbps)
        return
    if both in rates:
        r = rates.pop(both)
        rates.setdefault(fwd, r)
        rates.setdefault(rev, r)
    rates[rate_key((u, v), src)] = float(mbps)
