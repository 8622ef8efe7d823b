"""Link emulation planning and tc command generation (pure, no root)."""
import math

import networkx as nx
import pytest

from topologies import linkemu
from topologies.linkemu import LinkEmuError


def two_dc_graph(wan=dict(bandwidth_mbps=10, delay_ms=20, jitter_ms=1, loss_pct=0.5),
                 access=dict(bandwidth_mbps=100, delay_ms=0, jitter_ms=0, loss_pct=0)):
    """Smallest graph of the shared contract: h - s - g == g - s - h."""
    g = nx.Graph()
    for d in (1, 2):
        g.add_node(f"h{d}r1w1", role="host", dc=f"dc{d}", dc_index=d, rack=1)
        g.add_node(f"s{d}r1", role="rack_switch", dc=f"dc{d}", dc_index=d, rack=1)
        g.add_node(f"g{d}", role="gateway", dc=f"dc{d}", dc_index=d)
        g.add_edge(f"h{d}r1w1", f"s{d}r1", kind="access", ports={f"s{d}r1": 1}, **access)
        g.add_edge(f"s{d}r1", f"g{d}", kind="uplink", ports={f"s{d}r1": 2, f"g{d}": 1},
                   bandwidth_mbps=1000, delay_ms=0, jitter_ms=0, loss_pct=0)
    g.add_edge("g1", "g2", kind="wan", ports={"g1": 2, "g2": 2}, **wan)
    return g


def test_choose_mode_auto_and_forced():
    assert linkemu.choose_mode("auto", False)[0] == "userspace"
    assert linkemu.choose_mode(None, True)[0] == "netem"
    assert linkemu.choose_mode("userspace", True)[0] == "userspace"
    with pytest.raises(LinkEmuError, match="no sch_netem"):
        linkemu.choose_mode("netem", False)
    with pytest.raises(LinkEmuError, match="unknown link emulation mode"):
        linkemu.choose_mode("tbf", True)


def test_userspace_plan_puts_full_one_way_delay_on_each_wan_egress():
    p = linkemu.plan(two_dc_graph(), "userspace", seed=7)
    assert p.switch_emu["g1"][2]["delay_ms"] == 20
    assert p.switch_emu["g2"][2]["delay_ms"] == 20
    assert p.switch_emu["g1"][2]["loss_pct"] == 0.5
    assert p.switch_emu["g1"][2]["seed"] != p.switch_emu["g2"][2]["seed"]
    # links without impairment get no emulation entry at all
    assert 1 not in p.switch_emu.get("g1", {})
    assert "s1r1" not in p.switch_emu
    # every interface end is shaped with the link's rate; netem is never used
    wan = p.intf("g1-eth2")
    assert wan.rate_mbps == 10 and wan.netem is None
    assert p.intf("h1r1w1-eth0").rate_mbps == 100 and p.intf("h1r1w1-eth0").is_host
    assert len(p.intfs) == 2 * 5


def test_userspace_access_link_delay_doubled_toward_host_with_warning():
    g = two_dc_graph(access=dict(bandwidth_mbps=100, delay_ms=1.5, jitter_ms=0, loss_pct=1))
    p = linkemu.plan(g, "userspace")
    assert p.switch_emu["s1r1"][1]["delay_ms"] == 3.0
    assert p.switch_emu["s1r1"][1]["loss_pct"] == 1
    assert any("access link" in w for w in p.warnings)


def test_netem_plan_puts_impairment_in_kernel_on_both_ends():
    p = linkemu.plan(two_dc_graph(), "netem")
    assert p.switch_emu == {}
    for name in ("g1-eth2", "g2-eth2"):
        assert p.intf(name).netem == linkemu.Impair(20, 1, 0.5)
    cmds = linkemu.shape_commands(p.intf("g1-eth2"))
    assert any("netem delay 20.0ms 1.0ms distribution normal loss 0.5%" in c for c in cmds)
    assert any("htb rate 10000kbit" in c for c in cmds)


def test_rates_above_mininet_cap_are_applied_not_dropped():
    s = linkemu.IntfShape("g1", "g1-eth2", 2, False, 2500.0, 100, None)
    cmds = linkemu.shape_commands(s)
    assert any("rate 2500000kbit" in c for c in cmds)
    assert "rate 500kbit" in linkemu.rate_change_command("g1-eth2", 0.5)
    with pytest.raises(LinkEmuError, match="positive"):
        linkemu.rate_change_command("g1-eth2", 0)


def test_negative_values_rejected():
    g = two_dc_graph(wan=dict(bandwidth_mbps=-5, delay_ms=20, jitter_ms=0, loss_pct=0))
    with pytest.raises(LinkEmuError, match="bandwidth_mbps is negative"):
        linkemu.plan(g, "userspace")


def test_queue_is_one_bdp_with_floors():
    assert linkemu.queue_packets(10, 0) == 64
    # 100 Mbps x 2 x 50 ms = 1.25 MB = 826 frames of 1514 B
    assert linkemu.queue_packets(100, 50) == 826
    assert linkemu.queue_packets(None, 50) == 1000


def test_parse_htb_rate():
    text = "class htb 5:1 root leaf 10: prio 0 rate 750Kbit ceil 750Kbit burst 3027b cburst 3027b\n"
    assert linkemu.parse_htb_rate_bps(text) == 750e3
    assert linkemu.parse_htb_rate_bps("class htb 5:1 root prio 0 rate 12345Mbit ceil") == 12345e6
    assert linkemu.parse_htb_rate_bps("") is None


def test_htb_leaf_holds_a_bdp_in_bytes_whatever_the_frame_size():
    # 10 Mbps x 2 x 20 ms = 50 kB: 34 MTU frames, raised to the 64-frame floor = 96896 B,
    # i.e. 308 aggregation frames of 314 B (a packet limit of 64 would hold 20 kB of them)
    p = linkemu.plan(two_dc_graph(), "userspace")
    wan = p.intf("g1-eth2")
    assert wan.queue_bytes == linkemu.queue_bytes(10, 20) == 64 * 1514
    assert linkemu.queue_bytes(100, 50) == 826 * 1514
    cmds = linkemu.shape_commands(wan)
    assert cmds[-1].endswith(f"handle 10: bfifo limit {64 * 1514}")
    assert not any("pfifo" in c for c in cmds)
    old = linkemu.IntfShape("g1", "g1-eth2", 2, False, 10.0, 100, None)   # no byte limit given
    assert linkemu.shape_commands(old)[-1].endswith(f"bfifo limit {100 * 1514}")


# ---------------------------------------------------------------- queue sizing, both modes
# (rate Mbps, one-way delay ms, jitter ms, smallest frame B) -> (queue B, delay-line limit)
# queue = one BDP of the round trip (>= 20 ms, >= 64 MTU frames) in bytes;
# limit = ceil((rate x (delay + 4 jitter) + queue) / smallest frame)
SIZING = [
    (50, 45, 0, 314, 372 * 1514, 2690),      # 281250 B in flight + 563208 B queue
    (50, 45, 0, 1514, 372 * 1514, 558),
    (50, 45, 0, 64, 372 * 1514, 13195),
    (10, 100, 0, 314, 166 * 1514, 1199),     # 125000 + 251324
    (10, 100, 0, 1514, 166 * 1514, 249),
    (1000, 0.05, 0, 314, 1652 * 1514, 7986),  # 6250 + 2501128 (20 ms floor of the RTT)
    (1000, 0.05, 0, 1514, 1652 * 1514, 1657),
    (8, 75, 2, 314, 100 * 1514, 747),        # 8 Mbps x 83 ms = 83000 + 151400
    (1, 1, 0, 314, 64 * 1514, 309),          # 64-frame floor: 125 + 96896
]


@pytest.mark.parametrize("rate,delay,jitter,frame,queue,limit", SIZING)
def test_delay_line_limit_holds_flight_and_queue_in_smallest_frames(rate, delay, jitter, frame,
                                                                    queue, limit):
    assert linkemu.queue_bytes(rate, delay) == queue
    assert linkemu.delay_line_limit(rate, delay, jitter, frame) == limit
    # the delay line alone: ~900 slots of 314 B at 50 Mbps and 45 ms
    flight = linkemu.in_flight_bytes(rate, delay, jitter)
    assert limit * frame >= flight + queue > (limit - 1) * frame


def wan_graph(rate, delay, jitter=0.0, loss=0.0):
    return two_dc_graph(wan=dict(bandwidth_mbps=rate, delay_ms=delay, jitter_ms=jitter, loss_pct=loss))


@pytest.mark.parametrize("rate,delay,jitter,frame,queue,limit", SIZING)
def test_netem_commands_delay_then_byte_queue(rate, delay, jitter, frame, queue, limit):
    p = linkemu.plan(wan_graph(rate, delay, jitter, 0.5), "netem", min_frame=frame)
    cmds = linkemu.shape_commands(p.intf("g1-eth2"))
    burst = max(2 * 1514, math.ceil(rate * 1e6 / 8 * 0.004))
    jit = f" {float(jitter)}ms distribution normal" if jitter else ""
    assert cmds == [
        "tc qdisc del dev g1-eth2 root 2>/dev/null || true",
        f"tc qdisc add dev g1-eth2 root handle 1: netem delay {float(delay)}ms{jit} loss 0.5% "
        f"limit {limit}",
        "tc qdisc add dev g1-eth2 parent 1:1 handle 5: htb default 1",
        f"tc class add dev g1-eth2 parent 5: classid 5:1 htb rate {round(rate * 1000)}kbit "
        f"burst {burst} cburst {burst} quantum 6056",
        f"tc qdisc add dev g1-eth2 parent 5:1 handle 10: bfifo limit {queue}",
    ]


@pytest.mark.parametrize("rate,delay,jitter,frame,queue,limit", SIZING)
def test_both_modes_queue_the_same_bytes_and_delay_lines_have_the_same_limit(
        rate, delay, jitter, frame, queue, limit):
    netem = linkemu.plan(wan_graph(rate, delay, jitter, 0.5), "netem", min_frame=frame)
    user = linkemu.plan(wan_graph(rate, delay, jitter, 0.5), "userspace", min_frame=frame)
    for end, port in (("g1", 2), ("g2", 2)):
        n, u = netem.intf(f"{end}-eth{port}"), user.intf(f"{end}-eth{port}")
        assert n.queue_bytes == u.queue_bytes == queue
        assert n.netem_limit == user.switch_emu[end][port]["limit"] == limit
        assert linkemu.shape_commands(u)[-1] == linkemu.shape_commands(n)[-1]   # same bfifo


def test_big_frames_get_no_deeper_byte_queue_than_small_ones():
    """netem's limit is sized for the smallest frame; MTU frames are held back by the bfifo's
    byte limit, so every frame size gets one BDP of bytes queued, as in userspace mode."""
    p = linkemu.plan(wan_graph(50, 45), "netem")   # default: frames down to MIN_FRAME bytes
    s = p.intf("g1-eth2")
    assert s.netem_limit == linkemu.delay_line_limit(50, 45, 0, linkemu.MIN_FRAME) == 13195
    assert s.netem_limit * 1514 > 10 * s.queue_bytes      # the packet limit alone would not do
    bfifo = [c for c in linkemu.shape_commands(s) if "bfifo" in c]
    assert bfifo == [f"tc qdisc add dev g1-eth2 parent 5:1 handle 10: bfifo limit {372 * 1514}"]
    # no packet-counting queue anywhere
    assert not any("pfifo" in c for c in linkemu.shape_commands(s))


def test_delay_line_sized_for_the_fastest_scheduled_rate():
    g = wan_graph(10, 100)
    g.edges["g1", "g2"]["bandwidth_schedule"] = [{"t_s": 0, "mbps": 5}, {"t_s": 30, "mbps": 40}]
    p = linkemu.plan(g, "netem", min_frame=314)
    assert p.intf("g1-eth2").netem_limit == linkemu.delay_line_limit(40, 100, 0, 314)
    assert p.intf("g1-eth2").queue_bytes == linkemu.queue_bytes(10, 100)   # the queue as configured
    g.edges["g1", "g2"]["bandwidth_schedule"] = {"min_mbps": 20, "max_mbps": 150, "every_s": 10}
    g.graph["dilated"] = 10.0   # schedules are real-world Mbps; the edge rate is dilated
    assert linkemu.peak_rate_mbps(g, g.edges["g1", "g2"]) == 15.0


def test_netem_without_rate_and_rate_without_netem():
    imp = linkemu.Impair(5.0, 0.0, 1.0)
    bare = linkemu.IntfShape("h1r1w1", "h1r1w1-eth0", None, True, None, 1000, imp, 0, 777)
    assert linkemu.shape_commands(bare)[1:] == [
        "tc qdisc add dev h1r1w1-eth0 root handle 1: netem delay 5.0ms loss 1.0% limit 777"]
    p = linkemu.plan(two_dc_graph(), "netem")
    up = linkemu.shape_commands(p.intf("g1-eth1"))   # uplink without delay: no netem at all
    assert up[1] == "tc qdisc add dev g1-eth1 root handle 5: htb default 1"
    assert p.intf("g1-eth1").netem_limit == 0


def test_min_frame_must_be_positive():
    with pytest.raises(LinkEmuError, match="min_frame"):
        linkemu.delay_line_limit(10, 10, 0, 0)


def test_queue_bdp_scales_the_queue_above_its_floors():
    assert linkemu.queue_packets(100, 50, bdp=0.25) == 207    # ceil(825.6 x 0.25)
    assert linkemu.queue_packets(100, 50, bdp=2.0) == 1652
    assert linkemu.queue_packets(10, 20, bdp=0.25) == 64          # the 64-frame floor holds
    p = linkemu.plan(two_dc_graph(wan=dict(bandwidth_mbps=100, delay_ms=50, jitter_ms=0,
                                           loss_pct=0, queue_bdp=0.25)), "userspace")
    assert p.intf("g1-eth2").queue_bytes == 207 * 1514
    assert p.intf("g2-eth2").queue_bytes == 207 * 1514            # both directions


def test_scenario_queue_bdp_reaches_the_graph_and_is_checked(tmp_path):
    from testbed.scenario import load_scenario
    from topologies.graph import build_graph
    scn_text = """
name: q
datacenters:
  - {name: a, region: "ibm:us-east", racks: 1, workers_per_rack: 1}
  - {name: b, region: "ibm:eu-de", racks: 1, workers_per_rack: 1}
wan:
  default: {bandwidth_mbps: 50, queue_bdp: 0.5}
  edges: [{a: a, b: b, queue_bdp: 0.25}]
intra_dc: {access: {queue_bdp: 2}}
scheme: ps
iterations: 2
"""
    p = tmp_path / "q.yaml"
    p.write_text(scn_text)
    g = build_graph(load_scenario(str(p)))
    kinds = {d["kind"]: d["queue_bdp"] for _, _, d in g.edges(data=True)}
    assert kinds == {"wan": 0.25, "access": 2.0, "uplink": 1.0}
    p.write_text(scn_text.replace("queue_bdp: 0.5", "queue_bdp: 0"))
    with pytest.raises(Exception, match="queue_bdp"):
        load_scenario(str(p))


def test_time_dilation_keeps_every_queue_the_real_networks_bytes(tmp_path):
    # the 20 ms floor of a short link is real-world time: at s = 10 a 1 Gbps LAN port (rate
    # 100 Mbps emulated, delay 0) keeps 1 Gbps x 20 ms = 1651 frames, not 100 Mbps x 20 ms;
    # a WAN link's BDP is the same bytes either way. The model sizes its queues from the
    # real-world graph (schemes/model_packets.py): the two agree
    from testbed.dilation import dilate_graph
    from testbed.scenario import load_scenario
    from topologies.graph import build_graph
    p = tmp_path / "d.yaml"
    p.write_text("""
name: d
datacenters:
  - {name: a, region: "ibm:us-east", racks: 1, workers_per_rack: 2}
  - {name: b, region: "ibm:eu-de", racks: 1, workers_per_rack: 2}
wan: {default: {bandwidth_mbps: 50}}
scheme: ps
iterations: 2
""")
    real = build_graph(load_scenario(str(p)))
    for s in (1.0, 10.0):
        plan = linkemu.plan(dilate_graph(real, s), "userspace")
        checked = 0
        for u, v, d in real.edges(data=True):
            want = linkemu.queue_bytes(d["bandwidth_mbps"], d["delay_ms"], d.get("queue_bdp") or 1.0)
            names = (linkemu.interface_name(real, u, v), linkemu.interface_name(real, v, u))
            for shape in plan.intfs:
                if shape.intf in names:
                    assert shape.queue_bytes == want, (s, u, v, shape)
                    checked += 1
        assert checked == 2 * real.number_of_edges()
    lan = next(d for _, _, d in real.edges(data=True) if d["kind"] == "access")
    assert linkemu.queue_bytes(lan["bandwidth_mbps"], lan["delay_ms"]) == 1652 * 1514   # ceil(1651.3)
