"""The ina/geo-ina App's pure parts: options, program choice, window, worker configs."""
import json

import pytest

from control.agg_tree import build_tree
from testbed.app_ina import (InaOptions, auto_window, check_program, longest_rtt_ms, program_k,
                             rto_floor_ms, worker_configs)
from testbed.apps import make_app
from testbed.dilation import dilate_graph
from testbed.scenario import parse_scenario
from topologies.graph import build_graph
from workers.ina_worker import WorkerConfig


def scenario(extra: str = "", scheme: str = "geo-ina"):
    return parse_scenario(f"""
name: app-ina
seed: 3
time_dilation: 2
datacenters:
  - {{name: a, lat: 0, lon: 0, racks: 2, workers_per_rack: 2}}
  - {{name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 2}}
wan:
  default: {{bandwidth_mbps: 20, delay_ms: 40}}
scheme: {scheme}
iterations: 3
stragglers:
  persistent: [{{dc: b, factor: 2}}]
{extra}
""", "<app-ina>")


def test_registered_for_both_schemes():
    assert make_app("geo-ina", {}).scheme == "geo-ina"
    assert make_app("ina", {"window": 8}).opts.window == 8


@pytest.mark.parametrize("opts, msg", [
    ({"bogus": 1}, "unknown option"), ({"window": 0}, "window"), ({"window": "big"}, "window"),
    ({"k": 48}, "32 or 64"), ({"job": 300}, "job"), ({"clip": 0}, "clip"), ({"check": "yes"}, "check"),
    ({"rto_margin_ms": -1}, "rto_margin_ms"), ({"rto_margin_ms": "big"}, "rto_margin_ms"),
    ({"congestion_control": "aimd"}, "congestion_control")])
def test_bad_options_name_the_field(opts, msg):
    with pytest.raises(ValueError, match=msg):
        InaOptions.from_options("geo-ina", opts)


def test_aggregation_program_is_chosen_unless_named():
    assert scenario().switch.program == "p4/aggregation.p4"
    assert scenario(scheme="ina").switch.program == "p4/aggregation.p4"
    assert parse_scenario(scenario().model_dump_json(), "<x>").switch.program == "p4/aggregation.p4"
    iperf = scenario(scheme="iperf")
    assert iperf.switch.program == "p4/forward.p4"
    named = scenario("switch: {program: p4/forward.p4}")
    assert named.switch.program == "p4/forward.p4"
    with pytest.raises(ValueError, match="remove switch.program"):
        check_program(named)
    k64 = scenario("scheme_options: {k: 64}")
    assert k64.switch.defines == {"AGG_K": 64} and program_k(k64) == 64
    assert program_k(scenario()) == 32


def window_for(delay_ms: float, k: int = 32) -> int:
    scn = scenario().model_copy(deep=True)
    scn.wan.default.delay_ms = delay_ms
    g = dilate_graph(build_graph(scn, prefix="u"))
    return auto_window(g, build_tree(g, scheme="geo-ina", root="a"), k)


def test_auto_window_is_the_wan_bdp_in_packets():
    # dilated: 10 Mbps and 2 x delay one way; worker in b -> root in a -> back
    assert 10e6 / 8 * (4 * 5e-3) / 186 == pytest.approx(134, abs=1)   # BDP at 5 ms real delay
    assert window_for(5.0) == 256                                        # next power of two
    assert window_for(5.0, k=64) == 128                                  # bigger frames: fewer
    assert window_for(40.0) == 1024                                      # capped (BDP 1075)
    assert window_for(0.5) == 64                                         # floor


def test_auto_window_fits_the_switch_slots():
    scn = scenario().model_copy(deep=True)
    scn.wan.default.delay_ms = 40.0
    g = dilate_graph(build_graph(scn, prefix="u"))
    tree = build_tree(g, scheme="geo-ina", root="a")
    most = max(sum(p.switch == s for p in tree.points.values()) for s in {p.switch for p in tree.points.values()})
    assert most == 1                                 # one point per switch in this tree
    assert auto_window(g, tree, 32, slots=512) == 512
    assert auto_window(g, tree, 32, slots=700) == 512    # powers of two only
    assert auto_window(g, tree, 32, slots=8192) == 1024


def test_worker_configs_load_as_worker_configs(tmp_path):
    scn = scenario()
    g = dilate_graph(build_graph(scn, prefix="u"))
    tree = build_tree(g, scheme="geo-ina", root="a", window=128)
    opts = InaOptions.from_options("geo-ina", {"check": True, "timeout_ms": 500})
    cfgs = worker_configs(g, scn, tree, opts, 32, tmp_path, tmp_path / "go", 3, None)
    assert len(cfgs) == 6
    for h, c in cfgs.items():
        p = tmp_path / f"{h}.json"
        p.write_text(json.dumps(c))
        w = WorkerConfig.load(p)
        assert w.n_workers == 6 and w.dilation == 2.0 and w.check is True
        assert w.client["initial_rto"] == pytest.approx(1.0)       # 500 ms x dilation 2
        assert w.client["window"] == 128 and w.client["k"] == 32
        assert w.client["congestion_control"] is True
        # auto margin: half the longest worker-root round trip (b -> a: 2 x 80 ms dilated, plus
        # the intra-datacenter links, so about 80 ms), at least 100 ms
        assert w.rto_margin_s == pytest.approx(0.1)
        assert not w.host_id.startswith("u") and w.host_id in h
    b = cfgs["uh2r1w1"]
    assert b["dc"] == "b" and b["client"]["agg_ip"] == "10.2.1.254" and b["stragglers"]["persistent"]
    assert [c["index"] for c in cfgs.values()] == list(range(6))
    g.edges["ug1", "ug2"]["delay_ms"] = 400.0          # a far WAN: the margin follows the RTT
    wide = worker_configs(g, scn, tree, InaOptions(), 32, tmp_path, tmp_path / "go", 3, None)
    assert all(0.40 < c["rto_margin_s"] < 0.41 for c in wide.values())
    # the timeout floor: the longest worker-root round trip + the margin
    floor = rto_floor_ms(InaOptions(), g, tree) / 1000.0
    assert floor == pytest.approx(longest_rtt_ms(g, tree) / 1000.0 + 0.405, abs=0.005)
    assert all(c["client"]["min_rto"] == pytest.approx(floor) for c in wide.values())
    assert all(c["client"]["initial_rto"] >= c["client"]["min_rto"] for c in wide.values())


def test_progress_and_collect_from_event_logs(tmp_path):
    """progress() counts iterations and ends the job once one worker hit its duration
    (BSP: the others cannot finish another iteration); collect() summarizes."""
    from types import SimpleNamespace

    from workers.events import EventLog
    scn = scenario()
    g = dilate_graph(build_graph(scn, prefix="u"))
    app = make_app("geo-ina", {"window": 8})
    app.tree = build_tree(g, scheme="geo-ina", window=8)
    app.window = 8
    app.ctx = SimpleNamespace(events_dir=tmp_path, iterations=None, scenario=scn)
    app.configs = {h: {} for h in app.tree.workers}
    hosts = sorted(app.configs)
    for i, h in enumerate(hosts):
        with EventLog(tmp_path / f"{h}.jsonl", h) as log:
            log.log("worker_start", parameters=136, accuracy_initial=0.1)
            log.log("iteration_end", iteration=0, t_start=1.0, t_end=2.0, compute_s=0.2, comm_s=0.8,
                    gradient_bytes=544, bytes_sent=1000, bytes_received=1000, packets_sent=5,
                    retransmissions=i, loss=1.5, accuracy=0.4)
            if i == 0:
                log.log("worker_end", iterations=1, reason="duration reached")
    prog = app.progress()
    assert [p.iterations for p in prog] == [1] * len(hosts) and all(p.finished for p in prog)
    s = app.collect()
    assert s["scheme"] == "geo-ina" and s["window"] == 8 and s["parameters"] == 136
    assert s["iterations_completed"] == 1 and s["retransmissions"] == sum(range(len(hosts)))
    assert s["accuracy"] == [0.4] and s["accuracy_initial"] == 0.1 and s["errors"] == {}
    assert s["real"]["mean_iteration_s"] == pytest.approx(0.5)        # 1 s / dilation 2
