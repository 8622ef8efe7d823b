"""bench/ina.py's pure parts: capacity, tensor sizing, limit diagnosis, switch entries."""
import pytest

from bench.ina import (best_rate, bench_graph, frame_bytes, limiter, parameters_for,
                       payload_capacity, reset_commands, switch_commands)
from tests.agg_switches import factory


def test_capacity_counts_only_gradient_bytes():
    assert frame_bytes(64) == 314 and frame_bytes(32) == 186
    assert payload_capacity(10, 64) == pytest.approx(10e6 / 8 * 256 / 314)
    n = parameters_for(10, 64, 1.0)
    assert n % 64 == 0 and abs(n * 4 - payload_capacity(10, 64)) < 64 * 4
    assert parameters_for(0.001, 64, 1.0) == 64 * 64          # floor: a full window


def test_limit_diagnosis():
    assert limiter(0.95, 0.9, 0.5, 0.9, 0.5).startswith("link")
    assert limiter(0.5, 0.9, 0.0, 0.1, 0.0).startswith("switch CPU (busy")
    assert "waited" in limiter(0.5, 0.4, 0.5, 0.1, 0.0) and limiter(0.5, 0.4, 0.5, 0.1, 0).startswith("switch")
    assert limiter(0.5, 0.3, 0.1, 0.5, 0.4).startswith("worker CPU")
    assert limiter(0.5, 0.3, 0.1, 0.2, 0.1).startswith("latency")
    steps = [{"rate_mbps": 2, "ratio": 0.99}, {"rate_mbps": 5, "ratio": 0.93}, {"rate_mbps": 10, "ratio": 0.7}]
    assert best_rate(steps)["rate_mbps"] == 5
    assert best_rate([{"rate_mbps": 2, "ratio": 0.5}]) is None


def test_switch_entries_aggregate_the_four_workers():
    """The bench's entries in the in-process softswitch: 4 contributions, 4 results."""
    from control.agg_entries import push
    from workers import agg_packet as ap
    g = bench_graph()
    sw = factory("softswitch", k=64)()
    push(sw, switch_commands(g, 128) + reset_commands(128))
    hosts = sorted((h for h, a in g.nodes(data=True) if a["role"] == "host"),
                   key=lambda h: g.nodes[h]["worker_index"])
    outs = []
    for i, h in enumerate(hosts):
        a = g.nodes[h]
        frame = ap.build(a["mac"], "02:00:0a:09:00:fe", a["ip"], "10.9.0.254", job=1, flags=ap.DATA,
                         slot=3, shadow=1, gen=1, offset=192, sender=i, fan_in=4, values=[i + 1] * 64)
        outs = sw.process(i + 1, frame)
        if i < 3:
            assert outs == []                 # not last: added and dropped
    assert sorted(p for p, _ in outs) == [1, 2, 3, 4]
    for port, data in outs:
        h = ap.parse(data)
        assert h.flags & ap.RESULT and list(h.values) == [10] * 64
        assert ap.Ether(data)["IP"].dst == g.nodes[hosts[port - 1]]["ip"]


def test_switch_datapath_from_its_log():
    from bench.ina import switch_datapath
    assert switch_datapath("x\nINFO datapath: compiled (libagg.so)\n") == "compiled"
    assert switch_datapath("datapath: python (--datapath python)") == "python"
    assert switch_datapath("started\n") == "unknown"


def test_a_saturated_machine_is_named_when_no_process_is():
    m = {"cores": 2, "busy": 1.95, "switch": 0.3, "workers": 1.5, "steal": 0.1}
    assert limiter(0.7, 0.3, 0.5, 0.4, 0.5, m).startswith("the machine's CPUs (busy 1.95 of 2 cores")
    assert "other processes 0.05, stolen by the hypervisor 0.10" in limiter(0.7, 0.3, 0.5, 0.4, 0.5, m)
    assert limiter(0.7, 0.9, 0.0, 0.4, 0.5, m).startswith("switch CPU (busy")    # one process first
    assert limiter(0.7, 0.3, 0.1, 0.2, 0.1, {**m, "busy": 1.0}).startswith("latency")


def test_busy_seconds_leaves_out_idle_and_iowait_and_tells_steal_apart():
    import os
    from bench.ina import busy_seconds
    hz = os.sysconf("SC_CLK_TCK")
    stat = "cpu  100 5 50 1000 40 3 2 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    assert busy_seconds(stat) == ((100 + 5 + 50 + 3 + 2) / hz, 0.0)
    assert busy_seconds("cpu  1 0 0 9 0 0 0 7 0 0\n") == (1 / hz, 7 / hz)
