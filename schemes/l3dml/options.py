"""Options of scheme l3dml: geo-ina's (schemes/ina/options.py) plus the switches' repair of
WAN losses and the straggler policy (all optional)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from schemes.ina.options import InaOptions, auto_or_positive


class L3dmlOptions(InaOptions):
    # lossless links between aggregation points: the child switch re-sends what its parent
    # has not answered (docs/protocol.md, "Lossless links between aggregation points")
    repair: bool = True
    # the timer loop's delay, emulated ms; "auto": 1.5 x the longest round trip between a
    # datacenter's point and its parent (a result comes back within one round trip, plus
    # room for queueing), at least 20 ms
    repair_timeout_ms: Literal["auto"] | float = Field("auto", union_mode="left_to_right")
    # after re-sends on passes 1, 2, 4, ... a waiting copy is re-sent every 2^repair_backoff
    # passes (0: every pass): few duplicates while a parent waits for a straggler
    repair_backoff: int = Field(3, ge=0, le=7)
    # how many of the switch's repair attempts a worker waits for before its own loss
    # detection re-sends the chunk (and cuts its window): attempt r goes on pass 2^(r-1), so
    # the workers wait 2^(r-1) timeouts + the round trip (plan.worker_wait_s). 2: a repair
    # lost again (p ~ 2 % at 1 % loss each way) is still the switches' to mend; with 1,
    # those cut the workers' windows 1-3 times an iteration (docs/model.md, l3dml)
    worker_waits_repairs: int = Field(2, ge=1, le=5)
    # the straggler policy (schemes/l3dml/policies.py): "none" (geo-ina's routes), "rule"
    # (rate synchronization: r_d = V_d / (T - t_d - D_d), stragglers split over paths),
    # "drl" (the trained model set). Decided once, at plan time, on the flow model of the
    # scenario; the emulation applies its path split by slot range, and its rate caps by
    # pacing every worker of a datacenter at the cap (`pace`)
    policy: Literal["none", "rule", "drl"] = "none"
    pace: bool = True
    # how the caps are applied: "chunk" (default): the datacenters wait so that their first
    # chunks arrive together and all run at the last one's rate, so every chunk's partial
    # sums arrive together (routing.chunk_synchronous); "policy": the policy's own caps from
    # each datacenter's own start (the flow model's semantics)
    sync: Literal["chunk", "policy"] = "chunk"

    # the rate-synchronization controller (controller.py): every this many emulated seconds
    # it measures (compute per datacenter, WAN rates), re-decides on the flow model of what
    # it measured and installs a decision that differs; None: the plan's decision stays
    replan_interval_s: float | None = Field(None, gt=0)
    replan_window: int = Field(2, ge=1, le=50)        # iterations of compute averaged
    # a new decision is installed when its slot ranges differ, a rate cap moved by more than
    # this fraction, or a start delay by more than this x the iteration's last arrival
    replan_threshold: float = Field(0.1, gt=0, lt=1)

    _timeout = field_validator("repair_timeout_ms", mode="before")(lambda cls, v: auto_or_positive(v))

    @model_validator(mode="after")
    def _replan_needs_a_policy(self):
        if self.replan_interval_s is not None and self.policy == "none":
            raise ValueError("replan_interval_s re-decides the straggler policy: set policy to "
                             "rule or drl, or leave replan_interval_s out")
        return self
