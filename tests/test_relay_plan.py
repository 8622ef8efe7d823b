"""Relay link emulation planning (pure, no root): which links get a relay, how it is wired,
which delay lines it runs, and how the mode is chosen."""
import pytest

from tests.test_linkemu import two_dc_graph
from topologies import linkemu
from topologies.linkemu import LinkEmuError
from topologies.relay_plan import relay_for_edge
from testbed.relay_run import delay_line_arg, relay_command
from softswitch.dataplane.linkem import parse_link_emu_spec

ACCESS = dict(bandwidth_mbps=100, delay_ms=0.05, jitter_ms=0, loss_pct=0)


def test_auto_mode_is_relay_for_bmv2_without_netem_only():
    assert linkemu.choose_mode("auto", False, "bmv2")[0] == "relay"
    assert linkemu.choose_mode("auto", False, "softswitch")[0] == "userspace"
    assert linkemu.choose_mode("auto", True, "bmv2")[0] == "netem"
    assert linkemu.choose_mode("relay", True, "softswitch") == ("relay", "forced in the scenario")
    with pytest.raises(LinkEmuError, match="auto, netem, userspace or relay"):
        linkemu.choose_mode("relais", False)


def test_relay_plan_relays_exactly_the_impaired_links():
    p = linkemu.plan(two_dc_graph(access=ACCESS), "relay", seed=5)
    # access (0.05 ms) and WAN links are impaired; the uplinks (delay 0) stay plain veths
    assert sorted(r.edge for r in p.relays) == [("g1", "g2"), ("h1r1w1", "s1r1"), ("h2r1w1", "s2r1")]
    assert p.switch_emu == {} and all(s.netem is None for s in p.intfs)
    assert p.warnings == []   # unlike userspace mode, access links are exact in each direction


def test_relay_plan_without_impairment_has_no_relay():
    g = two_dc_graph(wan=dict(bandwidth_mbps=10, delay_ms=0, jitter_ms=0, loss_pct=0))
    assert linkemu.plan(g, "relay").relays == []


def test_wan_relay_wiring_keeps_shaped_names_on_the_relay_side():
    p = linkemu.plan(two_dc_graph(), "relay", seed=5)
    (r,) = [r for r in p.relays if r.edge == ("g1", "g2")]
    # the switches' own ports are -swN; the relay interface that delivers to g2 bears g1's
    # name (its egress is g1 -> g2, with g1-eth2's htb), and the other way round
    assert (r.a.node, r.a.node_intf, r.a.relay_intf) == ("g1", "g1-sw2", "g2-eth2")
    assert (r.b.node, r.b.node_intf, r.b.relay_intf) == ("g2", "g2-sw2", "g1-eth2")
    assert (r.a.port, r.b.port) == (2, 2)
    assert sorted(r.root_intfs()) == ["g1-eth2", "g1-sw2", "g2-eth2", "g2-sw2"]
    # htb is planned on those names, in the root namespace, at the link's rate
    assert p.intf("g1-eth2").rate_mbps == 10 and not p.intf("g1-eth2").is_host


def test_wan_relay_delay_lines_are_the_link_each_way_with_own_seeds():
    p = linkemu.plan(two_dc_graph(), "relay", seed=5)
    (r,) = [r for r in p.relays if r.edge == ("g1", "g2")]
    for line in (r.a_to_b, r.b_to_a):
        assert (line["delay_ms"], line["jitter_ms"], line["loss_pct"]) == (20, 1, 0.5)
        assert line["limit"] == linkemu.delay_line_limit(10, 20, 1)
    assert r.a_to_b["seed"] != r.b_to_a["seed"]
    # the same seeds as userspace mode gives each direction's delay line
    u = linkemu.plan(two_dc_graph(), "userspace", seed=5)
    assert {r.a_to_b["seed"], r.b_to_a["seed"]} == {u.switch_emu["g1"][2]["seed"], u.switch_emu["g2"][2]["seed"]}


def test_access_relay_is_exact_each_way_and_host_keeps_its_interface():
    g = two_dc_graph(access=dict(bandwidth_mbps=100, delay_ms=1.5, jitter_ms=0, loss_pct=1))
    p = linkemu.plan(g, "relay")
    (r,) = [r for r in p.relays if "s1r1" in r.edge]
    host, sw = (r.a, r.b) if r.a.is_host else (r.b, r.a)
    assert (host.node_intf, host.port) == ("h1r1w1-eth0", 0)
    assert host.relay_intf == "s1r1-eth1"        # delivers to the host: s1r1's shaped egress
    assert (sw.node_intf, sw.relay_intf) == ("s1r1-sw1", "h1r1w1-rl0")
    assert "h1r1w1-eth0" not in r.root_intfs()   # it lives in the host's namespace
    for line in (r.a_to_b, r.b_to_a):            # one way each, not the round trip on one side
        assert line["delay_ms"] == 1.5 and line["loss_pct"] == 1
    assert p.intf("h1r1w1-eth0").is_host and p.intf("s1r1-eth1").rate_mbps == 100


def test_relay_between_two_hosts_is_refused():
    g = two_dc_graph()
    g.add_edge("h1r1w1", "h2r1w1", kind="access", ports={})
    with pytest.raises(ValueError, match="joins two hosts"):
        relay_for_edge(g, "h1r1w1", "h2r1w1", {}, {})


def test_relay_command_round_trips_each_delay_line():
    p = linkemu.plan(two_dc_graph(), "relay", seed=5)
    (r,) = [r for r in p.relays if r.edge == ("g1", "g2")]
    cmd = relay_command(r)
    assert cmd[1:5] == ["-m", "softswitch.linkem", "g2-eth2", "g1-eth2"]
    a_to_b = parse_link_emu_spec("2:" + cmd[cmd.index("--a-to-b") + 1])[1]
    b_to_a = parse_link_emu_spec("1:" + cmd[cmd.index("--b-to-a") + 1])[1]
    assert (a_to_b.delay_ms, a_to_b.jitter_ms, a_to_b.loss_pct, a_to_b.seed, a_to_b.limit) == \
        (20, 1, 0.5, r.a_to_b["seed"], r.a_to_b["limit"])
    assert b_to_a.seed == r.b_to_a["seed"]
    with pytest.raises(ValueError, match="loss_pct"):
        delay_line_arg(dict(delay_ms=1, loss_pct=150))


def test_run_preparation_picks_relay_for_bmv2_and_refuses_forced_userspace(monkeypatch):
    from pathlib import Path
    from testbed import backends, lifecycle
    from testbed.scenario import load_scenario
    monkeypatch.setattr(backends, "choose_backend", lambda requested, which=None: ("bmv2", "forced"))
    monkeypatch.setattr(linkemu, "kernel_has_netem", lambda run=None: False)
    quickstart = str(Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.yaml")
    out = lifecycle.prepare(lifecycle.RunOptions(quickstart), load_scenario(quickstart, []))
    mode, plan = out[3], out[6]
    assert mode == "relay" and "BMv2 cannot delay frames" in out[4]
    assert len(plan.relays) == 7   # 4 access links, 2 uplinks, the WAN: all have a delay
    forced = load_scenario(quickstart, ["link_emulation.mode=userspace"])
    with pytest.raises(lifecycle.RunError, match="link_emulation.mode: relay"):
        lifecycle.prepare(lifecycle.RunOptions(quickstart), forced)
