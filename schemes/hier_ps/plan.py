"""Hierarchical parameter server (Gaia-like): a server per datacenter aggregates its own
workers over the LAN; those servers synchronise through one global server over the WAN;
results flow back down the same way. Only one partial sum per datacenter crosses the WAN
in each direction per iteration, instead of one gradient per worker.

Both levels are schemes/ps/server.py: a local server is one with an upstream (the global
server) whose rank there is its datacenter's position. Workers use ps's communicator
towards their local server. This module holds the pure placement: which worker is which
child of which server.

Summation order (fixed, so runs are reproducible): inside a datacenter by local rank,
then across datacenters by datacenter order. It differs from flat ps's order, so the two
agree within float32 rounding, not bit for bit (unless there is one datacenter).
"""
from __future__ import annotations

from dataclasses import dataclass

from schemes.base import Plan, datacenter_index
from schemes.hier_ps.options import HierPsOptions
from schemes.ps.plan import need_workers, server
from topologies.graph import hosts_by_dc


@dataclass(frozen=True)
class HierPlan:
    dcs: tuple                      # datacenter keys in aggregation order
    members: dict                   # dc -> tuple of worker ranks (global), in local-rank order
    global_dc: object

    def local_rank(self, worker_rank: int) -> tuple[object, int]:
        """(datacenter, child index at its local server) of a worker."""
        for dc in self.dcs:
            if worker_rank in self.members[dc]:
                return dc, self.members[dc].index(worker_rank)
        raise KeyError(f"worker rank {worker_rank} is in no datacenter of the plan")

    def server_rank(self, dc) -> int:
        """The local server's child index at the global server."""
        return self.dcs.index(dc)


def hier_plan(worker_dcs: list, global_dc=None) -> HierPlan:
    """worker_dcs[r] is the datacenter of worker rank r (any sortable key, e.g. dc_index).
    Datacenters aggregate in sorted order; global_dc defaults to the first one."""
    if not worker_dcs:
        raise ValueError("hier-ps needs at least one worker")
    dcs = tuple(sorted(set(worker_dcs)))
    members = {dc: tuple(r for r, d in enumerate(worker_dcs) if d == dc) for dc in dcs}
    g = dcs[0] if global_dc is None else global_dc
    if g not in dcs:
        raise ValueError(f"global_dc {g!r} has no workers (datacenters with workers: "
                         f"{', '.join(map(str, dcs))})")
    return HierPlan(dcs, members, g)


def expected_sum_order(plan: HierPlan) -> list[list[int]]:
    """The nested order in which hier-ps adds worker gradients (for tests and docs)."""
    return [list(plan.members[dc]) for dc in plan.dcs]


def plan(graph, scenario, o: HierPsOptions) -> Plan:
    """Local servers on each datacenter's first host, the global one beside the local server
    of global_dc; workers in datacenter order."""
    by_dc = hosts_by_dc(graph)
    gdc = datacenter_index(graph, o.global_dc, "global_dc")
    local_host = {dc: hs[0] for dc, hs in by_dc.items()}
    busy = set(local_host.values()) if o.dedicated_servers else set()
    workers = [h for hs in by_dc.values() for h in hs if h not in busy]
    need_workers(workers, "hier-ps")
    hp = hier_plan([graph.nodes[w]["dc_index"] for w in workers], gdc)
    if o.dedicated_servers and any(dc not in hp.members for dc in by_dc):
        raise ValueError("hier-ps with dedicated_servers needs at least 2 hosts per datacenter "
                         "(one server, one worker)")
    ip = lambda h: graph.nodes[h]["ip"]
    timeout = o.emulated_timeout_s(scenario)
    g_host = local_host[gdc]
    servers = [server("global", g_host, ip(g_host), o.base_port, len(hp.dcs), timeout)]
    comm = {}
    for dc in hp.dcs:
        port = o.base_port + 1 + hp.server_rank(dc)
        servers.append(server(f"local{dc}", local_host[dc], ip(local_host[dc]), port,
                              len(hp.members[dc]), timeout, f"{ip(g_host)}:{o.base_port}",
                              hp.server_rank(dc)))
        for r in hp.members[dc]:
            comm[workers[r]] = {"servers": [[ip(local_host[dc]), port]],
                                "child_rank": hp.local_rank(r)[1], "timeout_s": timeout}
    return Plan(workers, comm, servers, info={"global_host": g_host})
