"""Where a group of updates is aggregated (pure): MLfabric's placement rule, and the
bandwidths it reads.

A group g of updates (each from worker u, size_u bytes) is routed through the aggregator
that minimizes the group's completion time (seeds.md section 5.3, [P]):

    T(a) = max_{u in g} size_u / bw(u -> a)  +  size / bw(a -> PS)

(every member sends to a at once, then a forwards ONE update of the group's size to the
PS; a member that is the aggregator sends nothing: bw(u -> u) is infinite). The group
goes through a only if T(a) beats sending its members straight to the PS one after the
other, sum_u size_u / bw(u -> PS) (the scheduler serializes transfers into the PS).

bw(x -> y) in bytes per second: the bottleneck of the path's configured rates (the plan's
graph), replaced for worker -> PS by what the server measured on that worker's last
transfers (Bandwidth.measured), so a congested or shared WAN path shows.
"""
from __future__ import annotations

import math
from typing import Callable

import networkx as nx

INF = math.inf


def completion_time(members: list[tuple[str, int]], aggregator: str, ps: str,
                    bw: Callable[[str, str], float]) -> float:
    """T(a) for members [(node, bytes)] through `aggregator` into `ps`."""
    gather = max(size / (INF if u == aggregator else bw(u, aggregator)) for u, size in members)
    return gather + max(size for _, size in members) / (INF if aggregator == ps else bw(aggregator, ps))


def serial_time(members: list[tuple[str, int]], ps: str, bw: Callable[[str, str], float]) -> float:
    """The members sent straight into the PS one after the other."""
    return sum(size / bw(u, ps) for u, size in members)


def choose_aggregator(members: list[tuple[str, int]], candidates: list[str], ps: str,
                      bw: Callable[[str, str], float]) -> tuple[str | None, float]:
    """(the best aggregator, its T) or (None, the serial time) when no candidate beats
    sending straight to the PS. Ties: the first candidate in the order given."""
    best, best_t = None, serial_time(members, ps, bw)
    for a in candidates:
        t = completion_time(members, a, ps, bw)
        if t < best_t:
            best, best_t = a, t
    return best, best_t


def path_bandwidth(graph: nx.Graph, a: str, b: str) -> float:
    """Bytes per second of the slowest link on the (fewest-hop) path a -> b of the graph
    (edge attribute bandwidth_mbps)."""
    if a == b:
        return INF
    path = nx.shortest_path(graph, a, b)
    return min(graph.edges[x, y]["bandwidth_mbps"] for x, y in zip(path, path[1:])) * 1e6 / 8


def bandwidth_table(graph: nx.Graph, nodes: list[str]) -> dict[str, dict[str, float]]:
    """path_bandwidth between every pair of `nodes` (JSON-able: the plan hands it on)."""
    return {a: {b: path_bandwidth(graph, a, b) for b in nodes if b != a} for a in nodes}


class Bandwidth:
    """bw(x -> y): the planned table, with worker -> PS replaced by measurements."""

    def __init__(self, table: dict[str, dict[str, float]], ps: str, alpha: float = 0.5):
        self.table, self.ps, self.alpha = table, ps, alpha
        self.measured: dict[str, float] = {}

    def observe(self, node: str, size: int, seconds: float) -> None:
        """`size` bytes from `node` reached the PS `seconds` after they were granted
        (exponentially weighted, alpha for the newest)."""
        if seconds <= 0 or size <= 0:
            return
        rate = size / seconds
        old = self.measured.get(node)
        self.measured[node] = rate if old is None else self.alpha * rate + (1 - self.alpha) * old

    def __call__(self, a: str, b: str) -> float:
        if a == b:
            return INF
        if b == self.ps and a in self.measured:
            return self.measured[a]
        try:
            return self.table[a][b]
        except KeyError:
            raise ValueError(f"no planned bandwidth from {a} to {b}: the plan's bandwidth table "
                             f"must cover every worker, aggregator and the PS") from None
