"""Model of mxnet-ps (docs/model.md): ps's model on MXNet's placement. Every worker streams
each server's part of its gradient to that server and the part's sum streams back (pull
overlaps push); one iteration is the busiest directed link's serialization (headers and
ACKs included), the longest worker-server round trip, the last chunk's return and slow
start after idle: schemes/ps/model.py's terms, with one stream per (worker, server holding a
part) sized by that part."""
from __future__ import annotations

from schemes import model as M
from schemes.mxnet_ps.options import MxnetPsOptions
from schemes.mxnet_ps.plan import plan
from schemes.ps.model import tcp_tree_terms
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
    where = (f"split over {len(pl.info['parts'])} servers" if pl.info["split"] else
             "whole on the first datacenter's server (below bigarray_bound)")
    notes.append(f"placement: MXNet's default, the tensor {where}")
    return M.assemble("mxnet-ps", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)
