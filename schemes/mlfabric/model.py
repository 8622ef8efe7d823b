"""mlfabric's analytic model: ps's (schemes/ps/model.py) on the same primary placement.

Without aggregation every update goes from its worker to one server over TCP and the
model comes back, so an iteration's bytes and paths are ps's; what mlfabric changes (the
order of the transfers, drops past tau_max, groups summed at idle workers or gateways,
replication on the primary's egress) is not modelled: the prediction is the same
communication without the scheduler's waits."""
from __future__ import annotations

from dataclasses import replace

from schemes.mlfabric.options import MlfabricOptions
from schemes.ps.model import predict as ps_predict
from schemes.ps.options import PsOptions


def predict(graph, scenario, o: MlfabricOptions):
    p = ps_predict(graph, scenario, PsOptions(server_dc=o.server_dc, base_port=o.base_port,
                                              timeout_s=o.timeout_s))
    p.notes.append("mlfabric: ps's model on the primary's placement; ordering, drops, "
                   "aggregation and replication are not modelled")
    return replace(p, scheme="mlfabric")
