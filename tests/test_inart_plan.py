"""InArt's planning (schemes/inart): candidate paths, the routing LP and its rounding, the
split over parameter servers and its iteration, the baselines, re-planning. Pure functions:
no root, no network."""
import json
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from schemes.inart.baselines import (plan_shortest_path_ina, plan_single_ps_ina, plan_without_ina,
                                     route_shortest)
from schemes.inart.options import InartPlanOptions
from schemes.inart.paths import arcs, candidate_paths, hops, ingress_mbps, link_rates
from schemes.inart.replan import bottleneck_moves, replan
from schemes.inart.routing import (LpSolution, SwitchBudget, expected_streams, round_solution,
                                   routing_problem, solve_lp)
from schemes.inart.split import plan_inart, split_shares, split_time, value_ranges
from testbed.scenario import load_scenario, parse_scenario
from topologies.graph import build_graph, hosts, hosts_by_dc

REPO = Path(__file__).resolve().parent.parent
ROOMY = SwitchBudget(points=32, fan_in=32)
RACK = SwitchBudget(points=32, fan_in=2)      # room for its own rack's two workers


def topo(links, host_names, gateways=(), rates=None, rate=1000.0):
    """A hand-made topology with the graph's attributes: links "a-b", hosts named, other
    nodes switches (rack_switch, or gateway if named); rates {(u, v): Mbps} per direction."""
    g = nx.Graph()
    for link in links:
        u, v = link.split("-")
        g.add_edge(u, v, kind="access", bandwidth_mbps=rate, delay_ms=1.0)
    for n in g:
        g.nodes[n]["role"] = "host" if n in host_names else \
            ("gateway" if n in gateways else "rack_switch")
    r = link_rates(g)
    r.update(rates or {})
    return g, r


# w1, w2 under ToR t1; w3, w4 under t2; both ToRs under core c; the PS p under c.
TWO_TORS = ["w1-t1", "w2-t1", "w3-t2", "w4-t2", "t1-c", "t2-c", "c-p"]
W4 = ["w1", "w2", "w3", "w4"]


def opts(**kw):
    return InartPlanOptions(**kw)


def lp_of(g, rates, workers, servers, shares, switches, **kw):
    """The LP; at 1 Mbps per worker unless told (the links do not bind)."""
    kw.setdefault("demand_mbps", 1.0)
    p = routing_problem(g, workers, servers, shares, opts(**kw), rates, switches)
    return p, solve_lp(p)


def assert_feasible(p, sol, tol=1e-6):
    """Every constraint of the LP, checked from the solution's named values (an independent
    reading of routing.py's docstring, not its matrices)."""
    for k in p.servers:
        for n in p.workers:
            total = sol.x_ps[k].get(n, 0.0) + sum(sol.x_s[k].get(n, {}).values())
            assert total == pytest.approx(1.0, abs=tol), (k, n)
            for s, x in sol.x_s[k].get(n, {}).items():
                assert x <= sol.y[k].get(s, 0.0) + tol, (k, n, s)
        by_pair = {}
        for path, e in sol.flow[k].items():
            assert -tol <= e <= 1 + tol
            key = (path[0], path[-1])
            by_pair[key] = by_pair.get(key, 0.0) + e
        for n in p.workers:
            assert by_pair.get((n, k), 0.0) == pytest.approx(sol.x_ps[k].get(n, 0.0), abs=tol)
            for s in p.switches:
                assert by_pair.get((n, s), 0.0) == pytest.approx(
                    sol.x_s[k].get(n, {}).get(s, 0.0), abs=tol)
        for s in p.switches:
            assert by_pair.get((s, k), 0.0) == pytest.approx(sol.y[k].get(s, 0.0), abs=tol)
            kids = sum(sol.x_s[k].get(n, {}).get(s, 0.0) for n in p.workers)
            assert kids <= p.switches[s].fan_in * sol.y[k].get(s, 0.0) + tol
    for s, b in p.switches.items():
        assert sum(sol.y[k].get(s, 0.0) for k in p.servers) <= b.points + tol
        if b.streams is not None:
            taken = sum(sol.x_s[k].get(n, {}).get(s, 0.0) for k in p.servers for n in p.workers)
            if p.budget_counts == "saved":
                taken -= sum(sol.y[k].get(s, 0.0) for k in p.servers)
            assert taken <= b.streams + tol
    load = {}
    for i, k in enumerate(p.servers):
        for path, e in sol.flow[k].items():
            for a in arcs(path):
                load[a] = load.get(a, 0.0) + e * p.shares[i] * p.demand_mbps
    for a, mbps in load.items():
        assert mbps <= p.rates[a] * sol.capacity_scale * (1 + tol) + tol, a
        assert sol.link_load_mbps.get(a, 0.0) == pytest.approx(mbps, abs=1e-6)


# ---- hand-worked cases -------------------------------------------------------------------

def test_four_workers_under_two_tors_are_aggregated_at_the_tors():
    """Each ToR has room for two workers (else one ToR would take all four, the others'
    streams crossing c): both racks are aggregated at home, the fewest stream-hops."""
    g, r = topo(TWO_TORS, W4 + ["p"], gateways=["c"])
    p, sol = lp_of(g, r, W4, ["p"], [1.0], {"t1": RACK, "t2": RACK})
    assert_feasible(p, sol)
    assert sol.objective == pytest.approx(2.0)      # two streams reach p: t1's and t2's
    assert sol.x_s["p"] == {"w1": {"t1": 1.0}, "w2": {"t1": 1.0}, "w3": {"t2": 1.0},
                            "w4": {"t2": 1.0}}
    for seed in range(5):
        plan = round_solution(p, sol, np.random.default_rng(seed))
        assert plan.node["p"] == {"w1": "t1", "w2": "t1", "w3": "t2", "w4": "t2"}
        assert plan.worker_path["p"]["w3"] == ("w3", "t2")
        assert plan.switch_path["p"] == {"t1": ("t1", "c", "p"), "t2": ("t2", "c", "p")}
        assert plan.streams() == {"p": 2} and plan.repaired == ()


def test_at_the_access_rate_the_links_bind_and_the_relaxation_splits_workers():
    """The default demand is a worker's access rate (1000 Mbps): two ToR streams would need
    2000 on c->p. The elastic plan scales the rates by the least factor that fits, 4/3: the
    relaxation's x_s <= y lets every worker be 2/3 at its ToR and 1/3 at the other (4/3
    relaxed streams), and the rounding expects 1.90."""
    g, r = topo(TWO_TORS, W4 + ["p"], gateways=["c"])
    p = routing_problem(g, W4, ["p"], [1.0], opts(), r, {"t1": ROOMY, "t2": ROOMY})
    sol = solve_lp(p)
    assert p.demand_mbps == 1000.0
    assert_feasible(p, sol)
    assert sol.capacity_scale == pytest.approx(4 / 3, rel=1e-5)
    assert sol.streams["p"] == pytest.approx(4 / 3, rel=1e-5)
    assert sol.x_s["p"]["w1"]["t1"] == pytest.approx(2 / 3, rel=1e-5)
    # each ToR is left idle with probability (1/3)^2 (2/3)^2 = 4/81
    assert sol.expected_streams["p"] == pytest.approx(2 * 77 / 81, rel=1e-5)


def test_a_core_that_can_aggregate_takes_all_four_workers():
    g, r = topo(TWO_TORS, W4 + ["p"], gateways=["c"])
    p, sol = lp_of(g, r, W4, ["p"], [1.0], {"t1": ROOMY, "t2": ROOMY, "c": ROOMY})
    assert_feasible(p, sol)
    plan = round_solution(p, sol, np.random.default_rng(0))
    assert set(plan.node["p"].values()) == {"c"} and plan.streams() == {"p": 1}
    assert plan.switch_path["p"] == {"c": ("c", "p")}


ONE_RACK = ["w1-t1", "w2-t1", "t1-c", "c-p"]


def test_a_switch_with_room_for_one_stream():
    """t1 may take in one worker stream: the LP puts half of w1 and half of w2 there (relaxed
    1.5 streams: y = 0.5 covers both halves); every rounding gives 2 streams, and when both
    are drawn at t1 the repair sends one to the PS."""
    g, r = topo(ONE_RACK, ["w1", "w2", "p"], gateways=["c"])
    one = SwitchBudget(points=32, fan_in=32, streams=1)
    p, sol = lp_of(g, r, ["w1", "w2"], ["p"], [1.0], {"t1": one})
    assert_feasible(p, sol)
    assert sol.x_s["p"] == {"w1": {"t1": pytest.approx(0.5)}, "w2": {"t1": pytest.approx(0.5)}}
    assert sol.y["p"]["t1"] == pytest.approx(0.5)
    assert sol.streams["p"] == pytest.approx(1.5)
    assert sol.expected_streams["p"] == pytest.approx(1.75)    # t1 idle with probability 1/4
    repaired = []
    for seed in range(30):
        plan = round_solution(p, sol, np.random.default_rng(seed))
        assert plan.streams() == {"p": 2}
        assert plan.fan_in()["p"].get("t1", 0) <= 1
        repaired += plan.repaired
    assert repaired and {x[2:] for x in repaired} == {("t1", "streams")}


def test_the_saved_budget_counts_streams_a_switch_saves():
    """RRIAR's reading of the budget: sum x_s - y <= budget. t1 under 3 workers with budget 1
    saves one stream: it may merge two of them, not three (2 streams reach p, relaxed too)."""
    links = ["w1-t1", "w2-t1", "w3-t1", "t1-c", "c-p"]
    g, r = topo(links, ["w1", "w2", "w3", "p"])
    budget = SwitchBudget(points=32, fan_in=32, streams=1)
    p, sol = lp_of(g, r, ["w1", "w2", "w3"], ["p"], [1.0], {"t1": budget},
                   budget_counts="saved")
    assert_feasible(p, sol)
    assert sol.objective == pytest.approx(2.0)
    for seed in range(20):
        plan = round_solution(p, sol, np.random.default_rng(seed))
        assert plan.fan_in()["p"].get("t1", 0) <= 2 and plan.streams()["p"] in (2, 3)


def narrow_link_case(narrow_arc):
    """Two PSs behind different cores; switch t (budget: 2 worker streams) can aggregate
    for one of them only; `narrow_arc` carries one stream of 50 Mbps, no more."""
    links = ["w1-t", "w2-t", "t-c1", "c1-p1", "t-c2", "c2-p2"]
    return topo(links, ["w1", "w2", "p1", "p2"], rates={narrow_arc: 50.0})


@pytest.mark.parametrize("narrow, aggregated, direct", [(("c2", "p2"), "p2", "p1"),
                                                        (("c1", "p1"), "p1", "p2")])
def test_a_narrow_link_decides_which_server_gets_the_aggregation(narrow, aggregated, direct):
    g, r = narrow_link_case(narrow)
    budget = SwitchBudget(points=32, fan_in=32, streams=2)
    p, sol = lp_of(g, r, ["w1", "w2"], ["p1", "p2"], [0.5, 0.5], {"t": budget},
                   demand_mbps=100.0, capacity="strict")
    assert_feasible(p, sol)
    assert sol.capacity_scale == 1.0
    assert sol.x_s[aggregated] == {"w1": {"t": 1.0}, "w2": {"t": 1.0}}
    assert sol.x_ps[direct] == {"w1": 1.0, "w2": 1.0}
    assert sol.link_load_mbps[narrow] == pytest.approx(50.0)
    plan = round_solution(p, sol, np.random.default_rng(0))
    assert plan.streams() == {aggregated: 1, direct: 2}
    assert plan.max_utilisation(r) <= 1.0


def test_strict_capacity_refuses_what_no_aggregation_can_fit():
    g, r = narrow_link_case(("c2", "p2"))
    with pytest.raises(ValueError, match=r"c2->p2 needs 2x.*demand_mbps to 50 "):
        lp_of(g, r, ["w1", "w2"], ["p1", "p2"], [0.5, 0.5], {}, demand_mbps=100.0,
              capacity="strict")
    # elastic: the rates are scaled by the least factor that fits, and that is recorded
    p, sol = lp_of(g, r, ["w1", "w2"], ["p1", "p2"], [0.5, 0.5], {}, demand_mbps=100.0)
    assert sol.capacity_scale == pytest.approx(2.0, rel=1e-5)
    assert_feasible(p, sol)
    assert sol.x_ps["p2"] == {"w1": 1.0, "w2": 1.0}


def test_a_worker_that_cannot_reach_a_server_is_named():
    g, r = topo(TWO_TORS, W4 + ["p"])
    with pytest.raises(ValueError, match=r"worker w1 cannot reach parameter server p within 2 "
                                         r"links.*max_hops"):
        lp_of(g, r, W4, ["p"], [1.0], {}, max_hops=2)


@pytest.mark.parametrize("kw, message", [
    (dict(workers=["w1", "t1"]), r"workers: 't1' is not a host"),
    (dict(servers=["p", "p"]), "names a host twice"),
    (dict(shares=[0.5]), r"shares: \[0\.5\] must be numbers >= 0 summing to 1"),
    (dict(switches={"w1": ROOMY}), "'w1' is not a switch"),
])
def test_bad_problems_say_what_is_wrong(kw, message):
    g, r = topo(TWO_TORS, W4 + ["p"])
    args = dict(workers=W4, servers=["p"], shares=[1.0], switches={"t1": ROOMY})
    args.update(kw)
    with pytest.raises(ValueError, match=message):
        routing_problem(g, args["workers"], args["servers"], args["shares"], opts(), r,
                        args["switches"])


def test_an_lp_too_large_is_refused_with_the_fix():
    g, r = topo(TWO_TORS, W4 + ["p"])
    with pytest.raises(ValueError, match=r"max_lp_paths.*lower max_hops or keep_paths"):
        routing_problem(g, W4, ["p"], [1.0], opts(max_lp_paths=10), r)


def test_switch_points_are_shared_by_the_servers():
    """c can host one aggregation point: it aggregates for one PS only, and the other's
    workers go through the ToRs (two each)."""
    links = TWO_TORS + ["c-q"]
    g, r = topo(links, W4 + ["p", "q"])
    one_point = SwitchBudget(points=1, fan_in=32)
    p, sol = lp_of(g, r, W4, ["p", "q"], [0.5, 0.5],
                   {"c": one_point, "t1": RACK, "t2": RACK})
    assert_feasible(p, sol)
    assert sol.y["p"].get("c", 0) + sol.y["q"].get("c", 0) <= 1 + 1e-9
    plan = round_solution(p, sol, np.random.default_rng(0))
    assert sum(1 for k in "pq" if "c" in plan.switch_path[k]) <= 1
    assert sorted(plan.streams().values()) == [1, 2]


# ---- the rounding ------------------------------------------------------------------------

# TWO_TORS plus a second core d beside c: two paths between t1 and c.
DETOUR = TWO_TORS + ["t1-d", "d-c"]


def hand_solution(g, r):
    """A fractional solution consistent with the LP's constraints, written by hand."""
    p = routing_problem(g, W4, ["p"], [1.0], opts(demand_mbps=1.0), r,
                        {"t1": ROOMY, "t2": ROOMY, "c": ROOMY})
    x_ps = {"p": {"w1": 0.2, "w3": 0.6, "w4": 1.0}}
    x_s = {"p": {"w1": {"t1": 0.5, "c": 0.3}, "w2": {"t1": 1.0}, "w3": {"c": 0.4}}}
    y = {"p": {"t1": 1.0, "c": 0.4}}
    flow = {"p": {("w1", "t1", "c", "p"): 0.15, ("w1", "t1", "d", "c", "p"): 0.05,
                  ("w1", "t1"): 0.5, ("w1", "t1", "c"): 0.2, ("w1", "t1", "d", "c"): 0.1,
                  ("w2", "t1"): 1.0, ("w3", "t2", "c", "p"): 0.6, ("w3", "t2", "c"): 0.4,
                  ("w4", "t2", "c", "p"): 1.0,
                  ("t1", "c", "p"): 0.7, ("t1", "d", "c", "p"): 0.3, ("c", "p"): 0.4}}
    sol = LpSolution(p.servers, p.workers, 0.0, x_ps, x_s, y, flow, {"p": 0.0},
                     expected_streams(p, x_ps, x_s), {})
    return p, sol


def test_rounding_frequencies_match_the_lp():
    """2000 seeded draws: each worker's aggregation node and worker-leg path come up as
    often as x and eps say, each switch is used with probability 1 - prod(1 - x_s), and the
    switch's path to the PS as often as eps / y. Tolerance: a frequency of 2000 Bernoulli
    draws has standard deviation <= 0.5 / sqrt(2000) = 0.011; 0.05 is 4.5 of them (a false
    failure about once in 10^5 for a fresh seed; this seed is fixed)."""
    g, r = topo(DETOUR, W4 + ["p"], gateways=["c", "d"])
    p, sol = hand_solution(g, r)
    rng = np.random.default_rng(2024)
    draws = 2000
    nodes, paths, used, spaths, streams = {}, {}, {}, {}, []
    for _ in range(draws):
        plan = round_solution(p, sol, rng, repair=False)
        for n, node in plan.node["p"].items():
            nodes[(n, node)] = nodes.get((n, node), 0) + 1
            q = plan.worker_path["p"][n]
            paths[q] = paths.get(q, 0) + 1
        for s, q in plan.switch_path["p"].items():
            used[s] = used.get(s, 0) + 1
            spaths[q] = spaths.get(q, 0) + 1
        streams.append(plan.streams()["p"])
    tol = 0.05
    for n in W4:
        assert nodes.get((n, "p"), 0) / draws == pytest.approx(sol.x_ps["p"].get(n, 0), abs=tol)
        for s in p.switches:
            assert nodes.get((n, s), 0) / draws == pytest.approx(
                sol.x_s["p"].get(n, {}).get(s, 0), abs=tol)
    for q, e in sol.flow["p"].items():
        if q[0] in W4:
            assert paths.get(q, 0) / draws == pytest.approx(e, abs=tol), q
    assert used["t1"] == draws                                   # w2 always goes there
    assert used["c"] / draws == pytest.approx(1 - (1 - 0.3) * (1 - 0.4), abs=tol)
    assert spaths[("t1", "d", "c", "p")] / draws == pytest.approx(0.3, abs=tol)
    assert spaths[("c", "p")] == used["c"]
    # d: remote direct shares + P(used) per switch; its spread is below 1, so 0.1 is > 4 sigma
    assert np.mean(streams) == pytest.approx(sol.expected_streams["p"], abs=0.1)
    assert sol.expected_streams["p"] == pytest.approx(0.2 + 0.6 + 1.0 + 1.0 + 0.58)


def test_rounding_of_a_solved_fractional_lp_matches_it():
    """The same check on the LP's own fractional optimum (the one-stream switch): without
    the repair w1 lands at t1 half of the time."""
    g, r = topo(ONE_RACK, ["w1", "w2", "p"], gateways=["c"])
    one = SwitchBudget(points=32, fan_in=32, streams=1)
    p, sol = lp_of(g, r, ["w1", "w2"], ["p"], [1.0], {"t1": one})
    rng = np.random.default_rng(7)
    at_t1 = sum(round_solution(p, sol, rng, repair=False).node["p"]["w1"] == "t1"
                for _ in range(2000))
    assert at_t1 / 2000 == pytest.approx(0.5, abs=0.05)


def test_the_groups_rule_takes_the_largest_switch_for_a_fractional_direct_share():
    g, r = topo(DETOUR, W4 + ["p"], gateways=["c", "d"])
    p, sol = hand_solution(g, r)
    for seed in range(20):
        plan = round_solution(p, sol, np.random.default_rng(seed),
                              fractional_direct="largest_switch")
        assert plan.node["p"]["w1"] == "t1"        # x_ps 0.2 is fractional: largest x_s
        assert plan.node["p"]["w3"] == "c"
        assert plan.node["p"]["w4"] == "p"         # x_ps = 1: not fractional


def test_repair_moves_the_smallest_shares_off_an_overfull_switch():
    g, r = topo(TWO_TORS, W4 + ["p"], gateways=["c"])
    two = SwitchBudget(points=32, fan_in=2)
    p = routing_problem(g, W4, ["p"], [1.0], opts(), r, {"t1": two})
    x_s = {"p": {"w1": {"t1": 1.0}, "w2": {"t1": 1.0}, "w3": {"t1": 1.0}}}
    flow = {"p": {("w1", "t1"): 1.0, ("w2", "t1"): 1.0, ("w3", "t2", "c", "t1"): 1.0,
                  ("w4", "t2", "c", "p"): 1.0, ("t1", "c", "p"): 1.0}}
    sol = LpSolution(p.servers, p.workers, 0.0, {"p": {"w4": 1.0}}, x_s, {"p": {"t1": 1.0}},
                     flow, {"p": 0.0}, {"p": 0.0}, {})
    plan = round_solution(p, sol, np.random.default_rng(0))
    assert plan.repaired == (("p", "w3", "t1", "fan-in"),)       # ties on x: the last worker
    assert plan.node["p"]["w3"] == "p" and plan.worker_path["p"]["w3"] == ("w3", "t2", "c", "p")
    assert plan.fan_in()["p"] == {"t1": 2}
    unrepaired = round_solution(p, sol, np.random.default_rng(0), repair=False)
    assert unrepaired.fan_in()["p"] == {"t1": 3}


# ---- phase 1 -----------------------------------------------------------------------------

def test_split_is_proportional_to_ingress_over_streams():
    shares = split_shares([1000.0, 500.0], [4, 1])       # B/d = 250 and 500
    assert shares == pytest.approx((1 / 3, 2 / 3))
    # the min-max optimum: every PS is busy equally long, T* = 1 / sum(B/d) per megabit
    times = [a * d / b for a, d, b in zip(shares, [4, 1], [1000.0, 500.0])]
    assert times == pytest.approx([split_time([1000.0, 500.0], [4, 1])] * 2)
    assert split_shares([100.0, 100.0, 100.0], [0, 1, 2]) == pytest.approx((0.4, 0.4, 0.2))


@pytest.mark.parametrize("ingress, streams, message", [
    ([100.0, 0.0], [1, 1], "finite ingress bandwidth > 0"),
    ([100.0], [1, 1], "1 ingress rates for 2 stream counts"),
    ([100.0, 100.0], [1, -1], "stream counts must be >= 0"),
])
def test_split_refuses_what_has_no_split(ingress, streams, message):
    with pytest.raises(ValueError, match=message):
        split_shares(ingress, streams)


def test_value_ranges_by_largest_remainder():
    assert value_ranges([1 / 3, 1 / 3, 1 / 3], 10) == ((0, 4), (4, 7), (7, 10))
    assert value_ranges([0.5, 0.0, 0.5], 7) == ((0, 4), (4, 4), (4, 7))
    assert value_ranges([0.25, 0.75], 0) == ((0, 0), (0, 0))
    with pytest.raises(ValueError, match="shares must be >= 0"):
        value_ranges([-0.1, 1.1], 10)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=12).filter(lambda w: sum(w) > 0),
       st.integers(0, 10 ** 9))
def test_value_ranges_cover_the_tensor_exactly(weights, n):
    shares = [w / sum(weights) for w in weights]
    ranges = value_ranges(shares, n)
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    for (lo, hi), s in zip(ranges, shares):
        assert abs((hi - lo) - s * n) < 1 + 1e-9 * n      # within one value of its share
        if s == 0:
            assert hi == lo


def test_ingress_is_the_access_links_or_the_max_flow():
    # p hangs off c at 1000 Mbps but the workers reach c over 100 + 50 Mbps
    g, r = topo(["w1-t1", "w2-t2", "t1-c", "t2-c", "c-p"], ["w1", "w2", "p"],
                rates={("t1", "c"): 100.0, ("t2", "c"): 50.0})
    assert ingress_mbps(g, r, "p", ["w1", "w2"], "access") == 1000.0
    assert ingress_mbps(g, r, "p", ["w1", "w2"], "max_flow") == pytest.approx(150.0)


def small_two_dc():
    """2 datacenters: dc a with 2 racks x 2 workers, dc b with 1 rack x 2; PS pa in a, pb
    in b (each on a rack of its own); pb's access link at 250 Mbps."""
    text = """name: inart-small
seed: 1
datacenters:
  - {name: a, lat: 40, lon: -75, racks: 3, workers_per_rack: 2}
  - {name: b, lat: 50, lon: 8, racks: 2, workers_per_rack: 2}
wan:
  topology: full-mesh
  default: {bandwidth_mbps: 100, delay_ms: 20}
intra_dc:
  access: {bandwidth_mbps: 1000, delay_ms: 0.05}
  uplink: {bandwidth_mbps: 1000, delay_ms: 0.1}
scheme: geo-ina
iterations: 1
"""
    g = build_graph(parse_scenario(text, "<inart-small>"))
    servers = ["h1r3w1", "h2r2w1"]
    workers = [h for h in hosts(g) if h not in servers and h not in ("h1r3w2", "h2r2w2")]
    rates = link_rates(g)
    rates[("s2r2", "h2r2w1")] = 250.0
    return g, workers, servers, rates


def test_the_iteration_converges_on_a_small_topology():
    g, workers, servers, rates = small_two_dc()
    plan = plan_inart(g, workers, servers, opts(), np.random.default_rng(1), rates=rates)
    assert plan.ingress_mbps == (1000.0, 250.0)
    assert plan.initial_streams == (6.0, 6.0)
    assert plan.converged and len(plan.rounds) <= 3
    first, last = plan.rounds[0], plan.rounds[-1]
    assert first.shares == pytest.approx((0.8, 0.2))     # B/d with no aggregation
    assert first.change > 0.1 and last.change <= 0.01
    # the result is phase 1's split for the chosen plan's own stream counts
    d = plan.routing.streams()
    assert plan.shares == pytest.approx(split_shares(plan.ingress_mbps, [d[k] for k in servers]))
    assert sum(plan.shares) == pytest.approx(1.0)
    assert all(dk < 6 for dk in d.values())               # aggregation cut both PSs' streams
    assert plan.value_ranges(1000)[-1][1] == 1000
    json.dumps(plan.to_json())


@pytest.mark.parametrize("choice", [
    {"objective": "direct"}, {"server_weight": "ingress_time"}, {"ingress": "max_flow"},
    {"streams_from": "expected"}, {"streams_from": "rounded", "step": 1.0},
    {"fractional_direct": "largest_switch"}, {"path_rank": "delay"},
    {"aggregate_at": "rack_switch", "switch_streams": 3.0, "budget_counts": "saved"},
    {"capacity": "strict", "demand_mbps": 10.0},
])
def test_every_interpretation_choice_plans_the_small_case(choice):
    g, workers, servers, rates = small_two_dc()
    o = opts(**choice)
    plan = plan_inart(g, workers, servers, o, np.random.default_rng(5), rates=rates)
    last = plan.rounds[-1]
    p = routing_problem(g, workers, servers, last.shares, o, rates)
    assert_feasible(p, last.solution)
    assert sum(plan.shares) == pytest.approx(1.0)
    routing = plan.routing
    assert all(set(routing.node[k]) == set(workers) for k in servers)
    if choice.get("aggregate_at") == "rack_switch":
        assert all(s.startswith("s") for k in servers for s in routing.switch_path[k])


def test_a_worker_on_the_servers_host_sends_locally():
    """p is a PS and a worker: its own part never crosses p's ingress, so it stays home and
    does not count among p's streams."""
    g, r = topo(TWO_TORS, W4 + ["p"], gateways=["c"])
    o = opts(demand_mbps=1.0)
    plan = plan_inart(g, W4 + ["p"], ["p"], o, np.random.default_rng(0), rates=r,
                      switches={"t1": RACK, "t2": RACK})
    assert plan.initial_streams == (4.0,)
    routing = plan.routing
    assert routing.node["p"]["p"] == "p" and routing.worker_path["p"]["p"] == ("p",)
    assert routing.streams() == {"p": 2}
    assert ("p",) not in routing.bottlenecks


# ---- baselines ---------------------------------------------------------------------------

def test_baselines_on_two_tors():
    """Two PSs p and q under c. The LP aggregates everything at c (1 stream each); without
    INA each PS gets 4; shortest-path INA stops at the first switch, the ToRs (2 each)."""
    g, r = topo(TWO_TORS + ["c-q"], W4 + ["p", "q"], gateways=["c"])
    switches = {"t1": ROOMY, "t2": ROOMY, "c": ROOMY}
    rng = np.random.default_rng(0)
    o = opts(demand_mbps=1.0)
    inart = plan_inart(g, W4, ["p", "q"], o, rng, rates=r, switches=switches)
    assert inart.routing.streams() == {"p": 1, "q": 1}
    none = plan_without_ina(g, W4, ["p", "q"], o, rng, rates=r)
    assert none.routing.streams() == {"p": 4, "q": 4}
    assert all(none.routing.node[k][n] == k for k in "pq" for n in W4)
    assert none.routing.switch_path == {"p": {}, "q": {}}
    assert none.shares == pytest.approx((0.5, 0.5))
    single = plan_single_ps_ina(g, W4, "p", o, rng, rates=r, switches=switches)
    assert single.shares == (1.0,) and single.routing.streams() == {"p": 1}
    short = plan_shortest_path_ina(g, W4, ["p", "q"], o, rng, rates=r, switches=switches)
    assert short.routing.method == "shortest-path" and short.rounds[0].solution is None
    assert short.routing.node["q"] == {"w1": "t1", "w2": "t1", "w3": "t2", "w4": "t2"}
    assert short.routing.switch_path["q"] == {"t1": ("t1", "c", "q"), "t2": ("t2", "c", "q")}
    assert short.routing.streams() == {"p": 2, "q": 2}


def test_shortest_path_baseline_skips_a_full_switch():
    """t1 takes one stream: w2's part goes on to the next switch of its path, c."""
    g, r = topo(TWO_TORS, W4 + ["p"], gateways=["c"])
    one = SwitchBudget(points=32, fan_in=32, streams=1)
    p = routing_problem(g, W4, ["p"], [1.0], opts(demand_mbps=1.0), r,
                        {"t1": one, "t2": ROOMY, "c": ROOMY})
    sol, plan = route_shortest(p, np.random.default_rng(0), opts())
    assert sol is None
    assert plan.node["p"] == {"w1": "t1", "w2": "c", "w3": "t2", "w4": "t2"}
    assert plan.worker_path["p"]["w2"] == ("w2", "t1", "c")
    assert plan.streams() == {"p": 3}


# ---- candidate paths ---------------------------------------------------------------------

def test_candidate_paths_are_every_simple_path_through_switches():
    g, _ = topo(DETOUR + ["w1-d"], W4 + ["p"])
    found = candidate_paths(g, [("w1", "p"), ("t1", "c"), ("p", "p")])
    view = nx.subgraph_view(g, filter_node=lambda n: n in ("w1", "p") or
                            g.nodes[n]["role"] != "host")
    expected = {tuple(q) for q in nx.all_simple_paths(view, "w1", "p", cutoff=8)}
    assert set(found.of("w1", "p")) == expected and len(expected) == 4
    assert [hops(q) for q in found.of("w1", "p")] == sorted(hops(q) for q in expected)
    assert found.of("p", "p") == (("p",),)
    assert found.pruned == ()
    assert candidate_paths(g, [("w1", "p")], max_hops=3).of("w1", "p") == \
        (("w1", "d", "c", "p"), ("w1", "t1", "c", "p"))


def mesh(n_dcs):
    lines = ["name: mesh", "seed: 1", "datacenters:"]
    for i in range(n_dcs):
        lines.append(f"  - {{name: d{i}, lat: {i * 5}, lon: {i * 10}, racks: 1, "
                     f"workers_per_rack: 2}}")
    lines += ["wan:", "  topology: full-mesh", "  default: {bandwidth_mbps: 100, delay_ms: 20}",
              "intra_dc:", "  access: {bandwidth_mbps: 1000, delay_ms: 0.05}",
              "  uplink: {bandwidth_mbps: 1000, delay_ms: 0.1}", "scheme: geo-ina",
              "iterations: 1"]
    return build_graph(parse_scenario("\n".join(lines) + "\n", "<mesh>"))


def test_the_path_guard_keeps_the_shortest_of_an_exploding_pair():
    """A full mesh of 9 datacenters has thousands of simple paths of <= 8 links between two
    hosts; the guard keeps the 8 shortest and says the pair was pruned."""
    g = mesh(9)
    t = time.perf_counter()
    found = candidate_paths(g, [("h1r1w1", "h9r1w1"), ("h1r1w1", "h1r1w2")])
    assert time.perf_counter() - t < 2.0
    assert found.pruned == (("h1r1w1", "h9r1w1"),)
    kept = found.of("h1r1w1", "h9r1w1")
    assert len(kept) == 8 and len(set(kept)) == 8
    assert kept[0] == ("h1r1w1", "s1r1", "g1", "g9", "s9r1", "h9r1w1")
    assert [hops(q) for q in kept] == [5] + [6] * 7     # the direct WAN link, then 1 detour
    assert all(len(set(q)) == len(q) for q in kept)
    assert found.of("h1r1w1", "h1r1w2") == (("h1r1w1", "s1r1", "h1r1w2"),)
    by_delay = candidate_paths(g, [("h1r1w1", "h9r1w1")], rank="delay")
    kept = by_delay.of("h1r1w1", "h9r1w1")
    assert by_delay.pruned == (("h1r1w1", "h9r1w1"),) and len(kept) == 8
    delays = [sum(g.edges[a]["delay_ms"] for a in arcs(q)) for q in kept]
    assert delays == sorted(delays) and kept[0] == found.of("h1r1w1", "h9r1w1")[0]


# ---- the shipped scenario ----------------------------------------------------------------

def geo3dc():
    g = build_graph(load_scenario(REPO / "scenarios" / "geo-3dc.yaml"))
    servers = [hs[0] for hs in hosts_by_dc(g).values()]
    return g, [h for h in hosts(g) if h not in servers], servers


def test_planner_on_geo_3dc_is_fast_and_feasible():
    g, workers, servers = geo3dc()
    t = time.perf_counter()
    plan = plan_inart(g, workers, servers, opts(), np.random.default_rng(0))
    elapsed = time.perf_counter() - t
    assert elapsed < 1.0, f"planning took {elapsed:.2f} s"
    last = plan.rounds[-1]
    p = routing_problem(g, workers, servers, last.shares, opts())
    assert p.paths.pruned == ()
    assert_feasible(p, last.solution)
    assert sum(plan.shares) == pytest.approx(1.0)
    assert sum(hi - lo for lo, hi in plan.value_ranges(262144)) == 262144
    routing = plan.routing
    for k in servers:           # every worker has a node and a path that ends there
        assert set(routing.node[k]) == set(workers)
        for n, node in routing.node[k].items():
            assert routing.worker_path[k][n][0] == n and routing.worker_path[k][n][-1] == node
        for s, q in routing.switch_path[k].items():
            assert q[0] == s and q[-1] == k
        assert routing.streams()[k] < len(workers)
    record = json.loads(json.dumps(plan.to_json()))
    assert record["rounds"][0]["lp"]["capacity_scale"] >= 1.0
    assert set(record["rounds"][0]["plan"]["workers"]) == set(servers)


# ---- re-planning -------------------------------------------------------------------------

def used_wan_arc(g, routing):
    for _, q in routing.paths():
        for u, v in arcs(q):
            if g.edges[u, v]["kind"] == "wan":
                return (u, v)
    raise AssertionError("the plan uses no WAN link")


def test_replan_when_a_used_bottleneck_moves():
    g, workers, servers = geo3dc()
    o = opts(replan_threshold=0.2)
    plan = plan_inart(g, workers, servers, o, np.random.default_rng(0))
    arc = used_wan_arc(g, plan.routing)
    decision, new = replan(g, plan, {arc: 50.0}, o, np.random.default_rng(1))
    assert decision.must_replan and new is not plan
    assert any(arc in arcs(c.path) and c.planned_mbps == 100.0 and c.now_mbps == 50.0
               for c in decision.moved)
    assert new.rates[arc] == 50.0 and plan.rates[arc] == 100.0
    json.dumps(decision.to_json())
    # within the threshold: the plan stays, the very same object
    decision, same = replan(g, plan, {arc: 90.0}, o, np.random.default_rng(1))
    assert not decision.must_replan and decision.moved == () and same is plan


def test_no_replan_for_links_the_plan_does_not_use():
    g, r = topo(TWO_TORS + ["t1-x", "x-c"], W4 + ["p"])
    switches = {"t1": ROOMY, "t2": ROOMY, "c": ROOMY}
    plan = plan_inart(g, W4, ["p"], opts(demand_mbps=1.0), np.random.default_rng(0), rates=r,
                      switches=switches)
    used = {a for _, q in plan.routing.paths() for a in arcs(q)}
    assert ("t1", "x") not in used
    decision, same = replan(g, plan, {("t1", "x"): 1.0}, opts(), np.random.default_rng(0))
    assert not decision.must_replan and same is plan
    assert bottleneck_moves(plan.routing, {**r, ("c", "p"): 100.0}, 0.5).must_replan


def test_replan_refuses_a_link_that_is_not_there():
    g, workers, servers = geo3dc()
    plan = plan_inart(g, workers, servers, opts(), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"\('g1', 'h1r1w2'\).*not a link"):
        replan(g, plan, {("g1", "h1r1w2"): 10.0}, opts(), np.random.default_rng(0))
    for bad in (-5, "fast", None):
        with pytest.raises(ValueError, match=r"g1->g2 must be a number >= 0"):
            replan(g, plan, {("g1", "g2"): bad}, opts(), np.random.default_rng(0))


# ---- options -----------------------------------------------------------------------------

def test_options_refuse_bad_values_by_field():
    assert opts().max_hops == 8 and opts().aggregate_at == "all"
    for bad in ({"max_hops": 0}, {"objective": "fastest"}, {"bogus": 1},
                {"tolerance": -1.0}):
        with pytest.raises(ValidationError):
            InartPlanOptions.model_validate(bad)


def test_aggregate_at_one_role_and_a_window_too_large():
    g, workers, servers = geo3dc()
    p = routing_problem(g, workers, servers, [1 / 3] * 3, opts(aggregate_at="gateway"))
    assert sorted(p.switches) == ["g1", "g2", "g3"]
    with pytest.raises(ValueError, match="window: 4096 slots.*lower window"):
        routing_problem(g, workers, servers, [1 / 3] * 3, opts(window=4096))
