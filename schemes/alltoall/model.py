"""Model of alltoall (docs/model.md): every worker streams its gradient to every other at
once; the iteration is the busiest link's serialization plus the longest one-way delay."""
from __future__ import annotations

from schemes import model as M
from schemes.alltoall.plan import plan
from schemes.base import TcpOptions
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
    notes = []
    limits = M.tcp_limits(load, flows, scenario)
    one_way = max((net.delay(a, b) for a, b, _ in flows), default=0.0)
    add = {"propagation (longest one-way delay)": one_way}
    if flows:
        a, b, p = max(flows, key=lambda f: net.rtt(f[0], f[1]))
        add["slow start after idle"] = M.tcp_idle_term(p, load.share_bps(a, b), net.rtt(a, b),
                                                       comp.mean_s + one_way, scenario, notes,
                                                       f"stream {a}->{b}")
    return M.assemble("alltoall", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph))
