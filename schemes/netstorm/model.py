"""Model of netstorm (docs/model.md): the plans the scheduler runs (its first, then, when
blocks are timed, the one it makes from the speeds the first plan's simulated messages
report), every block's partial sums up its root's tree and the result down, on the
primary routes, one TCP connection per direction of each overlay link; workers stream to
their datacenter's server over the LAN as in hier-ps.

iteration = compute_max + max(serialization at the busiest link, TCP limits, switch rate,
                              store and forward of one block up and down the deepest tree
                              path: a server forwards a block only once it has all of it)
            + the deepest tree's round trip (worker -> server -> root -> server -> worker)
            + the barrier (the longest server-scheduler round trip: trees wait for it)
Auxiliary routes are not modelled (they carry traffic only when a primary queue builds up).

The plans are the ones the run runs (policy_in_force): the scheduler re-plans only from
messages of report_bytes or more, so with smaller blocks the start it drew (the authors'
random one by default) stays for the whole run; with larger ones it runs until the re-plan
can (switch_iteration), the plan from the measured speeds after it (measured_speeds). The overlay connections are simulated as
ps's and hier-ps's streams are (schemes/model_chain.py: slow start, restart after idle,
loss): each message goes whole, hop by hop, after the barrier; without loss the larger of
that and the closed form above binds."""
from __future__ import annotations

import math
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


def policy_in_force(graph, scenario, o: NetstormOptions) -> tuple[pol.Policy, dict | None, str]:
    """(the first plan, the throughputs it was made from when the scheduler will re-plan
    from measured speeds, else None; how the model chose them). The scheduler plans first
    from `initial_throughput` (the authors' random start by default: policy.initial_tps);
    it re-plans only from the speed of messages of report_bytes or more (server.py times
    no other), so a run whose blocks are all smaller keeps its first plan; with larger
    ones the re-plan (replan) runs from switch_iteration."""
    dcs, adj, rates = overlay(graph)
    tps = pol.initial_tps(adj, o.initial_throughput, seed=o.uninformed_seed,
                          configured={(a, b): r for a, b, r in rates})
    first = decide(graph, scenario, o, tps)
    largest = max((hi - lo for _, lo, hi in first.blocks), default=0)
    if o.awareness and 4 * largest >= o.report_bytes:
        return first, tps, (f"the {o.initial_throughput} first plan, then the re-plan from the speeds "
                            "its timed messages measure (blocks reach report_bytes)")
    why = "awareness off" if not o.awareness else \
        f"no block reaches report_bytes ({4 * largest} < {o.report_bytes} bytes), so nothing is measured"
    return first, None, f"the {o.initial_throughput} first plan for the whole run ({why})"


def decide(graph, scenario, o: NetstormOptions, tps: dict) -> pol.Policy:
    """The scheduler's plan from throughputs tps (policy.decide with the run's options)."""
    dcs, adj, _ = overlay(graph)
    return pol.decide(adj, tps, n_roots=o.roots or len(dcs), block=o.block_values,
                      total=M.parameters(scenario), multipath=o.multipath)


def measured_speeds(trace: dict, timed: dict, messages: int) -> dict:
    """Mbps per overlay hop as its server reports it (awareness.LinkMeter): the bytes of
    its first `messages` timed messages over their times from leaving the sender's queue
    to arriving (trace: model_chain.tree_ends's; timed: stream index -> (hop, body
    bytes)). Real-world Mbps, as the servers scale them."""
    got: dict = defaultdict(list)
    for i, (hop, nbytes) in timed.items():
        for start, end in trace.get(i, []):
            got[hop].append((start, nbytes, end - start))
    out = {}
    for hop, xs in got.items():
        first = sorted(xs)[:messages]
        if len(first) == messages and sum(t for _, _, t in first) > 0:
            out[hop] = 8 * sum(b for _, b, _ in first) / sum(t for _, _, t in first) / 1e6
    return out


def switch_iteration(o: NetstormOptions, first_pace_s: float) -> int:
    """The first iteration that runs the re-plan (policy_in_force), the first plan running
    iterations 0 .. this - 1. Each overlay link carries one timed message per iteration
    and block that reaches report_bytes (a block's partial up or its result down), and a
    server reports a link's speed after report_messages of them (awareness.LinkMeter):
    with one such block, in iteration report_messages - 1, before it ends (the result
    still has its way down). The scheduler re-plans at its next check (every
    check_period_s) and the plan goes out at the next barrier (scheduler.py): when an
    iteration outlasts the check period a check lands before it, so the re-plan runs from
    iteration report_messages; when shorter, ceil(check_period_s / pace) - 1 iterations
    later. Measured at the bench point with 4 MB (6.7 s per iteration): iteration 4."""
    return o.report_messages + max(0, math.ceil(o.check_period_s / max(first_pace_s, 1e-9)) - 1)


def message_streams(net, load, p: pol.Policy, srv: list, lan_flows: list, values: int,
                    barrier_s: float, report_bytes: float = math.inf) -> tuple[list, dict, dict]:
    """The streams of one iteration for schemes/model_chain.tree_ends: every worker's push
    to its datacenter's server (lan_flows: (worker, server host, datacenter index)), per
    block each server's sum of its workers and its children (whole), the sum up its root's
    tree and the result down, hop by hop on the primary routes (a message taken whole at
    every hop: relays and servers store and forward), and each server's results to its
    workers. results: worker -> the stream that ends its iteration. timed: the hops'
    streams whose message body is report_bytes or more (stream index -> (overlay hop, body
    bytes)): the messages the servers time."""
    timed: dict = {}
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

    def route(a: int, b: int, inputs: tuple, segs: tuple, body: int) -> int:
        path = p.routes[(a, b)][0]
        last = None
        for u, v in zip(path, path[1:]):
            last = add(ch.Stream(ch.hop(net, srv[u], srv[v], load.share_bps), segs, inputs, whole=True,
                                 gate=gate, gate_s=barrier_s))
            if 4 * body >= report_bytes:
                timed[last] = ((u, v), 4 * body)
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
                kid_sums = tuple(route(k, n, (sum_at(k),), segs, hi - lo) for k in kids.get(n, ()))
                needs = ((last_chunk,) * len(segs),) * len(pushes_at[n]) + \
                    ((len(segs) - 1,) * len(segs),) * len(kid_sums)
                summed[n] = add(ch.Stream(None, segs, tuple(pushes_at[n]) + kid_sums, whole=True,
                                          needs=needs))
            return summed[n]

        def down(n: int, arrived: int) -> None:   # the result reached n: on to its children
            result_at[n].append((arrived, lo, len(segs)))
            for k in kids.get(n, ()):
                down(k, route(n, k, (arrived,), segs, hi - lo))
        down(root, sum_at(root))
    # a server hands its workers the result chunk by chunk in order, each once every block
    # holding a value of it or of a chunk before it is in (engine.py _result)
    results = {}
    for w, h, dc in lan_flows:
        ins = tuple(j for j, _, _ in result_at[dc])
        needs = tuple(tuple(n - 1 if lo < (c + 1) * DEFAULT_CHUNK_VALUES else -1
                            for c in range(len(lan_segs))) for _, lo, n in result_at[dc])
        results[w] = [add(ch.Stream(ch.hop(net, h, w, load.share_bps), lan_segs, ins, needs=needs))]
    return flows, results, timed


def plan_load(net, p: pol.Policy, srv: list, lan: list) -> tuple:
    """(the Load of plan p: the workers' LAN streams `lan` and every block's partial up and
    result down each edge of its root's tree on the primary routes, the WAN streams)."""
    load = M.Load(net)
    for a, b, payload in lan:
        load.tcp(a, b, payload)
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
    return load, [(srv[a], srv[b], payload) for (a, b), payload in on_link.items()]


def predict(graph, scenario, o: NetstormOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    srv = pl.info["server_hosts"]
    values = M.parameters(scenario)
    per = M.framed(values, DEFAULT_CHUNK_VALUES, HEADER.size)
    dc = {w: pl.info["overlay_datacenters"].index(graph.nodes[w]["dc_index"]) for w in pl.workers}
    lan = [f for w in pl.workers if w != srv[dc[w]] for f in ((w, srv[dc[w]], per), (srv[dc[w]], w, per))]
    first, first_tps, which = policy_in_force(graph, scenario, o)
    comp = M.compute(graph, scenario, pl.workers)
    barrier = max(net.rtt(h, pl.info["scheduler_host"]) for h in srv)
    tcp = M.simulated_tcp(scenario)
    draw = M.compute_draws(graph, scenario, pl.workers)
    lan_flows = [(w, srv[dc[w]], dc[w]) for w in pl.workers]
    n_run = scenario.iterations

    def plan_ends(p):
        """(ends_of(n, seed, frm=0) for schemes/model_chain.mean_pace under plan p, its
        streams, results and timed streams)."""
        load, _ = plan_load(net, p, srv, lan)
        streams, results, timed = message_streams(net, load, p, srv, lan_flows, values, barrier,
                                                   o.report_bytes)
        return (lambda n, seed, frm=0: ch.tree_ends(
            streams, results, (lambda w, it: ch._compute(draw, w, it + frm)), tcp, n, seed)), \
            streams, results, timed

    # the plan whose steady state the closed form and the WAN bytes describe: the re-plan
    # once the run gets to it; simulated within the tree simulation's budget only
    switch, p, ends_of, later, cap = None, first, None, None, TREE_CAP
    first_ends = first_pace = None
    first_wan = plan_load(net, first, srv, lan)[1]
    lossy = any(net.path_loss(a, b) > 0 for a, b, _ in lan + first_wan)
    fits = tcp is not None and tree_fits(net, lan + first_wan, scenario, lossy)
    if fits and first_tps is not None:
        first_ends, streams, results, timed = plan_ends(first)
        first_pace = ch.mean_pace(first_ends, n_run, lossy, cap=TREE_CAP)
        switch = switch_iteration(o, first_pace)
        # the speeds the first plan's timed messages report (one seed), over the
        # throughputs it was made from: the scheduler's matrix at the re-plan
        trace: dict = {}
        ch.tree_ends(streams, results, draw, tcp, o.report_messages, 0, trace)
        later = decide(graph, scenario, o, {**first_tps, **measured_speeds(trace, timed, o.report_messages)})
        if n_run is None or n_run > switch:
            later_ends = plan_ends(later)[0]
            p = later
            lossy = lossy or any(net.path_loss(a, b) > 0 for a, b, _ in plan_load(net, later, srv, lan)[1])
            cap = max(TREE_CAP, switch + 9)     # a long job's steady pace: the re-plan's alone

            def ends_of(n, seed):       # the first plan, then the re-plan
                e1 = first_ends(min(n, switch), seed)
                return e1 + [e1[-1] + x for x in later_ends(n - switch, seed, switch)] if n > switch else e1
        else:
            ends_of = first_ends
    load, wan = plan_load(net, p, srv, lan)
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
    add = {"propagation (deepest tree: worker-server round trip + server-root round trip"
           + (f", root {worst[0]} from {worst[1][0]}" if worst else "") + ")": lan_rtt + worst_rt,
           "barrier (longest server-scheduler round trip)": barrier}
    when = "" if first_tps is None else \
        ("; the re-plan is not modelled (a congestion control the simulation does not have, or "
         "too large to simulate: the first plan throughout)" if switch is None else
         f"; the re-plan from iteration {switch} (switch_iteration)" if n_run is None or n_run > switch
         else f"; the re-plan would run from iteration {switch} (switch_iteration): after the run's {n_run}")
    notes = [f"plan: {which}{when}: roots {sorted(p.roots)}, {len(p.blocks)} "
             f"block(s) of <= {o.block_values} values",
             "auxiliary routes not modelled (primary routes only)"]
    caveats: list = []
    sim = None
    if tcp is not None and tree_fits(net, lan + wan, scenario, lossy) and (fits or first_tps is None):
        if ends_of is None:
            ends_of = plan_ends(first)[0]
        # the first plan alone throughout: its pace is already simulated
        period = first_pace if first_ends is not None and ends_of is first_ends else \
            ch.mean_pace(ends_of, n_run, lossy, cap=cap)
        sim = (period, f"overlay connections{' under loss' if lossy else ''}, {tcp.law}: each message "
                       f"whole, hop by hop after the barrier, "
                       f"{ch.run_words(n_run, ch.seeds_for(n_run, lossy, cap))}"
                       " (schemes/model_chain.py)")
    limits, add = with_simulation(limits, add, sim, comp, lossy, caveats, notes,
                                  "netstorm's overlay connections")
    return M.assemble("netstorm", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)
