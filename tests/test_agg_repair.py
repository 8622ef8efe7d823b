"""Lossless links between aggregation points (docs/protocol.md): a partial sum or a result
lost between two switches is repaired by the switches, through the child's timer loop,
with no worker retransmission, within the loop's timeout plus the link's round trip.

The P4 program in the in-process softswitch and the Python model, in the simulated network
(tests/agg_sim.py, virtual time) with deterministic losses on the WAN link g2 -> g1 / g1 -> g2.
Workers keep an RTO of 5 s, so any repair inside the test's horizon is the switches' own."""
import random

import numpy as np
import pytest

from control import routes
from control.agg_entries import TimerLoop, push, removal_commands, switch_commands
from control.agg_tree import build_tree
from tests.agg_model import EV, ModelSwitch, REPAIR_MAX_PASSES
from tests.agg_sim import LOOP_PORT, Faults, build_sim, expected_sums, random_tensors
from tests.agg_switches import factory
from tests.agg_topo import graph
from workers import agg_packet as ap

KINDS = ["softswitch", "model"]
WAN_ONE_WAY = 0.020                     # tests/agg_topo.py's default WAN delay
WAN_RTT = 2 * WAN_ONE_WAY
TIMEOUT = 1.5 * WAN_RTT                 # the timer loop's delay
PATIENT = dict(rack=False, initial_rto=5.0, min_rto=5.0, max_rto=10.0)   # no worker re-send in view


def is_agg(frame: bytes, flag: int, slot: int | None = None) -> bool:
    parsed = ap.udp_payload(frame)
    f = ap.decode(parsed[2]) if parsed else None
    return f is not None and bool(f.flags & flag) and (slot is None or f.slot == slot)


class LoseFirst:
    """Lose the first `n` frames on link (frm, to) that match, then none."""

    def __init__(self, link, match, n=1):
        self.link, self.match, self.left, self.lost = link, match, n, []

    def __call__(self, frm, to, frame):
        if self.left and (frm, to) == self.link and self.match(frame):
            self.left -= 1
            self.lost.append(frame)
            return True
        return False


def run(kind, drop=None, loops=True, window=4, chunks=8, n_dcs=2, **opts):
    g = graph(n_dcs, 2, 2)
    tree = build_tree(g, job=1, root=1, window=window)
    sim = build_sim(g, factory(kind), [tree], Faults(), loops={"g2": TIMEOUT} if loops else None,
                    **{**PATIENT, **opts})
    sim.drop = drop
    tensors = random_tensors([tree], 32 * chunks, seed=3)
    sim.start(tensors)
    results = sim.run(until=60)
    want = expected_sums([tree], tensors)[1]
    for host, got in ((h, r) for (_, h), r in results.items()):
        np.testing.assert_array_equal(got.astype(np.int64), want, err_msg=host)
    return sim


def retransmissions(sim):
    return sum(c.stats.retransmissions for c in sim.clients.values())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lost", ["partial up", "result down", "a window of partials up"])
def test_a_wan_loss_is_repaired_by_the_switches(kind, lost):
    base = run(kind)
    t0 = base.now
    if lost == "partial up":
        drop = LoseFirst(("g2", "g1"), lambda f: is_agg(f, ap.DATA, slot=1))
    elif lost == "result down":
        drop = LoseFirst(("g1", "g2"), lambda f: is_agg(f, ap.RESULT, slot=1))
    else:
        drop = LoseFirst(("g2", "g1"), lambda f: is_agg(f, ap.DATA), n=4)
    sim = run(kind, drop)
    assert drop.left == 0, "the loss was not injected"
    assert retransmissions(sim) == 0
    ev = sim.switches["g2"].events
    assert ev[EV["REPAIR"]] == len(drop.lost)
    # repaired within the loop's timeout plus the link's round trip (virtual time: exact)
    assert 0 < sim.now - t0 <= TIMEOUT + WAN_RTT + 1e-9, (t0, sim.now)
    # every timer ends (one per partial sent up, found answered) and the loop empties
    sim.drain(until=sim.now + 10)
    assert not sim.queue
    ev = sim.switches["g2"].events
    assert ev[EV["TIMER_DONE"]] == ev[EV["COMPLETE"]] == 8


@pytest.mark.parametrize("kind", KINDS)
def test_without_the_timer_loop_the_same_loss_waits_for_the_workers(kind):
    """The control: no loop, so the loss costs a worker timeout (5 s here)."""
    t0 = run(kind, loops=False).now
    drop = LoseFirst(("g2", "g1"), lambda f: is_agg(f, ap.DATA, slot=1))
    sim = run(kind, drop, loops=False)
    assert retransmissions(sim) > 0 and sim.now - t0 > 4.0
    assert sim.switches["g2"].events[EV["REPAIR"]] == 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mask,resends", [(0, 17), (7, 5)])
def test_a_parent_waiting_for_a_straggler_gets_few_duplicates(kind, mask, resends):
    """Datacenter 3 starts 1 s late: g2's copy waits about 1.04 s (17 timeouts of 60 ms)
    for the result and re-sends on passes 1, 2, 4, 8, 16, then every mask + 1 passes:
    every pass with mask 0 (17), 5 with mask 7 (the next, pass 24, comes after the result)."""
    g = graph(3, 1, 2, delays={(1, 2): 20, (1, 3): 20, (2, 3): 20})
    tree = build_tree(g, job=1, root=1, window=1)
    sim = build_sim(g, factory(kind), [tree], Faults(), loops={"g2": TIMEOUT}, backoff_mask=mask,
                    **PATIENT)
    tensors = random_tensors([tree], 32, seed=4)
    late = {k: v for k, v in tensors.items() if k[1].startswith("h3")}
    sim.start({k: v for k, v in tensors.items() if k not in late})
    sim.drain(until=1.0)
    sim.start(late)
    results = sim.run(until=60)
    for got in results.values():
        np.testing.assert_array_equal(got.astype(np.int64), expected_sums([tree], tensors)[1])
    sim.drain(until=sim.now + 10)
    ev = sim.switches["g2"].events
    assert ev[EV["REPAIR"]] == resends, ev
    assert ev[EV["TIMER_DONE"]] == 1 and retransmissions(sim) == 0 and not sim.queue


@pytest.mark.parametrize("kind", KINDS)
def test_a_timer_gives_up_after_its_passes_and_the_loop_empties(kind):
    """A parent that never answers (the link to it is cut): the copy's timer ends after
    REPAIR_MAX_PASSES passes instead of circulating for ever."""
    g = graph(2, 1, 1)
    tree = build_tree(g, job=1, root=1, window=1)
    sim = build_sim(g, factory(kind), [tree], Faults(), loops={"g2": TIMEOUT}, backoff_mask=0,
                    **PATIENT)
    sim.drop = lambda frm, to, f: (frm, to) == ("g2", "g1")
    sim.start(random_tensors([tree], 32, seed=5))
    sim.drain(until=REPAIR_MAX_PASSES * TIMEOUT + 5)
    assert not sim.queue
    ev = sim.switches["g2"].events
    assert ev[EV["REPAIR_GIVEUP"]] == 1 and ev[EV["REPAIR"]] == REPAIR_MAX_PASSES


@pytest.mark.parametrize("kind", KINDS)
def test_timer_packets_are_only_accepted_off_the_switch_s_own_loop(kind):
    g = graph(2, 1, 1)
    tree = build_tree(g, job=1, root=1, window=2)
    p = next(p for p in tree.points.values() if p.switch == "g2")
    for loops, port in (({"g2": TimerLoop(LOOP_PORT, LOOP_PORT)}, 1), (None, LOOP_PORT)):
        sw = factory(kind)()
        push(sw, routes.table_commands(g)["g2"] + switch_commands(g, [tree], loops=loops)["g2"])
        payload = ap.encode(1, ap.TIMER, 0, 1, 0, 0, p.fan_in, 0, np.zeros(32, np.int32))
        frame = ap.udp_frame("00:00:00:00:00:01", "00:00:00:00:00:02", "10.2.1.1", p.address, payload)
        assert sw.process(port, frame) == []
        assert sw.events[EV["BAD"]] == 1


def test_timer_loop_commands_and_their_removal():
    g = graph(3, 1, 1)
    trees = [build_tree(g, job=1, root=1, window=2), build_tree(g, job=2, root=1, window=2)]
    loop = TimerLoop(out_port=7, in_port=8, session=9, backoff_mask=3)
    cmds = switch_commands(g, trees, loops={"g2": loop})
    assert cmds["g2"].count("mirroring_add 9 7") == 1
    repair = [c for c in cmds["g2"] if c.startswith("table_add MyIngress.agg_repair")]
    assert repair == [f"table_add MyIngress.agg_repair MyIngress.repair_point {j} 10.2.0.254 => 8 9 3"
                      for j in (1, 2)]
    assert not any("agg_repair" in c or "mirroring" in c for c in cmds["g1"] + cmds["g3"])
    sw = factory("softswitch")()
    replies = push(sw, routes.table_commands(g)["g2"] + cmds["g2"])
    undo = removal_commands(routes.table_commands(g)["g2"] + cmds["g2"], replies)
    assert "mirroring_delete 9" in undo
    for bad in (dict(backoff_mask=5), dict(backoff_mask=255), dict(out_port=511)):
        with pytest.raises(ValueError):
            TimerLoop(**{"out_port": 1, "in_port": 2, **bad})


def test_p4_program_matches_model_with_timers_byte_for_byte():
    """Random traffic at switches with timer loops and slot-range paths, TIMER packets
    included (on the loop's port and on others, for live, answered and reused copies),
    contributions in transit from every port: identical output."""
    from control.agg_entries import slot_path_commands
    g = graph(3, 2, 2)
    trees = [build_tree(g, job=1, root=1, window=3), build_tree(g, job=2, root=2, window=2)]
    loops = {sw: TimerLoop(LOOP_PORT, LOOP_PORT, backoff_mask=1) for sw in ("g1", "g2", "s1r1")}
    cmds, agg = routes.table_commands(g), switch_commands(g, trees, loops=loops)
    # and g2's partial sums of job 1 in slots 0..1 through g3 (agg_path), also at g3
    g2_point = next(p.id for p in trees[0].points.values() if p.switch == "g2")
    paths = slot_path_commands(g, trees[0], g2_point, [(0, 1, ["g2", "g3", "g1"])], loops["g2"])
    rng = random.Random(99)
    steered = 0
    for sw_name in ("g2", "s1r1", "g3"):
        p4sw, model = factory("softswitch")(), ModelSwitch()
        for s in (p4sw, model):
            push(s, cmds[sw_name] + agg.get(sw_name, []) + paths.get(sw_name, []))
        points = [(p.job, p.address, p.fan_in, t.window) for t in trees
                  for p in t.points.values() if p.switch == sw_name]
        points += [(1, "10.0.0.1", 2, 3)] * max(1, len(points) // 2)     # in transit to g1
        for i in range(3000):
            job, dst, fan_in, window = rng.choice(points)
            flags = rng.choice([ap.DATA] * 4 + [ap.RESULT, ap.TIMER, ap.TIMER, ap.DATA | ap.TIMER])
            slot = rng.randrange(window)
            fan = fan_in if not flags & ap.TIMER else rng.choice([0, 1, 2, 3, 7, 200, 253, 254, 255])
            payload = ap.encode(job, flags, slot, rng.choice([1, 2, 2, 3]), slot * 32,
                                rng.randrange(fan_in), fan, 0,
                                [rng.randrange(-2**31, 2**31) for _ in range(32)])
            frame = ap.udp_frame("00:00:0a:01:01:01", "00:00:0a:01:01:fd", "10.1.1.1", dst, payload)
            port = LOOP_PORT if flags & ap.TIMER and rng.random() < 0.8 else rng.randrange(1, 5)
            out = p4sw.process(port, frame)
            assert out == model.process(port, frame), f"{sw_name}: packet {i} differs"
            steered += sum(sw_name == "g2" and o == g.edges["g2", "g3"]["ports"]["g2"] and
                           ap.udp_payload(f)[1] == "10.0.0.1" for o, f in out)
        ev = model.events
        if sw_name != "g3":
            assert min(ev[EV[e]] for e in ("REPAIR", "TIMER_DONE", "REPAIR_GIVEUP", "BAD")) > 0, ev
        assert p4sw.events == model.events
    assert steered > 0


# ------------------------------------------------------------------ paths by slot range
def three_dc_ring_paths(kind, ranges_for):
    """3 datacenters (full mesh), root 1; g2's partial sums by slot range over the direct
    link (g2 -> g1) and through datacenter 3 (g2 -> g3 -> g1)."""
    g = graph(3, 1, 2, delays={(1, 2): 20, (1, 3): 20, (2, 3): 20})
    tree = build_tree(g, job=1, root=1, window=4)
    point = next(p.id for p in tree.points.values() if p.switch == "g2")
    from control.agg_entries import slot_path_commands
    extra = slot_path_commands(g, tree, point, ranges_for(g))
    sim = build_sim(g, factory(kind), [tree], Faults(), **PATIENT)
    for sw, cmds in extra.items():
        push(sim.switches[sw], cmds)
    return g, tree, sim


@pytest.mark.parametrize("kind", KINDS)
def test_a_point_s_partial_sums_take_their_slot_range_s_path(kind):
    g, tree, sim = three_dc_ring_paths(kind, lambda g: [(0, 1, ["g2", "g1"]), (2, 3, ["g2", "g3", "g1"])])
    seen = []
    send = sim._send

    def spy(frm, to, frame, faults=True):
        p = ap.udp_payload(frame)
        f = ap.decode(p[2]) if p else None
        if f is not None and f.flags & ap.DATA and p[1] == "10.0.0.1" and frm in ("g2", "g3"):
            seen.append((frm, to, p[0], f.slot))
        send(frm, to, frame, faults)
    sim._send = spy
    tensors = random_tensors([tree], 32 * 8, seed=6)
    sim.start(tensors)
    for got in sim.run(until=60).values():
        np.testing.assert_array_equal(got.astype(np.int64), expected_sums([tree], tensors)[1])
    g2_own = [(frm, to, slot) for frm, to, src, slot in seen if src == "10.2.0.254"]
    assert {(frm, to) for frm, to, s in g2_own if s in (0, 1)} == {("g2", "g1")}
    assert {(frm, to) for frm, to, s in g2_own if s in (2, 3)} == {("g2", "g3"), ("g3", "g1")}
    # g3's own partial sums, same slots and destination, are not steered by g2's entries
    assert {(frm, to) for frm, to, src, s in seen if src == "10.3.0.254"} == {("g3", "g1")}


def test_slot_path_commands_are_checked():
    from control.agg_entries import slot_path_commands
    g = graph(3, 1, 2)
    tree = build_tree(g, job=1, root=1, window=4)
    point = next(p.id for p in tree.points.values() if p.switch == "g2")
    cmds = slot_path_commands(g, tree, point, [(0, 3, ["g2", "g3", "g1"])],
                              loop=TimerLoop(LOOP_PORT, LOOP_PORT + 1))
    assert sorted(cmds) == ["g2", "g3"]
    assert all(c.startswith("table_add MyIngress.agg_path MyIngress.ipv4_forward 1 10.0.0.1 0->3 ")
               for cs in cmds.values() for c in cs)
    assert any(f" {LOOP_PORT + 1}&&&0x1ff " in c for c in cmds["g2"])        # the timer's re-sends
    root_point = tree.root
    for bad, msg in (((0, 4, ["g2", "g1"]), "window"), ((0, 1, ["g2", "g3"]), "does not lead"),
                     ((0, 1, ["g2", "g3", "g2", "g1"]), "does not lead")):
        with pytest.raises(ValueError, match=msg):
            slot_path_commands(g, tree, point, [bad])
    with pytest.raises(ValueError, match="overlaps"):
        slot_path_commands(g, tree, point, [(0, 1, ["g2", "g1"]), (1, 2, ["g2", "g3", "g1"])])
    with pytest.raises(ValueError, match="root"):
        slot_path_commands(g, tree, root_point, [(0, 1, ["g1", "g2"])])
