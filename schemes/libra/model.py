"""Model of libra (docs/model.md): the switch part and the server part run at the same time,
so an iteration is compute + the slower of
  - ina's model of the switch vector (hot rows x d + the dense part) through the tree
    (schemes/ina/model.py, predict_values), and
  - ps's model of the cold block pushed as touched rows (schemes/ps/model.py's streams and
    terms): the rows a worker's minibatch touches outside the hot set going up, the union
    of every worker's coming back, expected from the Zipf law through the seed's field
    permutations with the hot ids left out (workers.ctr_data.expected_touched_ids).
The two parts are modelled apart: where they share a link (the server's WAN link) the
model counts each as if it had the link alone (a note says so). WAN bytes add up.
A dense workload is ina's model (libra is ina then)."""
from __future__ import annotations

from schemes import model as M
from schemes.ina.model import predict_values
from schemes.libra.layout import job_layout
from schemes.libra.options import LibraOptions
from schemes.libra.plan import hot_settings, plan, sizes
from schemes.ps.model import row_frame_bytes, stream_payloads, streams, tcp_tree_terms
from workers.ctr_data import expected_touched_ids
from workers.workload import WorkloadSpec


def predict(graph, scenario, o: LibraOptions) -> M.Prediction:
    sz = sizes(graph, scenario, o)
    pl = plan(graph, scenario, o)
    sw = predict_values(sz["shape"], graph, scenario, o.ina_options(sz["window"]), pl.info["switch_values"])
    if sz["block"] is None:
        sw.scheme = "libra"
        sw.notes.insert(0, "dense workload: every parameter goes through the switch (libra is ina)")
        return sw
    wl = scenario.workload.model_dump()
    spec = WorkloadSpec.from_scenario(wl)
    lay = job_layout(wl, scenario.seed, len(pl.workers), hot_settings(o, sz["hot_rows"]), sz["k"])
    _, rows, width = sz["block"]
    push = expected_touched_ids(spec.ctr, scenario.seed, spec.batch_size, lay.hot)
    pull = expected_touched_ids(spec.ctr, scenario.seed, len(pl.workers) * spec.batch_size, lay.hot)
    net = M.Net(graph)
    load = M.Load(net)
    payloads = stream_payloads(rows * width, 1, [(0, rows, width)], push, pull)
    flows = streams(net, load, pl.workers, pl.info["server_hosts"], rows * width, payloads=payloads)
    comp = M.compute(graph, scenario, pl.workers)
    notes = [f"{lay.hot.size} hot rows (budget {sz['hot_rows']}) + {sz['dense_values']} dense values = "
             f"{lay.switch_values} values through the switch; cold rows: about {push:.0f} up per "
             f"worker, {pull:.0f} back (expected from the Zipf law, hot ids excluded)",
             "switch and server parts modelled apart: a link they share counts for each alone"]
    limits = M.tcp_limits(load, flows, scenario)
    add = tcp_tree_terms(net, load, flows, comp, scenario, row_frame_bytes(pull, width), notes)
    binding = max((v for v in limits.values() if v is not None), default=0.0)
    ps_s = binding + sum(v for v in add.values() if v > 0)
    sw_s = sw.iteration_s - sw.terms[next(iter(sw.terms))]   # less its compute term
    part = {f"switch part ({lay.switch_values} values, {sz['shape']} tree)": sw_s,
            "server part (cold rows, push touched_rows)": ps_s}
    slower = max(part, key=part.get)
    terms = {f"compute (slowest worker; {comp.how})": comp.max_s, f"slower part: {slower}": part[slower]}
    it = comp.max_s + part[slower]
    return M.Prediction("libra", it, part[slower] + comp.max_s - comp.mean_s, comp.mean_s,
                        sw.wan_bytes_per_iteration + load.wan_bytes(), terms, part,
                        notes + sw.notes)
