"""Options of scheme mlfabric (README.md says which are the paper's and which are this
testbed's interpretation)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemes.base import TcpOptions


class MlfabricOptions(TcpOptions):
    server_dc: str | int | None = None    # datacenter of the primary PS (default: the first)
    replica_dc: str | int | None = None   # datacenter of the replica (default: the next one
                                          # after server_dc); must differ from server_dc
    replicate: bool = True                # false: no replica (and no failover)
    d_rep: int = Field(4, ge=1)           # replication bound: v_primary - v_replica <= d_rep
    tau_max: int = Field(8, ge=0)         # maximum delay (versions between read and apply)
    on_late: Literal["drop", "aggregate"] = "drop"   # an update past tau_max: not sent, or
                                          # merged into the next fresher update's version
    slots: int = Field(1, ge=1)           # transfers into the PS at once (1: serialized)
    agg_window: int = Field(0, ge=0)      # versions apart updates may read to form a group
    aggregation: bool = False             # route groups through aggregator processes (off:
                                          # every group is summed at the PS)
    aggregators: list[Literal["workers", "gateways"]] = Field(["workers", "gateways"], min_length=1)
                                          # candidate kinds: an aggregator on every worker's
                                          # host (chosen while that worker is idle) and/or one
                                          # on each datacenter's gateway-side (last) host
    agg_timeout_s: float = Field(2.0, gt=0)   # real-world seconds a group may take at its
                                          # aggregator beyond 2x its predicted time (x time
                                          # dilation); then its members send to the PS


def mode_problems(o: MlfabricOptions, mode: str) -> list[tuple[str, str]]:
    """mlfabric is asynchronous (bounded delay): it runs asp only (Scheme.modes refuses bsp and
    ssp first); verify checks a bsp sum, which asp has not."""
    if o.verify:
        return [("scheme_options.verify", "verify checks bsp's sum over workers; mlfabric applies "
                                          "updates one group at a time: set verify: false")]
    return []
