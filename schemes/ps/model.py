"""Model of ps (docs/model.md): every worker streams its gradient to the shard servers in
chunks and the sums stream back (pull overlaps push), so one iteration is the busiest
link's serialization, headers and ACKs included, plus the longest worker-server round trip
and the return of the last chunk; slow start after idle when the kernel restarts it."""
from __future__ import annotations

from schemes import model as M
from schemes.ps.options import PsOptions
from schemes.ps.plan import plan
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER


def streams(net, load, workers, servers, values, chunk_values=DEFAULT_CHUNK_VALUES) -> list:
    """Push and pull streams of every worker to every shard server (co-located: no link)."""
    per = M.framed(-(-values // len(servers)), chunk_values, HEADER.size)
    flows = []
    for w in workers:
        for h in servers:
            if w != h:
                load.tcp(w, h, per)
                load.tcp(h, w, per)
                flows += [(w, h, per), (h, w, per)]
    return flows


def tcp_tree_terms(net, load, flows, comp, scenario, chunk_payload, notes) -> dict:
    """The additive terms of a streamed push/pull: the longest round trip of a stream,
    the last chunk's sum coming back through the busiest link, slow start after idle."""
    out = {}
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


def _uses(net, a, b, link) -> bool:
    p = net.path(a, b)
    return link in zip(p, p[1:])


def predict(graph, scenario, o: PsOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    load = M.Load(net)
    values = M.parameters(scenario)
    flows = streams(net, load, pl.workers, pl.info["server_hosts"], values)
    comp = M.compute(graph, scenario, pl.workers)
    notes = []
    limits = M.tcp_limits(load, flows, scenario)
    chunk = 4 * DEFAULT_CHUNK_VALUES + HEADER.size
    add = tcp_tree_terms(net, load, flows, comp, scenario, chunk, notes)
    return M.assemble("ps", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph))
