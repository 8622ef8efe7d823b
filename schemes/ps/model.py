"""Model of ps (docs/model.md): every worker streams its gradient to the shard servers in
chunks and the sums stream back (pull overlaps push), so one iteration is the busiest
link's serialization, headers and ACKs included, plus the longest worker-server round trip
and the return of the last chunk; slow start after idle when the kernel restarts it.

With push touched_rows the streams carry, for the workload's row blocks, the expected
number of rows touched (a worker's minibatch going up, the union of every worker's coming
back: workers.workload.expected_rows_touched, from the Zipf law), the rest dense."""
from __future__ import annotations

from schemes import model as M
from schemes import model_chain as ch
from schemes import model_packets as mp
from schemes.ps.options import PsOptions
from schemes.ps.plan import plan
from workers import framing as fr
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER
from workers.workload import expected_rows_touched


def row_frame_bytes(rows: float, width: int) -> float:
    """Bytes of one row frame (workers.framing.encode_rows) holding `rows` rows."""
    return HEADER.size + 4 * (fr.ROWS_HEAD + rows * (1 + width))


def stream_payloads(values: int, shards: int, blocks=(), push_rows: float = 0.0,
                    pull_rows: float = 0.0, chunk_values: int = DEFAULT_CHUNK_VALUES
                    ) -> tuple[float, float]:
    """(push, pull) payload bytes of one worker's stream to one shard server per iteration.
    Dense: the shard's values in chunk frames, both ways. With row blocks (push
    touched_rows): the values outside the blocks as dense chunks, plus per block one row
    frame per shard holding 1/shards of the rows (ids are scattered over the table by the
    workload's permutations, so each shard's range gets its share): push_rows rows going
    up, pull_rows (the union over workers) coming back."""
    dense = values - sum(rows * width for _, rows, width in blocks)
    base = M.framed(-(-dense // shards), chunk_values, HEADER.size) if dense or not blocks else 0
    up = base + sum(row_frame_bytes(push_rows / shards, w) for _, _, w in blocks)
    down = base + sum(row_frame_bytes(pull_rows / shards, w) for _, _, w in blocks)
    return up, down


def streams(net, load, workers, servers, values, chunk_values=DEFAULT_CHUNK_VALUES,
            payloads: tuple[float, float] | None = None) -> list:
    """Push and pull streams of every worker to every shard server (co-located: no link).
    payloads: (push, pull) bytes per stream; default dense (stream_payloads)."""
    up, down = payloads or stream_payloads(values, len(servers), chunk_values=chunk_values)
    flows = []
    for w in workers:
        for h in servers:
            if w != h:
                load.tcp(w, h, up)
                load.tcp(h, w, down)
                flows += [(w, h, up), (h, w, down)]
    return flows


def tcp_tree_terms(net, load, flows, comp, scenario, chunk_payload, notes, caveats=None) -> dict:
    """The additive terms of a streamed push/pull: the longest round trip of a stream,
    the last chunk's sum coming back through the busiest link, slow start after idle.
    caveats (a list): gets what the terms leave out (gated_pull_caveat)."""
    out = {}
    if caveats is not None:
        caveats.append(gated_pull_caveat(load))
    rtt = max((net.rtt(a, b) for a, b, _ in flows), default=0.0)
    out["propagation (longest worker-server round trip)"] = rtt
    _, link = load.serialization()
    if link:
        n = load.flows[link]
        out[f"pipeline (last chunk of {n} stream(s) through the busiest link)"] = \
            8 * n * M.tcp_wire(chunk_payload)[0] / net.rate_bps(*link)
    # slow start after idle, for the streams of the busiest link (the others have slack)
    extra = 0.0
    through = [f for f in flows if link and _uses(net, f[0], f[1], link)] or flows
    if through:
        a, b, payload = max(through, key=lambda f: net.rtt(f[0], f[1]))
        r = net.rtt(a, b)
        # a stream idles from its last bytes of one iteration to the first of the next:
        # a round trip (the results, then the next push) plus the slowest worker's compute
        extra = M.tcp_idle_term(payload, load.share_bps(a, b), r, r + comp.max_s, scenario, notes,
                                f"stream {a}->{b}")
    out["slow start after idle"] = extra
    return out


GATED = "a chunk's sum goes back only when every worker's chunk is in"


def gated_pull_caveat(load) -> str:
    """What a streamed push/pull model assumes and TCP does not guarantee (docs/model.md,
    measured at bench schemes' point): the pull overlaps the push only as far as the
    slowest push stream keeps pace."""
    _, link = load.serialization()
    where = f" ({load.flows[link]} stream(s) through {load.net.label(*link)})" if link else ""
    return (f"{GATED}, so the pull follows "
            f"the slowest push stream{where}: TCP streams sharing a drop-tail queue are not fair "
            "over a few round trips, and pull streams left waiting longer than an RTO restart "
            "from the initial window; the model assumes the pull keeps pace with the push")


# how a term simulated through the queues starts (the gated-pull caveat then does not apply)
QUEUED = "streams through the links' drop-tail queues,"

# segment transfers the tree simulation may take (~7 s of CPU) over its iterations and
# seeds: alltoall's 132 streams of 4 MB under loss (4 iterations, 14 seeds: 21 M, 5 s)
# fit; at the old 6 M they fell back to the closed form, 1.75 x short at 100 Mbps
TREE_BUDGET = 30_000_000
TREE_CAP = 16


def tree_fits(net, flows, scenario, lossy: bool) -> bool:
    """Whether simulated_tree would simulate these streams ((a, b, payload bytes) as the
    closed form has them), decided before building them: the budget in segments, and not
    for a graph marked closed-form only (a bandwidth schedule's steps)."""
    if net.g.graph.get(M.CLOSED_FORM_ONLY):
        return False
    k = min(scenario.iterations or TREE_CAP, TREE_CAP)
    segs = sum(p for a, b, p in flows if a != b) / M.MSS
    return segs * k * ch.seeds_for(scenario.iterations, lossy, TREE_CAP) <= TREE_BUDGET


def simulated_tree(net, load, flows, results, comp, scenario,
                   what: str = "push and gated pull") -> tuple[float, str] | None:
    """(period, its description) of a streamed push/pull, simulated
    (schemes/model_chain.tree_ends: the run's iterations, the pace measure.py reports):
    its streams are not backlogged (pulls wait for sums, which wait for every push; a
    partial sum per iteration, then idle), so windows restart and grow over the first
    iterations and, under loss, every lost segment's recovery holds the sums that wait for
    it; a backlogged stream's closed form has none of it. flows: (a, b, segments per
    chunk, input flow indices, worker) in dependency order; results: worker -> the flows
    that bring its sums; the caller checks its size first (tree_fits). None when the
    congestion control is not simulated. what: the streams, for the term's name.

    Without random loss the streams are simulated segment by segment through the links'
    shared drop-tail queues (schemes/model_packets.py, within its budget): the unfairness
    of the streams that share a queue, congestion loss and the reverse queue's delay are
    what ps's gap was there. Under random loss the round-level one binds: it measured
    closer to the emulation at both points measured (docs/model.md, "Shared queues")."""
    tcp = M.simulated_tcp(scenario)
    if tcp is None:
        return None
    lossy = any(net.path_loss(a, b) > 0 for a, b, *_ in flows)
    draw = M.compute_draws(net.g, scenario, list(results))
    if not lossy:
        # without random loss the streams meet in the links' queues (schemes/model_packets.py)
        packets, queues = mp.paths(net, flows, tcp.seg_wire_bits)
        if mp.fits(packets, scenario.iterations):
            return (mp.pace(packets, queues, results, draw, tcp, scenario.iterations),
                    f"{QUEUED} {tcp.law}: {what} segment by segment, "
                    f"{ch.run_words(scenario.iterations)} (schemes/model_packets.py)")
    seeds = ch.seeds_for(scenario.iterations, lossy, TREE_CAP)
    streams = [ch.Stream(ch.hop(net, a, b, load.share_bps), segs, tuple(inputs), worker)
               for a, b, segs, inputs, worker in flows]
    period = ch.mean_pace(lambda n, seed: ch.tree_ends(streams, results, draw, tcp, n, seed),
                          scenario.iterations, lossy, cap=TREE_CAP)
    worst = max(net.path_loss(a, b) for a, b, *_ in flows)
    return period, (f"streams{f' under loss (up to {100 * worst:.3g} % per path)' if lossy else ''}, "
                    f"{tcp.law}: simulated {what}, {ch.run_words(scenario.iterations, seeds)}"
                    " (schemes/model_chain.py)")


def with_simulation(limits: dict, add: dict, sim, comp, lossy: bool, caveats: list, notes: list,
                    what: str) -> tuple[dict, dict]:
    """The limits and additive terms with the simulated streams (simulated_tree) beside
    the closed form. Under loss the simulation replaces the closed form (a backlogged
    stream's response function misses the recovery rounds); without loss the larger of
    the two binds (the closed form's serialization and round trips are exact at the
    steady state; the simulation adds the windows of a run's first iterations). The
    simulation has the propagation, pipeline and restarts in it, so when it binds it
    replaces them. None (not simulated): the closed form, with a caveat under loss."""
    if sim is None:
        if lossy:
            caveats.append(f"random loss on {what}: not simulated (too large, a congestion "
                           "control schemes/model_chain.py does not have, or a schedule step's "
                           "closed form); the response function of a backlogged stream leaves "
                           "out recovery rounds and restarts")
        return limits, add
    period, why = sim
    comm = max(0.0, period - comp.max_s)
    closed = max(limits.values(), default=0.0) + sum(add.values())
    if lossy or comm > closed:
        if why.startswith(QUEUED):     # the simulation has the gated pull in it
            caveats[:] = [c for c in caveats if not c.startswith(GATED)]
        return {**limits, why: comm}, {}
    notes.append(f"{why}: {comm:.4f} s, below the closed form's {closed:.4f} s (which binds)")
    return limits, add


def _uses(net, a, b, link) -> bool:
    p = net.path(a, b)
    return link in zip(p, p[1:])


def predict(graph, scenario, o: PsOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    load = M.Load(net)
    values = M.parameters(scenario)
    servers = pl.info["server_hosts"]
    notes = []
    payloads = None
    blocks = pl.info.get("row_blocks") or []
    if blocks:
        section = scenario.workload.model_dump()
        push = expected_rows_touched(section, 1)
        pull = expected_rows_touched(section, len(pl.workers))
        payloads = stream_payloads(values, len(servers), blocks, push, pull)
        notes.append(f"push touched_rows: about {push:.0f} rows up per worker, {pull:.0f} back "
                     f"(expected from the Zipf law), the rest dense")
    flows = streams(net, load, pl.workers, servers, values, payloads=payloads)
    comp = M.compute(graph, scenario, pl.workers)
    limits = M.tcp_limits(load, flows, scenario)
    chunk = 4 * DEFAULT_CHUNK_VALUES + HEADER.size
    caveats = []
    add = tcp_tree_terms(net, load, flows, comp, scenario, chunk, notes, caveats)
    # simulated (with the links' queues without random loss, round by round under it);
    # without loss the larger of it and the closed form binds
    lossy = any(net.path_loss(a, b) > 0 for a, b, _ in flows)
    sim = None if blocks or not tree_fits(net, flows, scenario, lossy) else \
        simulated_tree(net, load, *tree_flows(pl.workers, servers, values), comp, scenario)
    limits, add = with_simulation(limits, add, sim, comp, lossy, caveats, notes,
                                  "a parameter server's streams")
    return M.assemble("ps", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph), caveats)


def tree_flows(workers, servers, values) -> tuple[list, dict]:
    """ps's streams for simulated_tree: every worker's push to every shard server, then every
    server's pull to every worker (chunk c of it after chunk c of every push to it)."""
    segs = ch.chunk_segments(-(-values // len(servers)), DEFAULT_CHUNK_VALUES, HEADER.size, M.MSS)
    flows, push = [], {}
    for w in workers:
        for h in servers:
            push[(w, h)] = len(flows)
            flows.append((w, h, segs, (), w))
    results = {w: [] for w in workers}
    for h in servers:
        ins = tuple(push[(w, h)] for w in workers)
        for w in workers:
            results[w].append(len(flows))
            flows.append((h, w, segs, ins, None))
    return flows, results
