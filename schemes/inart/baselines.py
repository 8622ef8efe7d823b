"""The baselines InArt's paper compares against, as variants of the same planning functions
(so their plans and d_k come out in the same form as InArt's):

  single-PS INA          one parameter server: plan_inart with K = 1 (ATP/SwitchML-like: the
                         LP still chooses the aggregating switches and paths)
  multi-PS without INA   K parameter servers, no switch aggregates: plan_inart with no
                         aggregating switch (every worker straight to every PS; the LP only
                         spreads the streams over paths)
  INA, shortest paths    each worker's part for PS k follows its shortest path to k and is
                         aggregated at the first switch on it that can take it (else at k);
                         the switch forwards the sum along the rest of that path. No LP.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import networkx as nx
import numpy as np

from schemes.inart.options import InartPlanOptions
from schemes.inart.paths import Rates
from schemes.inart.routing import RoutingPlan, RoutingProblem, SwitchBudget, overfull, plan_of
from schemes.inart.split import InartPlan, plan_inart


def route_shortest(p: RoutingProblem, rng: np.random.Generator,
                   options: InartPlanOptions) -> tuple[None, RoutingPlan]:
    """Phase 2 of the shortest-path baseline (a Router: rng and options are not used)."""
    node = {k: {n: k for n in p.workers} for k in p.servers}
    wpath = {k: {} for k in p.servers}
    spath = {k: {} for k in p.servers}
    for k in p.servers:
        for n in p.workers:
            candidates = p.paths.of(n, k)
            if not candidates:
                raise ValueError(f"worker {n} has no path to parameter server {k} within "
                                 f"{p.paths.max_hops} links: raise scheme_options.max_hops")
            path = candidates[0]
            wpath[k][n] = path
            for i, s in enumerate(path[1:-1], start=1):
                if s not in p.switches:
                    continue
                node[k][n] = s
                if overfull(p, node) is None:
                    wpath[k][n] = path[:i + 1]
                    spath[k].setdefault(s, path[i:])
                    break
                node[k][n] = k
    return None, plan_of("shortest-path", p, node, wpath, spath)


def plan_single_ps_ina(graph: nx.Graph, workers: Sequence[str], server: str,
                       options: InartPlanOptions, rng: np.random.Generator, *,
                       rates: Rates | None = None,
                       switches: Mapping[str, SwitchBudget] | None = None) -> InartPlan:
    return plan_inart(graph, workers, [server], options, rng, rates=rates, switches=switches)


def plan_without_ina(graph: nx.Graph, workers: Sequence[str], servers: Sequence[str],
                     options: InartPlanOptions, rng: np.random.Generator, *,
                     rates: Rates | None = None) -> InartPlan:
    return plan_inart(graph, workers, servers, options, rng, rates=rates, switches={})


def plan_shortest_path_ina(graph: nx.Graph, workers: Sequence[str], servers: Sequence[str],
                           options: InartPlanOptions, rng: np.random.Generator, *,
                           rates: Rates | None = None,
                           switches: Mapping[str, SwitchBudget] | None = None) -> InartPlan:
    return plan_inart(graph, workers, servers, options, rng, rates=rates, switches=switches,
                      router=route_shortest)
