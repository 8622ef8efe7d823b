"""Candidate paths and link rates for InArt's routing LP (pure functions on the topology graph).

The LP (routing.py) chooses among candidate paths, as the group's RRIAR does: every simple
path of at most `max_hops` links (8 in `TopoGenerator.construct_path_set`) between a worker
and a PS, a worker and a switch, a switch and a PS. Hosts forward nothing, so a path may
pass only through switches. On a dense WAN the number of such paths explodes (a full mesh
of 9 datacenters has thousands per pair within 8 hops), so a pair with more than
`path_limit` of them keeps only its `keep` shortest (by hops or by delay: Yen's algorithm
via networkx, never the full enumeration), and the pair is reported as pruned.

Data:
  path    tuple of node ids, source first; a zero-hop path (n,) joins a host to itself
          (a worker on the PS's own host)
  arc     (u, v): one direction of a link; rates are per arc, in Mbps
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Iterator, Literal, Mapping

import networkx as nx

Path = tuple[str, ...]
Arc = tuple[str, str]
Rates = Mapping[Arc, float]

MAX_HOPS = 8          # RRIAR's path sets: TopoGenerator.construct_path_set(max_len=8)
PATH_LIMIT = 64       # more simple paths than this for one pair counts as an explosion
KEEP = 8              # ... and then the pair keeps its KEEP shortest


def is_host(graph: nx.Graph, node: str) -> bool:
    return graph.nodes[node]["role"] == "host"


def link_rates(graph: nx.Graph) -> dict[Arc, float]:
    """Rate of every arc: the graph's links are full duplex at `bandwidth_mbps` each way."""
    out: dict[Arc, float] = {}
    for u, v, a in graph.edges(data=True):
        out[(u, v)] = out[(v, u)] = float(a["bandwidth_mbps"])
    return out


def merge_rates(graph: nx.Graph, base: Rates, changes: Mapping) -> dict[Arc, float]:
    """`base` with the arcs of `changes` replaced. A key (u, v) sets that direction only;
    every key must be an arc of the graph and every rate a number >= 0."""
    out = dict(base)
    for arc, rate in changes.items():
        if not (isinstance(arc, tuple) and len(arc) == 2 and graph.has_edge(*arc)):
            raise ValueError(f"link rate for {arc!r}: not a link of the topology; keys are "
                             f"(from node, to node) pairs of adjacent nodes")
        try:
            value = float(rate)
        except (TypeError, ValueError):
            value = math.nan
        if not value >= 0:
            raise ValueError(f"link rate for {arc[0]}->{arc[1]} must be a number >= 0 Mbps, "
                             f"not {rate!r}")
        out[arc] = value
    return out


def arcs(path: Path) -> tuple[Arc, ...]:
    return tuple(zip(path, path[1:]))


def hops(path: Path) -> int:
    return len(path) - 1


def delay_ms(graph: nx.Graph, path: Path) -> float:
    return sum(graph.edges[u, v]["delay_ms"] for u, v in arcs(path))


def bottleneck_mbps(path: Path, rates: Rates) -> float:
    """The slowest arc of the path (inf for a zero-hop path: nothing limits it)."""
    return min((rates[a] for a in arcs(path)), default=float("inf"))


@dataclass(frozen=True)
class CandidatePaths:
    """Candidate paths per ordered pair (source, destination), shortest first."""
    by_pair: Mapping[tuple[str, str], tuple[Path, ...]]
    pruned: tuple[tuple[str, str], ...] = ()    # pairs cut to their `keep` shortest
    max_hops: int = MAX_HOPS

    def of(self, src: str, dst: str) -> tuple[Path, ...]:
        return self.by_pair.get((src, dst), ())

    def count(self) -> int:
        return sum(len(p) for p in self.by_pair.values())


class _Search:
    """Path search on one graph: transit adjacency (hosts forward nothing) and, per
    destination, hop distances that prune the depth-first search to branches that can still
    reach it within the hop limit (so enumeration costs about the paths it finds)."""

    def __init__(self, graph: nx.Graph):
        self.graph = graph
        self.hosts = {n for n in graph if is_host(graph, n)}
        self.adj = {n: tuple(sorted(graph.neighbors(n))) for n in graph}
        self._dist: dict[str, dict[str, int]] = {}

    def dist(self, dst: str) -> dict[str, int]:
        """Hops from every switch (and dst) to dst, passing through switches only: a lower
        bound on any simple path's length, so pruning by it loses no path."""
        if dst not in self._dist:
            out, frontier = {dst: 0}, [dst]
            while frontier:
                nxt = []
                for u in frontier:
                    for v in self.adj[u]:
                        if v not in out and v not in self.hosts:
                            out[v] = out[u] + 1
                            nxt.append(v)
                frontier = nxt
            self._dist[dst] = out
        return self._dist[dst]

    def paths(self, src: str, dst: str, max_hops: int) -> Iterator[Path]:
        """Simple paths src -> dst of at most max_hops links through switches only, depth
        first, neighbours in sorted order (the same enumeration on every run)."""
        dist = self.dist(dst)
        path, on_path = [src], {src}

        def extend(u: str) -> Iterator[Path]:
            depth = len(path)          # links the path will have after this step
            for v in self.adj[u]:
                if v == dst:
                    yield tuple(path) + (v,)
                    continue
                if v in on_path or v in self.hosts or depth + dist.get(v, max_hops) > max_hops:
                    continue
                path.append(v)
                on_path.add(v)
                yield from extend(v)
                path.pop()
                on_path.discard(v)

        yield from extend(src)

    def shortest(self, src: str, dst: str, max_hops: int, keep: int, key,
                 rank: str) -> tuple[Path, ...]:
        """The `keep` shortest simple paths within max_hops. By hops: iterative deepening to
        the smallest depth that yields keep paths, ranked by the full key. The paths of the
        depth before are all there (fewer than keep); of the last depth's at most 16 * keep
        are enumerated, so among those equal lengths the depth-first order decides. By
        delay: Yen's algorithm (networkx), lazily in delay order, the first keep within
        max_hops among the 16 * keep fastest."""
        if rank == "hops":
            shorter: list[Path] = []
            for depth in range(1, max_hops + 1):
                found = set(shorter) | set(islice(self.paths(src, dst, depth), 16 * keep))
                if len(found) >= keep or depth == max_hops:
                    return tuple(sorted(found, key=key)[:keep])
                shorter = list(found)
            return ()
        view = nx.subgraph_view(self.graph, filter_node=lambda n: n in (src, dst) or n not in self.hosts)
        found = []
        for p in islice(nx.shortest_simple_paths(view, src, dst, weight="delay_ms"), 16 * keep):
            if hops(p) <= max_hops:
                found.append(tuple(p))
                if len(found) == keep:
                    break
        return tuple(found)


def candidate_paths(graph: nx.Graph, pairs: Iterable[tuple[str, str]], *,
                    max_hops: int = MAX_HOPS, path_limit: int = PATH_LIMIT, keep: int = KEEP,
                    rank: Literal["hops", "delay"] = "hops") -> CandidatePaths:
    """Candidate paths for every pair: all simple paths of at most max_hops links, shortest
    first by `rank` (then the other measure, then node ids); a pair with more than
    path_limit of them keeps its `keep` shortest."""
    if max_hops < 1 or keep < 1 or path_limit < keep:
        raise ValueError(f"path search: need max_hops >= 1, keep >= 1 and path_limit >= keep "
                         f"(got {max_hops}, {keep}, {path_limit})")
    search = _Search(graph)
    if rank == "hops":
        key = lambda p: (hops(p), delay_ms(graph, p), p)
    else:
        key = lambda p: (delay_ms(graph, p), hops(p), p)
    by_pair: dict[tuple[str, str], tuple[Path, ...]] = {}
    pruned = []
    for src, dst in dict.fromkeys(pairs):
        for n in (src, dst):
            if n not in graph:
                raise ValueError(f"path search: node {n!r} is not in the topology")
        if src == dst:
            by_pair[(src, dst)] = ((src,),)
            continue
        found = list(islice(search.paths(src, dst, max_hops), path_limit + 1))
        if len(found) > path_limit:
            by_pair[(src, dst)] = search.shortest(src, dst, max_hops, keep, key, rank)
            pruned.append((src, dst))
        else:
            by_pair[(src, dst)] = tuple(sorted(found, key=key))
    return CandidatePaths(by_pair, tuple(pruned), max_hops)


def ingress_mbps(graph: nx.Graph, rates: Rates, server: str, workers: Iterable[str],
                 mode: Literal["access", "max_flow"] = "access") -> float:
    """B_k, the bandwidth into PS `server`: the sum of its access links' rates toward it
    ("access"), or the maximum flow the network can deliver to it from all the other workers
    at once ("max_flow": a narrower uplink or WAN link on the way counts; hosts do not
    forward)."""
    if mode == "access":
        return sum(rates[(v, server)] for v in graph.neighbors(server))
    if mode != "max_flow":
        raise ValueError(f"ingress mode {mode!r}: use 'access' or 'max_flow'")
    sources = [w for w in workers if w != server]
    if not sources:
        return sum(rates[(v, server)] for v in graph.neighbors(server))
    net = nx.DiGraph()
    for (u, v), rate in rates.items():
        if is_host(graph, v) and v != server or is_host(graph, u) and u not in sources:
            continue
        net.add_edge(u, v, capacity=rate)
    src = ("sources",)      # a node id no topology uses
    for w in sources:
        net.add_edge(src, w)    # no capacity attribute: unlimited
    if server not in net:
        return 0.0
    return float(nx.maximum_flow_value(net, src, server))
