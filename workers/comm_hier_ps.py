"""Hierarchical parameter server (Gaia-like): a server per datacenter aggregates its own
workers over the LAN; those servers synchronise through one global server over the WAN;
results flow back down the same way. Only one partial sum per datacenter crosses the WAN
in each direction per iteration, instead of one gradient per worker.

Both levels are `comm_ps.AggregationServer`: a local server is one with an upstream (the
global server) whose rank there is its datacenter's position. Workers use a plain
`comm_ps.PSClient` towards their local server. This module holds the pure placement:
which worker is which child of which server.

Summation order (fixed, so runs are reproducible): inside a datacenter by local rank,
then across datacenters by datacenter order. It differs from flat ps's order, so the two
agree within float32 rounding, not bit for bit (unless there is one datacenter).
"""
from __future__ import annotations

from dataclasses import dataclass


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
