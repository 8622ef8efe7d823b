"""mlfabric's model: ps's terms on the primary's placement (the bytes and paths of an
update and of the model coming back), and the scheduler's own order simulated.

Without aggregation every update goes from its worker to one server over TCP and the
model comes back, so an iteration's bytes are ps's; but the scheduler grants transfers
`slots` at a time (1 by default: serialized), drops an update that would land more than
`tau_max` versions after its read, and pauses grants until the replica is within `d_rep`
versions. `scheduled_ends` runs that order: the real scheduler (scheduler.MlfabricCore,
pure) decides, and each worker's connection and the replication connection are
schemes/model_chain's TCP senders (slow start, restart after idle, loss). Measured at
`bench schemes`' point (3 DCs x 4, 1 MB, 50 Mbps, s = 10): ps's model said 1.41 s per
iteration, the run 5.11 s, every grant waiting for the transfer before it, each of them a
1 MB message slow-starting after idle over a 91-165 ms path (docs/model.md).

Transfers that meet at a lossless link (the replication and the models going back to the
replica's datacenter) take turns on its rate, each whole (first come, first served: the
link's total time is right, each transfer's share of it is not); under random loss they
overlap, each bound by its window. Not simulated:
aggregation (groups through aggregators: a caveat), and the control messages' own TCP (REQUEST, GRANT and the replica's ACK take the one-way delay)."""
from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import replace

import numpy as np

from schemes import model as M
from schemes import model_chain as ch
from schemes.mlfabric.options import MlfabricOptions
from schemes.mlfabric.plan import plan
from schemes.mlfabric.scheduler import Drop, Grant, MlfabricCore
from schemes.ps.model import predict as ps_predict
from schemes.ps.options import PsOptions
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER
from workers.training_modes import Release

SCHEDULED = "scheduled transfers"


def predict(graph, scenario, o: MlfabricOptions):
    p = ps_predict(graph, scenario, PsOptions(server_dc=o.server_dc, base_port=o.base_port,
                                              timeout_s=o.timeout_s))
    notes, caveats = list(p.notes), list(p.caveats)
    tcp = M.simulated_tcp(scenario)
    if tcp is None:
        notes.append("mlfabric: ps's model on the primary's placement; the scheduler's order, "
                     "drops and replication are not simulated for this congestion control")
        return replace(p, scheme="mlfabric", notes=notes)
    pl = plan(graph, scenario, o)
    hosts = pl.info["server_hosts"]
    primary, replica = hosts[0], (hosts[1] if len(hosts) > 1 and o.replicate else None)
    net = M.Net(graph)
    lossy = any(net.path_loss(w, primary) > 0 or net.path_loss(primary, w) > 0 for w in pl.workers) or \
        (replica is not None and net.path_loss(primary, replica) > 0)
    draw = M.compute_draws(graph, scenario, pl.workers)
    segs = math.ceil(M.framed(M.parameters(scenario), DEFAULT_CHUNK_VALUES, HEADER.size) / M.MSS)
    tally: list = []
    period = ch.mean_pace(lambda n, seed: scheduled_ends(net, pl.workers, primary, replica, o, segs, draw,
                                                         tcp, n, seed, tally),
                          scenario.iterations, lossy)
    # the WAN bytes of the simulated order: ps's without the updates dropped, plus a
    # replication of every version applied
    wan = sum(b for b, _ in tally) / max(1, sum(n for _, n in tally))
    comm = max(0.0, period - p.compute_s)
    why = (f"{SCHEDULED}: slots {o.slots}, tau_max {o.tau_max} ({o.on_late}), "
           + (f"d_rep {o.d_rep}" if replica else "no replica")
           + f", {tcp.law}: every update and model a TCP message, "
           + ch.run_words(scenario.iterations, ch.seeds_for(scenario.iterations, lossy))
           + " (schemes/mlfabric/model.py)")
    notes.append("mlfabric: ps's limits on the primary's placement, and the scheduler's order simulated")
    if o.aggregation:
        caveats.append("aggregation: groups through aggregators are not simulated (each update is "
                       "taken straight to the PS)")
    if o.slots > 1:
        caveats.append(f"slots {o.slots}: concurrent transfers over one lossless link take turns "
                       "on it whole (first come, first served) instead of sharing its rate")
    if lossy or comm > p.comm_s:
        # ps's own simulated streams (push and gated pull at once) stand beside it as a
        # limit; this order replaces them
        limits = {k: v for k, v in p.limits.items() if "(schemes/model_" not in k}
        return M.assemble("mlfabric", M.compute(graph, scenario, pl.workers), {**limits, why: comm}, {},
                          wan, notes, caveats)
    notes.append(f"{why}: {comm:.4f} s, below ps's closed form {p.comm_s:.4f} s (which binds)")
    return replace(p, scheme="mlfabric", notes=notes, caveats=caveats, wan_bytes_per_iteration=wan)


def scheduled_ends(net, workers: list, primary: str, replica: str | None, o: MlfabricOptions,
                   segments: int, compute, tcp: ch.Tcp, iterations: int, seed: int = 0,
                   tally: list | None = None) -> list:
    """When each of `iterations` iterations ends at the slowest worker (the model of its
    release arriving), with the scheduler's decisions: worker r (rank r of `workers`)
    computes (compute(worker, iteration) seconds), REQUESTs (one way to the primary); a
    GRANT goes back (one way) and the update follows on r's connection (`segments`
    segments); its arrival is applied (a version), replicated on the primary-replica
    connection and acknowledged (one way back); each release sends r the model on r's
    connection back."""
    rng = np.random.default_rng(seed)
    core = MlfabricCore(len(workers), o.tau_max, o.on_late, o.slots, o.d_rep if replica else None,
                        o.agg_window)

    # transfers that meet at a lossless link take turns on it: the replication to the
    # replica and the models going back to the replica's datacenter cross the same WAN
    # direction (measured at bench schemes' point with 4 MB: 12 replications and 4 models
    # of 4 MB a round on that link, 10.8 s per iteration against 8.4 s with each at the
    # full rate). Under random loss each transfer's window holds it far below the link's
    # rate and they overlap (1 MB, 1 % loss: 15.3 s measured, 17.35 s overlapping, 23.7 s
    # taking turns)
    link_free: dict = defaultdict(float)
    data, acks = M.tcp_wire(segments * M.MSS)
    wan_bytes = 0.0

    def sender(a, b):     # a transfer at its path's full rate, its bottleneck link shared
        h = ch.hop(net, a, b, net.min_rate_bps)
        if h is None:
            return None
        p = net.path(a, b)
        links = list(zip(p, p[1:]))
        return ch.Sender(h, tcp), [e for e in links if net.rate_bps(*e) == h.rate_bps], \
            sum(net.kind(u, v) == "wan" for u, v in links)

    def send(s, t: float) -> float:
        nonlocal wan_bytes
        if s is None:
            return t
        snd, links, wan_links = s      # links: the path's slowest (the transfer's rate)
        if not snd.hop.loss:            # under loss a window, not the link, bounds a transfer
            snd.wire_free = max([snd.wire_free] + [link_free[e] for e in links])
        got = snd.send(t, segments, rng)
        if not snd.hop.loss:
            for e in links:
                link_free[e] = max(link_free[e], snd.wire_free)
        wan_bytes += wan_links * (data + acks)
        return got

    up = [sender(w, primary) for w in workers]
    down = [sender(primary, w) for w in workers]
    repl = sender(primary, replica) if replica else None
    one_up = [net.delay(w, primary) if w != primary else 0.0 for w in workers]
    one_down = [net.delay(primary, w) if w != primary else 0.0 for w in workers]
    back = net.delay(replica, primary) if replica and replica != primary else 0.0
    ends: list[list[float]] = [[] for _ in workers]
    events: list = []
    seq = 0

    def at(t: float, *what) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, what))
        seq += 1

    for r, w in enumerate(workers):
        at(compute(w, 0) + one_up[r], "request", r, 0)

    def act(t: float, outs: list) -> None:
        for out in outs:
            if isinstance(out, Grant):
                at(max(send(up[m.worker], t + one_down[m.worker]) for m in out.members), "arrived", out.group)
            elif isinstance(out, Release):
                r = out.worker
                got = send(down[r], t)
                ends[r].append(got)
                if out.iteration < iterations:
                    at(got + compute(workers[r], out.iteration) + one_up[r], "request", r, out.iteration)
            elif not isinstance(out, Drop):
                raise TypeError(f"unexpected scheduler output {out!r}")

    while events and min(len(e) for e in ends) < iterations:
        t, _, what = heapq.heappop(events)
        if what[0] == "request":
            act(t, core.request(what[1], what[2], 4 * segments))
        elif what[0] == "arrived":
            _, outs = core.arrived(what[1])
            if replica is not None:
                at(send(repl, t) + back, "acked", core.version)
            act(t, outs)
        else:
            act(t, core.acked(what[1]))
    done = min(len(e) for e in ends)
    if tally is not None:       # the WAN bytes sent (updates, models, replications) and iterations
        tally.append((wan_bytes, done))
    return [max(e[i] for e in ends) for i in range(done)]
