"""Model of ina and geo-ina (docs/model.md): every worker sends ceil(N / k) aggregation
frames of frame_bytes(k) bytes to its aggregation point; each point sends one frame per
chunk up when complete and multicasts results down, one frame per chunk per child. With
W slots per worker in flight and the longest worker-root-worker round trip R, at most
W chunks complete per R, and each window's frames pass the busiest link one after the
other. Iteration: the largest of the busiest link's serialization, the window limit and
the busiest switch's packet rate, plus one round trip for the last chunk."""
from __future__ import annotations

import math

from control.agg_tree import way_up
from schemes import model as M
from schemes.ina.options import InaOptions, InaTransportOptions
from schemes.ina.plan import tree_for
from schemes.ina.repair_delay import Repair, slowest_chain_passes
from workers.agg_packet import frame_bytes
from workers.congestion import cubic_c



def worker_timeout_s(t: InaTransportOptions, rtt: float, scenario) -> float:
    """A worker's retransmission timeout on a steady stream, real-world seconds: at least
    SRTT + rto_margin_s and at least min_rto_ms; the options are emulated ms, so / s
    (docs/ina.md)."""
    return max(rtt + rto_margin_s(t, rtt, scenario), t.min_rto_ms / 1000 / scenario.time_dilation)


def rto_margin_s(t: InaTransportOptions, rtt: float, scenario) -> float:
    """What a worker's RTO adds to its SRTT on a tree whose longest round trip is `rtt`,
    real-world seconds, as the plans set it (schemes/ina/plan.rto_margin_ms): the option,
    or auto: half that round trip, at least 100 ms emulated."""
    s = scenario.time_dilation
    return max(0.1 / s, 0.5 * rtt) if t.rto_margin_ms == "auto" else float(t.rto_margin_ms) / 1000 / s


def model_for(shape: str):
    def predict(graph, scenario, o: InaOptions) -> M.Prediction:
        return predict_values(shape, graph, scenario, o, M.parameters(scenario))
    return predict


def predict_values(shape: str, graph, scenario, o: InaOptions, values: int) -> M.Prediction:
    """The model of aggregating `values` values per worker per iteration (libra sends
    only its switch vector through the tree)."""
    tree, k = tree_for(shape, graph, scenario, o)
    return predict_trees(shape, graph, scenario, [(tree, values)], k, o)


def tree_rtt(net: M.Net, tree, worker: str) -> float:
    """A worker's round trip through its tree: up from aggregation point to aggregation
    point to the root and the result back down the same points, each leg on its shortest
    path. Not the direct worker-root round trip: a plan may put a worker on another
    datacenter's point (inart's at `bench schemes`' point: a Frankfurt worker on Tokyo's
    rack switch for the Washington server, 398 ms against 91 ms direct)."""
    return sum(net.delay(a, p.switch) + net.delay(p.switch, a) for a, p, _ in way_up(tree, worker))


def result_skew_s(net: M.Net, tree) -> float:
    """How much later the last worker's result arrives than the first's (one-way delays
    down the tree's points from the root), real-world seconds."""
    ways = [sum(net.delay(p.switch, a) for a, p, _ in way_up(tree, w)) for w in tree.workers]
    return max(ways) - min(ways) if ways else 0.0


def out_of_step_s(net: M.Net, tree, chunks: int, repaired: frozenset, t: InaTransportOptions,
                  frame: int) -> float:
    """The loss-bound time of the slowest worker alone: its own path's loss window over its
    own round trip to the root (measured: flat ina at 4 MB and geo-ina at 1 MB, 1 % WAN
    loss, ran at 0.37-0.87 x the in-step model with all workers but one datacenter's ahead
    of the job; docs/ina.md)."""
    worst = 0.0
    for w in tree.workers:
        r = tree_rtt(net, tree, w)
        p = own_loss(net, tree, w, repaired)
        if p > 0 and r > 0:
            worst = max(worst, chunks / M.loss_window(p, r, t.congestion_law, cubic_c(frame)) * r)
    return worst


def most_resends(p: float, chunks: float) -> float:
    """Expected re-sends of the chunk that needs the most, among `chunks` that each lose
    a try with probability p independently: E[max] = sum over r >= 1 of
    P(some chunk needs r or more) = 1 - (1 - p^r)^chunks."""
    return most_repairs(p, p, chunks)


def chunk_loss(net: M.Net, tree, worker: str, repaired: frozenset = frozenset()) -> float:
    """Probability that `worker` gets no result for a chunk on its first try: any frame
    the result needs is lost, every contribution and partial sum on the way up (one lost
    frame times the chunk out at every worker of the job) or the result replica on the
    way down to this worker. Links of `repaired` points (their partial sums up, and the
    results down from their parents) are left out: the switches repair those."""
    up = [(c.node, p.switch) for p in tree.points.values() for c in p.children
          if c.point not in repaired]
    return _lost_on(net, up + [(_down_from(tree, worker, repaired), worker)])


def own_loss(net: M.Net, tree, worker: str, repaired: frozenset = frozenset()) -> float:
    """Probability that `worker`'s own frames lose a chunk: its contribution and the
    partial sums that carry it up to the root, and the result down to it (chunk_loss
    without the other workers' ways up). What a worker that sets the job's pace sees once
    the others run ahead of it (their losses are repaired before its copy comes).
    A repaired point's partial sum up is not a loss."""
    up = [(a, p.switch) for a, p, leaving in way_up(tree, worker) if leaving not in repaired]
    return _lost_on(net, up + [(_down_from(tree, worker, repaired), worker)])


def _lost_on(net: M.Net, hops: list) -> float:
    """Probability that a chunk's frame is lost on one of `hops` [(a, b)], independently."""
    return 1.0 - math.prod(1.0 - net.path_loss(a, b) for a, b in hops)


def _down_from(tree, worker: str, repaired: frozenset) -> str:
    """Where the result's unrepaired way down to `worker` starts: the root's switch, or
    the nearest repaired point above the worker (its parent's re-sent result reaches it)."""
    return next((p.switch for _, p, _ in way_up(tree, worker) if p.id in repaired),
                tree.points[tree.root].switch)


def most_repairs(p_first: float, p_again: float, chunks: float) -> float:
    """Expected repairs of the chunk that needs the most, among `chunks`: each needs a
    first with probability p_first, and each repair is lost again (its link's round
    trip) with probability p_again: E[max] = sum over r >= 1 of
    1 - (1 - p_first p_again^(r - 1))^chunks."""
    total, r = 0.0, 1
    while p_first > 0 and r < 200:
        term = 1.0 - (1.0 - p_first * p_again ** (r - 1)) ** chunks
        total += term
        if term < 1e-9:
            break
        r += 1
    return total


def _kept(net: M.Net, tree, p) -> float:
    """Probability that point p's partial sum up and its parent's result down both arrive."""
    parent = tree.points[p.parent].switch
    return (1.0 - net.path_loss(p.switch, parent)) * (1.0 - net.path_loss(parent, p.switch))


def repair_loss(net: M.Net, tree, repaired: frozenset) -> float:
    """Probability that a repair is lost again: the worst repaired link's round trip (the
    re-sent partial sum up, or the result down)."""
    return max((1.0 - _kept(net, tree, tree.points[i]) for i in repaired), default=0.0)


def repaired_loss(net: M.Net, tree, repaired: frozenset) -> float:
    """Probability that a chunk needs at least one repair: a repaired point's partial sum
    lost on its way up or its parent's result lost on its way down."""
    return 1.0 - math.prod(_kept(net, tree, tree.points[i]) for i in repaired)


def predict_trees(scheme: str, graph, scenario, trees, k: int,
                  transport: InaTransportOptions | None = None,
                  repair: Repair | None = None) -> M.Prediction:
    """The model of several trees aggregating at once, [(tree, values per worker)] (inart:
    one tree per parameter server, each with its share of the model): their frames load the
    links together; each tree is window-limited on its own round trip. transport: the
    workers' options (loss response, congestion law); None: the defaults. repair: losses
    the switches repair (one tree only): a repaired chunk's result comes the timer loop's
    passes later (schemes/ina/repair_delay.py), and the iteration waits for the slowest of
    the slots' chains of chunks: the window term gets its passes but for the last
    window's, and the last window's worst chunk's passes are added."""
    if repair is not None and len(trees) != 1:
        raise ValueError("switch repair is modelled for one tree")
    fixed = repair.points if repair else frozenset()
    net = M.Net(graph)
    load = M.Load(net)
    frame = frame_bytes(k)
    workers: set[str] = set()
    windows = []
    for tree, values in trees:
        chunks = math.ceil(values / k)
        for p in tree.points.values():
            for c in p.children:
                load.frames(c.node, p.switch, chunks, frame)    # contributions / partial sums up
                load.frames(p.switch, c.node, chunks, frame)    # results down (multicast replica)
        workers |= set(tree.workers)
        windows.append((tree, chunks, max(tree_rtt(net, tree, w) for w in tree.workers)))
    p_fix = repaired_loss(net, trees[0][0], fixed) if repair else 0.0
    all_passes = last_passes = 0.0      # timer passes of the slowest chain, of the last window
    if p_fix > 0:                       # (repair has one tree: windows[0])
        tree0, chunks0, _ = windows[0]
        chain = lambda n: slowest_chain_passes(n, tree0.window, p_fix, repair_loss(net, tree0, fixed),
                                               repair.backoff_mask)
        all_passes, last_passes = chain(chunks0), chain(min(tree0.window, chunks0))
    comp = M.compute(graph, scenario, sorted(workers, key=lambda n: graph.nodes[n]["worker_index"]))
    limits = M.link_limits(load, scenario)
    # Window-limited, a round takes R, but the last window's chunks are spaced by the
    # busiest link (measured: results come back in bursts at the WAN rate, not all at
    # once): the last one completes a window's serialization after the first.
    ser, _ = load.serialization()
    for tree, chunks, rtt in windows:
        w = tree.window
        name = "" if len(trees) == 1 else f"job {tree.job}: "
        held, extra = 0.0, ""
        if p_fix > 0:
            passes = all_passes - last_passes
            held = passes * repair.timeout_s
            extra = (f" + {100 * p_fix:.2g} % of chunks repaired by the switches (the slowest slot's "
                     f"chain: {passes:.2f} timer passes of {repair.timeout_s * 1000:.0f} ms before "
                     f"the last window)")
        limits[f"{name}window: {w} slots per worker per {rtt * 1000:.0f} ms round trip{extra} "
               f"({chunks} chunks of k={k}), the last window serialized"] = \
            max(0.0, chunks / w - 1) * rtt + held + ser * min(1.0, w / max(chunks, 1))
    caveats = []
    notes = [f"frames of {frame} bytes (Ethernet+IPv4+UDP+16-byte header+{k} x 4 bytes)",
             "the congestion window persists across iterations and has no restart after "
             "idle; it starts at 16 packets in the first iteration (warm-up, not modelled)"]
    add = {}
    t = transport or InaTransportOptions()
    for tree, chunks, rtt in windows:
        p = max(chunk_loss(net, tree, w, fixed) for w in tree.workers)
        if p <= 0:
            continue
        name = "" if len(trees) == 1 else f"job {tree.job}: "
        last = min(tree.window, chunks)    # the chunks in flight at the end
        if t.congestion_control and t.loss_response == "cut":
            w = M.loss_window(p, rtt, t.congestion_law, cubic_c(frame))
            if w < tree.window:
                limits[f"{name}loss: {100 * p:.2g} % of chunks lost, every loss cuts the window: "
                       f"{w:.1f} chunks per {rtt * 1000:.0f} ms round trip on average "
                       f"({t.congestion_law})"] = chunks / w * rtt
                last = min(last, w)
                paced = out_of_step_s(net, tree, chunks, fixed, t, frame)
                if paced < 0.9 * chunks / w * rtt:
                    caveats.append(f"{M.FASTER}workers out of step: those that run ahead of the "
                                   f"job no longer see the others' losses, and the slowest worker's "
                                   f"own path then sets the pace, about {paced:.3g} s per iteration "
                                   f"by its loss window, against {chunks / w * rtt:.3g} s with every "
                                   f"worker in step (docs/ina.md)")
        else:                               # re-sent without a cut: the frames again
            add[f"{name}loss: {100 * p:.2g} % of chunks re-sent (no window cut)"] = p * ser
            notes.append("loss with loss_response backlog (or a fixed window): the re-sent "
                         "frames are added; the cuts a queue causes are not modelled")
        # The iteration ends with the last window's last result: a chunk lost there is
        # found a RACK wait after it was sent (a round trip + min RTT / 4: docs/protocol.md)
        # and answered a round trip after its re-send, 1.25 R later than without the loss,
        # once per try it loses; the window's chunks recover in parallel, so the tail is
        # the most tries any of them needs. Measured where it shows (flat ina, fixed
        # window, 1 MB, 1 % WAN loss, bench point: a pace of 1.70 s, against 1.58 s with
        # it and 1.06 s without it; docs/ina.md).
        resends = most_resends(p, last)
        add[f"{name}loss: the last window's recovery, {resends:.2f} re-sends of its "
            f"worst chunk of {last:.0f} x 1.25 round trips"] = resends * 1.25 * rtt
    tree, chunks, rtt = max(windows, key=lambda t: t[2])
    held = comp.max_s - comp.mean_s     # how long the root holds the others' chunks
    timeout = worker_timeout_s(t, rtt, scenario)
    if held > timeout:
        caveats.append(f"stragglers: the slowest worker computes {held:.2f} s longer than the mean, "
                       f"more than the workers' retransmission timeout (about {timeout:.3f} s on the "
                       f"{rtt:.3f} s round trip): the others' timers fire on chunks the root holds "
                       "for it (spurious re-sends and window cuts, not in the model)")
    for tr, _, tr_rtt in windows:
        skew, margin = result_skew_s(net, tr), rto_margin_s(t, tr_rtt, scenario)
        if skew > margin + 1e-9:
            name = "" if len(trees) == 1 else f"job {tr.job}: "
            caveats.append(f"{name}workers out of phase: the last worker's results come {skew * 1000:.0f} ms "
                           f"after the first's (their ways down the tree), more than the workers' "
                           f"retransmission margin ({margin * 1000:.0f} ms): the first ones' next chunks "
                           "wait at the root for its contributions, their timers fire once an iteration "
                           "(a window re-sent and cut, not in the model; docs/model.md, inart)")
    if p_fix > 0:
        # the iteration waits for the last window's repairs: its worst chunk's timer passes
        # (a repair lost again waits for the next attempt's pass)
        add[f"the last window's repairs (timer passes of {repair.timeout_s * 1000:.0f} ms; "
            f"{last_passes:.2f} for its worst chunk)"] = last_passes * repair.timeout_s
    add = {f"propagation (longest worker-root round trip, {tree.depth()} level(s))": rtt, **add}
    return M.assemble(scheme, comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)
