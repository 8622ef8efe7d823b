"""Time-varying WAN bandwidth: schedules -> a sorted list of (t_s, edge, mbps) events.

Two kinds, per WAN edge or for all of them (edge attribute `bandwidth_schedule`, set by
build_graph from the scenario):
- explicit: [{t_s, mbps}, ...]: at t_s the edge's rate becomes mbps; before the first
  point the edge has its configured bandwidth_mbps;
- random {min_mbps, max_mbps, every_s, seed?}: as in NetStorm's emulation, the rate is
  redrawn uniformly in [min_mbps, max_mbps] at t = 0, every_s, 2*every_s, ... Each edge
  has its own stream, seeded by (seed, datacenter indices of the edge), so adding an edge
  does not change the draws of the others and every run with the same seed is identical.
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


def random_rates(seed: int, stream: tuple[int, ...], n: int, lo: float, hi: float) -> list[float]:
    rng = np.random.default_rng([seed, *stream])
    return [round(float(x), RATE_DECIMALS) for x in rng.uniform(lo, hi, size=n)]


def edge_events(g: nx.Graph, edge: tuple[str, str], horizon_s: float | None) -> list[BandwidthEvent]:
    sched = g.edges[edge]["bandwidth_schedule"]
    if sched is None:
        return []
    if isinstance(sched, list):
        pts = sorted(sched, key=lambda p: p["t_s"])
        return [BandwidthEvent(float(p["t_s"]), edge, float(p["mbps"])) for p in pts
                if horizon_s is None or p["t_s"] < horizon_s]
    if horizon_s is None:
        raise ValueError(f"edge {edge[0]}-{edge[1]} has a random bandwidth schedule: give the run's "
                         f"horizon_s (duration) so the redraws can be computed")
    every = float(sched["every_s"])
    n = max(1, math.ceil(horizon_s / every))
    seed = sched.get("seed")
    seed = g.graph.get("seed", 0) if seed is None else seed
    stream = (g.nodes[edge[0]]["dc_index"], g.nodes[edge[1]]["dc_index"])
    rates = random_rates(seed, stream, n, float(sched["min_mbps"]), float(sched["max_mbps"]))
    return [BandwidthEvent(k * every, edge, r) for k, r in enumerate(rates)]


def bandwidth_events(g: nx.Graph, horizon_s: float | None = None) -> list[BandwidthEvent]:
    """All WAN bandwidth changes before horizon_s (needed for random schedules), sorted by
    time then edge, in the graph's (possibly dilated) units."""
    s = float(g.graph.get("dilated", 1.0))
    real_horizon = None if horizon_s is None else horizon_s / s
    events = [ev for e in wan_edges(g) for ev in edge_events(g, e, real_horizon)]
    if s != 1.0:
        events = [BandwidthEvent(ev.t_s * s, ev.edge, ev.mbps / s) for ev in events]
    return sorted(events, key=lambda ev: (ev.t_s, g.nodes[ev.edge[0]]["dc_index"],
                                          g.nodes[ev.edge[1]]["dc_index"]))


def rate_at(g: nx.Graph, events: list[BandwidthEvent], edge: tuple[str, str], t_s: float) -> float:
    """The edge's rate at time t_s: the last event at or before t_s, else its configured rate."""
    rate = g.edges[edge]["bandwidth_mbps"]
    key = frozenset(edge)
    for ev in events:
        if frozenset(ev.edge) == key and ev.t_s <= t_s:
            rate = ev.mbps
    return rate
