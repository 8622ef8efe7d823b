"""Placement of scheme ring (pure): the ring order, each worker's listen address and its
right neighbour."""
from __future__ import annotations

from schemes.base import Plan, TcpOptions
from topologies.graph import hosts_by_dc

COMMUNICATOR = "schemes.ring.communicator:RingCommunicator"


def ring_order(workers: list[tuple[object, object, str]]) -> list[str]:
    """Ring order of (datacenter key, in-datacenter key, name) triples: datacenters contiguous."""
    return [name for _, _, name in sorted(workers, key=lambda w: (w[0], w[1]))]


def wan_crossings(order: list[str], dc_of: dict) -> int:
    """Ring links (including last -> first) whose ends are in different datacenters."""
    n = len(order)
    return sum(dc_of[order[i]] != dc_of[order[(i + 1) % n]] for i in range(n)) if n > 1 else 0




def plan(graph, scenario, o: TcpOptions) -> Plan:
    by_dc = hosts_by_dc(graph)
    workers = ring_order([(graph.nodes[h]["dc_index"], graph.nodes[h]["worker_index"], h)
                          for hs in by_dc.values() for h in hs])
    n, ip, timeout = len(workers), (lambda h: graph.nodes[h]["ip"]), o.emulated_timeout_s(scenario)
    comm = {w: {"ring_rank": r, "ring_size": n, "listen": [ip(w), o.base_port],
                "right": [ip(workers[(r + 1) % n]), o.base_port], "timeout_s": timeout}
            for r, w in enumerate(workers)}
    dc_of = {h: graph.nodes[h]["dc_index"] for h in workers}
    return Plan(workers, comm, info={"ring_order": workers,
                                     "wan_crossings": wan_crossings(workers, dc_of)})
