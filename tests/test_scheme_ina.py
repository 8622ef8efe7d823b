"""Schemes ina/geo-ina, pure parts: options, program choice, window, worker configs."""
import json

import pytest

import schemes
from control.agg_tree import build_tree
from schemes.ina.options import InaOptions
from schemes.ina.plan import auto_window, check_program, longest_rtt_ms, program_k, rto_floor_ms
from testbed.scheme_app import make_app
from testbed.dilation import dilate_graph
from testbed.scenario import ScenarioError, parse_scenario
from testbed.scheme_app import worker_configs
from topologies.graph import build_graph
from workers.worker import WorkerConfig


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
    assert make_app("geo-ina", {}).scheme.name == "geo-ina"
    assert make_app("ina", {"window": 8}).opts.window == 8


@pytest.mark.parametrize("opts, msg", [
    ("{bogus: 1}", "scheme_options.bogus: unknown option 'bogus' for scheme geo-ina"),
    ("{window: 0}", "scheme_options.window: must be \"auto\" or an integer in 1..32767 \\(got 0\\)"),
    ("{window: big}", "scheme_options.window: must be \"auto\""),
    ("{windw: 8}", "scheme_options.windw: unknown option 'windw' for scheme geo-ina; did you mean 'window'"),
    ("{k: 48}", "scheme_options.k: Input should be 32 or 64"), ("{job: 300}", "scheme_options.job"),
    ("{clip: 0}", "scheme_options.clip: unknown option 'clip'"), ("{verify: 'yes'}", "scheme_options.verify"),
    ("{rto_margin_ms: -1}", "scheme_options.rto_margin_ms"),
    ("{rto_margin_ms: big}", "scheme_options.rto_margin_ms"),
    ("{congestion_control: aimd}", "scheme_options.congestion_control")])
def test_bad_options_are_refused_with_the_field_path_when_the_scenario_loads(opts, msg):
    with pytest.raises(ScenarioError, match=f"<app-ina>: {msg}"):
        scenario(f"scheme_options: {opts}")


def test_aggregation_program_is_chosen_unless_named():
    assert scenario().switch.program == "p4/aggregation.p4"
    assert scenario(scheme="ina").switch.program == "p4/aggregation.p4"
    assert parse_scenario(scenario().model_dump_json(), "<x>").switch.program == "p4/aggregation.p4"
    assert scenario(scheme="ps").switch.program == "p4/forward.p4"
    assert [n for n in schemes.NAMES if schemes.get(n).program] == ["ina", "geo-ina", "l3dml", "libra", "inart"]
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


def configs(scn, g, opts, tmp_path):
    scheme = schemes.get(scn.scheme)
    plan = scheme.plan(g, scn, opts)
    return plan, worker_configs(g, scn, scheme, opts, plan, tmp_path, tmp_path / "go", 3, None)


def test_worker_configs_load_as_worker_configs(tmp_path):
    scn = scenario()
    g = dilate_graph(build_graph(scn, prefix="u"))
    opts = InaOptions(verify=True, timeout_ms=500, window=128, root="a")
    plan, cfgs = configs(scn, g, opts, tmp_path)
    assert len(cfgs) == 6 and plan.info["window"] == 128 and plan.info["root"] == "ug1"
    for h, c in cfgs.items():
        p = tmp_path / f"{h}.json"
        p.write_text(json.dumps(c))
        w = WorkerConfig.load(p)
        assert w.n_workers == 6 and w.dilation == 2.0 and w.verify is True
        assert w.communicator == "schemes.ina.communicator:InaCommunicator"
        client = w.comm["client"]
        assert client["initial_rto"] == pytest.approx(1.0)       # 500 ms x dilation 2
        assert client["window"] == 128 and client["k"] == 32
        assert client["congestion_control"] is True and w.comm["clip"] == 4.0
        # auto margin: half the longest worker-root round trip (b -> a: 2 x 80 ms dilated, plus
        # the intra-datacenter links, so about 80 ms), at least 100 ms
        assert w.comm["rto_margin_s"] == pytest.approx(0.1)
        assert not w.host_id.startswith("u") and w.host_id in h
    b = cfgs["uh2r1w1"]
    assert b["dc"] == "b" and b["comm"]["client"]["agg_ip"] == "10.2.1.254" and b["stragglers"]["persistent"]
    assert [c["index"] for c in cfgs.values()] == list(range(6))
    g.edges["ug1", "ug2"]["delay_ms"] = 400.0          # a far WAN: the margin follows the RTT
    _, wide = configs(scn, g, InaOptions(window=128, root="a"), tmp_path)
    assert all(0.40 < c["comm"]["rto_margin_s"] < 0.41 for c in wide.values())
    # the timeout floor: the longest worker-root round trip + the margin
    tree = build_tree(g, scheme="geo-ina", root="a", window=128)
    floor = rto_floor_ms(InaOptions(), g, tree) / 1000.0
    assert floor == pytest.approx(longest_rtt_ms(g, tree) / 1000.0 + 0.405, abs=0.005)
    assert all(c["comm"]["client"]["min_rto"] == pytest.approx(floor) for c in wide.values())
    assert all(c["comm"]["client"]["initial_rto"] >= c["comm"]["client"]["min_rto"] for c in wide.values())


def test_k_option_must_match_the_program(tmp_path):
    scn = scenario("switch: {defines: {AGG_K: 32}}\nscheme_options: {k: 64}")
    g = dilate_graph(build_graph(scn, prefix="u"))
    with pytest.raises(ValueError, match="AGG_K=32"):
        configs(scn, g, InaOptions(k=64), tmp_path)


def test_timeouts_stay_ordered_at_high_time_dilation(tmp_path):
    # at s = 20 the first RTO (1 s real-world) is 20 emulated seconds: the ceiling must
    # follow (it was a fixed 10 s and every worker refused its configuration)
    from workers.ina_client import ClientConfig
    from workers.rtt import RttEstimator
    scn = scenario().model_copy(update={"time_dilation": 20.0})
    g = dilate_graph(build_graph(scn, prefix="u"))
    _, cfgs = configs(scn, g, InaOptions(window=128, root="a"), tmp_path)
    for c in cfgs.values():
        cl = c["comm"]["client"]
        assert cl["initial_rto"] == pytest.approx(20.0) and cl["max_rto"] == pytest.approx(200.0)
        RttEstimator(cl["initial_rto"], cl["min_rto"], cl["max_rto"])   # would raise if out of order
        assert ClientConfig(**cl).max_rto == pytest.approx(200.0)
