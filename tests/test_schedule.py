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
