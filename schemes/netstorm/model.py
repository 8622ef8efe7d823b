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
Auxiliary routes are not modelled (they carry traffic only when a primary queue builds up).

The plan is the one the run keeps (policy_in_force): the scheduler re-plans only from
messages of report_bytes or more, so with smaller blocks the start it drew (the authors'
random one by default) stays for the whole run. The overlay connections are simulated as
ps's and hier-ps's streams are (schemes/model_chain.py: slow start, restart after idle,
loss): each message goes whole, hop by hop, after the barrier; without loss the larger of
that and the closed form above binds."""
from __future__ import annotations

from collections import defaultdict

from schemes import model as M
from schemes import model_chain as ch
import schemes.netstorm.policy as pol
from schemes.netstorm.options import NetstormOptions
from schemes.netstorm.plan import overlay, plan
from schemes.netstorm.wire import HEADER_FIELDS
from schemes.ps.model import TREE_CAP, tree_fits, with_simulation
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER


def message_bytes(values: int, hops: int) -> int:
    """A routed message on the wire (payload of TCP): header frame + body frame."""
    return HEADER.size + 8 * (HEADER_FIELDS + hops + 1) + HEADER.size + 4 * values


def policy_in_force(graph, scenario, o: NetstormOptions) -> tuple[pol.Policy, str]:
    """(the plan the run keeps, how the model chose it). The scheduler plans first from
    `initial_throughput` (the authors' random start by default: policy.initial_tps); it
    re-plans only from the speed of messages of report_bytes or more (server.py times no
    other), so a run whose blocks are all smaller keeps its first plan. When a block is
    large enough, the model takes the plan of the configured rates (*assumption*: what
    measurement converges to on an otherwise idle WAN)."""
    dcs, adj, rates = overlay(graph)
    configured = {(a, b): r for a, b, r in rates}

    def decide(mode: str) -> pol.Policy:
        tps = pol.initial_tps(adj, mode, seed=o.uninformed_seed, configured=configured)
        return pol.decide(adj, tps, n_roots=o.roots or len(dcs), block=o.block_values,
                          total=M.parameters(scenario), multipath=o.multipath)
    first = decide(o.initial_throughput)
    largest = max((hi - lo for _, lo, hi in first.blocks), default=0)
    if o.awareness and 4 * largest >= o.report_bytes:
        return decide("configured"), ("the configured rates' plan (blocks reach report_bytes, so the "
                                      "scheduler re-plans from measured speeds; assumption: they "
                                      f"converge to the configured rates; the first plan was {o.initial_throughput})")
    why = "awareness off" if not o.awareness else \
        f"no block reaches report_bytes ({4 * largest} < {o.report_bytes} bytes), so nothing is measured"
    return first, f"the {o.initial_throughput} first plan for the whole run ({why})"


def message_streams(net, load, p: pol.Policy, srv: list, lan_flows: list, values: int,
                    barrier_s: float) -> tuple[list, dict]:
    """The streams of one iteration for schemes/model_chain.tree_ends: every worker's push
    to its datacenter's server (lan_flows: (worker, server host, datacenter index)), per
    block each server's sum of its workers and its children (whole), the sum up its root's
    tree and the result down, hop by hop on the primary routes (a message taken whole at
    every hop: relays and servers store and forward), and each server's results to its
    workers. results: worker -> the stream that ends its iteration."""
    flows: list = []

    def add(stream) -> int:
        flows.append(stream)
        return len(flows) - 1

    lan_segs = ch.chunk_segments(values, DEFAULT_CHUNK_VALUES, HEADER.size, M.MSS)
    push = {w: add(ch.Stream(ch.hop(net, w, h, load.share_bps), lan_segs, (), w)) for w, h, _ in lan_flows}
    pushes_at = defaultdict(list)
    for w, _, dc in lan_flows:
        pushes_at[dc].append(push[w])
    gate = tuple(push.values())

    def route(a: int, b: int, inputs: tuple, segs: tuple) -> int:
        path = p.routes[(a, b)][0]
        last = None
        for u, v in zip(path, path[1:]):
            last = add(ch.Stream(ch.hop(net, srv[u], srv[v], load.share_bps), segs, inputs, whole=True,
                                 gate=gate, gate_s=barrier_s))
            inputs = (last,)
        return last

    result_at = defaultdict(list)
    for root, lo, hi in p.blocks:
        segs = ch.chunk_segments(hi - lo, DEFAULT_CHUNK_VALUES, HEADER.size, M.MSS)
        parents = p.parents[root]
        kids = pol.children(parents)
        summed: dict = {}

        # the block's sum goes once every local worker's chunks of it are in (the pushes
        # arrive in order: the chunk holding its last value) and its children's partials
        last_chunk = (hi - 1) // DEFAULT_CHUNK_VALUES

        def sum_at(n: int) -> int:      # n's sum of its workers and its children's partials
            if n not in summed:
                kid_sums = tuple(route(k, n, (sum_at(k),), segs) for k in kids.get(n, ()))
                needs = ((last_chunk,) * len(segs),) * len(pushes_at[n]) + \
                    ((len(segs) - 1,) * len(segs),) * len(kid_sums)
                summed[n] = add(ch.Stream(None, segs, tuple(pushes_at[n]) + kid_sums, whole=True,
                                          needs=needs))
            return summed[n]

        def down(n: int, arrived: int) -> None:   # the result reached n: on to its children
            result_at[n].append((arrived, lo, len(segs)))
            for k in kids.get(n, ()):
                down(k, route(n, k, (arrived,), segs))
        down(root, sum_at(root))
    # a server hands its workers the result chunk by chunk in order, each once every block
    # holding a value of it or of a chunk before it is in (engine.py _result)
    results = {}
    for w, h, dc in lan_flows:
        ins = tuple(j for j, _, _ in result_at[dc])
        needs = tuple(tuple(n - 1 if lo < (c + 1) * DEFAULT_CHUNK_VALUES else -1
                            for c in range(len(lan_segs))) for _, lo, n in result_at[dc])
        results[w] = [add(ch.Stream(ch.hop(net, h, w, load.share_bps), lan_segs, ins, needs=needs))]
    return flows, results


def predict(graph, scenario, o: NetstormOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    load = M.Load(net)
    srv = pl.info["server_hosts"]
    values = M.parameters(scenario)
    per = M.framed(values, DEFAULT_CHUNK_VALUES, HEADER.size)
    dc = {w: pl.info["overlay_datacenters"].index(graph.nodes[w]["dc_index"]) for w in pl.workers}
    lan = []
    for w in pl.workers:
        h = srv[dc[w]]
        if w != h:
            load.tcp(w, h, per)
            load.tcp(h, w, per)
            lan += [(w, h, per), (h, w, per)]
    p, which = policy_in_force(graph, scenario, o)
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
    notes = [f"plan: {which}: roots {sorted(p.roots)}, {len(p.blocks)} block(s) of <= "
             f"{o.block_values} values",
             "auxiliary routes not modelled (primary routes only)"]
    caveats: list = []
    lossy = any(net.path_loss(a, b) > 0 for a, b, _ in lan + wan)
    tcp = M.simulated_tcp(scenario)
    sim = None
    if tcp is not None and tree_fits(net, lan + wan, scenario, lossy):
        lan_flows = [(w, srv[dc[w]], dc[w]) for w in pl.workers]
        streams, results = message_streams(net, load, p, srv, lan_flows, values,
                                           add["barrier (longest server-scheduler round trip)"])
        draw = M.compute_draws(graph, scenario, pl.workers)
        period = ch.mean_pace(lambda n, seed: ch.tree_ends(streams, results, draw, tcp, n, seed),
                              scenario.iterations, lossy, cap=TREE_CAP)
        sim = (period, f"overlay connections{' under loss' if lossy else ''}, {tcp.law}: each message "
                       f"whole, hop by hop after the barrier, "
                       f"{ch.run_words(scenario.iterations, ch.seeds_for(scenario.iterations, lossy, TREE_CAP))}"
                       " (schemes/model_chain.py)")
    limits, add = with_simulation(limits, add, sim, comp, lossy, caveats, notes,
                                  "netstorm's overlay connections")
    return M.assemble("netstorm", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)
