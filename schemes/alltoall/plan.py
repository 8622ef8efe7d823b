"""Placement of alltoall (pure): every host a worker, ranks in datacenter order, each
listening on base_port."""
from __future__ import annotations

from schemes.base import Plan, TcpOptions
from topologies.graph import hosts

COMMUNICATOR = "schemes.alltoall.communicator:AllToAllCommunicator"


def plan(graph, scenario, o: TcpOptions) -> Plan:
    workers = hosts(graph)
    peers = [[graph.nodes[w]["ip"], o.base_port] for w in workers]
    timeout = o.emulated_timeout_s(scenario)
    return Plan(workers, {w: {"rank": r, "peers": peers, "timeout_s": timeout}
                          for r, w in enumerate(workers)})
