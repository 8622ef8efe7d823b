"""Worker side of l3dml: ina's communicator (schemes/ina/communicator.py), re-paced at run
time when the rate-synchronization controller (controller.py) publishes new pacing: comm
`pace_dir` names the run's pace folder (pace_file.py); before each aggregation the worker
takes the newest pacing in force (its rate cap from this tensor on, its start delay)."""
from __future__ import annotations

import numpy as np

from schemes.ina.communicator import InaCommunicator
from schemes.l3dml.pace_file import PaceFollower
from workers.communicator import Me


class L3dmlCommunicator(InaCommunicator):
    def __init__(self, comm: dict, me: Me):
        super().__init__(comm, me)
        self.follower = PaceFollower(comm["pace_dir"], me.name) if comm.get("pace_dir") else None

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        if self.follower is not None:
            pace = self.follower.at(iteration)
            if pace is not None:
                self.client.set_max_rate(float(pace["max_rate_pps"]))
                self.start_delay_s = float(pace["start_delay_s"])
        return super().allreduce(grad, iteration)

    def stats(self) -> dict:
        return {**super().stats(), "pace_seq": self.follower.seq if self.follower else 0,
                "start_delay_s": self.start_delay_s}
