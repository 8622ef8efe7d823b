"""Options of scheme netstorm. Every default is the authors' value (fengwenjiao/netstorm,
seeds.md section 2), named beside it; README.md says which parts are theirs and which are
this testbed's."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemes.base import TcpOptions


class NetstormOptions(TcpOptions):
    scheduler_dc: str | int | None = None   # where the scheduler runs (default: the first DC;
                                            # the authors ran it on a separate control network)
    roots: int | None = Field(None, ge=1)   # R best roots kept (NUM_ENABLE_SERVER = 9 in both
                                            # run scripts: every datacenter; None = all)
    block_values: int = Field(1_000_000, ge=1)   # model sharding unit (MXNET_KVSTORE_BIGARRAY_BOUND)
    multipath: bool = True                  # auxiliary routes (ENABLE_MUTI_TRACE = 1 in
                                            # scripts/demo/muti_server_resnet.sh)
    initial_throughput: Literal["uninformed", "configured"] = "uninformed"
                                            # uninformed: the authors' random start (van.h);
                                            # configured: the scenario's WAN rates
    uninformed_seed: int = 2                # the seed of that random start (van.h srand)
    awareness: bool = True                  # re-plan from measured transfers (false: the first
                                            # plan stays: an ablation)
    report_bytes: int = Field(4_000_000, ge=1)   # messages timed for awareness: payload >= this
                                            # (SIZE_MSG_REPORT, 4e6 in the demo script)
    report_messages: int = Field(4, ge=1)   # messages averaged per report (NUM_MSG_REPORT)
    report_rate: float = Field(0.0, ge=0)   # report when the speed changed by more (REPORT_RATE)
    check_period_s: float = Field(2.0, gt=0)   # scheduler's check period, real-world seconds
                                            # (CHECK_PERIOD, 2 in the demo script)
    update_rate: float = Field(0.0, ge=0)   # re-plan when the mean change exceeds it (UPDATE_RATE)
    primary_busy: int = Field(2, ge=0)      # divert when the primary's queue holds more
                                            # (PRIMARY_BUSY_BOUND)
    auxiliary_idle: int = Field(1, ge=1)    # ... and the auxiliary's fewer (AUXILIARY_QUEUE_LENGTH)
