"""The switch-level loss repair of p4/aggregation.p4 (docs/protocol.md, "Lossless links
between aggregation points") in real BMv2: p4c compiles the program, simple_switch takes the
control plane's agg_repair entry and mirroring session, and for a copy's timer going round
its loop (re-sends on passes 1 and 2, a backoff pass, the parent's result, the timer's end),
a forged timer, a partial sum steered by its slot range (agg_path: range and ternary keys)
and one in transit that is not, it sends the in-process softswitch's frames byte for byte and port by
port (the loop's port included: BMv2's I2E clone is the softswitch's) with the same
agg_events counts. Skips where simple_switch, simple_switch_CLI or p4c are not on PATH."""
import numpy as np
import pytest

from control import routes
from control.agg_entries import TimerLoop, push, slot_path_commands, switch_commands
from control.agg_tree import build_tree
from tests.agg_model import EV
from tests.agg_switches import factory
from tests.agg_topo import graph
from control.agg_entries import event_reads, parse_events
from tests.bmv2_harness import AGGREGATION, compile_bmv2, run_bmv2, skip_unless_bmv2
from workers import agg_packet as ap

pytestmark = pytest.mark.bmv2
LOOP = 300
PORTS = (1, 2, 3, LOOP)      # g2: toward s2r1, the WAN toward g1 and g3, the timer loop


def _setup():
    g = graph(3, 1, 2)
    tree = build_tree(g, job=1, root=1, window=2)
    loop = TimerLoop(LOOP, LOOP, backoff_mask=1)
    point = next(p.id for p in tree.points.values() if p.switch == "g2")
    cmds = routes.table_commands(g)["g2"] + switch_commands(g, [tree], loops={"g2": loop})["g2"] \
        + slot_path_commands(g, tree, point, [(1, 1, ["g2", "g3", "g1"])], loop)["g2"]
    return g, cmds


def _sequence(g, soft):
    """Frames in, built by running them through `soft`: the clones it sends into the loop
    are fed back as the loop would, so BMv2 gets the same sequence."""
    def frame(src, dst, flags, slot, gen, sender, fan_in, seed):
        vals = np.random.default_rng(seed).integers(-2**20, 2**20, 32).astype(np.int32)
        payload = ap.encode(1, flags, slot, gen, slot * 32, sender, fan_in, 0, vals)
        return ap.udp_frame("00:00:0a:02:01:fd", g.nodes["g2"]["mac"], src, dst, payload)
    frames, loop = [], []

    def feed(port, f):
        frames.append((port, f))
        loop.extend(out for p, out in soft.process(port, f) if p == LOOP)
    feed(1, frame("10.2.1.254", "10.2.0.254", ap.DATA, 0, 1, 0, 1, 1))   # slot 0 complete: up + timer
    feed(LOOP, loop.pop(0))                                                # pass 1: re-send
    feed(LOOP, loop.pop(0))                                                # pass 2: re-send
    feed(LOOP, loop.pop(0))                                                # pass 3: wait (backoff)
    feed(2, frame("10.0.0.1", "10.2.0.254", ap.RESULT, 0, 1, 0, 2, 2))    # the result comes down
    feed(LOOP, loop.pop(0))                                                # the timer ends
    feed(1, frame("10.2.1.254", "10.2.0.254", ap.TIMER, 1, 1, 0, 0, 3))   # forged, off the loop
    feed(1, frame("10.2.1.254", "10.2.0.254", ap.DATA, 1, 1, 0, 1, 4))    # slot 1: up via g3 + timer
    feed(3, frame("10.3.0.254", "10.0.0.1", ap.DATA, 1, 1, 2, 3, 5))      # g3's, in transit: routed
    assert not loop[1:]
    return frames


def test_bmv2_repairs_through_its_timer_loop_as_the_softswitch(tmp_path):
    skip_unless_bmv2()
    json_path, warnings = compile_bmv2(AGGREGATION, {"AGG_K": "32"})
    assert "warning" not in warnings.lower(), warnings
    g, cmds = _setup()
    soft = factory("softswitch")()
    push(soft, cmds)
    frames = _sequence(g, soft)
    fresh = factory("softswitch")()
    push(fresh, cmds)
    want = {p: [] for p in PORTS}
    for p, f in frames:
        for out_port, out in fresh.process(p, f):
            want[out_port].append(out)
    assert len(want[LOOP]) == 5 and len(want[2]) == 4 and len(want[1]) == 1 and len(want[3]) == 1
    got, replies = run_bmv2(json_path, PORTS, frames, cmds, tmp_path, reads=event_reads(),
                            expect=sum(map(len, want.values())))
    assert got == want, (tmp_path / "switch.log").read_text()[-2000:]
    events = list(parse_events(replies).values())
    assert events == fresh.events
    assert events[EV["REPAIR"]] == 2 and events[EV["TIMER_DONE"]] == 1 and events[EV["BAD"]] == 1
