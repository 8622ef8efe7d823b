"""Model of alltoall (docs/model.md): every worker streams its gradient to every other at
once; the iteration is the busiest link's serialization plus the longest one-way delay.
Under random loss the streams are simulated round by round (ps's simulated_tree, pushes
only: a worker's next iteration starts once every stream into it is in), since the
iteration waits for the slowest of W (W - 1) streams and each loss holds its stream a
recovery round that nothing overlaps (measured at bench schemes' point, 1 MB, 50 Mbps,
1 % WAN loss: 5.49 s per iteration; closed form 2.985 s, simulated 5.13 s)."""
from __future__ import annotations

from schemes import model as M
from schemes import model_chain as ch
from schemes.alltoall.plan import plan
from schemes.base import TcpOptions
from schemes.ps.model import simulated_tree, tree_fits, with_simulation
from workers.framing import HEADER


def predict(graph, scenario, o: TcpOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    load = M.Load(net)
    payload = M.framed(M.parameters(scenario), 1 << 62, HEADER.size)
    flows = [(a, b, payload) for a in pl.workers for b in pl.workers if a != b]
    for a, b, p in flows:
        load.tcp(a, b, p)
    comp = M.compute(graph, scenario, pl.workers)
    notes, caveats = [], []
    limits = M.tcp_limits(load, flows, scenario)
    one_way = max((net.delay(a, b) for a, b, _ in flows), default=0.0)
    add = {"propagation (longest one-way delay)": one_way}
    if flows:
        a, b, p = max(flows, key=lambda f: net.rtt(f[0], f[1]))
        add["slow start after idle"] = M.tcp_idle_term(p, load.share_bps(a, b), net.rtt(a, b),
                                                       comp.mean_s + one_way, scenario, notes,
                                                       f"stream {a}->{b}")
    # without loss the streams go through the links' queues segment by segment
    # (schemes/model_packets.py), with the hosts' send-time noise: without the noise its
    # identical streams stay in lock-step and finish together at the closed form (2.98 s at
    # bench schemes' point, where the run measured 3.95 s); with it 3.49 s (docs/model.md)
    lossy = any(net.path_loss(a, b) > 0 for a, b, _ in flows)
    sim = None
    if tree_fits(net, flows, scenario, lossy):
        segs = ch.chunk_segments(M.parameters(scenario), 1 << 62, HEADER.size, M.MSS)
        streams, results = [], {w: [] for w in pl.workers}
        for a, b, _ in flows:
            results[b].append(len(streams))
            streams.append((a, b, segs, (), a))
        sim = simulated_tree(net, load, streams, results, comp, scenario,
                             "streams, a worker's next iteration once every stream into it is in")
    limits, add = with_simulation(limits, add, sim, comp, lossy, caveats, notes, "alltoall's streams")
    return M.assemble("alltoall", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)
