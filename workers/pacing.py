"""Pacing of an aggregation worker's transmissions at the rate results came back.

Why: a worker starts every tensor with its congestion window open (cwnd persists
across tensors) and nothing to clock it: no result can come back before a round trip.
Unpaced, it hands its whole window to the NIC at once, and so does every worker at
the same moment (BSP). Flat `ina` at 50 Mbps (bench schemes, 1 MB, s = 10): the 4
Frankfurt workers' first flights, 4 x 1024 frames of 314 bytes, met a WAN queue of one
bandwidth-delay product (1794 such frames); 1955 were dropped at Frankfurt's and 544 at
Tokyo's WAN port, all at tensor starts. Every lost contribution timed out the chunk
at all 12 workers (the 4 Washington workers, which lost nothing, re-sent 768 chunks
each), every worker halved its window, and additive increase (+1 per 1.65 s dilated
round trip) never won it back: 2.26 s per iteration against a model of 0.99 s.

What: the sender estimates the bottleneck's share it gets as the highest rate at which
results arrived over any interval of one smoothed round trip (and at least
`MIN_SAMPLES` results) in the previous tensor (a max filter, as BBR's
bottleneck-bandwidth estimate, whose samples also span a round trip), and paces the next
tensor at
`gain` x that rate. Results are clocked by the bottleneck, so this is the path's rate;
gain 1.25 (BBR's probing gain) lets the rate grow when the path got faster, and
keeps what a synchronized first flight adds to a shared queue to a fifth of the
window (0.25 / 1.25 of what is sent while the link drains at 1x). Within a tensor,
results clock the sends below that rate, so pacing only shapes first flights and
recoveries. A tensor with no estimate (the first) is not
paced: slow start from the initial window is gentle enough.

The times must be arrival times (the socket's kernel receive timestamps,
workers/ina_udp.py), and a rate over n arrivals is (n - 1) intervals over their span. At
least 64 results, because the links' htb buckets (2 MTU frames at low rates,
topologies/linkemu.py) release ~10 aggregation frames at line rate after an idle moment:
over 16 results, early in a tensor while the round trip is still short, that read as
2.5-3 x the link's rate. A quarter round trip of process wake-up times overestimated the
rate 2-2.4 x (flat ina, 1 Mbps access links, busy 2-core machine): a worker that waits
for a CPU reads a backlog of results at one instant, and an interval of a few such
batches looks like a burst at many times the link's rate; paced at that, the next
tensor's first flight was unpaced in effect and queued 0.3 s deep (the per-chunk timers
then re-sent 112 of 256 chunks: workers/ina_client.py, loss detection).

Sends leave in quanta of `quantum` packets (a few hundred bytes each) so a worker wakes
once per quantum, not once per packet. The bucket holds `BURST_QUANTA` quanta so a late
wake-up catches up: capped at one quantum, a busy 2-core machine's wake-up latency made
the effective rate ~0.7 x the nominal one, the next tensor measured that, and the rate
fell tensor after tensor (flat ina at 100 Mbps: 1463 -> 1247 -> 1016 packets/s,
iterations 0.86 -> 0.98 -> 1.06 s). Pure state, no clock: callers pass times.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

GAIN = 1.25
QUANTUM = 8
BURST_QUANTA = 4
INTERVAL_RTTS = 1.0
MIN_SAMPLES = 64


@dataclass
class Pacer:
    enabled: bool = True
    gain: float = GAIN
    quantum: int = QUANTUM
    rate: float | None = None           # packets/s of this tensor; None: not paced
    max_rate: float = 0.0               # a cap on the rate, packets/s (0: none); set from
                                        # outside (a scheme's plan), it paces every tensor
    _best: float = 0.0                  # highest delivery rate measured in this tensor
    _arrivals: deque = field(default_factory=deque)
    _tokens: float = 0.0
    _t: float = 0.0

    def start(self, now: float) -> None:
        """A new tensor: pace it at gain x the previous tensor's delivery rate."""
        a = self._arrivals
        if not self._best and len(a) >= MIN_SAMPLES and a[-1] > a[0]:
            # a tensor whose results all came within a round trip: a window's worth
            # clocked out by the bottleneck (packet-pair reasoning), its rate is the path's
            self._best = (len(a) - 1) / (a[-1] - a[0])
        if self.enabled and self._best > 0:
            self.rate = self.gain * self._best
        if self.max_rate > 0:
            self.rate = self.max_rate if self.rate is None else min(self.rate, self.max_rate)
        self._best, self._arrivals = 0.0, deque()
        self._tokens, self._t = float(self.quantum), now

    def set_max_rate(self, max_rate: float) -> None:
        """A new cap (packets/s, 0: none) from the next tensor on: the rate is re-derived at
        that tensor's start (from this tensor's measured delivery rate, then the cap), so a
        raised or removed cap does not stay at the old one."""
        if max_rate < 0:
            raise ValueError(f"max_rate must be >= 0 (0: no cap), got {max_rate}")
        self.max_rate, self.rate = float(max_rate), None

    def on_result(self, arrival: float, srtt: float | None) -> None:
        """A useful result arrived (at `arrival`): update the delivery-rate estimate."""
        if not srtt:
            return
        span = INTERVAL_RTTS * srtt
        a = self._arrivals
        a.append(arrival)
        while len(a) > MIN_SAMPLES and arrival - a[1] >= span:
            a.popleft()                     # keep the shortest suffix spanning `span`
        if len(a) < MIN_SAMPLES or arrival - a[0] < span or arrival <= a[0]:
            return                          # not yet a whole interval of this tensor
        self._best = max(self._best, (len(a) - 1) / (arrival - a[0]))

    def _refill(self, now: float) -> None:
        if now > self._t:
            cap = float(self.quantum * BURST_QUANTA)
            self._tokens = min(cap, self._tokens + (now - self._t) * self.rate)
            self._t = now

    def may_send(self, now: float) -> bool:
        if self.rate is None:
            return True
        self._refill(now)
        return self._tokens >= 1.0 - 1e-9     # float rounding of the refill

    def sent(self, now: float) -> None:
        if self.rate is not None:
            self._refill(now)
            self._tokens -= 1.0

    def next_send_time(self, now: float) -> float:
        """When a whole quantum may leave (call after may_send said no)."""
        if self.rate is None:
            return now
        self._refill(now)
        return now + max(0.0, self.quantum - self._tokens) / self.rate
