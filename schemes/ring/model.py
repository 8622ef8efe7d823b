"""Model of ring (docs/model.md): 2 (W-1) steps, each a chunk of S/W sent to the right
neighbour after the one from the left arrived (store and forward per chunk).

The pace, not one iteration from a common start: a worker starts iteration i+1 as soon
as its own result of i is in, so iterations of different workers overlap and the steady
period is set by the system's critical cycle (max-plus algebra: the period of a
timed event graph is its largest cycle weight per iteration the cycle spans). Two kinds
of cycle:
  - around the ring: W hops, each its serialization + one-way delay, advance the step
    count by W; an iteration is 2 (W-1) steps, so the period is 2 (W-1) / W rounds of
    the ring;
  - a worker's own sends, one after the other on its link: 2 (W-1) serializations of
    the busiest hop (the link limit, with everything else that crosses that link).
The period is the larger, plus the compute (BSP: every cycle passes each worker's
compute once per iteration)."""
from __future__ import annotations

from schemes import model as M
from schemes.base import TcpOptions
from schemes.ring.plan import plan
from workers.framing import HEADER


def predict(graph, scenario, o: TcpOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    order, W = pl.workers, len(pl.workers)
    net = M.Net(graph)
    load = M.Load(net)
    comp = M.compute(graph, scenario, order)
    notes = []
    if W < 2:
        return M.assemble("ring", comp, {}, {}, 0.0, ["one worker: nothing to exchange"])
    payload = 4 * -(-M.parameters(scenario) // W) + HEADER.size
    steps = 2 * (W - 1)
    hops = [(order[r], order[(r + 1) % W]) for r in range(W)]
    for a, b in hops:
        load.tcp(a, b, payload, count=steps)
    ser = [8 * M.tcp_wire(payload)[0] / net.min_rate_bps(a, b) for a, b in hops]
    dly = [net.delay(a, b) for a, b in hops]
    limits = M.tcp_limits(load, [(a, b, payload * steps) for a, b in hops], scenario)
    rounds = steps / W
    limits[f"ring cycle: {rounds:.3g} rounds of the ring per iteration (serialization "
           f"{sum(ser) * 1000:.1f} ms + propagation {sum(dly) * 1000:.1f} ms per round)"] = \
        rounds * (sum(ser) + sum(dly))
    # slow start after idle of the slowest hop's stream: idle = its own compute + one step
    slow = max(range(W), key=lambda r: dly[r])
    a, b = hops[slow]
    rtt = net.rtt(a, b)
    add = {"slow start after idle": M.tcp_idle_term(
        payload, load.share_bps(a, b), rtt, comp.mean_s + ser[slow] + dly[slow], scenario, notes,
        f"ring hop {a}->{b}", window=min(payload, load.share_bps(a, b) / 8 * rtt))}
    notes.append("period of the steady state (iterations of different workers overlap); one "
                 f"iteration from a common start takes a chain of {steps} hops instead")
    return M.assemble("ring", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph))
