"""Model of mxnet-ps (docs/model.md): ps's model on MXNet's placement. Every worker streams
each server's part of its gradient to that server and the part's sum streams back (pull
overlaps push); one iteration is the busiest directed link's serialization (headers and
ACKs included), the longest worker-server round trip, the last chunk's return and slow
start after idle: schemes/ps/model.py's terms, with one stream per (worker, server holding a
part) sized by that part."""
from __future__ import annotations

from schemes import model as M
from schemes import model_chain as ch
from schemes.mxnet_ps.options import MxnetPsOptions
from schemes.mxnet_ps.plan import plan
from schemes.ps.model import simulated_tree, tcp_tree_terms, tree_fits, with_simulation
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER


def predict(graph, scenario, o: MxnetPsOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    load = M.Load(net)
    flows = []
    for host, lo, hi in pl.info["parts"]:
        per = M.framed(hi - lo, DEFAULT_CHUNK_VALUES, HEADER.size)
        for w in pl.workers:
            if w != host:   # a worker beside its server: no link
                load.tcp(w, host, per)
                load.tcp(host, w, per)
                flows += [(w, host, per), (host, w, per)]
    comp = M.compute(graph, scenario, pl.workers)
    notes, caveats = [], []
    limits = M.tcp_limits(load, flows, scenario)
    chunk = 4 * DEFAULT_CHUNK_VALUES + HEADER.size
    add = tcp_tree_terms(net, load, flows, comp, scenario, chunk, notes, caveats)
    lossy = any(net.path_loss(a, b) > 0 for a, b, _ in flows)
    sim = simulated_tree(net, load, *tree_flows(pl.workers, pl.info["parts"]), comp, scenario) \
        if tree_fits(net, flows, scenario, lossy) else None
    limits, add = with_simulation(limits, add, sim, comp, lossy, caveats, notes, "mxnet-ps's streams")
    where = (f"split over {len(pl.info['parts'])} servers" if pl.info["split"] else
             "whole on the first datacenter's server (below bigarray_bound)")
    notes.append(f"placement: MXNet's default, the tensor {where}")
    return M.assemble("mxnet-ps", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)


def tree_flows(workers, parts) -> tuple[list, dict]:
    """mxnet-ps's streams for ps.model.simulated_tree, in ps's order (ps.model.tree_flows):
    every worker's push of each part to the server holding it, then each server's pull of
    the part's sum to every worker (chunk c of it after chunk c of every push of the part)."""
    segs = {host: ch.chunk_segments(hi - lo, DEFAULT_CHUNK_VALUES, HEADER.size, M.MSS)
            for host, lo, hi in parts}
    flows, push = [], {}
    for w in workers:
        for host in segs:
            push[(w, host)] = len(flows)
            flows.append((w, host, segs[host], (), w))
    results = {w: [] for w in workers}
    for host in segs:
        ins = tuple(push[(w, host)] for w in workers)
        for w in workers:
            results[w].append(len(flows))
            flows.append((host, w, segs[host], ins, None))
    return flows, results
