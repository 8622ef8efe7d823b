"""Fallback to the parameter server when a switch has no memory for a slot (docs/protocol.md,
"Fallback to the parameter server"): p4/aggregation.p4's agg_point_bypass packet by packet in
the in-process softswitch, the root engine's slot ranges, the control plane that programs
both, and exact sums under loss, duplication and reordering in the simulated network."""
import json
import signal
import subprocess
import sys

import numpy as np
import pytest

from control import routes
from control.agg_entries import fit_slots, push, switch_commands
from control.agg_tree import build_server_tree, build_tree, bypass_fan_in, root_slot_ranges
from schemes.inart.root_engine import EV, RootEngine
from schemes.inart.root_server import build_engine, parse_ranges
from tests.agg_sim import Faults, build_sim, expected_sums, random_tensors
from tests.agg_switches import factory, flat_point_commands
from tests.agg_topo import graph
from tests.test_inart_root import CHILD_LOS, REPO, ROOT_LO, _child_sockets, _recv, vec, wrapped_sum
from workers import agg_packet as ap

SERVER = "h2r1w1"                                   # the parameter server host, 10.2.1.1
W1, W2, DIRECT = "h1r1w1", "h1r1w2", "h1r2w1"       # W1, W2 below s1r1; DIRECT to the server
UPLINK = 3                                          # s1r1's port toward g1 (ports 1, 2: W1, W2)
EV_BYPASS = 12                                      # agg_events index (p4/aggregation.p4)
_g = {}


def g():
    if "g" not in _g:
        _g["g"] = graph(2, 2, 2)
    return _g["g"]


def tree(point_slots=None, window=4, job=1):
    """Job `job` rooted at SERVER: W1, W2 aggregated at s1r1 (holding `point_slots`), DIRECT
    straight to the server."""
    return build_server_tree(g(), job, SERVER, {W1: "s1r1", W2: "s1r1", DIRECT: SERVER},
                             window=window, point_slots=point_slots)


def ip(host):
    return g().nodes[host]["ip"]


def s1r1(t):
    """s1r1 in the softswitch, programmed as a run programs it (routes + agg entries)."""
    sw = factory("softswitch")()
    push(sw, routes.table_commands(g())["s1r1"] + switch_commands(g(), [t])["s1r1"])
    return sw


def from_worker(sw, host, payload, port=None):
    """A worker's datagram to its aggregation address entering s1r1 on its access port:
    [(out port, src ip, dst ip, payload)]."""
    t_port = {W1: 1, W2: 2}[host] if port is None else port
    a = g().nodes[host]
    frame = ap.udp_frame(a["mac"], g().nodes["s1r1"]["mac"], a["ip"], "10.1.1.254", payload)
    return [(p, *ap.udp_payload(f)) for p, f in sw.process(t_port, frame)]


def from_uplink(sw, src, dst, payload):
    frame = ap.udp_frame(g().nodes["g1"]["mac"], g().nodes["s1r1"]["mac"], src, dst, payload)
    return [(p, *ap.udp_payload(f)) for p, f in sw.process(UPLINK, frame)]


def chunk(slot, sender, values, gen=1, flags=ap.DATA, fan_in=2):
    return ap.encode(1, flags, slot, gen, 32 * slot, sender, fan_in, -4, np.asarray(values, np.int32))


# ------------------------------------------------------------------ the switch, packet by packet

def test_a_point_with_two_of_four_slots_aggregates_two_and_bypasses_two_with_the_sender_remapped():
    t = tree({"s1r1": 2})
    point, root = t.points["1:rack:s1r1"], t.points[t.root]
    assert (point.index_at_parent, point.bypass_base, root.fan_in) == (1, 2, 2)
    sw = s1r1(t)
    vals = {(h, s): vec(10 * i + s) for i, h in enumerate((W1, W2, DIRECT)) for s in range(4)}
    up = []
    for s in range(4):
        first = from_worker(sw, W1, chunk(s, 0, vals[W1, s]))
        second = from_worker(sw, W2, chunk(s, 1, vals[W2, s]))
        if s < 2:       # aggregated: nothing, then one partial sum up from the point's address
            assert first == [] and len(second) == 1
            port, src, dst, body = second[0]
            f = ap.decode(body)
            assert (port, src, dst) == (UPLINK, "10.1.1.254", ip(SERVER))
            assert (f.slot, f.gen, f.sender, f.fan_in, f.flags) == (s, 1, 1, 2, ap.DATA)
            np.testing.assert_array_equal(f.values, wrapped_sum(vals[W1, s], vals[W2, s]))
        else:           # bypassed: each contribution goes up as it is, from its worker
            for (port, src, dst, body), host, i in ((first[0], W1, 0), (second[0], W2, 1)):
                f = ap.decode(body)
                assert (port, src, dst) == (UPLINK, ip(host), ip(SERVER))
                assert (f.slot, f.gen, f.offset, f.exponent, f.flags) == (s, 1, 32 * s, -4, ap.DATA)
                assert (f.sender, f.fan_in) == (2 + i, 3)       # bypass_base + index, root's fan-in
                np.testing.assert_array_equal(f.values, vals[host, s])
            assert len(first) == len(second) == 1
        up += [(src, body) for _, src, _, body in first + second]
    assert sw.events[EV_BYPASS] == 4 and sw.events[EV["bad"]] == 0
    assert sw.events[EV["complete"]] == sw.events[EV["up"]] == 2

    # the server: the switch's outputs plus the direct worker, children per slot range
    engine = RootEngine.with_ranges(1, 4, root_slot_ranges(t))
    out = []
    for src, body in up:
        out += engine.handle(body, src)
    for s in range(4):
        out += engine.handle(chunk(s, 0, vals[DIRECT, s]), ip(DIRECT))
    got = {h: {} for h in (W1, W2, DIRECT)}
    for dst, body in out:
        r = ap.decode(body)
        if dst == ip(DIRECT):
            got[DIRECT][r.slot] = r.values
        elif dst == "10.1.1.254":            # the point's result: s1r1 stores it and multicasts
            assert r.slot < 2
            replicas = from_uplink(sw, ip(SERVER), dst, body)
            assert sorted(p for p, *_ in replicas) == [1, 2]
            for p, _, rdst, rbody in replicas:
                got[{1: W1, 2: W2}[p]][r.slot] = ap.decode(rbody).values
        else:                                # a bypassed slot's result: routed to its worker
            assert r.slot >= 2 and r.fan_in == 3
            [(p, src, rdst, rbody)] = from_uplink(sw, ip(SERVER), dst, body)
            host = {ip(W1): W1, ip(W2): W2}[dst]
            assert (p, rdst, rbody) == ({W1: 1, W2: 2}[host], dst, body)
            got[host][r.slot] = ap.decode(rbody).values
    for s in range(4):
        want = np.sum([vals[h, s].astype(np.int64) for h in (W1, W2, DIRECT)], axis=0)
        for h in (W1, W2, DIRECT):
            np.testing.assert_array_equal(got[h][s].astype(np.int64), want, err_msg=f"{h} slot {s}")
    assert engine.events[EV["complete"]] == 4 and engine.events[EV["bad"]] == 0

    # W2 lost its result of bypassed slot 3: its retransmission is bypassed again and the
    # server answers it, to W2 alone, with the stored sum
    [(port, src, dst, body)] = from_worker(sw, W2, chunk(3, 1, vals[W2, 3], flags=ap.DATA | ap.RETX))
    assert (port, src, dst) == (UPLINK, ip(W2), ip(SERVER))
    [(adst, answer)] = engine.handle(body, src)
    r = ap.decode(answer)
    assert adst == ip(W2) and r.flags == ap.RESULT | ap.RETX
    np.testing.assert_array_equal(r.values, got[W2][3])
    assert sw.events[EV_BYPASS] == 5 and engine.events[EV["dup_answer"]] == 1


def test_without_bypass_a_slot_beyond_the_point_is_still_dropped_as_bad():
    sw = factory("softswitch")()
    cmds = flat_point_commands("10.1.1.254", [ip(W1), ip(W2)], 2)     # agg_point: num_slots 2
    cmds[0] = cmds[0].replace("=> 1 ", "=> 0 ").replace(" 0.0.0.0 0 0", f" {ip(SERVER)} 1 2")
    push(sw, cmds + ["table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.2.0.0/16 => "
                     f"{g().nodes['g1']['mac']} {UPLINK}"])
    assert from_worker(sw, W1, chunk(2, 0, vec(1))) == []
    assert sw.events[EV["bad"]] == 1 and sw.events[EV_BYPASS] == 0


def _bypass_point(is_root=0):
    sw = factory("softswitch")()
    push(sw, routes.table_commands(g())["s1r1"] + [
        f"table_add MyIngress.agg_points MyIngress.agg_point_bypass 1 10.1.1.254 => {is_root} 0 2 2 1 "
        f"{ip(SERVER)} 1 2 2 3"])
    return sw


@pytest.mark.parametrize("payload, why", [
    (chunk(2, 2, vec(1)), "sender >= the point's fan-in"),
    (chunk(2, 0, vec(1), flags=ap.RESULT), "a RESULT addressed to the point"),
    (chunk(2, 0, np.zeros(31, np.int32)), "k != 32"),
    (chunk(2, 0, vec(1))[:2] + bytes([0x02]) + chunk(2, 0, vec(1))[3:], "shadow != gen & 1"),
])
def test_bypass_refuses_what_it_would_refuse_to_aggregate(payload, why):
    sw = _bypass_point()
    assert from_worker(sw, W1, payload) == [], why
    assert sw.events[EV["bad"]] == 1 and sw.events[EV_BYPASS] == 0


def test_a_switch_root_does_not_bypass_it_has_no_parent():
    sw = _bypass_point(is_root=1)
    assert from_worker(sw, W1, chunk(2, 0, vec(1))) == []
    assert sw.events[EV["bad"]] == 1 and sw.events[EV_BYPASS] == 0


def test_slots_the_point_holds_are_aggregated_as_before_with_a_bypass_entry():
    sw = _bypass_point()
    assert from_worker(sw, W1, chunk(1, 0, vec(1))) == []
    [(port, src, dst, body)] = from_worker(sw, W2, chunk(1, 1, vec(2)))
    assert (port, src, dst) == (UPLINK, "10.1.1.254", ip(SERVER)) and ap.decode(body).sender == 1
    assert sw.events[EV_BYPASS] == 0


# ------------------------------------------------------------------ exact sums under faults

def _run(trees, faults, kind="softswitch", length=8 * 32 + 5, iterations=2):
    sim = build_sim(g(), factory(kind), trees, faults, initial_rto=0.3, min_rto=0.05,
                    max_rto=2.0, max_retransmissions=200)
    for it in range(iterations):
        tensors = random_tensors(trees, length, faults.seed * 7 + it)
        sim.start(tensors)
        results = sim.run(until=sim.now + 3000)
        want = expected_sums(trees, tensors)
        for (job, host), got in results.items():
            np.testing.assert_array_equal(got.astype(np.int64), want[job],
                                          err_msg=f"iteration {it}, job {job}, worker {host}")
    sim.drain(until=sim.now + 10)            # late duplicates must not disturb anything
    assert all(c.stats.bad_packets == 0 for c in sim.clients.values())
    return sim


@pytest.mark.parametrize("kind", ["softswitch", "model"])
@pytest.mark.parametrize("loss, dup, reorder_ms, seed", [
    (0.0, 0.0, 0.0, 1), (0.1, 0.0, 0.0, 2), (0.0, 0.2, 30.0, 3), (0.15, 0.1, 60.0, 4),
    (0.25, 0.2, 20.0, 5)])
def test_exactly_once_sums_with_bypassed_slots_under_loss_duplication_and_reordering(
        kind, loss, dup, reorder_ms, seed):
    t = tree({"s1r1": 2})
    sim = _run([t], Faults(loss, dup, reorder_ms, seed), kind=kind)
    assert sim.switches["s1r1"].events[EV_BYPASS] > 0
    engine = sim.servers[SERVER][0]
    assert engine.events[EV["bad"]] == 0
    if loss:
        assert sum(c.stats.retransmissions for c in sim.clients.values()) > 0


@pytest.mark.parametrize("seed", [6, 7])
def test_points_of_different_memory_and_one_with_none_give_exact_sums(seed):
    """Three slot ranges at the server: s1r1 holds 3 of 4 slots, s2r2 none (it forwards every
    contribution); two jobs share the switches (job 2 through the same points, whole)."""
    a = {W1: "s1r1", W2: "s1r1", DIRECT: SERVER, "h2r2w1": "s2r2", "h2r2w2": "s2r2"}
    t1 = build_server_tree(g(), 1, SERVER, a, window=4, point_slots={"s1r1": 3, "s2r2": 0})
    t2 = build_server_tree(g(), 2, "h1r2w2", {W1: "s1r1", W2: "s1r1", "h2r2w1": "h1r2w2"},
                           window=3)
    assert [(s, e) for s, e, _ in root_slot_ranges(t1)] == [(0, 3), (3, 4)]
    sim = _run([t1, t2], Faults(0.1, 0.1, 20.0, seed))
    assert sim.switches["s2r2"].events[EV["new"]] == 0 and sim.switches["s2r2"].events[EV_BYPASS] > 0


# ------------------------------------------------------------------ root engine: slot ranges

RANGES = [(0, 2, [(0, "10.0.2.1"), (1, "10.1.1.254")]),
          (2, 4, [(0, "10.0.2.1"), (2, "10.1.1.1"), (3, "10.1.1.2")])]


def test_root_engine_sums_each_range_with_its_own_children_and_fan_in():
    e = RootEngine.with_ranges(1, 4, RANGES)
    assert [r.fan_in for r in e.ranges] == [2, 3] and (e.fan_in, len(e.children)) == (2, 2)
    assert e.handle(chunk(0, 0, vec(0)), "10.0.2.1") == []
    out = e.handle(chunk(0, 1, vec(1)), "10.1.1.254")
    assert sorted(d for d, _ in out) == ["10.0.2.1", "10.1.1.254"]
    assert {ap.decode(p).fan_in for _, p in out} == {2}
    # slot 2: the switch's index 1 is no child there; its workers 2 and 3 are
    assert e.handle(chunk(2, 1, vec(5)), "10.1.1.254") == [] and e.events[EV["bad"]] == 1
    assert e.handle(chunk(2, 2, vec(2)), "10.1.1.1") == []
    assert e.handle(chunk(2, 0, vec(3)), "10.0.2.1") == []
    out = e.handle(chunk(2, 3, vec(4)), "10.1.1.2")
    assert sorted(d for d, _ in out) == ["10.0.2.1", "10.1.1.1", "10.1.1.2"]
    for _, p in out:
        r = ap.decode(p)
        assert r.fan_in == 3
        np.testing.assert_array_equal(r.values, wrapped_sum(vec(2), vec(3), vec(4)))
    # and the other way round: a worker index of range 2 is no child of range 0
    assert e.handle(chunk(1, 3, vec(6)), "10.1.1.2") == [] and e.events[EV["bad"]] == 2


@pytest.mark.parametrize("ranges, field, words", [
    ([(0, 3, RANGES[0][2]), RANGES[1]], "ranges[1]", "overlap"),
    ([RANGES[0], (3, 4, RANGES[1][2])], "ranges", "slots 2..2 have no range"),
    ([RANGES[0]], "ranges", "slots 2..3 have no range"),
    ([(0, 4, [(0, "10.0.2.1"), (0, "10.1.1.254")])], "ranges[0].children", "index 0 is given to two"),
    ([(0, 4, [(0, "10.0.2.1"), (32, "10.1.1.254")])], "ranges[0].children", "index 32 is out of range"),
    ([(0, 4, [(0, "10.0.2.1"), (1, "10.0.2.1")])], "ranges[0].children", "share an address"),
    ([(0, 4, [(0, "10.0.2")])], "ranges[0].children[0].address", "not an IPv4"),
    ([(0, 4, [])], "ranges[0].children", "fan-in 0"),
    ([(2, 2, RANGES[0][2]), RANGES[1]], "ranges[0]", "0 <= start < end"),
    ([RANGES[0], (2, 5, RANGES[1][2])], "ranges[1]", "end <= slots (4)"),
    ([{"start": 0, "end": 4}], "ranges[0]", "expected"),
    ([], "ranges", "none given"),
])
def test_bad_ranges_are_refused_naming_the_field(ranges, field, words):
    with pytest.raises(ValueError) as exc:
        RootEngine.with_ranges(1, 4, ranges)
    assert str(exc.value).startswith(f"{field}:") and words in str(exc.value), str(exc.value)


def test_ranges_and_one_range_children_are_exclusive():
    with pytest.raises(ValueError, match="^ranges: give either"):
        RootEngine(1, 2, 4, RANGES[0][2], ranges=RANGES)


# ------------------------------------------------------------------ control plane

def test_point_slots_give_the_point_fewer_slots_a_bypass_entry_and_the_server_its_ranges():
    t = tree({"s1r1": 2})
    cmds = switch_commands(g(), [t])["s1r1"]
    points = [c for c in cmds if c.startswith("table_add MyIngress.agg_points")]
    assert points == [f"table_add MyIngress.agg_points MyIngress.agg_point_bypass 1 10.1.1.254 => "
                      f"0 0 2 2 1 {ip(SERVER)} 1 2 2 3"]
    assert len([c for c in cmds if c.startswith("register_write")]) == 2 * 2
    assert root_slot_ranges(t) == [(0, 2, [(0, ip(DIRECT)), (1, "10.1.1.254")]),
                                   (2, 4, [(0, ip(DIRECT)), (2, ip(W1)), (3, ip(W2))])]
    assert bypass_fan_in(t, t.points["1:rack:s1r1"]) == 3
    # the workers' bindings do not change: they send to the same address as before
    assert t.workers == tree().workers


def test_without_point_slots_or_with_the_whole_window_the_commands_are_unchanged():
    whole = switch_commands(g(), [tree({"s1r1": 4})])
    assert whole == switch_commands(g(), [tree()])
    assert root_slot_ranges(tree()) == [(0, 4, [(0, ip(DIRECT)), (1, "10.1.1.254")])]
    assert not any("agg_point_bypass" in c for cs in whole.values() for c in cs)


@pytest.mark.parametrize("point_slots, message", [
    ({"s1r2": 1}, "point_slots: 's1r2' aggregates no worker of job 1"),
    ({"s1r1": 5}, "point_slots.s1r1: 5 slots; give 0..4"),
    ({"s1r1": -1}, "point_slots.s1r1: -1 slots"),
])
def test_bad_point_slots_are_refused_naming_the_field(point_slots, message):
    with pytest.raises(ValueError) as exc:
        tree(point_slots)
    assert str(exc.value).startswith(message), str(exc.value)


def test_too_many_bypassed_children_for_the_servers_bitmap_are_refused():
    g8 = graph(2, 2, 8)
    hosts = [n for n, a in g8.nodes(data=True) if a["role"] == "host" and n != "h2r2w8"]
    racks = {h: next(n for n in g8.neighbors(h) if g8.nodes[n]["role"] == "rack_switch") for h in hosts}
    a = {h: ("h2r2w8" if racks[h] == "s2r2" else racks[h]) for h in hosts}   # 7 direct, 3 racks of 8
    with pytest.raises(ValueError, match=r"^point_slots: the server would have 34 children"):
        build_server_tree(g8, 1, "h2r2w8", a, window=4, point_slots={"s1r1": 0, "s1r2": 1, "s2r1": 2})
    t = build_server_tree(g8, 1, "h2r2w8", a, window=4, point_slots={"s1r1": 0, "s1r2": 1})
    assert max(i for _, _, kids in root_slot_ranges(t) for i, _ in kids) == 7 + 3 + 16 - 1


def test_a_point_below_a_switch_cannot_bypass():
    t = build_tree(g(), job=1, window=4)
    t.points["1:rack:s1r1"].num_slots = 2
    with pytest.raises(ValueError, match="only a point whose parent is a server host can bypass"):
        switch_commands(g(), [t])


def test_fit_slots_serves_the_first_trees_whole_and_the_rest_with_what_is_left():
    trees = [tree(job=j) for j in (1, 2, 3)]
    assert fit_slots(g(), trees, slots=6) == [{}, {"s1r1": 2}, {"s1r1": 0}]
    fitted = [tree(s, job=j) for j, s in zip((1, 2, 3), fit_slots(g(), trees, slots=6))]
    cmds = switch_commands(g(), fitted, slots=6)["s1r1"]      # fits now: 4 + 2 + 0 slots
    points = [c.split("=>")[1].split() for c in cmds if c.startswith("table_add MyIngress.agg_points")]
    assert [(p[1], p[2]) for p in points] == [("0", "4"), ("4", "2"), ("6", "0")]
    with pytest.raises(ValueError, match="has 6 aggregation slots for these trees but its points need 8"):
        switch_commands(g(), trees, slots=6)


# ------------------------------------------------------------------ the server's --ranges

def test_parse_ranges_and_build_engine_from_the_command_line():
    text = json.dumps([{"start": s, "end": e, "children": [{"index": i, "address": a} for i, a in kids]}
                       for s, e, kids in RANGES])
    assert parse_ranges(text) == [(s, e, list(kids)) for s, e, kids in RANGES]

    class Args:
        job, slots, k, fan_in, children, ranges = 1, 4, 32, None, None, text
    assert [r.fan_in for r in build_engine(Args).ranges] == [2, 3]
    Args.fan_in = 2
    with pytest.raises(ValueError, match="^--ranges: give either"):
        build_engine(Args)
    Args.fan_in, Args.ranges = None, None
    with pytest.raises(ValueError, match="^--children: give --fan-in and --children"):
        build_engine(Args)


@pytest.mark.parametrize("text, message", [
    ("[{", "--ranges: not JSON"),
    ('{"start": 0}', "--ranges: expected"),
    ('[{"start": 0, "end": 4}]', "--ranges[0]: expected"),
    ('[{"start": 0, "end": 4, "children": [{"index": 0}]}]', "--ranges[0].children[0]: expected"),
])
def test_parse_ranges_refuses_malformed_json_naming_the_field(text, message):
    with pytest.raises(ValueError) as exc:
        parse_ranges(text)
    assert str(exc.value).startswith(message)


def test_server_with_ranges_answers_each_range_to_its_children_over_udp():
    socks, port = _child_sockets()
    ranges = [{"start": 0, "end": 1, "children": [{"index": 0, "address": CHILD_LOS[0]}]},
              {"start": 1, "end": 2, "children": [{"index": 0, "address": CHILD_LOS[0]},
                                                  {"index": 3, "address": CHILD_LOS[1]}]}]
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemes.inart.root_server", "--ip", ROOT_LO, "--job", "1",
         "--slots", "2", "--port", str(port), "--ranges", json.dumps(ranges)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr.readline().startswith(
            f"inart root {ROOT_LO}:{port}: job 1, 2 slots in 2 ranges: slots 0..0 fan-in 1")
        socks[0].sendto(chunk(0, 0, vec(1), fan_in=1), (ROOT_LO, port))
        _, r = _recv(socks[0])
        assert (r.slot, r.fan_in) == (0, 1)
        socks[0].sendto(chunk(1, 0, vec(2)), (ROOT_LO, port))
        socks[1].sendto(chunk(1, 3, vec(3)), (ROOT_LO, port))
        for s in socks:
            _, r = _recv(s)
            assert (r.slot, r.fan_in) == (1, 2)
            np.testing.assert_array_equal(r.values, wrapped_sum(vec(2), vec(3)))
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for s in socks:
            s.close()
    assert proc.returncode == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["events"]["complete"] == 2 and stats["events"]["bad"] == 0


def test_server_refuses_ranges_that_do_not_cover_the_window_with_one_line():
    r = subprocess.run([sys.executable, "-m", "schemes.inart.root_server", "--ip", ROOT_LO, "--job", "1",
                        "--slots", "4", "--port", "9", "--ranges",
                        '[{"start": 0, "end": 2, "children": [{"index": 0, "address": "127.0.0.2"}]}]'],
                       cwd=REPO, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error: ranges: slots 2..3 have no range") and r.stderr.count("\n") == 1


# ------------------------------------------------------------------ P4 program vs the model

def test_p4_bypass_matches_the_model_byte_for_byte():
    """Random, partly wrong traffic at s1r1 hosting a bypassing point (job 1, 2 of 4 slots)
    and a plain one (job 2): the softswitch running the P4 program and tests/agg_model.py
    emit identical packets and counts."""
    from tests.agg_model import EV as MEV, ModelSwitch
    t1 = tree({"s1r1": 2})
    t2 = build_server_tree(g(), 2, "h1r2w2", {W1: "s1r1", W2: "s1r1"}, window=3)
    cmds = routes.table_commands(g())["s1r1"] + switch_commands(g(), [t1, t2])["s1r1"]
    p4sw, model = factory("softswitch")(), ModelSwitch()
    for s in (p4sw, model):
        push(s, cmds)
    rng = np.random.default_rng(77)
    for i in range(2000):
        job, window = (1, 4) if rng.random() < 0.7 else (2, 3)
        flags = int(rng.choice([ap.DATA] * 4 + [ap.DATA | ap.RETX, ap.RESULT, ap.DATA | ap.OVERFLOW]))
        slot, sender = int(rng.integers(0, window + 1)), int(rng.integers(0, 3))
        payload = bytearray(ap.encode(job, flags, slot, int(rng.choice([1, 2, 2, 3])), 32 * slot,
                                      sender, 2, -2, rng.integers(-2**31, 2**31, 32).astype(np.int32)))
        if rng.random() < 0.03:
            payload[2] ^= 0x80                                    # shadow bit wrong
        if rng.random() < 0.03:
            payload[15] = 31                                      # k wrong
        src = str(rng.choice([ip(W1), ip(W2), ip(SERVER), "10.9.9.9"]))
        dst = "10.1.1.254" if rng.random() < 0.9 else str(rng.choice([ip(W1), ip(SERVER)]))
        frame = ap.udp_frame(g().nodes[W1]["mac"], g().nodes["s1r1"]["mac"], src, dst, bytes(payload))
        port = int(rng.integers(1, 4))
        assert p4sw.process(port, frame) == model.process(port, frame), f"packet {i} differs"
    ev = model.events
    assert min(ev[MEV[e]] for e in ("NEW", "ADD", "COMPLETE", "UP", "DUP_ANSWER", "STALE", "BAD",
                                    "BYPASS", "RESULT_STORE")) > 0, ev
    assert p4sw.events == model.events[:len(p4sw.events)]
