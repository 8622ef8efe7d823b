"""Time dilation: rates / s, delays and compute times x s, back to real time."""
import pytest

from testbed.dilation import dilate_graph, load_factor, to_real_rate, to_real_seconds
from testbed.scenario import parse_scenario
from topologies.graph import build_graph

SCN = """name: t
time_dilation: 4
datacenters:
  - {name: a, region: "ibm:us-east"}
  - {name: b, region: "ibm:eu-de"}
wan: {default: {bandwidth_mbps: 2000, jitter_ms: 2, loss_pct: 0.5}}
intra_dc: {access: {bandwidth_mbps: 1000, delay_ms: 0.1}}
scheme: ps
duration_s: 5
"""


def test_dilate_graph_scales_rates_and_delays_keeps_loss_and_bdp():
    g = build_graph(parse_scenario(SCN))
    d = dilate_graph(g)                       # factor from the scenario
    assert d.graph["dilated"] == 4 and g.graph["dilated"] == 1.0
    w, w0 = d.edges["g1", "g2"], g.edges["g1", "g2"]
    assert w["bandwidth_mbps"] == 500 and w["delay_ms"] == 45.5 * 4 and w["jitter_ms"] == 8
    assert w["loss_pct"] == 0.5
    assert w["real_bandwidth_mbps"] == 2000 and w["real_delay_ms"] == 45.5
    # bandwidth-delay product unchanged
    assert w["bandwidth_mbps"] * w["delay_ms"] == pytest.approx(w0["bandwidth_mbps"] * w0["delay_ms"])
    a = d.edges["h1r1w1", "s1r1"]
    assert a["bandwidth_mbps"] == 250 and a["delay_ms"] == pytest.approx(0.4)
    # the input graph is untouched
    assert w0["bandwidth_mbps"] == 2000


def test_dilate_graph_refuses_twice_and_bad_factor():
    g = build_graph(parse_scenario(SCN))
    with pytest.raises(ValueError, match="already dilated by 4"):
        dilate_graph(dilate_graph(g))
    with pytest.raises(ValueError, match="must be >= 1"):
        dilate_graph(g, 0.5)


def test_dilate_graph_rejects_rates_over_htb_limit():
    g = build_graph(parse_scenario(SCN))
    with pytest.raises(ValueError, match="above Mininet htb's 1000 Mbps; use time_dilation >= 2"):
        dilate_graph(g, 1.5)


def test_back_to_real_time():
    assert to_real_seconds(12.0, 4) == 3.0
    assert to_real_rate(1e6, 4) == 4e6
    with pytest.raises(ValueError):
        to_real_seconds(1, 0)


def test_load_factor_is_the_oversubscription_of_the_cores():
    assert load_factor(0.3, 2) == 1.0          # idle: the scenario's own dilation
    assert load_factor(2.0, 2) == 1.0          # every core busy but none shared
    assert load_factor(5.0, 2) == 2.5          # 5 runnable on 2 cores: each runs 2/5 of the time
    assert load_factor(3.0, 0) == 3.0          # an unknown core count counts as one
