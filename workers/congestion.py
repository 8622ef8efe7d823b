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
  the same congestion event (NewReno's recovery point, by send time here; the client
  also holds off while a chunk unanswered at the last decrease still is, TCP's
  recovery episode: workers/ina_client.py);
- undo (as TCP's Eifel/F-RTO): when every chunk that timed out in the event got its
  late result without being re-sent, the timeouts were queueing delay, not loss, and
  the decrease is undone (the caller decides; flat ina measured 0 retransmissions
  but a decrease per iteration without this);
- cwnd stays in [1, W]. Pure state, no clock: the caller passes times.

`law="cubic"` (RFC 8312) replaces the decrease and the growth above ssthresh: on a loss
W_max = cwnd and cwnd = beta x cwnd (beta 0.7); then cwnd grows toward
W(t) = C (t - K)^3 + W_max, K = cbrt(W_max (1 - beta) / C), t the real-world seconds
since the decrease (times / `time_dilation`), by (W(t) - cwnd) / cwnd per result, and
never slower than Reno's +1/cwnd (RFC 8312's TCP-friendly region, simplified). C is
RFC 8312's 0.4 segments/s^3 in bytes on the wire: `cubic_c(frame_bytes)` chunks/s^3
(0.4 x 1514 / 314 = 1.93 for k = 64), so a worker's window regrows as many bytes per
second as a TCP sender's would.
Why: after a slow-start overshoot Reno regrows one chunk per round trip, and on a
1.65 s dilated WAN round trip flat ina at 25 Mbps got back from cwnd 257 to 327 of the
~410 the path needs in five iterations (2.26 s per iteration against a model of 1.81 s).
CUBIC regrows in K seconds whatever the round trip, as the kernel's default does.
"""
from __future__ import annotations

from dataclasses import dataclass


TCP_FRAME_BYTES = 1514                  # a full-sized TCP segment on Ethernet
CUBIC_C_SEGMENTS = 0.4                  # RFC 8312, segments / s^3
VENO_BETA_SEGMENTS = 3                  # TCP Veno's backlog threshold, segments


def veno_threshold(frame_bytes: int) -> float:
    """Veno's 3-segment backlog in chunks of `frame_bytes` on the wire (the same bytes)."""
    return VENO_BETA_SEGMENTS * TCP_FRAME_BYTES / frame_bytes


def queue_backlog(cwnd: float, srtt: float | None, min_rtt: float | None) -> float:
    """Chunks this sender has queued at the bottleneck, as TCP Veno estimates it:
    cwnd x (RTT - base RTT) / RTT (C. P. Fu, S. C. Liew, "TCP Veno", IEEE JSAC 21(2), 2003).
    inf when there is no sample yet (a loss then counts as congestion)."""
    if not srtt or min_rtt is None:
        return float("inf")
    return cwnd * max(0.0, srtt - min_rtt) / srtt


def cubic_c(frame_bytes: int) -> float:
    """RFC 8312's C for a sender of `frame_bytes` frames: the same bytes / s^3."""
    return CUBIC_C_SEGMENTS * TCP_FRAME_BYTES / frame_bytes


@dataclass
class Aimd:
    cwnd: float
    ssthresh: float
    max_cwnd: float
    enabled: bool = True
    recover_at: float = float("-inf")   # time of the last decrease
    before_cut: tuple | None = None     # (cwnd, ssthresh, w_max, epoch) before it, for undo
    law: str = "reno"                   # "reno" | "cubic"
    beta: float = 0.7                   # cubic's multiplicative decrease
    c: float = 0.4                      # cubic's C in chunks/s^3 (cubic_c, above)
    time_dilation: float = 1.0          # times are dilated: t / s is real-world time
    w_max: float = 0.0                  # cubic: cwnd before the last decrease
    epoch: float | None = None          # cubic: time of the last decrease

    def __post_init__(self):
        if not 1 <= self.cwnd <= self.max_cwnd:
            raise ValueError(f"need 1 <= cwnd <= max_cwnd (got cwnd {self.cwnd}, max {self.max_cwnd})")
        if self.law not in ("reno", "cubic"):
            raise ValueError(f'congestion law must be "reno" or "cubic" (got {self.law!r})')

    def allowed(self) -> int:
        """Chunks that may be in flight now."""
        return int(self.cwnd) if self.enabled else int(self.max_cwnd)

    def on_result(self, now: float = 0.0) -> None:
        if not self.enabled:
            return
        step = 1.0 if self.cwnd < self.ssthresh else 1.0 / self.cwnd
        if self.law == "cubic" and self.cwnd >= self.ssthresh and self.epoch is not None:
            step = max(step, (self.cubic_target(now) - self.cwnd) / self.cwnd)
        self.cwnd = min(self.max_cwnd, self.cwnd + step)

    def cubic_target(self, now: float) -> float:
        t = (now - self.epoch) / self.time_dilation
        k = (self.w_max * (1 - self.beta) / self.c) ** (1 / 3)
        return self.c * (t - k) ** 3 + self.w_max

    def on_loss(self, sent_at: float, now: float) -> bool:
        """A copy sent at `sent_at` timed out at `now`; True if the window was cut."""
        if not self.enabled or sent_at < self.recover_at:
            return False
        self.before_cut = (self.cwnd, self.ssthresh, self.w_max, self.epoch)
        if self.law == "cubic":
            self.w_max, self.epoch = self.cwnd, now
            self.ssthresh = self.cwnd = max(1.0, self.cwnd * self.beta)
        else:
            self.ssthresh = self.cwnd = max(1.0, self.cwnd / 2)
        self.recover_at = now
        return True

    def undo(self) -> None:
        """The last decrease was spurious: restore the window from before it."""
        if self.before_cut is not None:
            self.cwnd = max(self.cwnd, self.before_cut[0])
            self.ssthresh = max(self.ssthresh, self.before_cut[1])
            self.w_max, self.epoch = self.before_cut[2], self.before_cut[3]
            self.before_cut = None
