"""Worker side of ina and geo-ina: quantize, aggregate through the switches over UDP,
dequantize.

Per iteration: quantize the float gradient to int32 with the exponent every worker derives
from the agreed clipping bound (workload.clip) and the number of workers (no overflow,
workers/quantize.py); aggregate with the UDP driver (workers/ina_udp.py over the sans-I/O
client workers/ina_client.py: window, congestion control, adaptive timeouts,
retransmissions answered from the switches' stored results; its per-result work in C
unless the config's `core` says "python", workers/ina_core.py); dequantize. The result is
float64: the quantization bound (error_bound) is far below float32's rounding of the sum.

comm (schemes/ina/plan.py): client (workers.ina_client.ClientConfig fields), clip,
rto_margin_s (RTO >= SRTT + this), aggregate_timeout_s (optional), start_delay_s (optional:
wait this long before each aggregation; l3dml's chunk-synchronous pacing, emulated seconds).
"""
from __future__ import annotations

import time

import numpy as np

from workers import ina_udp, quantize
from workers.communicator import CommunicatorBase, Counters, Me
from workers.ina_client import ClientConfig
from workers.ina_core import make_client


class InaCommunicator(CommunicatorBase):
    COUNTED = ("duplicate_results", "cwnd_decreases", "cwnd_undos", "random_losses")

    def __init__(self, comm: dict, me: Me):
        self._counted: dict = {}
        self.client = make_client(ClientConfig(**comm["client"]))   # C core unless cfg.core says
        if comm.get("rto_margin_s") is not None:
            # RFC 6298's clock granularity G is the RTO's floor above SRTT. Result times of
            # a steady stream vary so little that 4 x RTTVAR decays to ~0 and RTO hugs SRTT;
            # then a few ms of switch queueing times out the whole window. A margin of
            # scheduling-noise size (tens of ms on a shared machine) keeps RTO above it.
            self.client.rtt.granularity = float(comm["rto_margin_s"])
        self.n = me.n_workers
        self.exponent = quantize.choose_exponent(float(comm["clip"]), self.n)
        self.bound = quantize.sum_error_bound(self.exponent, self.n)
        self.timeout_s = comm.get("aggregate_timeout_s")
        self.start_delay_s = float(comm.get("start_delay_s") or 0.0)
        self.sock = ina_udp.open_socket(me.ip)
        self._scratch = quantize.Scratch()      # quantize's buffer, kept between iterations

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        q, saturated = quantize.quantize(grad, self.exponent, self.n, self._scratch)
        if self.start_delay_s > 0:
            time.sleep(self.start_delay_s)
        total = ina_udp.aggregate(self.sock, self.client, q, exponent=self.exponent,
                                  overflow=saturated, timeout_s=self.timeout_s, copy=False)
        return quantize.dequantize(total, self.exponent)

    def counters(self) -> Counters:
        s = self.client.stats
        return Counters(s.bytes_sent, s.bytes_received, s.sent, s.retransmissions)

    def stats(self) -> dict:
        """This iteration's counts (since the last call: the loop calls it once per
        iteration) and the estimator's state at its end."""
        c = self.client
        now = {k: getattr(c.stats, k) for k in self.COUNTED}
        counts = {k: now[k] - self._counted.get(k, 0) for k in self.COUNTED}
        self._counted = now
        return {**counts, "overflow": c.overflow, "srtt_s": c.rtt.srtt, "rto_s": c.rtt.rto,
                "cwnd": c.cc.cwnd, "pacing_pps": c.pacer.rate}

    def describe(self) -> dict:
        cfg = self.client.cfg
        return {"k": cfg.k, "window": cfg.window, "agg_ip": cfg.agg_ip, "exponent": self.exponent,
                "quantization_bound": self.bound}

    def error_bound(self, grads) -> float:
        return self.bound

    def close(self) -> None:
        self.sock.close()
