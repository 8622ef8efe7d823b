"""Model of l3dml (docs/model.md): geo-ina's (schemes/ina/model.py) with the switches'
repair of WAN losses. The workers see no loss on a repaired link (their window is not cut
there, and they do not re-send); each repaired loss delays its chunk by the timer loop's
passes (schemes/ina/repair_delay.py), and the iteration waits for the slowest slot's chain
of chunks. The timeout is the plan's (plan.repair_timeout_ms, over the longest path the
policy uses). The straggler policy's paths and pacing are not in this model: the flow model
(flowmodel.py; summary.json app.flow_model) has them."""
from __future__ import annotations

from schemes import model as M
from schemes.ina.model import predict_trees, repair_loss
from schemes.ina.repair_delay import Repair
from schemes.ina.plan import tree_for
import schemes.l3dml.flowmodel as flowmodel
import schemes.l3dml.plan as plan
import schemes.l3dml.policies as policies
from schemes.l3dml.options import L3dmlOptions


def repair_timeout_s(graph, scenario, tree, o: L3dmlOptions) -> float:
    """The timer loops' timeout, real s, as the plan sets it on the dilated graph (its 20 ms
    floor is emulated ms; an option's timeout too)."""
    s = scenario.time_dilation
    path_rtt = 0.0
    if o.policy != "none":
        it = flowmodel.iteration_for(graph, scenario, o)
        path_rtt = plan.used_path_rtt_ms(graph, it, policies.policy(o.policy)(it))
    rtt = plan.repair_rtt_ms(graph, tree, path_rtt)
    if o.repair_timeout_ms == "auto":
        timeout = max(plan.MIN_TIMEOUT_MS / s, plan.TIMEOUT_RTTS * rtt)
    else:
        timeout = float(o.repair_timeout_ms) / s
    return timeout / 1000.0


def predict(graph, scenario, o: L3dmlOptions) -> M.Prediction:
    tree, k = tree_for("geo-ina", graph, scenario, o)
    repair = None
    if o.repair:
        points = frozenset(p.id for p in plan.repaired_points(graph, tree))
        repair = Repair(points, repair_timeout_s(graph, scenario, tree, o),
                        2 ** o.repair_backoff - 1) if points else None
    p = predict_trees("l3dml", graph, scenario, [(tree, M.parameters(scenario))], k, o, repair)
    if repair and o.worker_waits_repairs < 2 and repair_loss(M.Net(graph), tree, repair.points) > 0:
        p.caveats.append("workers wait for one repair attempt (worker_waits_repairs: 1): a repair "
                         "lost again makes them re-send and cut their windows, which the model "
                         "leaves out (1.23-1.46 x at bench schemes' 1 MB point, 1 % loss, 100 Mbps; "
                         "schemes/l3dml/README.md)")
    if o.policy != "none":
        p.notes.append(f"policy {o.policy}: its paths and pacing are not modelled here "
                       "(geo-ina's routes); the flow model's prediction is app.flow_model")
    return p
