"""Retransmission timeout from round-trip samples, as TCP does (RFC 6298).

SRTT and RTTVAR are smoothed with gains 1/8 and 1/4; RTO = SRTT + max(G, 4 RTTVAR),
clamped to [min_rto, max_rto]. Samples must come only from packets sent once
(Karn's rule): the caller enforces that. `backed_off(n)` is rto * 2**n, capped;
the caller chooses n (workers/ina_client.py: timeouts in a row without progress).
All times in seconds.

Here a "round trip" is send -> aggregated result, so it includes waiting for the
slowest worker of the slot: stragglers raise the RTO instead of causing spurious
retransmissions, and WAN RTTs of 20-300 ms are learnt from the first samples.
"""
from __future__ import annotations

from dataclasses import dataclass

ALPHA, BETA, K = 1 / 8, 1 / 4, 4


@dataclass
class RttEstimator:
    initial_rto: float = 1.0
    min_rto: float = 0.005
    max_rto: float = 10.0
    granularity: float = 0.001
    srtt: float | None = None
    rttvar: float | None = None
    min_rtt: float | None = None        # the smallest sample: the path's base round trip

    def __post_init__(self):
        if not 0 < self.min_rto <= self.initial_rto <= self.max_rto:
            raise ValueError("need 0 < min_rto <= initial_rto <= max_rto "
                             f"(got {self.min_rto}, {self.initial_rto}, {self.max_rto})")

    def sample(self, rtt: float) -> None:
        if rtt < 0:
            raise ValueError(f"negative RTT sample {rtt}: timestamps must come from one monotonic clock")
        if self.min_rtt is None or rtt < self.min_rtt:
            self.min_rtt = rtt
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = (1 - BETA) * self.rttvar + BETA * abs(self.srtt - rtt)
            self.srtt = (1 - ALPHA) * self.srtt + ALPHA * rtt

    @property
    def rto(self) -> float:
        base = self.initial_rto if self.srtt is None else \
            self.srtt + max(self.granularity, K * self.rttvar)
        return min(self.max_rto, max(self.min_rto, base))

    def backed_off(self, retransmissions: int) -> float:
        """Timeout of a packet already sent again `retransmissions` times."""
        return min(self.max_rto, self.rto * 2 ** min(retransmissions, 16))
