"""Worker side of inart: the gradient cut by the parameter servers' shares, every part
aggregated through its own PS's tree at once.

Per iteration: quantize the whole gradient with one exponent (as ina: agreed clip, number of
workers); cut it into K contiguous value ranges by the shares (split.value_ranges: every
worker cuts the same way); aggregate all K parts concurrently over one UDP socket, part k as
job `job + k` through the switches the plan chose for PS k to PS k (workers/ina_udp
.aggregate_many: each part has its own client, window and congestion control, so a slow
PS's part does not hold back the others' sending); join and dequantize.

With re-planning on, comm also names `replan_dir`, the run's switch-over folder: as an
iteration's aggregation starts, the next plan found there (switchover.PlanFollower) replaces
the clients and shares at exactly the iteration it names, the same one on every worker, so
every part of every iteration is summed by one plan's trees. The socket, the quantization
exponent (clip and worker count do not change) and the traffic counters carry over.

comm (schemes/inart/plan.py): clients (one ClientConfig's fields per PS), shares, clip,
rto_margin_s, aggregate_timeout_s (optional), replan_dir (optional).
"""
from __future__ import annotations

import numpy as np

from schemes.inart.split import value_ranges
from schemes.inart.switchover import PlanFollower
from workers import ina_udp, quantize
from workers.communicator import CommunicatorBase, Counters, Me
from workers.ina_client import ClientConfig, InaClient
from workers.ina_core import InaCoreClient, make_client


class InartCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me):
        self._retired = Counters()      # traffic of the clients earlier plans used
        self.clients: list[InaClient | InaCoreClient] = []
        self._take(comm)
        self.follower = PlanFollower(comm["replan_dir"], me.name) if comm.get("replan_dir") else None
        self.n = me.n_workers
        self.exponent = quantize.choose_exponent(float(comm["clip"]), self.n)
        self.bound = quantize.sum_error_bound(self.exponent, self.n)
        self.timeout_s = comm.get("aggregate_timeout_s")
        self.sock = ina_udp.open_socket(me.ip)
        self._scratch = quantize.Scratch()      # quantize's buffer, kept between iterations
        self._parts: list[int] = []

    def _take(self, comm: dict) -> None:
        """Use one plan's clients and shares."""
        clients = [make_client(ClientConfig(**c)) for c in comm["clients"]]
        shares = tuple(comm["shares"])
        if len(shares) != len(clients):
            raise ValueError(f"inart: {len(shares)} shares for {len(clients)} servers")
        if comm.get("rto_margin_s") is not None:
            for c in clients:           # as ina's communicator: RFC 6298's granularity G
                c.rtt.granularity = float(comm["rto_margin_s"])
        if self.clients:
            self._retired = self._add(self._retired, self._current())
        self.clients, self.shares = clients, shares

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        if self.follower is not None:
            new = self.follower.at(iteration)
            if new is not None:
                self._take(new)
        q, saturated = quantize.quantize(grad, self.exponent, self.n, self._scratch)
        ranges = value_ranges(self.shares, q.size)
        self._parts = [b - a for a, b in ranges]
        parts = [(c, q[a:b]) for c, (a, b) in zip(self.clients, ranges) if b > a]
        sums = ina_udp.aggregate_many(self.sock, parts, exponent=self.exponent,
                                      overflow=saturated, timeout_s=self.timeout_s, copy=False)
        total = np.empty_like(q)
        it = iter(sums)
        for a, b in ranges:
            if b > a:
                total[a:b] = next(it)
        return quantize.dequantize(total, self.exponent)

    def _current(self) -> Counters:
        st = [c.stats for c in self.clients]
        return Counters(sum(s.bytes_sent for s in st), sum(s.bytes_received for s in st),
                        sum(s.sent for s in st), sum(s.retransmissions for s in st))

    @staticmethod
    def _add(a: Counters, b: Counters) -> Counters:
        return Counters(*(getattr(a, f) + getattr(b, f) for f in Counters.__dataclass_fields__))

    def counters(self) -> Counters:
        return self._add(self._retired, self._current())

    def stats(self) -> dict:
        return {"values_per_server": self._parts,
                "plan": self.follower.seq if self.follower else 0,
                "jobs": [c.cfg.job for c in self.clients],
                "cwnd": [c.cc.cwnd for c in self.clients],
                "srtt_s": [c.rtt.srtt for c in self.clients],
                # per job since the start (what tells a loss from a late result apart:
                # cuts, cuts undone, results that came for a chunk already answered)
                "cwnd_decreases_total": [c.stats.cwnd_decreases for c in self.clients],
                "cwnd_undos_total": [c.stats.cwnd_undos for c in self.clients],
                "duplicate_results_total": [c.stats.duplicate_results for c in self.clients]}

    def describe(self) -> dict:
        return {"k": self.clients[0].cfg.k, "jobs": [c.cfg.job for c in self.clients],
                "agg_ips": [c.cfg.agg_ip for c in self.clients], "shares": list(self.shares),
                "exponent": self.exponent, "quantization_bound": self.bound}

    def error_bound(self, grads) -> float:
        return self.bound

    def close(self) -> None:
        self.sock.close()
