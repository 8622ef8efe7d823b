"""Re-planning hook: given new link rates (measured, or a bandwidth schedule's next step),
must InArt's plan change? And if so, the new plan (pure; the rounding's generator comes from
the caller).

The rule (this testbed's; the paper says only that InArt accommodates traffic dynamics): the
plan must change when the bottleneck of any path it uses (a worker's path to its aggregation
node, a switch's path to its PS) moved by more than `threshold` relative to the bottleneck
at planning time. Drift is measured from the plan, not from the previous check, so slow
drift is caught too. Rates of links the plan does not use do not trigger a re-plan.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import networkx as nx
import numpy as np

from schemes.inart.options import InartPlanOptions
from schemes.inart.paths import Path, Rates, bottleneck_mbps, merge_rates
from schemes.inart.routing import RoutingPlan
from schemes.inart.split import InartPlan, plan_inart


@dataclass(frozen=True)
class PathChange:
    server: str
    path: Path
    planned_mbps: float
    now_mbps: float

    @property
    def change(self) -> float:
        """|now - planned| / planned (inf when a path planned at 0 Mbps got any rate)."""
        if self.planned_mbps > 0:
            return abs(self.now_mbps - self.planned_mbps) / self.planned_mbps
        return 0.0 if self.now_mbps == 0 else math.inf


@dataclass(frozen=True)
class ReplanDecision:
    must_replan: bool
    threshold: float
    moved: tuple[PathChange, ...]       # used paths whose bottleneck moved by more

    def to_json(self) -> dict:
        return {"must_replan": self.must_replan, "threshold": self.threshold,
                "moved": [{"server": c.server, "path": list(c.path), "planned_mbps": c.planned_mbps,
                           "now_mbps": c.now_mbps} for c in self.moved]}


def bottleneck_moves(plan: RoutingPlan, rates: Rates, threshold: float) -> ReplanDecision:
    """Which used paths' bottlenecks moved by more than `threshold` under `rates`."""
    if not threshold >= 0:
        raise ValueError(f"replan_threshold must be >= 0, got {threshold!r}")
    moved, seen = [], set()
    for server, path in plan.paths():
        if path in seen:
            continue
        seen.add(path)
        c = PathChange(server, path, plan.bottlenecks[path], bottleneck_mbps(path, rates))
        if c.change > threshold:
            moved.append(c)
    return ReplanDecision(bool(moved), threshold, tuple(moved))


def replan(graph: nx.Graph, previous: InartPlan, changes: Mapping, options: InartPlanOptions,
           rng: np.random.Generator) -> tuple[ReplanDecision, InartPlan]:
    """The decision for the previous plan's rates updated by `changes` ({(u, v): Mbps}, one
    direction per key); the new plan (same workers, PSs, switches, router) if it must
    change, else `previous` itself."""
    rates = merge_rates(graph, previous.rates, changes)
    decision = bottleneck_moves(previous.routing, rates, options.replan_threshold)
    if not decision.must_replan:
        return decision, previous
    return decision, plan_inart(graph, previous.workers, previous.servers, options, rng,
                                rates=rates, switches=previous.switches, router=previous.router)
