"""Model of ring (docs/model.md): 2 (W-1) steps, each a chunk of S/W sent to the right
neighbour after the one from the left arrived (store and forward per chunk), so the
iteration is a dependency chain of 2 (W-1) consecutive hops: the largest of its
serialization and of the busiest link's, plus the chain's propagation delay."""
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
    # the chain ending at worker r covers hops r-steps+1 .. r (mod W)
    best = max(range(W), key=lambda r: sum(ser[(r - j) % W] + dly[(r - j) % W] for j in range(steps))
               ) if W <= 512 else max(range(W), key=lambda r: dly[r])
    chain = [(best - j) % W for j in range(steps)]
    limits = M.tcp_limits(load, [(a, b, payload * steps) for a, b in hops], scenario)
    limits[f"serialization along the chain of {steps} steps"] = sum(ser[h] for h in chain)
    add = {f"propagation (chain of {steps} ring hops)": sum(dly[h] for h in chain)}
    # slow start after idle of the slowest hop's stream: idle = its own compute + one step
    slow = max(range(W), key=lambda r: dly[r])
    a, b = hops[slow]
    rtt = net.rtt(a, b)
    add["slow start after idle"] = M.tcp_idle_term(
        payload, load.share_bps(a, b), rtt, comp.mean_s + ser[slow] + dly[slow], scenario, notes,
        f"ring hop {a}->{b}", window=min(payload, load.share_bps(a, b) / 8 * rtt))
    return M.assemble("ring", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph))
