"""Bandwidth schedules -> (t_s, edge, mbps) events, seeded and reproducible."""
import numpy as np
import pytest

from testbed.dilation import dilate_graph
from testbed.scenario import parse_scenario
from topologies.graph import build_graph
from topologies.schedule import BandwidthEvent, bandwidth_events, rate_at

BASE = """name: t
seed: 5
datacenters:
  - {name: a, region: "ibm:us-east"}
  - {name: b, region: "ibm:eu-de"}
  - {name: c, region: "ibm:jp-tok"}
scheme: ps
duration_s: 30
"""


def graph(*sets):
    return build_graph(parse_scenario(BASE, "t", sets))


def test_no_schedule_no_events():
    assert bandwidth_events(graph(), 30) == []


def test_explicit_schedule_per_edge_sorted_and_cut_at_horizon():
    g = graph("wan.edges=[{a: a, b: c, bandwidth_schedule: [{t_s: 10, mbps: 5}, {t_s: 2, mbps: 50}, {t_s: 40, mbps: 1}]}]")
    ev = bandwidth_events(g, 30)
    assert ev == [BandwidthEvent(2.0, ("g1", "g3"), 50.0), BandwidthEvent(10.0, ("g1", "g3"), 5.0)]
    assert len(bandwidth_events(g)) == 3           # explicit schedules need no horizon
    base = g.edges["g1", "g3"]["bandwidth_mbps"]
    assert rate_at(g, ev, ("g1", "g3"), 1.9) == base
    assert rate_at(g, ev, ("g3", "g1"), 2.0) == 50
    assert rate_at(g, ev, ("g1", "g3"), 29) == 5
    assert rate_at(g, ev, ("g1", "g2"), 29) == g.edges["g1", "g2"]["bandwidth_mbps"]


def test_an_explicit_point_may_change_one_direction_only():
    g = graph("wan.edges=[{a: a, b: c, bandwidth_schedule: [{t_s: 2, mbps: 4, from_dc: c}, {t_s: 5, mbps: 30}]}]")
    ev = bandwidth_events(g, 30)
    assert ev == [BandwidthEvent(2.0, ("g1", "g3"), 4.0, "g3"), BandwidthEvent(5.0, ("g1", "g3"), 30.0)]
    assert ev[0].direction == ("g3", "g1")
    base = g.edges["g1", "g3"]["bandwidth_mbps"]
    assert rate_at(g, ev, ("g1", "g3"), 3, "g3") == 4 and rate_at(g, ev, ("g1", "g3"), 3, "g1") == base
    assert rate_at(g, ev, ("g1", "g3"), 6, "g3") == 30


def test_a_direction_must_be_an_end_of_its_link():
    from testbed.scenario import ScenarioError
    with pytest.raises(ScenarioError, match=r"wan\.edges\.0\.bandwidth_schedule\.0\.from_dc: 'b' is not an end of the edge a-c"):
        graph("wan.edges=[{a: a, b: c, bandwidth_schedule: [{t_s: 2, mbps: 4, from_dc: b}]}]")
    with pytest.raises(ScenarioError, match=r"wan\.bandwidth_schedule\.0\.from_dc: applies to every WAN link"):
        graph("wan.bandwidth_schedule=[{t_s: 2, mbps: 4, from_dc: a}]")


def test_random_schedule_draws_in_range_every_period_for_every_edge():
    g = graph("wan.bandwidth_schedule={min_mbps: 20, max_mbps: 80, every_s: 4}")
    ev = bandwidth_events(g, 30)
    edges = [("g1", "g2"), ("g1", "g3"), ("g2", "g3")]
    for e in edges:
        times = [x.t_s for x in ev if x.edge == e]
        assert times == [0, 4, 8, 12, 16, 20, 24, 28]
    assert all(20 <= x.mbps <= 80 for x in ev)
    assert [x.t_s for x in ev] == sorted(x.t_s for x in ev)
    # the draws are really random across edges and time
    assert len({x.mbps for x in ev}) == len(ev)


def test_random_schedule_is_seeded_and_independent_per_edge():
    s = "wan.bandwidth_schedule={min_mbps: 20, max_mbps: 80, every_s: 4}"
    assert bandwidth_events(graph(s), 30) == bandwidth_events(graph(s), 30)
    other = bandwidth_events(graph(s, "seed=6"), 30)
    assert [x.mbps for x in other] != [x.mbps for x in bandwidth_events(graph(s), 30)]
    # an explicit schedule seed overrides the scenario seed
    a = bandwidth_events(graph("wan.bandwidth_schedule={min_mbps: 20, max_mbps: 80, every_s: 4, seed: 99}"), 30)
    b = bandwidth_events(graph("wan.bandwidth_schedule={min_mbps: 20, max_mbps: 80, every_s: 4, seed: 99}", "seed=1"), 30)
    assert a == b
    # edge g1-g2's stream does not depend on other edges' schedules
    only = graph("wan.edges=[{a: a, b: b, bandwidth_schedule: {min_mbps: 20, max_mbps: 80, every_s: 4}}]")
    assert [x for x in bandwidth_events(graph(s), 30) if x.edge == ("g1", "g2")] == bandwidth_events(only, 30)


def test_random_schedule_is_uniform():
    g = graph("wan.bandwidth_schedule={min_mbps: 10, max_mbps: 110, every_s: 0.01}")
    rates = np.array([x.mbps for x in bandwidth_events(g, 100) if x.edge == ("g1", "g2")])
    assert len(rates) == 10000
    assert rates.mean() == pytest.approx(60, abs=1.5)          # 5 sigma of the mean: 28.9/100*5
    assert rates.std() == pytest.approx(100 / np.sqrt(12), rel=0.05)


def test_random_schedule_needs_a_horizon():
    g = graph("wan.bandwidth_schedule={min_mbps: 20, max_mbps: 80, every_s: 4}")
    with pytest.raises(ValueError, match="give the run's horizon_s"):
        bandwidth_events(g)


def test_events_on_a_dilated_graph_are_dilated():
    g = graph("wan.bandwidth_schedule={min_mbps: 20, max_mbps: 80, every_s: 4}")
    real = bandwidth_events(g, 30)
    dil = bandwidth_events(dilate_graph(g, 4), 120)
    assert [(x.t_s, x.edge) for x in dil] == [(x.t_s * 4, x.edge) for x in real]
    assert [x.mbps for x in dil] == pytest.approx([x.mbps / 4 for x in real])


# ---------------------------------------------------------------- per direction, integer draws
PER_DIR = "wan.bandwidth_schedule={min_mbps: 20, max_mbps: 155, every_s: 180, per_direction: true, integer: true}"


def test_per_direction_draws_each_direction_on_its_own_stream():
    g = graph(PER_DIR)
    ev = bandwidth_events(g, 1800)
    for u, v in [("g1", "g2"), ("g1", "g3"), ("g2", "g3")]:
        fwd = [x for x in ev if x.edge == (u, v) and x.src == u]
        rev = [x for x in ev if x.edge == (u, v) and x.src == v]
        assert [x.t_s for x in fwd] == [x.t_s for x in rev] == [180.0 * k for k in range(10)]
        assert all(x.direction == (u, v) for x in fwd) and all(x.direction == (v, u) for x in rev)
        assert [x.mbps for x in fwd] != [x.mbps for x in rev]       # independent draws
    assert not any(x.src is None for x in ev)
    # sorted by time, then edge, then direction (from the lower datacenter first)
    assert [(x.edge, x.src) for x in ev[:6]] == [(("g1", "g2"), "g1"), (("g1", "g2"), "g2"),
                                                 (("g1", "g3"), "g1"), (("g1", "g3"), "g3"),
                                                 (("g2", "g3"), "g2"), (("g2", "g3"), "g3")]
    assert bandwidth_events(graph(PER_DIR), 1800) == ev              # seeded: reproducible
    assert bandwidth_events(graph(PER_DIR, "seed=6"), 1800) != ev


def test_per_direction_keeps_the_edge_stream_for_the_lower_to_higher_direction():
    real = "wan.bandwidth_schedule={min_mbps: 20, max_mbps: 80, every_s: 4}"
    both = bandwidth_events(graph(real), 30)
    apart = bandwidth_events(graph(real.replace("}", ", per_direction: true}")), 30)
    assert [(x.t_s, x.edge, x.mbps) for x in apart if x.src == x.edge[0]] == \
        [(x.t_s, x.edge, x.mbps) for x in both]


def test_integer_draws_are_whole_and_inclusive_like_randint():
    g = graph("wan.bandwidth_schedule={min_mbps: 20, max_mbps: 23, every_s: 0.01, integer: true}")
    rates = [x.mbps for x in bandwidth_events(g, 10) if x.edge == ("g1", "g2")]
    assert len(rates) == 1000 and set(rates) == {20.0, 21.0, 22.0, 23.0}   # both ends drawn
    counts = np.bincount(np.array(rates, dtype=int) - 20)
    assert all(abs(c - 250) < 5 * np.sqrt(1000 * 0.25 * 0.75) for c in counts)
    ev = bandwidth_events(graph(PER_DIR), 36000)
    assert all(x.mbps == int(x.mbps) and 20 <= x.mbps <= 155 for x in ev)
    assert {20.0, 155.0} <= {x.mbps for x in ev}


def test_integer_draws_need_whole_bounds():
    from testbed.scenario import ScenarioError
    with pytest.raises(ScenarioError, match=r"wan\.bandwidth_schedule: integer draws need whole "
                                            r"min_mbps and max_mbps \(got 20.5 and 155\)"):
        graph("wan.bandwidth_schedule={min_mbps: 20.5, max_mbps: 155, every_s: 1, integer: true}")
    with pytest.raises(ScenarioError, match=r"per_direction: .*bool"):
        graph("wan.bandwidth_schedule={min_mbps: 20, max_mbps: 155, every_s: 1, per_direction: 2}")


def test_rate_at_per_direction():
    g = graph(PER_DIR)
    ev = bandwidth_events(g, 1800)
    e = ("g1", "g2")
    fwd = [x.mbps for x in ev if x.edge == e and x.src == "g1"]
    rev = [x.mbps for x in ev if x.edge == e and x.src == "g2"]
    assert rate_at(g, ev, e, 200, "g1") == fwd[1] and rate_at(g, ev, e, 200, "g2") == rev[1]
    assert rate_at(g, ev, ("g2", "g1"), 200, "g2") == rev[1]       # the edge in either order
    assert rate_at(g, ev, e, 200) == min(fwd[1], rev[1])            # no direction: the slower one
    # an explicit schedule sets both directions: either direction reads it
    g2 = graph("wan.edges=[{a: a, b: c, bandwidth_schedule: [{t_s: 2, mbps: 50}]}]")
    ev2 = bandwidth_events(g2)
    assert rate_at(g2, ev2, ("g1", "g3"), 3, "g3") == rate_at(g2, ev2, ("g1", "g3"), 3) == 50


def test_per_direction_events_on_a_dilated_graph_keep_their_direction():
    g = graph(PER_DIR)
    real = bandwidth_events(g, 1800)
    dil = bandwidth_events(dilate_graph(g, 4), 7200)
    assert [(x.t_s, x.edge, x.src) for x in dil] == [(x.t_s * 4, x.edge, x.src) for x in real]
    assert [x.mbps for x in dil] == pytest.approx([x.mbps / 4 for x in real])


def test_apply_change_keeps_an_edge_or_its_two_directions():
    from topologies.schedule import apply_change, rate_key
    assert rate_key(("g1", "g2")) == "g1-g2" and rate_key("g1-g2", "g2") == "g2>g1"
    with pytest.raises(ValueError, match="g3 is not an end of edge g1-g2"):
        rate_key(("g1", "g2"), "g3")
    rates = {"g1-g2": 100.0, "g1-g3": 100.0}
    apply_change(rates, ("g1", "g2"), 30, "g2")
    assert rates == {"g1-g3": 100.0, "g1>g2": 100.0, "g2>g1": 30.0}
    apply_change(rates, "g1-g2", 40, "g1")
    assert rates == {"g1-g3": 100.0, "g1>g2": 40.0, "g2>g1": 30.0}
    apply_change(rates, ("g1", "g2"), 70)                           # both directions again
    assert rates == {"g1-g3": 100.0, "g1-g2": 70.0}


def test_schedule_driver_changes_only_the_direction_leaving_src(monkeypatch, tmp_path):
    """The runtime's side: a one-direction event changes the htb of src's interface toward
    the other end (its egress is that direction); a both-direction event both ends."""
    import json
    from testbed import lifecycle
    from topologies import linkemu
    from topologies.ports import interface_name
    g = dilate_graph(graph(), 2)
    applied = []
    monkeypatch.setattr(linkemu, "change_rate", lambda intf, mbps, run: applied.append((intf, mbps)))
    e = ("g1", "g3")
    events = [BandwidthEvent(0.0, e, 10.0), BandwidthEvent(0.0, e, 7.0, "g3"), BandwidthEvent(0.0, e, 5.0, "g1")]
    shaped = {}
    d = lifecycle.ScheduleDriver(g, events, shaped, tmp_path / "bw.jsonl")
    d.run()
    to3, to1 = interface_name(g, "g1", "g3"), interface_name(g, "g3", "g1")
    assert applied == [(to3, 10.0), (to1, 10.0), (to1, 7.0), (to3, 5.0)]
    assert shaped == {"g1": {to3: 5.0}, "g3": {to1: 7.0}}
    recs = [json.loads(line) for line in (tmp_path / "bw.jsonl").read_text().splitlines()]
    assert [(r["edge"], r.get("src"), r["mbps"]) for r in recs] == \
        [("g1-g3", None, 10.0), ("g1-g3", "g3", 7.0), ("g1-g3", "g1", 5.0)]
    # the port behind the interface name is the one toward the other end
    assert to3 == f"g1-eth{g.edges['g1', 'g3']['ports']['g1']}"
