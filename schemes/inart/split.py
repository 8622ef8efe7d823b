"""Phase 1 of InArt: the model's split over K parameter servers, and the phase 1 <-> phase 2
iteration (pure functions; the rounding's generator comes from the caller).

The split. PS k receives, per iteration, its share alpha_k of the model (M bytes) once per
stream that reaches it after aggregation (d_k streams), all through its ingress of bandwidth
B_k, so it is busy T_k = alpha_k M d_k / B_k. The PSs receive in parallel; the iteration's
communication ends with the slowest:

    minimise  T(alpha) = max_k alpha_k M d_k / B_k   subject to  sum_k alpha_k = 1, alpha >= 0.

At the optimum every T_k is equal (were one below the maximum, moving share to it would
lower the maximum), so alpha_k = T B_k / (M d_k), and the constraint gives

    alpha_k = (B_k / d_k) / sum_j (B_j / d_j),     T* = M / sum_j (B_j / d_j).

The same split is the Lagrange-multiplier solution the paper names for the smooth objective
"mean time a parameter waits at its PS", F(alpha) = sum_k alpha_k T_k = sum_k M d_k alpha_k^2 / B_k:
L = F - lambda (sum_k alpha_k - 1); dL/dalpha_k = 2 M d_k alpha_k / B_k - lambda = 0 gives
alpha_k = lambda B_k / (2 M d_k), proportional to B_k / d_k; sum alpha = 1 fixes
lambda = 2M / sum_j (B_j / d_j). F is a convex quadratic, so this stationary point is its
minimum, and it is >= 0 without inequality multipliers. (seeds.md 3.3's smooth form,
sum (alpha_k M d_k)^2 / (2 B_k), would give alpha_k ~ B_k / d_k^2 instead: not used.)

The iteration. d_k depends on phase 2's routing, which depends on alpha (the LP weighs PS
k's streams by alpha_k and they carry alpha_k of the demand). Start from no aggregation
(d_k = the workers not on k's host), split, route, count d_k, split again; stop when phase
1's answer differs from the split routed by no more than `tolerance` in any share, or after
`rounds` routings. The next round routes with a step towards that answer,
(1 - step) alpha + step alpha': more share makes a PS's streams weigh more in the LP, so it
gets more aggregation, fewer streams, and phase 1 then gives it still more share; the full
step (step = 1) can swing back and forth (0.80, 0.67, 0.77, 0.71, ... on a 2-PS case), half
a step settles in 2-3 rounds. d_k for steering is the
LP's relaxed count by default (options.streams_from): the rounded plan's jumps with the draws
(on geo-5dc the split still swung by 0.1 after 6 rounds), the relaxed one moves smoothly.
The result is the round whose rounded plan needs the least ingress time, with phase 1's
split for that plan's own (integer) d_k: what the data path will see.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import networkx as nx
import numpy as np

from schemes.inart.options import InartPlanOptions
from schemes.inart.paths import Rates, ingress_mbps, link_rates
from schemes.inart.routing import (LpSolution, RoutingPlan, RoutingProblem, SwitchBudget, route,
                                   routing_problem)

Router = Callable[[RoutingProblem, np.random.Generator, InartPlanOptions],
                  tuple[LpSolution | None, RoutingPlan]]


def split_shares(ingress: Sequence[float], streams: Sequence[float]) -> tuple[float, ...]:
    """alpha_k = (B_k / d_k) / sum_j (B_j / d_j) (module docstring). d_k below 1 counts as 1:
    a PS fed only by the worker on its own host still merges, and the split must stay finite."""
    if len(ingress) != len(streams) or not ingress:
        raise ValueError(f"split: {len(ingress)} ingress rates for {len(streams)} stream counts")
    for b in ingress:
        if not (b > 0 and math.isfinite(b)):
            raise ValueError(f"split: every PS needs a finite ingress bandwidth > 0, got {list(ingress)}")
    for d in streams:
        if not d >= 0:
            raise ValueError(f"split: stream counts must be >= 0, got {list(streams)}")
    speed = [b / max(d, 1.0) for b, d in zip(ingress, streams)]
    total = sum(speed)
    return tuple(s / total for s in speed)


def split_time(ingress: Sequence[float], streams: Sequence[float]) -> float:
    """T* / M = 1 / sum_k (B_k / d_k): seconds per megabit of model (B in Mbps) the optimal
    split needs at the PSs' ingress (module docstring; d_k below 1 counts as 1)."""
    return 1.0 / sum(b / max(d, 1.0) for b, d in zip(ingress, streams))


def value_ranges(shares: Sequence[float], n: int) -> tuple[tuple[int, int], ...]:
    """Contiguous [lo, hi) ranges of a tensor of n values, PS k's of size ~ alpha_k n, in PS
    order, covering 0..n exactly. Rounding by largest remainder: each PS gets floor(alpha_k n),
    the values left over (fewer than K) go one each to the largest fractional parts (ties:
    the lower k). So every size is floor or ceil of alpha_k n and a share of 0 gets nothing."""
    if n < 0:
        raise ValueError(f"value ranges: the tensor size must be >= 0, got {n}")
    if not shares or any(not s >= 0 for s in shares) or sum(shares) <= 0:
        raise ValueError(f"value ranges: shares must be >= 0 with a positive sum, got {list(shares)}")
    total = sum(shares)
    exact = [s / total * n for s in shares]
    sizes = [math.floor(q) for q in exact]
    left = n - sum(sizes)
    for k in sorted(range(len(shares)), key=lambda k: (-(exact[k] - sizes[k]), k))[:left]:
        sizes[k] += 1
    out, lo = [], 0
    for size in sizes:
        out.append((lo, lo + size))
        lo += size
    return tuple(out)


@dataclass(frozen=True)
class Round:
    """One phase 2 routing and phase 1's answer to it."""
    shares: tuple[float, ...]           # the split phase 2 routed with
    streams: tuple[float, ...]          # d_k that routing gives (options.streams_from)
    next_shares: tuple[float, ...]      # the split for those d_k
    change: float                       # max_k |next_shares - shares|
    plan: RoutingPlan
    solution: LpSolution | None = None  # None: a router without LP (baselines.shortest-path)

    def to_json(self) -> dict:
        return {"shares": list(self.shares), "streams": list(self.streams),
                "plan_streams": self.plan.streams(),
                "next_shares": list(self.next_shares), "change": self.change,
                "plan": self.plan.to_json(),
                "lp": self.solution.to_json() if self.solution is not None else None}


@dataclass(frozen=True)
class InartPlan:
    """The history of the iteration and its result: the round whose rounded plan needs the
    least time at the PSs' ingress (split_time of its d_k; ties: the later round), with
    phase 1's split for that plan's d_k. When the iteration converged that is, up to the
    tolerance, the last round."""
    workers: tuple[str, ...]
    servers: tuple[str, ...]
    ingress_mbps: tuple[float, ...]     # B_k
    initial_streams: tuple[float, ...]  # d_k without aggregation (the first split's)
    rounds: tuple[Round, ...]
    converged: bool
    rates: Mapping = field(default_factory=dict, repr=False)   # what it was planned with
    switches: Mapping[str, SwitchBudget] | None = field(default=None, repr=False)
    router: Router = field(default=route, repr=False, compare=False)

    @property
    def chosen(self) -> int:
        """Index of the result's round."""
        times = [self.time_per_mb(r) for r in self.rounds]
        return max(i for i, t in enumerate(times) if t <= min(times) * (1 + 1e-12))

    def time_per_mb(self, r: Round) -> float:
        """split_time of round r's rounded plan."""
        d = r.plan.streams()
        return split_time(self.ingress_mbps, [d[k] for k in self.servers])

    @property
    def shares(self) -> tuple[float, ...]:
        d = self.rounds[self.chosen].plan.streams()
        return split_shares(self.ingress_mbps, [d[k] for k in self.servers])

    @property
    def routing(self) -> RoutingPlan:
        return self.rounds[self.chosen].plan.with_shares(self.shares)

    def value_ranges(self, n: int) -> tuple[tuple[int, int], ...]:
        return value_ranges(self.shares, n)

    def to_json(self) -> dict:
        return {"workers": list(self.workers), "servers": list(self.servers),
                "ingress_mbps": list(self.ingress_mbps),
                "initial_streams": list(self.initial_streams), "shares": list(self.shares),
                "converged": self.converged, "chosen_round": self.chosen,
                "time_per_mb": [self.time_per_mb(r) for r in self.rounds],
                "rounds": [r.to_json() for r in self.rounds]}


def plan_inart(graph: nx.Graph, workers: Sequence[str], servers: Sequence[str],
               options: InartPlanOptions, rng: np.random.Generator, *,
               rates: Rates | None = None, switches: Mapping[str, SwitchBudget] | None = None,
               router: Router = route) -> InartPlan:
    """Phase 1 and phase 2 in turn (module docstring). `switches` overrides which switches
    aggregate and their budgets (routing.aggregation_switches from the options otherwise; {}:
    none), `rates` the graph's link rates (Mbps per arc), `router` phase 2 itself."""
    rates = dict(link_rates(graph) if rates is None else rates)
    workers, servers = tuple(workers), tuple(servers)
    ingress = tuple(ingress_mbps(graph, rates, k, workers, options.ingress) for k in servers)
    for k, b in zip(servers, ingress):
        if not b > 0:
            raise ValueError(f"parameter server {k}: no ingress bandwidth ({options.ingress}); "
                             f"check the rates of its links")
    initial = tuple(float(sum(1 for n in workers if n != k)) for k in servers)
    shares = split_shares(ingress, initial)
    rounds: list[Round] = []
    paths = None
    converged = False
    for _ in range(options.rounds):
        problem = routing_problem(graph, workers, servers, shares, options, rates, switches, paths)
        paths = problem.paths
        solution, plan = router(problem, rng, options)
        if options.streams_from != "rounded" and solution is not None:
            by = solution.streams if options.streams_from == "relaxed" else solution.expected_streams
            streams = tuple(float(by[k]) for k in servers)
        else:
            d = plan.streams()
            streams = tuple(float(d[k]) for k in servers)
        nxt = split_shares(ingress, streams)
        change = max(abs(a - b) for a, b in zip(nxt, shares))
        rounds.append(Round(shares, streams, nxt, change, plan, solution))
        if change <= options.tolerance:
            converged = True
            break
        step = options.step
        shares = tuple((1 - step) * a + step * b for a, b in zip(shares, nxt))
        shares = tuple(a / sum(shares) for a in shares)
    return InartPlan(workers, servers, ingress, initial, tuple(rounds), converged, rates,
                     None if switches is None else dict(switches), router)
