"""Model of inart (docs/model.md): the plan's K trees aggregate at once, tree k carrying
its share alpha_k of the values (split.value_ranges); ina's model of concurrent trees
(schemes/ina/model.predict_trees) adds their frames on every link, so K streams into one
PS's access link, or K PSs' trees crossing one WAN link, show as that link's
serialization. The trees are the plan's own (same seed, same rounding). Links follow
minimum-delay paths in the model even where the plan installs other paths."""
from __future__ import annotations

from schemes import model as M
from schemes.ina.model import predict_trees
from schemes.inart.options import InartOptions
from schemes.inart.plan import build
from schemes.inart.split import value_ranges


def predict(graph, scenario, o: InartOptions) -> M.Prediction:
    _, _, ip, trees, k, resolved = build(graph, scenario, o)
    ranges = value_ranges(ip.shares, M.parameters(scenario))
    parts = [(t, b - a) for t, (a, b) in zip(trees, ranges) if b > a]
    return predict_trees("inart", graph, scenario, parts, k, resolved)   # its workers' transport
