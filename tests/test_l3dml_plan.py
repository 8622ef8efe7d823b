"""Scheme l3dml's plan (pure): geo-ina's tree with timer loops at the datacenters' gateways,
the agg_repair entries on the loops' ports, workers that wait for the switches' repair;
its options refused with the field path; the loops in the link-emulation plan."""
import pytest

from control.agg_entries import switch_commands
from schemes.ina.plan import plan_for, tree_for
from schemes.l3dml.options import L3dmlOptions
from schemes.l3dml.plan import plan, repair_timeout_ms
from testbed.dilation import dilate_graph
from testbed.scenario import ScenarioError
from topologies import linkemu
from topologies.graph import build_graph
from topologies.ports import timer_loop_ports
from tests.test_scheme_ina import scenario


def setup(opts: str = ""):
    scn = scenario(f"scheme_options: {{{opts}}}" if opts else "", scheme="l3dml")
    g = dilate_graph(build_graph(scn))
    return scn, g, L3dmlOptions.model_validate(scn.scheme_options or {})


def test_the_non_root_gateway_gets_a_loop_and_repair_entries():
    scn, g, o = setup()
    p = plan(g, scn, o)
    tree, _ = tree_for("geo-ina", g, scn, o)
    root_sw = tree.points[tree.root].switch
    other = ({"g1", "g2"} - {root_sw}).pop()
    assert set(p.timer_loops) == {other}
    # 1.5 x the WAN round trip of the dilated graph (40 ms one way x dilation 2)
    assert p.timer_loops[other] == pytest.approx(1.5 * 2 * 40 * 2, rel=0.05)
    out, inn = timer_loop_ports(g, other)
    cmds = p.switch_commands[other]
    assert f"mirroring_add 250 {out}" in cmds
    assert any(c.startswith("table_add MyIngress.agg_repair MyIngress.repair_point") and
               c.endswith(f"=> {inn} 250 7") for c in cmds)
    assert not any("agg_repair" in c for c in p.switch_commands[root_sw])
    base = plan_for("geo-ina")(g, scn, o)
    for h, c in p.comm.items():
        cl, b = c["client"], base.comm[h]["client"]
        repair_s = cl["reorder_extra"]
        # two repair attempts (passes 1 and 2 of the timer loop) + the WAN round trip
        assert repair_s == pytest.approx((2 * p.timer_loops[other] + 2 * 80) / 1000, rel=0.05)
        assert cl["min_rto"] == pytest.approx(b["min_rto"] + repair_s)
        assert cl["initial_rto"] >= cl["min_rto"]
    assert p.info["repair_switches"] == [other] and p.info["policy"] == "none"


def test_options_change_the_loops_or_switch_them_off():
    scn, g, o = setup("repair_timeout_ms: 55, repair_backoff: 0")
    p = plan(g, scn, o)
    assert list(p.timer_loops.values()) == [55.0]
    assert any(c.endswith(" 250 0") for cmds in p.switch_commands.values() for c in cmds
               if "agg_repair" in c)
    # the workers wait for one attempt (pass 1) or four (passes 1, 2, 4, 8) + the round trip
    for attempts, passes in ((1, 1), (4, 8)):
        scn, g, o = setup(f"repair_timeout_ms: 55, worker_waits_repairs: {attempts}")
        p = plan(g, scn, o)
        assert [c["client"]["reorder_extra"] for c in p.comm.values()] == \
            pytest.approx([(passes * 55 + 2 * 80) / 1000] * len(p.comm), rel=0.05)
    scn, g, o = setup("repair: false")
    p = plan(g, scn, o)
    base = plan_for("geo-ina")(g, scn, o)
    assert p.timer_loops == {} and p.switch_commands == base.switch_commands
    assert p.comm == base.comm


@pytest.mark.parametrize("opts, msg", [
    ("{repair_timeout_ms: 0}", "scheme_options.repair_timeout_ms"),
    ("{repair_timeout_ms: soon}", "scheme_options.repair_timeout_ms"),
    ("{repair_backoff: 8}", "scheme_options.repair_backoff"),
    ("{worker_waits_repairs: 0}", "scheme_options.worker_waits_repairs"),
    ("{policy: learned}", "scheme_options.policy"),
    ("{policy: smart}", "scheme_options.policy"),
    ("{replan_interval_s: 2}", "set policy to rule or drl"),
    ("{policy: rule, replan_interval_s: 0}", "scheme_options.replan_interval_s"),
    ("{policy: rule, replan_window: 0}", "scheme_options.replan_window"),
    ("{policy: rule, replan_threshold: 1.5}", "scheme_options.replan_threshold"),
    ("{repiar: true}", "did you mean 'repair'")])
def test_bad_options_are_refused_with_the_field_path(opts, msg):
    with pytest.raises(ScenarioError, match=msg):
        scenario(f"scheme_options: {opts}", scheme="l3dml")


def test_the_loops_in_the_link_emulation_plan():
    scn, g, o = setup()
    p = plan(g, scn, o)
    (sw, delay), = p.timer_loops.items()
    out, inn = timer_loop_ports(g, sw)
    user = linkemu.plan(g, "userspace", loops=p.timer_loops)
    assert user.loops == [(sw, out, inn)]
    assert user.switch_emu[sw][out]["delay_ms"] == delay and user.switch_emu[sw][out]["loss_pct"] == 0
    assert {s.intf for s in user.intfs} >= {f"{sw}-eth{out}", f"{sw}-eth{inn}"}
    netem = linkemu.plan(g, "netem", loops=p.timer_loops)
    assert netem.intf(f"{sw}-eth{out}").netem.delay_ms == delay
    assert netem.intf(f"{sw}-eth{inn}").netem is None
    with pytest.raises(linkemu.LinkEmuError, match="timer loop.*userspace"):
        linkemu.plan(g, "relay", loops=p.timer_loops)
    with pytest.raises(linkemu.LinkEmuError, match="positive delay"):
        linkemu.plan(g, "userspace", loops={sw: 0})
    # the loop's ports come after every link of the switch
    assert out > max(d["ports"][sw] for _, _, d in g.edges(sw, data=True)) and inn == out + 1


def test_the_controller_reads_the_repair_counters_at_the_end():
    from control.agg_entries import EVENT_NAMES, event_reads
    from schemes.l3dml.controller import controller
    from tests.agg_switches import factory
    scn, g, o = setup()
    p = plan(g, scn, o)
    sw = factory("softswitch")()
    pushed = []

    def push(name, cmds):
        pushed.append((name, cmds))
        return [sw.execute(c) for c in cmds]
    c = controller(g, scn, o, p, type("Hooks", (), {"push": staticmethod(push)})())
    c.start()
    c.stop()
    c.stop()                           # once only
    assert c.summary_key == "l3dml" and c.summary()["replan"] is None
    s = c.summary()["switch_repair"]
    assert s["error"] is None and sorted(s["events"]) == sorted([*p.timer_loops, p.info["root"]])
    assert all(ev == dict.fromkeys(EVENT_NAMES, 0) for ev in s["events"].values())
    assert [cmds for _, cmds in pushed] == [event_reads()] * len(s["events"])
    broken = controller(g, scn, o, p, type("Hooks", (), {"push": staticmethod(lambda n, c: ["?"] * len(c))})())
    broken.stop()
    assert "no packet count" in broken.summary()["switch_repair"]["error"]
    assert "no packet count" in broken.summary()["error"]       # the run reports it
    scn, g, o = setup("repair: false")
    assert controller(g, scn, o, plan(g, scn, o), None) is None


def test_slot_ranges_follow_the_split():
    from schemes.l3dml.routing import slot_ranges
    assert slot_ranges((1.0, 0.0, 0.0), 8) == [(0, 7, 0)]
    assert slot_ranges((0.5, 0.25, 0.25), 8) == [(0, 3, 0), (4, 5, 1), (6, 7, 2)]
    assert slot_ranges((0.34, 0.33, 0.33), 4) == [(0, 1, 0), (2, 2, 1), (3, 3, 2)]
    assert slot_ranges((0.01, 0.99), 16) == [(0, 15, 1)]
    for bad in ((0.5, 0.4), (-0.1, 1.1)):
        with pytest.raises(ValueError, match="fractions"):
            slot_ranges(bad, 8)


MESH3 = """
name: l3-mesh
seed: 2
datacenters:
  - {name: a, lat: 0, lon: 0, racks: 1, workers_per_rack: 2}
  - {name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 2}
  - {name: c, lat: 10, lon: 0, racks: 1, workers_per_rack: 2}
wan:
  topology: full-mesh
  default: {bandwidth_mbps: 20, delay_ms: 10}
scheme: l3dml
scheme_options: {root: a, policy: rule, window: 512}
workload: {kind: synthetic, parameters: 262144}
compute_time: {model: constant, value_ms: 100}
stragglers:
  persistent: [{dc: b, factor: 4}]
iterations: 3
"""


def test_policy_rule_spreads_the_straggler_over_two_paths_by_slot_range():
    from testbed.scenario import parse_scenario
    scn = parse_scenario(MESH3, "<mesh3>")
    g = dilate_graph(build_graph(scn))
    p = plan(g, scn, L3dmlOptions.model_validate(scn.scheme_options))
    alloc = {a["gateway"]: a for a in p.info["allocation"]}
    b = alloc["g2"]
    assert len(b["slot_ranges"]) == 2 and b["slot_ranges"][1][2] == ["g2", "g3", "g1"]
    assert b["slot_ranges"][0][0] == 0 and b["slot_ranges"][-1][1] == 511     # the whole window
    lo, hi, _ = b["slot_ranges"][1]
    assert any(c.startswith(f"table_add MyIngress.agg_path MyIngress.ipv4_forward 1 10.0.0.1 {lo}->{hi} ")
               for c in p.switch_commands["g2"])
    assert any("agg_path" in c for c in p.switch_commands["g3"])      # the transit hop
    assert alloc["g3"]["slot_ranges"] == [[0, 511, ["g3", "g1"]]]     # the fast one keeps its route
    # chunk-synchronous pacing (default): the straggler starts at once, the others wait for
    # its first chunk's arrival; all paced at its rate (real bps -> packets/s, dilated clock)
    from workers.agg_packet import frame_bytes
    sync = p.info["sync"]
    assert sync["mode"] == "chunk" and sync["start_delay_s"][2] == 0.0
    # b starts 0.3 s late (x4 of 100 ms) and its route is 10 ms; the root datacenter has none
    assert sync["start_delay_s"][3] == pytest.approx(0.3, abs=1e-3)
    assert sync["start_delay_s"][1] == pytest.approx(0.31, abs=1e-3)
    b_cap = next(a for a in p.info["allocation"] if a["dc"] == 2)["rate_cap_mbps"]
    for h, c in p.comm.items():
        dc = g.nodes[h]["dc_index"]
        assert c["client"]["max_rate_pps"] == pytest.approx(b_cap * 1e6 / scn.time_dilation / 8 / frame_bytes(32))
        assert c["start_delay_s"] == pytest.approx(sync["start_delay_s"][dc] * scn.time_dilation)
    # the policy's own caps from each one's start (sync: policy)
    opts = L3dmlOptions.model_validate({**scn.scheme_options, "sync": "policy"})
    q = plan(g, scn, opts)
    for h, c in q.comm.items():
        cap = next(a for a in q.info["allocation"] if a["dc"] == g.nodes[h]["dc_index"])["rate_cap_mbps"]
        assert c["client"]["max_rate_pps"] == pytest.approx(cap * 1e6 / scn.time_dilation / 8 / frame_bytes(32))
        assert c["start_delay_s"] == 0.0
    fm = p.info["flow_model"]
    assert fm["rule"]["spread_s"] < fm["none"]["spread_s"]
    assert fm["rule"]["completion_s"] <= fm["none"]["completion_s"] + 1e-9


def test_the_repair_timeout_covers_the_longest_path_the_policy_uses():
    from testbed.scenario import parse_scenario
    from schemes.l3dml.plan import used_path_rtt_ms
    scn = parse_scenario(MESH3, "<mesh3>")
    g = dilate_graph(build_graph(scn))
    o = L3dmlOptions.model_validate(scn.scheme_options)
    p = plan(g, scn, o)
    route_only = plan(g, scn, L3dmlOptions.model_validate({**scn.scheme_options, "policy": "none"}))
    # b's two-hop path (10 + 10 ms, x dilation 1) doubles the longest round trip
    assert p.info["repair_timeout_ms"] == pytest.approx(1.5 * 40)
    assert route_only.info["repair_timeout_ms"] == pytest.approx(max(20.0, 1.5 * 20))
    for c in p.comm.values():
        assert c["client"]["reorder_extra"] == pytest.approx((2 * 60 + 40) / 1000)
