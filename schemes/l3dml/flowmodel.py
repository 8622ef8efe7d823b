"""Flow-level model of one L3DML iteration (pure): every datacenter's partial sum streams
over the WAN to the global aggregation point (the root), possibly paced and split over
several paths; the model says when each arrives.

    network     the WAN as directed links between gateways (rate bps, one-way delay), from
                the undilated graph (topologies.graph.build_graph) or a WAN-only graph of
                the same shape (gateways with dc_index, edges kind "wan")
    paths       per datacenter up to k loop-free gateway paths to the root, by one-way
                delay (networkx.shortest_simple_paths); the first is the control plane's
                route (control.routes: minimum delay)
    streams     per datacenter d: its volume V_d (the partial sum's aggregation frames),
                the time t_d it starts leaving its gateway, the rate its racks deliver it at
    allocation  per datacenter: the split of V_d over its paths and an optional rate cap
                (the policy's decision; policies.py)
    outcome     fluid.simulate with one flow per (datacenter, path); a subflow arrives at
                the root its path's one-way delay after its last bit left; a datacenter
                arrives when its last subflow does

Each datacenter's stream first crosses its own "lan" link (capacity: the slowest access or
uplink of its workers), so its subflows together never exceed what its racks deliver.
A stream is also held to its slot window (W chunks per longest worker-root round trip, as
the analytic model's window term), but each stream on its own: that the root frees a slot
only when every datacenter's chunk is in (so a fast datacenter cannot run more than W
chunks ahead of the slowest) is not modelled; `slots_peak` says how far ahead they got.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import islice
from typing import Mapping

import networkx as nx
import numpy as np

from control.routes import _weight as route_weight
from schemes import model as M
from schemes.ina.options import InaOptions
from schemes.ina.plan import tree_for
import schemes.l3dml.fluid as fluid
from topologies.graph import hosts_by_dc
from workers.agg_packet import frame_bytes

MAX_PATHS = 3


@dataclass(frozen=True)
class Stream:
    """One datacenter's partial sum on its way to the root."""
    dc: int                             # dc_index
    gateway: str
    bytes: float                        # V_d, frames on the wire
    start_s: float                      # t_d: its first frame leaves the gateway
    lan_bps: float                      # the rate its racks deliver the partial sum at
    paths: tuple[tuple[str, ...], ...]  # gateway paths to the root, shortest delay first
    # the slot window's limit: W chunks per round trip (inf: not window-bound)
    window_bps: float = math.inf


@dataclass(frozen=True)
class Iteration:
    """What the flow model needs of one iteration."""
    wan: nx.DiGraph                     # gateways; edges rate_bps, delay_ms
    root: str                           # the root's gateway
    streams: tuple[Stream, ...]
    down_s: float                       # one-way delay root -> farthest worker (the result)
    chunks: int                         # aggregation slots one iteration uses

    def path_delay_s(self, path) -> float:
        return sum(self.wan.edges[u, v]["delay_ms"] for u, v in zip(path, path[1:])) / 1000.0

    def path_rate_bps(self, path) -> float:
        """The path's bottleneck rate (inf for the root's own, empty path)."""
        return min((self.wan.edges[u, v]["rate_bps"] for u, v in zip(path, path[1:])),
                   default=math.inf)


@dataclass(frozen=True)
class Allocation:
    """A policy's decision for one datacenter: fractions of V_d per candidate path (in the
    order of Stream.paths; they add up to 1) and a cap on the stream's total rate, shared
    by its subflows in proportion to their fractions (None: no cap)."""
    split: tuple[float, ...]
    rate_bps: float | None = None


def route_split(s: Stream) -> tuple[float, ...]:
    """All of the partial sum on the route (path 0): what geo-ina does."""
    return tuple(1.0 if i == 0 else 0.0 for i in range(len(s.paths)))


@dataclass(frozen=True)
class Outcome:
    arrival_s: dict                     # dc -> when its last byte reaches the root
    completion_s: float                 # last arrival + the result's way down
    utilization: dict                   # directed WAN link -> busy fraction of the window
    slots_peak: float                   # most slots held waiting at the root (chunks)

    @property
    def spread_s(self) -> float:
        return max(self.arrival_s.values()) - min(self.arrival_s.values())

    @property
    def last_arrival_s(self) -> float:
        return max(self.arrival_s.values())


# ---------------------------------------------------------------- network
def wan_digraph(graph: nx.Graph) -> nx.DiGraph:
    """The WAN of an undilated graph as directed gateway links, each direction at its own
    rate (schemes.model.Net.rate_bps: direction_mbps when the edge has one)."""
    if graph.graph.get("dilated", 1.0) != 1.0:
        raise ValueError("the flow model takes the real-world graph (build_graph, not dilate_graph)")
    wan, net = nx.DiGraph(), M.Net(graph)
    for n, a in graph.nodes(data=True):
        if a["role"] == "gateway":
            wan.add_node(n, dc_index=a["dc_index"])
    for u, v, a in graph.edges(data=True):
        if a["kind"] != "wan":
            continue
        for x, y in ((u, v), (v, u)):
            wan.add_edge(x, y, rate_bps=net.rate_bps(x, y), delay_ms=a["delay_ms"])
    return wan


def candidate_paths(wan: nx.DiGraph, src: str, root: str, k: int = MAX_PATHS) -> tuple:
    """Up to k loop-free paths src -> root, shortest one-way delay first (the first is the
    control plane's route: the same weight, control.routes)."""
    if not 1 <= k <= MAX_PATHS:
        raise ValueError(f"k = {k} candidate paths: use 1..{MAX_PATHS}")
    if src == root:
        return ((root,),)
    return tuple(tuple(p) for p in islice(nx.shortest_simple_paths(wan, src, root, weight=route_weight), k))


def gateway_of(wan: nx.DiGraph, dc: int) -> str:
    return next(n for n, a in wan.nodes(data=True) if a["dc_index"] == dc)


# ---------------------------------------------------------------- iterations
def build_iteration(wan: nx.DiGraph, root: str, bytes_per_dc: float, start_s: Mapping[int, float],
                    lan_bps: Mapping[int, float], down_s: float, chunks: int,
                    k: int = MAX_PATHS, window_bps: float = math.inf) -> Iteration:
    """An iteration on `wan` where every datacenter sends a partial sum of the same size
    (dense gradients) from its start time (dc -> s)."""
    if root not in wan:
        raise ValueError(f"root {root!r} is not a gateway of the WAN ({sorted(wan)})")
    streams = []
    for dc in sorted(start_s):
        gw = gateway_of(wan, dc)
        streams.append(Stream(dc, gw, float(bytes_per_dc), float(start_s[dc]), float(lan_bps[dc]),
                              candidate_paths(wan, gw, root, k), float(window_bps)))
    return Iteration(wan, root, tuple(streams), float(down_s), int(chunks))


def iteration_for(graph: nx.Graph, scenario, options=None, k: int = MAX_PATHS) -> Iteration:
    """The steady iteration of a geo-ina scenario: geo-ina's tree (schemes/ina/plan.tree_for:
    its root, its k values per frame), V_d = ceil(N / k) frames of frame_bytes(k) per
    datacenter, t_d = the mean over iterations of the datacenter's slowest worker's compute
    (schemes.model.compute) + the longest worker -> gateway delay; the result's way down is
    the longest root -> worker delay; the window geo-ina's plan gives the tree."""
    if options is None:     # the scenario's own options when it runs geo-ina
        options = InaOptions(**(scenario.scheme_options or {})) if scenario.scheme == "geo-ina" \
            else InaOptions()
    o = options
    tree, kv = tree_for("geo-ina", graph, scenario, o)
    root = tree.points[tree.root].switch
    chunks = math.ceil(M.parameters(scenario) / kv)
    net = M.Net(graph)
    wan = wan_digraph(graph)
    lead = leads_s(graph)
    start, lan = {}, {}
    for dc, hs in hosts_by_dc(graph).items():
        gw = gateway_of(wan, dc)
        start[dc] = M.compute(graph, scenario, hs).max_s + lead[dc]
        lan[dc] = min(net.min_rate_bps(h, gw) for h in hs)
    down = max(net.delay(root, h) for hs in hosts_by_dc(graph).values() for h in hs)
    rtt = max(net.rtt(w, root) for w in tree.workers)
    window_bps = tree.window * frame_bytes(kv) * 8 / rtt if rtt > 0 else math.inf
    return build_iteration(wan, root, chunks * frame_bytes(kv), start, lan, down, chunks, k,
                           window_bps)


def leads_s(graph: nx.Graph) -> dict[int, float]:
    """dc -> the longest one-way delay from one of its workers to its gateway (s, real-world
    graph): a stream starts this long after its slowest worker's compute ends."""
    net, wan = M.Net(graph), wan_digraph(graph)
    return {dc: max(net.delay(h, gateway_of(wan, dc)) for h in hs)
            for dc, hs in hosts_by_dc(graph).items()}


# ---------------------------------------------------------------- simulation
def _check(it: Iteration, alloc: Mapping[int, Allocation]) -> None:
    for s in it.streams:
        a = alloc.get(s.dc)
        if a is None:
            raise ValueError(f"no allocation for datacenter {s.dc}: give one per stream "
                             f"({sorted(x.dc for x in it.streams)})")
        if len(a.split) != len(s.paths):
            raise ValueError(f"datacenter {s.dc}: split has {len(a.split)} fraction(s) for "
                             f"{len(s.paths)} candidate path(s): give one per path")
        if any(f < 0 or math.isnan(f) for f in a.split) or not math.isclose(sum(a.split), 1.0, rel_tol=1e-6):
            raise ValueError(f"datacenter {s.dc}: split {a.split} must be fractions >= 0 adding up to 1")
        if a.rate_bps is not None and not a.rate_bps > 0:
            raise ValueError(f"datacenter {s.dc}: rate cap {a.rate_bps!r} bps must be > 0 "
                             "(None for no cap)")


def simulate(it: Iteration, alloc: Mapping[int, Allocation]) -> Outcome:
    """The iteration under an allocation (dc -> Allocation)."""
    _check(it, alloc)
    capacity = {(u, v): a["rate_bps"] for u, v, a in it.wan.edges(data=True)}
    flows, owner = [], []
    for s in it.streams:
        lan = ("lan", s.dc)
        capacity[lan] = s.lan_bps
        a = alloc[s.dc]
        for path, frac in zip(s.paths, a.split):
            if frac <= 0:
                continue
            cap = frac * min(math.inf if a.rate_bps is None else a.rate_bps, s.window_bps)
            flows.append(fluid.Flow((lan,) + tuple(zip(path, path[1:])), frac * s.bytes, s.start_s, cap))
            owner.append((s.dc, path))
    res = fluid.simulate(flows, capacity)
    arrival: dict = {}
    for i, (dc, path) in enumerate(owner):
        arrival[dc] = max(arrival.get(dc, -math.inf), res.finish_s[i] + it.path_delay_s(path))
    first = min(s.start_s for s in it.streams)
    last = max(arrival.values())
    window = max(last - first, 1e-12)
    util = {l: 8 * b / capacity[l] / window for l, b in res.link_bytes.items() if l[0] != "lan"}
    return Outcome(arrival, last + it.down_s, util, _slots_peak(it, res, owner))


def _slots_peak(it: Iteration, res: fluid.FluidResult, owner) -> float:
    """Most chunks the root holds at once: a chunk's slot is taken from its first
    datacenter's arrival until its last's, and every stream sends its chunks in order, so
    at time x the root holds chunks x (max_d F_d(x) - min_d F_d(x)), F_d the fraction of
    d's partial sum arrived. Piecewise linear, so its peak is at a breakpoint."""
    if len(it.streams) < 2 or not res.segments:
        return 0.0
    curves = {s.dc: [] for s in it.streams}
    points = []
    for i, (dc, path) in enumerate(owner):
        ts, bs = fluid.sent_curve(res, i)
        d = it.path_delay_s(path)
        curves[dc].append((np.asarray(ts) + d, np.asarray(bs)))
        points.append(np.asarray(ts) + d)
    if not points:
        return 0.0
    xs = np.unique(np.concatenate(points))
    frac = []
    for s in it.streams:
        got = sum((np.interp(xs, t, b, left=0.0, right=b[-1]) for t, b in curves[s.dc]),
                  np.zeros_like(xs))
        frac.append(got / s.bytes if s.bytes > 0 else np.ones_like(xs))
    frac = np.vstack(frac)
    return float(it.chunks * (frac.max(axis=0) - frac.min(axis=0)).max())
