"""Phase 2 of InArt: for every PS, where each worker's stream is aggregated and along which
paths, as a linear program relaxed and randomized-rounded (pure functions; the rounding draws
from a numpy Generator the caller seeds).

The formulation is the group's RRIAR (Fangjin98/distributed-training-INA @19c6836,
src/routing/algs/RRIAR.py) extended to K parameter servers sharing the links, as seeds.md
3.3 proposes. With workers n, PSs k (share alpha_k of the model), aggregating switches s and
candidate paths p (paths.py), all variables in [0, 1]:

  x_ps[k,n]   worker n sends its part for PS k straight to k
  x_s[k,n,s]  worker n's part for PS k is aggregated at switch s
  y[k,s]      switch s aggregates for PS k (and sends one stream to k)
  eps[k,p]    PS k's stream uses path p (worker->PS, worker->switch or switch->PS)

  minimise    sum_k w_k (sum_n x_ps[k,n] + sum_s y[k,s])           objective "arriving"
              sum_k w_k  sum_n x_ps[k,n]                            objective "direct" (RRIAR)
              (w_k = alpha_k, or alpha_k / B_k; a worker on k's own host does not count:
              its stream never crosses k's ingress)
  subject to  x_ps[k,n] + sum_s x_s[k,n,s] = 1                     one aggregation point
              x_s[k,n,s] <= y[k,s]
              sum_{p: n->k} eps = x_ps,  sum_{p: n->s} eps = x_s,  sum_{p: s->k} eps = y
              sum_n x_s[k,n,s] <= fan_in * y[k,s]                   the switch's bitmap
              sum_k y[k,s] <= points_s                              slots / window
              sum_k sum_n x_s[k,n,s] <= budget_s   ("inputs"), or
              sum_k (sum_n x_s[k,n,s] - y[k,s]) <= budget_s   ("saved": RRIAR's V[s])
              sum_k alpha_k D sum_{p through arc a} eps[k,p] <= rate_a      every arc a

D is the rate of one worker's whole gradient (demand_mbps): PS k's streams carry alpha_k D.
When the links cannot carry that, "elastic" capacity first finds the smallest factor theta
by which every rate must grow (one more LP) and plans with rates x theta (the plan then
holds at D / theta); "strict" refuses. Among optimal solutions a second LP takes the one
with the fewest stream-hops (prefer_short_paths), so ties do not depend on the solver.

Rounding (RRIAR's _random_rounding): per PS and worker, draw the aggregation node from
(x_ps, x_s[.]) and a path with probability eps / x; for every switch drawn at least once,
a switch->PS path with probability eps / y. A draw that overfills a switch (fan-in, points,
budget) is repaired by sending the workers with the smallest x_s straight to the PS.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import networkx as nx
import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from schemes.inart.options import InartPlanOptions
from schemes.inart.paths import (Arc, CandidatePaths, Path, Rates, arcs, candidate_paths, hops,
                                 ingress_mbps, is_host, link_rates)

ZERO = 1e-9           # LP values below this are zero (HiGHS' feasibility tolerance is 1e-7)


# ---- the problem -------------------------------------------------------------------------

@dataclass(frozen=True)
class SwitchBudget:
    """What one switch can aggregate: `points` aggregation points (one per PS it serves:
    slots // window), `fan_in` children per point, and optionally a budget in streams."""
    points: int
    fan_in: int
    streams: float | None = None


@dataclass(frozen=True)
class RoutingProblem:
    workers: tuple[str, ...]
    servers: tuple[str, ...]
    shares: tuple[float, ...]                  # alpha_k, summing to 1
    weights: tuple[float, ...]                 # objective weight of PS k's streams
    switches: Mapping[str, SwitchBudget]       # the switches that may aggregate
    rates: Mapping[Arc, float]                 # Mbps per arc
    paths: CandidatePaths
    demand_mbps: float                         # one worker's whole gradient
    objective: str = "arriving"
    budget_counts: str = "inputs"
    capacity: str = "elastic"
    prefer_short_paths: bool = True

    def demand(self, k: int) -> float:
        """Rate of one stream to PS k (Mbps)."""
        return self.shares[k] * self.demand_mbps

    def remote(self, worker: str, server: str) -> bool:
        """Does worker's stream to server cross the network (not the server's own host)?"""
        return worker != server


def aggregation_switches(graph: nx.Graph, options: InartPlanOptions) -> dict[str, SwitchBudget]:
    """Every switch options.aggregate_at allows, with the options' budget."""
    budget = SwitchBudget(options.slots // options.window, options.fan_in, options.switch_streams)
    if budget.points < 1:
        raise ValueError(f"scheme_options.window: {options.window} slots per aggregation point "
                         f"do not fit the switch's {options.slots}; lower window")
    return {n: budget for n, a in graph.nodes(data=True) if a["role"] != "host"
            and options.aggregate_at in ("all", a["role"])}


def _check_hosts(graph: nx.Graph, nodes: Sequence[str], what: str) -> tuple[str, ...]:
    if not nodes:
        raise ValueError(f"{what}: give at least one host")
    if len(set(nodes)) != len(nodes):
        raise ValueError(f"{what}: {list(nodes)} names a host twice")
    for n in nodes:
        if n not in graph or not is_host(graph, n):
            raise ValueError(f"{what}: {n!r} is not a host of the topology")
    return tuple(nodes)


def check_shares(shares: Sequence[float], servers: Sequence[str]) -> tuple[float, ...]:
    if len(shares) != len(servers):
        raise ValueError(f"shares: {len(shares)} values for {len(servers)} parameter servers")
    if any(not (s >= 0) for s in shares) or abs(sum(shares) - 1) > 1e-9:
        raise ValueError(f"shares: {list(shares)} must be numbers >= 0 summing to 1")
    return tuple(float(s) for s in shares)


def default_demand_mbps(graph: nx.Graph, rates: Rates, workers: Sequence[str]) -> float:
    """The slowest worker's access rate: the most one worker can push."""
    return min(sum(rates[(w, v)] for v in graph.neighbors(w)) for w in workers)


def routing_problem(graph: nx.Graph, workers: Sequence[str], servers: Sequence[str],
                    shares: Sequence[float], options: InartPlanOptions,
                    rates: Rates | None = None,
                    switches: Mapping[str, SwitchBudget] | None = None,
                    paths: CandidatePaths | None = None) -> RoutingProblem:
    """The LP's inputs from the graph: switches from options unless given (a switch absent
    from `switches` does not aggregate), rates from the graph unless given, candidate paths
    (paths.candidate_paths) unless given."""
    workers = _check_hosts(graph, workers, "workers")
    servers = _check_hosts(graph, servers, "parameter servers")
    shares = check_shares(shares, servers)
    rates = dict(link_rates(graph) if rates is None else rates)
    switches = dict(aggregation_switches(graph, options) if switches is None else switches)
    for s in switches:
        if s not in graph or is_host(graph, s):
            raise ValueError(f"aggregation switches: {s!r} is not a switch of the topology")
    if paths is None:
        pairs = [(n, k) for n in workers for k in servers] + \
                [(n, s) for n in workers for s in switches] + \
                [(s, k) for s in switches for k in servers]
        paths = candidate_paths(graph, pairs, max_hops=options.max_hops,
                                path_limit=options.path_limit, keep=options.keep_paths,
                                rank=options.path_rank)
    per_server = sum(len(paths.of(n, k)) for n in workers for k in servers) + \
        len(servers) * sum(len(paths.of(n, s)) for n in workers for s in switches) + \
        sum(len(paths.of(s, k)) for s in switches for k in servers)
    if per_server > options.max_lp_paths:
        raise ValueError(f"scheme_options.max_lp_paths: the routing LP would have {per_server:,} "
                         f"path variables (more than {options.max_lp_paths:,}); lower max_hops "
                         f"or keep_paths, or name fewer aggregating switches (aggregate_at)")
    demand = options.demand_mbps or default_demand_mbps(graph, rates, workers)
    if not demand > 0:
        raise ValueError("demand_mbps: the workers' access links have rate 0; set "
                         "scheme_options.demand_mbps")
    if options.server_weight == "share":
        weights = shares
    else:
        ingress = [ingress_mbps(graph, rates, k, workers, options.ingress) for k in servers]
        if min(ingress) <= 0:
            raise ValueError(f"server_weight ingress_time: PS {servers[ingress.index(min(ingress))]} "
                             f"has no ingress bandwidth; check its links' rates")
        weights = tuple(a / b for a, b in zip(shares, ingress))
    top = max(weights)
    weights = tuple(w / top for w in weights) if top > 0 else weights
    return RoutingProblem(workers, servers, shares, tuple(weights), switches, rates, paths,
                          float(demand), options.objective, options.budget_counts,
                          options.capacity, options.prefer_short_paths)


# ---- the LP ------------------------------------------------------------------------------

class _Columns:
    """Variable keys -> column numbers: ("x_ps", k, n), ("x_s", k, n, s), ("y", k, s),
    ("eps", k, path), ("theta",)."""

    def __init__(self):
        self.index: dict[tuple, int] = {}

    def add(self, key: tuple) -> int:
        return self.index.setdefault(key, len(self.index))

    def __contains__(self, key: tuple) -> bool:
        return key in self.index

    def __getitem__(self, key: tuple) -> int:
        return self.index[key]

    def __len__(self) -> int:
        return len(self.index)


class _Rows:
    """Sparse rows: coefficients as {column: value}, with a right-hand side."""

    def __init__(self):
        self.data: list[float] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.rhs: list[float] = []

    def add(self, coefs: Mapping[int, float], rhs: float) -> None:
        r = len(self.rhs)
        for c, v in coefs.items():
            self.rows.append(r)
            self.cols.append(c)
            self.data.append(v)
        self.rhs.append(rhs)

    def matrix(self, n_cols: int):
        if not self.rhs:
            return None, None
        return coo_matrix((self.data, (self.rows, self.cols)), shape=(len(self.rhs), n_cols)).tocsr(), \
            np.asarray(self.rhs)


@dataclass
class _Model:
    cols: _Columns
    eq: _Rows
    ub: _Rows
    links: dict[Arc, dict[int, float]]         # arc -> {eps column: Mbps per unit}
    primary: dict[int, float]
    stream_hops: dict[int, float]


def _build(p: RoutingProblem) -> _Model:
    cols, eq, ub = _Columns(), _Rows(), _Rows()
    links: dict[Arc, dict[int, float]] = {}
    primary: dict[int, float] = {}
    stream_hops: dict[int, float] = {}

    def flows(k: int, paths: Sequence[Path], var: int) -> None:
        """eps over `paths` sum to the variable `var`; each path loads its arcs."""
        coefs = {var: -1.0}
        for path in paths:
            e = cols.add(("eps", k, path))
            coefs[e] = 1.0
            stream_hops[e] = float(hops(path))
            for a in arcs(path):
                links.setdefault(a, {})[e] = p.demand(k)
        eq.add(coefs, 0.0)

    for k, server in enumerate(p.servers):
        w = p.weights[k]
        for n in p.workers:
            one = {}
            direct = p.paths.of(n, server)
            if direct:
                x = cols.add(("x_ps", k, n))
                primary[x] = w if p.remote(n, server) else 0.0
                one[x] = 1.0
                flows(k, direct, x)
            for s in p.switches:
                to_s, s_to_k = p.paths.of(n, s), p.paths.of(s, server)
                if not to_s or not s_to_k:
                    continue
                x = cols.add(("x_s", k, n, s))
                one[x] = 1.0
                flows(k, to_s, x)
            if not one:
                raise ValueError(f"worker {n} cannot reach parameter server {server} within "
                                 f"{p.paths.max_hops} links, directly or through an aggregating "
                                 f"switch: raise scheme_options.max_hops or check the topology")
            eq.add(one, 1.0)
        for s, budget in p.switches.items():
            kids = [cols[("x_s", k, n, s)] for n in p.workers if ("x_s", k, n, s) in cols]
            if not kids:
                continue
            y = cols.add(("y", k, s))
            primary[y] = w if p.objective == "arriving" else 0.0
            flows(k, p.paths.of(s, server), y)
            for x in kids:
                ub.add({x: 1.0, y: -1.0}, 0.0)
            ub.add({**{x: 1.0 for x in kids}, y: -float(budget.fan_in)}, 0.0)
    for s, budget in p.switches.items():
        ys = [cols[("y", k, s)] for k in range(len(p.servers)) if ("y", k, s) in cols]
        if not ys:
            continue
        ub.add({y: 1.0 for y in ys}, float(budget.points))
        if budget.streams is not None:
            coefs: dict[int, float] = {}
            for k in range(len(p.servers)):
                for n in p.workers:
                    if ("x_s", k, n, s) in cols:
                        coefs[cols[("x_s", k, n, s)]] = 1.0
                if p.budget_counts == "saved" and ("y", k, s) in cols:
                    coefs[cols[("y", k, s)]] = -1.0
            ub.add(coefs, float(budget.streams))
    return _Model(cols, eq, ub, links, primary, stream_hops)


def _solve(model: _Model, rates: Rates, objective: Mapping[int, float], theta: float | None,
           extra: Sequence[tuple[Mapping[int, float], float]] = ()):
    """One HiGHS solve. theta=None: theta is a variable (minimised: the elastic pre-solve);
    else every link row is load / rate <= theta."""
    n = len(model.cols) + (1 if theta is None else 0)
    ub = _Rows()
    ub.data, ub.rows, ub.cols, ub.rhs = (list(model.ub.data), list(model.ub.rows),
                                         list(model.ub.cols), list(model.ub.rhs))
    for a, coefs in model.links.items():
        rate = rates[a]
        if rate > 0:
            row = {c: v / rate for c, v in coefs.items()}
            if theta is None:
                row[n - 1] = -1.0
            ub.add(row, 0.0 if theta is None else theta)
        else:
            ub.add(dict(coefs), 0.0)       # a link at rate 0 carries nothing
    for coefs, rhs in extra:
        ub.add(coefs, rhs)
    c = np.zeros(n)
    for col, v in objective.items():
        c[col] = v
    bounds = [(0.0, 1.0)] * len(model.cols) + ([(0.0, None)] if theta is None else [])
    A_ub, b_ub = ub.matrix(n)
    A_eq, b_eq = model.eq.matrix(n)
    return linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")


def _fail(res, what: str) -> ValueError:
    return ValueError(f"routing LP ({what}): HiGHS says {res.message.strip()}; report it with "
                      f"the scenario (a solver failure, not a property of the topology)")


@dataclass(frozen=True)
class LpSolution:
    """The LP relaxation's optimum, keyed by node names (only values above ZERO kept)."""
    servers: tuple[str, ...]
    workers: tuple[str, ...]
    objective: float                                    # the primary objective's value
    x_ps: Mapping[str, Mapping[str, float]]             # server -> worker -> x
    x_s: Mapping[str, Mapping[str, Mapping[str, float]]]   # server -> worker -> switch -> x
    y: Mapping[str, Mapping[str, float]]                # server -> switch -> y
    flow: Mapping[str, Mapping[Path, float]]            # server -> path -> eps
    streams: Mapping[str, float]                        # relaxed d_k: streams crossing k's ingress
    expected_streams: Mapping[str, float]               # E[d_k] under the rounding's draws
    link_load_mbps: Mapping[Arc, float]                 # at the demand as given
    capacity_scale: float = 1.0                         # rates were multiplied by this (elastic)
    stream_hops: float = 0.0                            # sum of eps x hops (second objective)
    size: tuple[int, int] = (0, 0)                      # (variables, constraints)

    def to_json(self) -> dict:
        return {
            "objective": self.objective, "stream_hops": self.stream_hops,
            "capacity_scale": self.capacity_scale, "variables": self.size[0],
            "constraints": self.size[1], "streams": dict(self.streams),
            "expected_streams": dict(self.expected_streams),
            "x_ps": {k: dict(v) for k, v in self.x_ps.items()},
            "x_s": {k: {n: dict(v) for n, v in ws.items()} for k, ws in self.x_s.items()},
            "y": {k: dict(v) for k, v in self.y.items()},
            "flow": {k: [[list(p), v] for p, v in sorted(f.items())] for k, f in self.flow.items()},
            "link_load_mbps": [[u, v, load] for (u, v), load in sorted(self.link_load_mbps.items())],
        }


def solve_lp(p: RoutingProblem) -> LpSolution:
    """The LP relaxation (module docstring), with the elastic pre-solve and the short-path
    tie-break as the problem asks."""
    model = _build(p)
    scale = 1.0
    if p.capacity == "elastic":
        scale = max(1.0, _min_scale(model, p)[0] * (1 + 1e-6) + 1e-9)
    res = _solve(model, p.rates, model.primary, scale)
    if res.status == 2 and p.capacity == "strict":
        theta, x = _min_scale(model, p)
        loads = _loads(model, x)
        worst = max(loads, key=lambda a: loads[a] / p.rates[a] if p.rates[a] > 0
                    else (math.inf if loads[a] > ZERO else 0.0))
        raise ValueError(
            f"routing LP: the links cannot carry {p.demand_mbps:g} Mbps per worker even with "
            f"the most aggregation: at best link {worst[0]}->{worst[1]} needs {theta:.3g}x its "
            f"rate; lower scheme_options.demand_mbps to {p.demand_mbps / theta:.4g} or set "
            f"capacity: elastic")
    if res.status != 0:
        raise _fail(res, "routing")
    best = float(res.fun)
    if p.prefer_short_paths:
        keep = (model.primary, best + 1e-7 + 1e-6 * abs(best))
        second = _solve(model, p.rates, model.stream_hops, scale, [keep])
        if second.status == 0:
            res = second
    return _solution(p, model, res.x, scale)


def _min_scale(model: _Model, p: RoutingProblem):
    """(theta*, its solution): the least factor by which every link rate must grow for the
    streams to fit (an LP with theta as a variable; <= 1 when they fit as they are)."""
    pre = _solve(model, p.rates, {len(model.cols): 1.0}, None)
    if pre.status == 2:
        raise ValueError("routing LP: no assignment respects the switches' limits (fan-in, "
                         "points, stream budget) for workers that can reach a PS only "
                         "through a switch: raise scheme_options.max_hops or the budgets")
    if pre.status != 0:
        raise _fail(pre, "capacity pre-solve")
    return float(pre.x[-1]), pre.x


def expected_streams(p: RoutingProblem, x_ps, x_s) -> dict[str, float]:
    """E[d_k] when every worker draws its node independently from (x_ps, x_s) (the "draw"
    rounding, before repair): the remote direct shares, plus for every switch the chance that
    at least one worker picks it, 1 - prod_n (1 - x_s[k,n,s])."""
    out = {}
    for k in p.servers:
        direct = sum(v for n, v in x_ps[k].items() if p.remote(n, k))
        idle: dict[str, float] = {}
        for at in x_s[k].values():
            for s, v in at.items():
                idle[s] = idle.get(s, 1.0) * (1.0 - v)
        out[k] = direct + sum(1.0 - q for q in idle.values())
    return out


def _loads(model: _Model, x) -> dict[Arc, float]:
    """Mbps on every arc some path crosses, for the LP point x."""
    return {a: float(sum(v * x[c] for c, v in coefs.items())) for a, coefs in model.links.items()}


def _solution(p: RoutingProblem, model: _Model, x, scale: float) -> LpSolution:
    x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    x[x < ZERO] = 0.0
    x_ps: dict[str, dict[str, float]] = {k: {} for k in p.servers}
    x_s: dict[str, dict[str, dict[str, float]]] = {k: {} for k in p.servers}
    y: dict[str, dict[str, float]] = {k: {} for k in p.servers}
    flow: dict[str, dict[Path, float]] = {k: {} for k in p.servers}
    for key, c in model.cols.index.items():
        v = float(x[c])
        if v == 0.0:
            continue
        server = p.servers[key[1]]
        if key[0] == "x_ps":
            x_ps[server][key[2]] = v
        elif key[0] == "x_s":
            x_s[server].setdefault(key[2], {})[key[3]] = v
        elif key[0] == "y":
            y[server][key[2]] = v
        else:
            flow[server][key[2]] = v
    streams = {k: sum(v for n, v in x_ps[k].items() if p.remote(n, k)) + sum(y[k].values())
               for k in p.servers}
    loads = {a: load for a, load in _loads(model, x).items() if load > ZERO}
    return LpSolution(p.servers, p.workers, float(sum(v * x[c] for c, v in model.primary.items())),
                      x_ps, x_s, y, flow, streams, expected_streams(p, x_ps, x_s), loads, scale,
                      float(sum(v * x[c] for c, v in model.stream_hops.items())),
                      (len(model.cols), len(model.eq.rhs) + len(model.ub.rhs) + len(model.links)))


# ---- the rounded plan --------------------------------------------------------------------

@dataclass(frozen=True)
class RoutingPlan:
    """Per PS: each worker's aggregation node (a switch, or the PS itself) and its path
    there, and each used switch's path to the PS."""
    method: str                                         # "lp+rounding", "shortest-path", ...
    servers: tuple[str, ...]
    shares: tuple[float, ...]
    demand_mbps: float
    node: Mapping[str, Mapping[str, str]]               # server -> worker -> aggregation node
    worker_path: Mapping[str, Mapping[str, Path]]       # server -> worker -> path to its node
    switch_path: Mapping[str, Mapping[str, Path]]       # server -> switch -> path to server
    repaired: tuple[tuple[str, str, str, str], ...] = ()   # (server, worker, switch, limit)
    bottlenecks: Mapping[Path, float] = field(default_factory=dict)   # used path -> Mbps
                                                        # at planning time (re-planning)

    def streams(self) -> dict[str, int]:
        """d_k: streams crossing PS k's ingress (direct remote workers + switches used)."""
        return {k: sum(1 for n, node in self.node[k].items() if node == k and n != k)
                + len(self.switch_path[k]) for k in self.servers}

    def fan_in(self) -> dict[str, dict[str, int]]:
        """server -> switch -> workers it aggregates for that server."""
        out: dict[str, dict[str, int]] = {k: {} for k in self.servers}
        for k in self.servers:
            for node in self.node[k].values():
                if node != k:
                    out[k][node] = out[k].get(node, 0) + 1
        return out

    def paths(self) -> list[tuple[str, Path]]:
        """(server, path) of every stream with at least one hop."""
        out = [(k, p) for k in self.servers for p in self.worker_path[k].values()]
        out += [(k, p) for k in self.servers for p in self.switch_path[k].values()]
        return [(k, p) for k, p in out if len(p) > 1]

    def link_load_mbps(self) -> dict[Arc, float]:
        loads: dict[Arc, float] = {}
        demand = dict(zip(self.servers, self.shares))
        for k, path in self.paths():
            for a in arcs(path):
                loads[a] = loads.get(a, 0.0) + demand[k] * self.demand_mbps
        return loads

    def max_utilisation(self, rates: Rates) -> float:
        """Highest load / rate over the arcs the plan uses (inf on a used arc of rate 0)."""
        worst = 0.0
        for a, load in self.link_load_mbps().items():
            worst = max(worst, load / rates[a] if rates[a] > 0 else math.inf)
        return worst

    def with_shares(self, shares: Sequence[float]) -> "RoutingPlan":
        return replace(self, shares=check_shares(shares, self.servers))

    def to_json(self) -> dict:
        return {
            "method": self.method, "servers": list(self.servers), "shares": list(self.shares),
            "demand_mbps": self.demand_mbps, "streams": self.streams(),
            "fan_in": self.fan_in(),
            "workers": {k: {n: {"node": self.node[k][n], "path": list(self.worker_path[k][n])}
                            for n in self.node[k]} for k in self.servers},
            "switch_paths": {k: {s: list(p) for s, p in self.switch_path[k].items()}
                             for k in self.servers},
            "repaired": [list(r) for r in self.repaired],
            "link_load_mbps": [[u, v, load] for (u, v), load in sorted(self.link_load_mbps().items())],
        }


def draw(rng: np.random.Generator, items: Sequence, weights: Sequence[float]):
    """One item with probability proportional to its weight (negatives count as 0). When a
    single item has all the weight no number is drawn, so certain choices do not shift the
    generator."""
    w = np.clip(np.asarray(weights, dtype=float), 0.0, None)
    positive = np.flatnonzero(w > 0)
    if len(positive) == 0:
        raise ValueError("draw: every weight is zero")
    if len(positive) == 1:
        return items[int(positive[0])]
    return items[int(rng.choice(len(items), p=w / w.sum()))]


def _path_to(p: RoutingProblem, sol: LpSolution, rng, server: str, src: str, dst: str) -> Path:
    """A path src -> dst for PS server's stream: drawn by eps, else the shortest candidate
    (a repaired or fallback choice the LP gave no flow)."""
    candidates = p.paths.of(src, dst)
    if not candidates:
        raise ValueError(f"no candidate path {src} -> {dst} within {p.paths.max_hops} links: "
                         f"raise scheme_options.max_hops")
    mass = [sol.flow[server].get(path, 0.0) for path in candidates]
    return draw(rng, candidates, mass) if sum(mass) > 0 else candidates[0]


def _choose_node(sol: LpSolution, server: str, worker: str, switches: Sequence[str], rng,
                 fractional_direct: str) -> str:
    direct = sol.x_ps[server].get(worker, 0.0)
    at = sol.x_s[server].get(worker, {})
    options = [server] + [s for s in switches if s in at]
    mass = [direct] + [at[s] for s in options[1:]]
    if fractional_direct == "largest_switch" and ZERO < direct < 1 - ZERO and len(options) > 1:
        return max(options[1:], key=lambda s: at[s])     # RRIAR: first of the largest x_s
    return draw(rng, options, mass)


def overfull(p: RoutingProblem, node: Mapping[str, dict[str, str]]):
    """The first switch limit the assignment breaks, as (switch, limit, [(server, worker)]
    candidates to move, how many must move), or None."""
    for s, budget in p.switches.items():
        users = {k: [n for n in p.workers if node[k][n] == s] for k in p.servers}
        users = {k: ns for k, ns in users.items() if ns}
        for k, ns in users.items():
            if len(ns) > budget.fan_in:
                return s, "fan-in", [(k, n) for n in ns], len(ns) - budget.fan_in
        if len(users) > budget.points:
            smallest = min(users, key=lambda k: (len(users[k]), -p.servers.index(k)))
            return s, "points", [(smallest, n) for n in users[smallest]], len(users[smallest])
        if budget.streams is not None:
            taken = sum(len(ns) for ns in users.values())
            used = taken - len(users) if p.budget_counts == "saved" else taken
            if used > budget.streams + ZERO:
                pairs = [(k, n) for k, ns in users.items() for n in ns]
                return s, "streams", pairs, math.ceil(used - budget.streams - ZERO)
    return None


def round_solution(p: RoutingProblem, sol: LpSolution, rng: np.random.Generator, *,
                   fractional_direct: str = "draw", repair: bool = True) -> RoutingPlan:
    """RRIAR's randomized rounding of `sol` (module docstring), then the repair."""
    switches = list(p.switches)
    node: dict[str, dict[str, str]] = {k: {} for k in p.servers}
    wpath: dict[str, dict[str, Path]] = {k: {} for k in p.servers}
    for k in p.servers:
        for n in p.workers:
            node[k][n] = _choose_node(sol, k, n, switches, rng, fractional_direct)
            wpath[k][n] = _path_to(p, sol, rng, k, n, node[k][n])
    moved = []
    while repair and (over := overfull(p, node)) is not None:
        s, limit, pairs, count = over
        x = lambda kn: sol.x_s[kn[0]].get(kn[1], {}).get(s, 0.0)
        for k, n in sorted(pairs, key=lambda kn: (x(kn), -p.workers.index(kn[1])))[:count]:
            node[k][n] = k
            wpath[k][n] = _path_to(p, sol, rng, k, n, k)
            moved.append((k, n, s, limit))
    spath: dict[str, dict[str, Path]] = {k: {} for k in p.servers}
    for k in p.servers:
        for s in switches:
            if s in node[k].values():
                spath[k][s] = _path_to(p, sol, rng, k, s, k)
    return plan_of("lp+rounding", p, node, wpath, spath, tuple(moved))


def plan_of(method: str, p: RoutingProblem, node, wpath, spath, moved=()) -> RoutingPlan:
    """The plan of an assignment (any router's), with its used paths' bottlenecks now."""
    used = [q for k in p.servers for q in list(wpath[k].values()) + list(spath[k].values())]
    bottlenecks = {q: min(p.rates[a] for a in arcs(q)) for q in used if len(q) > 1}
    return RoutingPlan(method, p.servers, p.shares, p.demand_mbps, node, wpath, spath,
                       tuple(moved), bottlenecks)


def route(p: RoutingProblem, rng: np.random.Generator,
          options: InartPlanOptions) -> tuple[LpSolution, RoutingPlan]:
    """Phase 2: the LP, then its rounding."""
    sol = solve_lp(p)
    return sol, round_solution(p, sol, rng, fractional_direct=options.fractional_direct,
                               repair=options.repair)
