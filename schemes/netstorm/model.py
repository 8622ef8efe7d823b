"""Model of netstorm (docs/model.md): the plan the scheduler makes when its matrix holds the
configured WAN rates (what measurement converges to on an otherwise idle WAN: an
assumption), every block's partial sums up its root's tree and the result down, on the
primary routes, one TCP connection per direction of each overlay link; workers stream to
their datacenter's server over the LAN as in hier-ps.

iteration = compute_max + max(serialization at the busiest link, TCP limits, switch rate,
                              store and forward of one block up and down the deepest tree
                              path: a server forwards a block only once it has all of it)
            + the deepest tree's round trip (worker -> server -> root -> server -> worker)
            + the barrier (the longest server-scheduler round trip: trees wait for it)
Auxiliary routes are not modelled (they carry traffic only when a primary queue builds up)."""
from __future__ import annotations

from collections import defaultdict

from schemes import model as M
import schemes.netstorm.policy as pol
from schemes.netstorm.options import NetstormOptions
from schemes.netstorm.plan import overlay, plan
from schemes.netstorm.wire import HEADER_FIELDS
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER


def message_bytes(values: int, hops: int) -> int:
    """A routed message on the wire (payload of TCP): header frame + body frame."""
    return HEADER.size + 8 * (HEADER_FIELDS + hops + 1) + HEADER.size + 4 * values


def configured_policy(graph, scenario, o: NetstormOptions) -> pol.Policy:
    dcs, adj, rates = overlay(graph)
    tps = {(a, b): r for a, b, r in rates}
    return pol.decide(adj, tps, n_roots=o.roots or len(dcs), block=o.block_values,
                      total=M.parameters(scenario), multipath=o.multipath)


def predict(graph, scenario, o: NetstormOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    load = M.Load(net)
    srv = pl.info["server_hosts"]
    values = M.parameters(scenario)
    per = M.framed(values, DEFAULT_CHUNK_VALUES, HEADER.size)
    lan = []
    for w in pl.workers:
        h = srv[pl.info["overlay_datacenters"].index(graph.nodes[w]["dc_index"])]
        if w != h:
            load.tcp(w, h, per)
            load.tcp(h, w, per)
            lan += [(w, h, per), (h, w, per)]
    p = configured_policy(graph, scenario, o)
    on_link: dict = defaultdict(float)          # (a, b) overlay hop -> payload bytes
    for root, lo, hi in p.blocks:
        for n, parent in p.parents[root].items():
            if parent is None:
                continue
            for a, b in ((n, parent), (parent, n)):      # partial up, result down
                path = p.routes[(a, b)][0]
                for u, v in zip(path, path[1:]):
                    on_link[(u, v)] += message_bytes(hi - lo, len(path))
    for (a, b), payload in on_link.items():
        load.tcp(srv[a], srv[b], payload)
    wan = [(srv[a], srv[b], payload) for (a, b), payload in on_link.items()]
    comp = M.compute(graph, scenario, pl.workers)
    limits = M.tcp_limits(load, lan + wan, scenario)

    def up_path(root, n):
        out = [n]
        while p.parents[root][out[-1]] is not None:
            out.append(p.parents[root][out[-1]])
        return out

    # the root whose tree's deepest round trip (propagation + one block forwarded per hop) is longest
    worst, worst_rt, worst_sf = None, 0.0, 0.0
    largest = max((hi - lo for _, lo, hi in p.blocks), default=0)
    for root in p.parents:
        for n in p.parents[root]:
            hops = up_path(root, n)
            rt = sum(2 * net.delay(srv[a], srv[b]) for a, b in zip(hops, hops[1:]))
            sf = sum(2 * 8 * message_bytes(largest, 2) / net.min_rate_bps(srv[a], srv[b])
                     for a, b in zip(hops, hops[1:]))
            if rt + sf > worst_rt + worst_sf:
                worst, worst_rt, worst_sf = (root, hops), rt, sf
    # a chain, not an addition: the busiest link's serialization overlaps it
    limits["store and forward (one block per tree hop, up and down the deepest path)"] = worst_sf
    lan_rtt = max((net.rtt(a, b) for a, b, _ in lan), default=0.0)
    sched = pl.info["scheduler_host"]
    add = {"propagation (deepest tree: worker-server round trip + server-root round trip"
           + (f", root {worst[0]} from {worst[1][0]}" if worst else "") + ")": lan_rtt + worst_rt,
           "barrier (longest server-scheduler round trip)": max(net.rtt(h, sched) for h in srv)}
    notes = [f"plan from the configured rates: roots {sorted(p.roots)}, "
             f"{len(p.blocks)} block(s) of <= {o.block_values} values; the run starts from "
             f"{o.initial_throughput} throughputs and re-plans from measurements",
             "auxiliary routes not modelled (primary routes only)",
             "slow start after idle not modelled for the overlay connections"]
    return M.assemble("netstorm", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph))
