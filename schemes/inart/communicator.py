"""Worker side of inart: the gradient cut by the parameter servers' shares, every part
aggregated through its own PS's tree at once.

Per iteration: quantize the whole gradient with one exponent (as ina: agreed clip, number of
workers); cut it into K contiguous value ranges by the shares (split.value_ranges: every
worker cuts the same way); aggregate all K parts concurrently over one UDP socket, part k as
job `job + k` through the switches the plan chose for PS k to PS k (workers/ina_udp
.aggregate_many: each part has its own client, window and congestion control, so a slow
PS's part does not hold back the others' sending); join and dequantize.

comm (schemes/inart/plan.py): clients (one ClientConfig's fields per PS), shares, clip,
rto_margin_s, aggregate_timeout_s (optional).
"""
from __future__ import annotations

import numpy as np

from schemes.inart.split import value_ranges
from workers import ina_udp, quantize
from workers.communicator import CommunicatorBase, Counters, Me
from workers.ina_client import ClientConfig, InaClient


class InartCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me):
        self.clients = [InaClient(ClientConfig(**c)) for c in comm["clients"]]
        self.shares = tuple(comm["shares"])
        if len(self.shares) != len(self.clients):
            raise ValueError(f"inart: {len(self.shares)} shares for {len(self.clients)} servers")
        if comm.get("rto_margin_s") is not None:
            for c in self.clients:      # as ina's communicator: RFC 6298's granularity G
                c.rtt.granularity = float(comm["rto_margin_s"])
        self.n = me.n_workers
        self.exponent = quantize.choose_exponent(float(comm["clip"]), self.n)
        self.bound = quantize.sum_error_bound(self.exponent, self.n)
        self.timeout_s = comm.get("aggregate_timeout_s")
        self.sock = ina_udp.open_socket(me.ip)
        self._parts: list[int] = []

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        q, saturated = quantize.quantize(grad, self.exponent, self.n)
        ranges = value_ranges(self.shares, q.size)
        self._parts = [b - a for a, b in ranges]
        parts = [(c, q[a:b]) for c, (a, b) in zip(self.clients, ranges) if b > a]
        sums = ina_udp.aggregate_many(self.sock, parts, exponent=self.exponent,
                                      overflow=saturated, timeout_s=self.timeout_s)
        total = np.empty_like(q)
        it = iter(sums)
        for a, b in ranges:
            if b > a:
                total[a:b] = next(it)
        return quantize.dequantize(total, self.exponent)

    def counters(self) -> Counters:
        st = [c.stats for c in self.clients]
        return Counters(sum(s.bytes_sent for s in st), sum(s.bytes_received for s in st),
                        sum(s.sent for s in st), sum(s.retransmissions for s in st))

    def stats(self) -> dict:
        return {"values_per_server": self._parts,
                "cwnd": [c.cc.cwnd for c in self.clients],
                "srtt_s": [c.rtt.srtt for c in self.clients]}

    def describe(self) -> dict:
        return {"k": self.clients[0].cfg.k, "jobs": [c.cfg.job for c in self.clients],
                "agg_ips": [c.cfg.agg_ip for c in self.clients], "shares": list(self.shares),
                "exponent": self.exponent, "quantization_bound": self.bound}

    def error_bound(self, grads) -> float:
        return self.bound

    def close(self) -> None:
        self.sock.close()
