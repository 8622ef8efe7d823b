"""Congestion window of an aggregation worker: AIMD as in TCP Reno / ATP.

Why: the slots of a job (the window W) bound how many chunks may be in flight, and
W is sized to a WAN bandwidth-delay product. Without a congestion window every worker
keeps W chunks in flight; results complete at a switch in bursts of up to W x fan-in
packets, overflow a shaped egress queue, and the timeouts then re-send whole windows.
The congestion window finds what the path carries instead:

- slow start: +1 per result while cwnd < ssthresh (doubles per round trip);
- additive increase: +1/cwnd per result (+1 per window of results);
- multiplicative decrease: on a timeout, ssthresh = cwnd = max(cwnd / 2, 1), at most
  once per round trip: a timeout of a copy sent before the last decrease belongs to
  the same congestion event (NewReno's recovery point, by send time here);
- undo (as TCP's Eifel/F-RTO): when every chunk that timed out in the event got its
  late result without being re-sent, the timeouts were queueing delay, not loss, and
  the decrease is undone (the caller decides; flat ina measured 0 retransmissions
  but a decrease per iteration without this);
- cwnd stays in [1, W]. Pure state, no clock: the caller passes times.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Aimd:
    cwnd: float
    ssthresh: float
    max_cwnd: float
    enabled: bool = True
    recover_at: float = float("-inf")   # time of the last decrease
    before_cut: tuple | None = None     # (cwnd, ssthresh) before it, for undo

    def __post_init__(self):
        if not 1 <= self.cwnd <= self.max_cwnd:
            raise ValueError(f"need 1 <= cwnd <= max_cwnd (got cwnd {self.cwnd}, max {self.max_cwnd})")

    def allowed(self) -> int:
        """Chunks that may be in flight now."""
        return int(self.cwnd) if self.enabled else int(self.max_cwnd)

    def on_result(self) -> None:
        if not self.enabled:
            return
        step = 1.0 if self.cwnd < self.ssthresh else 1.0 / self.cwnd
        self.cwnd = min(self.max_cwnd, self.cwnd + step)

    def on_loss(self, sent_at: float, now: float) -> bool:
        """A copy sent at `sent_at` timed out at `now`; True if the window was cut."""
        if not self.enabled or sent_at < self.recover_at:
            return False
        self.before_cut = (self.cwnd, self.ssthresh)
        self.ssthresh = self.cwnd = max(1.0, self.cwnd / 2)
        self.recover_at = now
        return True

    def undo(self) -> None:
        """The last decrease was spurious: restore the window from before it."""
        if self.before_cut is not None:
            self.cwnd = max(self.cwnd, self.before_cut[0])
            self.ssthresh = max(self.ssthresh, self.before_cut[1])
            self.before_cut = None
