"""Worker side of libra: the switch vector through ina's communicator, the cold block through
ps's (push touched_rows), at the same time, merged into one sum.

At construction every worker computes the job's hot set and layout from the seeded data
(schemes/libra/hot.py, layout.py): the same on every worker, nothing exchanged. Per
iteration: gather the hot rows and the dense part (the switch vector), copy the embedding
block with the hot rows at +0.0 (the cold block); the PS push runs in a thread while this
thread drives the INA aggregation; the merge writes the server's cold sums and the switch's
sums into one float64 vector.

Accuracy: on the hot rows and the dense part, ina's quantization bound; on the cold rows,
the parameter server's float32 sum in child-rank order, the same bits as ps gives
(error_bound takes the larger of the two bounds).

comm (schemes/libra/plan.py): ina (InaCommunicator's comm), ps (PSCommunicator's, or None
for a dense workload), workload (the scenario's section), seed, hot (hot-set settings).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from schemes.ina.communicator import InaCommunicator
from schemes.libra.layout import job_layout
from schemes.ps.communicator import PSCommunicator
from workers.communicator import CommunicatorBase, Counters, Me, float_sum_bound


class LibraCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me):
        self.ina = self.ps = self.pool = None
        k = int(comm["ina"]["client"]["k"])
        self.layout = job_layout(comm["workload"], int(comm["seed"]), me.n_workers, comm["hot"], k)
        if (self.layout.block is None) != (comm.get("ps") is None):
            raise ValueError("libra: the plan and the workload disagree on the row block: same "
                             "scenario for the plan and the workers?")
        self._sent = 0   # INA packets sent up to the last stats() call
        try:
            self.ina = InaCommunicator(comm["ina"], me)
            if comm.get("ps") is not None:
                self.ps = PSCommunicator(comm["ps"], me)
                self.pool = ThreadPoolExecutor(1)
        except BaseException:
            self.close()
            raise

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        grad = np.asarray(grad, dtype=np.float64)
        if grad.size != self.layout.size:
            raise ValueError(f"libra: a gradient of {grad.size} values, the layout has "
                             f"{self.layout.size}: same workload for the plan and the workers?")
        cold = self.layout.cold_block(grad)
        pushed = self.pool.submit(self.ps.allreduce, cold, iteration) if self.ps else None
        try:
            switch_sum = self.ina.allreduce(self.layout.switch_vector(grad), iteration)
        except BaseException:
            if pushed is not None:   # unblock the push thread: this worker is finished anyway
                for c in self.ps.chans:
                    c.close()
            raise
        cold_sum = pushed.result() if pushed is not None else None
        return self.layout.merge(switch_sum, cold_sum)

    def counters(self) -> Counters:
        a = self.ina.counters()
        b = self.ps.counters() if self.ps else Counters()
        return Counters(*(getattr(a, f) + getattr(b, f) for f in Counters.__dataclass_fields__))

    def stats(self) -> dict:
        """This iteration's INA packets sent (switch_packets) and INA counts, and the rows
        the worker pushed to and pulled from the server."""
        sent = self.ina.client.stats.sent
        out = {"switch_packets": sent - self._sent, "ina": self.ina.stats()}
        self._sent = sent
        if self.ps:
            out.update(self.ps.stats())
        return out

    def describe(self) -> dict:
        lay = self.layout
        return {"hot_rows": int(lay.hot.size), "switch_values": lay.switch_values,
                "hot_values": lay.hot_values, "ina": self.ina.describe(),
                "ps": self.ps.describe() if self.ps else None}

    def error_bound(self, grads) -> float:
        """ina's quantization bound on the switch's values, the float32 summation bound of
        the cold blocks on the server's."""
        cold = [self.layout.cold_block(g) for g in grads] if self.ps else None
        cold_bound = float_sum_bound([c.astype(np.float64) for c in cold]) if cold else 0.0
        return max(self.ina.error_bound(grads), cold_bound)

    def close(self) -> None:
        if self.ps:
            self.ps.close()
        if self.ina:
            self.ina.close()
        if self.pool:
            self.pool.shutdown(wait=False)
