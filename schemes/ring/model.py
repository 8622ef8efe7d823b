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
compute once per iteration).

When a hop loses packets the weights are no longer fixed: a hop's stream is not
backlogged (it waits for the chunk from the left), so a lost segment delays its chunk by
a recovery round that walks around the ring, and windows restart after idle. The period
is then simulated (schemes/model_chain.py: TCP's own mechanisms per hop, seeded) instead
of the max-plus cycles; a ring too large to simulate keeps the cycles and says that it
underestimates. Without loss the hops are simulated through the links' shared queues
(schemes/model_packets.py, simulated_queues): where a WAN link carries a hop each way,
each hop's ACKs wait behind its neighbour's data; the larger of that and the cycles binds."""
from __future__ import annotations

import dataclasses
import math

from schemes import model as M
from schemes import model_chain as ch
from schemes import model_packets as mp
from schemes.base import TcpOptions
from schemes.ps.model import with_simulation
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
        load.tcp(a, b, payload, count=steps, streams=1)
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
        f"ring hop {a}->{b}", window=min(2 * payload, load.share_bps(a, b) / 8 * rtt))}
    caveats = []
    lossy = any(net.path_loss(a, b) > 0 for a, b in hops)
    if not lossy:
        # the hops' streams through the links' queues (both directions of a WAN link
        # saturated: each hop's ACKs wait behind its neighbour's data); the larger binds
        limits, add = with_simulation(limits, add, simulated_queues(net, hops, payload, steps, scenario),
                                      comp, False, caveats, notes, "the ring's hops")
    if lossy:
        chain = simulated_chain(net, load, hops, payload, steps, scenario)
        if chain is None:
            caveats.append(f"random loss on a ring of {W} workers, not simulated (too large, a "
                           "congestion control schemes/model_chain.py does not have, or a "
                           "schedule step's closed form): the cycles above leave out the recovery "
                           "rounds and restarts of its non-backlogged hops and underestimate")
        else:
            period, why = chain
            limits = {k: v for k, v in limits.items() if not k.startswith("ring cycle")}
            limits[why] = max(0.0, period - comp.max_s)
            add = {}
    notes.append("period of the steady state (iterations of different workers overlap); one "
                 f"iteration from a common start takes a chain of {steps} hops instead")
    return M.assemble("ring", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)


# segments the chain simulation may send over its iterations and seeds (~2 s of CPU: the
# bench point's 4 MB gradients under loss fit); a larger ring, or larger chunks, keep the cycles
CHAIN_BUDGET = 4_000_000
CHAIN_CAP = 16


def simulated_chain(net, load, hops, payload, steps, scenario) -> tuple[float, str] | None:
    """(period, its description) of the ring under random loss, simulated
    (schemes/model_chain.ring_ends: each worker's own compute draws, the run's iterations,
    the pace measure.py reports, averaged over seeds: model_chain.seeds_for), or None for a
    ring beyond CHAIN_BUDGET, a congestion control the simulation does not have (cubic and
    reno) or a graph marked closed-form only (a schedule step)."""
    tcp = M.simulated_tcp(scenario)
    k = min(scenario.iterations or CHAIN_CAP, CHAIN_CAP)
    seeds = ch.seeds_for(scenario.iterations, True, CHAIN_CAP)
    segments = [math.ceil(payload / M.MSS)] * len(hops)
    if (tcp is None or net.g.graph.get(M.CLOSED_FORM_ONLY)
            or sum(segments) * steps * k * seeds > CHAIN_BUDGET):
        return None
    links = [ch.hop(net, a, b, load.share_bps) for a, b in hops]
    draw = M.compute_draws(net.g, scenario, [a for a, _ in hops])
    compute = lambda r, i: draw(hops[r][0], i)     # each worker's own draws, as the run's
    period = ch.mean_pace(lambda n, seed: ch.ring_ends(links, segments, steps, compute, tcp, n, seed),
                          scenario.iterations, True, cap=CHAIN_CAP)
    worst = max(net.path_loss(a, b) for a, b in hops)
    return period, (f"ring under loss (up to {100 * worst:.3g} % per hop; {tcp.law}): simulated chain "
                    f"of {steps} dependent chunk transfers per iteration, "
                    f"{ch.run_words(scenario.iterations, seeds)} (schemes/model_chain.py)")


def simulated_queues(net, hops, payload, steps, scenario) -> tuple[float, str] | None:
    """(period, its description) of the ring without random loss, simulated segment by
    segment through the links' shared drop-tail queues (schemes/model_packets.py: hop r's
    step k after hop r-1's step k-1, an iteration's first step after the worker's compute),
    or None beyond its budget, for a congestion control it does not have, or a schedule
    step's graph."""
    tcp = M.simulated_tcp(scenario)
    if tcp is None or net.g.graph.get(M.CLOSED_FORM_ONLY):
        return None
    w = len(hops)
    segs = (math.ceil(payload / M.MSS),) * steps
    flows = [(a, b, segs, ((r - 1) % w,), a) for r, (a, b) in enumerate(hops)]
    streams, queues = mp.paths(net, flows, tcp.seg_wire_bits)
    streams = [dataclasses.replace(s, lag=1) for s in streams]
    if not mp.fits(streams, scenario.iterations):
        return None
    results = {a: [(r - 1) % w] for r, (a, _) in enumerate(hops)}
    draw = M.compute_draws(net.g, scenario, [a for a, _ in hops])
    return (mp.pace(streams, queues, results, draw, tcp, scenario.iterations),
            f"ring hops through the links' drop-tail queues, {tcp.law}: {steps} dependent chunk "
            f"transfers per iteration segment by segment, {ch.run_words(scenario.iterations)} "
            "(schemes/model_packets.py)")
