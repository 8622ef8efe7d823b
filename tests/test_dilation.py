"""Time dilation: rates / s, delays and compute times x s, back to real time."""
import pytest

from testbed.dilation import (dilate_compute_spec, dilate_events, dilate_graph, dilate_ms, to_real_rate,
                              to_real_seconds)
from testbed.scenario import parse_scenario
from topologies.graph import build_graph
from topologies.schedule import BandwidthEvent

SCN = """name: t
time_dilation: 4
datacenters:
  - {name: a, region: "ibm:us-east"}
  - {name: b, region: "ibm:eu-de"}
wan: {default: {bandwidth_mbps: 2000, jitter_ms: 2, loss_pct: 0.5}}
intra_dc: {access: {bandwidth_mbps: 1000, delay_ms: 0.1}}
scheme: iperf
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


def test_events_and_times():
    ev = [BandwidthEvent(2.0, ("g1", "g2"), 100.0)]
    assert dilate_events(ev, 5) == [BandwidthEvent(10.0, ("g1", "g2"), 20.0)]
    assert dilate_ms(200, 3) == 600
    assert to_real_seconds(12.0, 4) == 3.0
    assert to_real_rate(1e6, 4) == 4e6
    # round trip: a dilated duration measured back gives the real one
    assert to_real_seconds(dilate_ms(250, 7) / 1000, 7) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        to_real_seconds(1, 0)


def test_dilate_compute_spec_scales_only_durations():
    assert dilate_compute_spec({"model": "pareto", "scale_ms": 10.0, "shape": 1.5}, 4) == \
        {"model": "pareto", "scale_ms": 40.0, "shape": 1.5}
    assert dilate_compute_spec({"model": "normal", "mean_ms": 200, "std_ms": 20}, 2) == \
        {"model": "normal", "mean_ms": 400, "std_ms": 40}


def test_min_time_dilation_from_switch_packet_rate():
    from testbed.dilation import min_time_dilation, packet_rate_pps
    # 100 Mbps of 1250-byte frames is 10 000 packets/s
    assert packet_rate_pps(100, 1250) == 10000
    g = build_graph(parse_scenario(SCN.replace("bandwidth_mbps: 2000", "bandwidth_mbps: 100")))
    assert min_time_dilation(g, 1250, 2500) == 4          # 10 000 pps / 2 500 pps
    assert min_time_dilation(g, 1250, 50000) == 1         # never below 1
    # including access links (1000 Mbps) needs more
    assert min_time_dilation(g, 1250, 2500, kinds=("wan", "access")) == 40
    with pytest.raises(ValueError, match="real-world graph"):
        min_time_dilation(dilate_graph(g), 1250, 2500)
    with pytest.raises(ValueError, match="packet size must be > 0"):
        packet_rate_pps(10, 0)
