"""NetStorm's network awareness: passive link measurement on the gradient traffic itself.

Two pure state machines with an explicit `now` (seconds, any clock shared by the callers):
  LinkMeter         at a server: times its large messages per overlay neighbour and says
                    when a speed should be reported to the scheduler
                    (van.cc Sending, RecvReply, ProcessRecvReplyCommand)
  ThroughputMatrix  at the scheduler: the current tps, and whether they moved enough since
                    the last plan to plan again (ProcessSpeedReportCommand, check_change,
                    Route_Manager)

Speeds are in Mbps (10^6 bits per second), the unit the testbed's rates use. The authors
report MB/s (10^6 bytes per second: data capacity / 1e6 over seconds); only the unit differs,
and the routes, metric and shares depend on ratios of throughputs, never on their unit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping

# Defaults: the authors' values.
SIZE_MSG_REPORT = 4_000_000   # bytes: a message is timed if its payload is at least this
                              # (van.cc Sending; scripts/demo/muti_server_resnet.sh; 2_000_000
                              # in scripts/klonet-netstorm/klonet_run_start.py)
NUM_MSG_REPORT = 4            # timed messages per speed sample (both scripts)
REPORT_RATE = 0.0             # report when the speed moved by more than this fraction of the
                              # last reported one (both scripts: 0, i.e. on any change)
UPDATE_RATE = 0.0             # re-plan when the mean relative change of the changed tps
                              # entries exceeds this (both scripts: 0)
CHECK_PERIOD_S = 2.0          # how often the scheduler runs check_change (Route_Manager;
                              # scripts/demo/muti_server_resnet.sh; 5 in klonet_run_start.py)


def mbps(nbytes: float, seconds: float) -> float:
    return nbytes * 8 / 1e6 / seconds


@dataclass
class _Window:
    nbytes: float = 0.0
    seconds: float = 0.0
    count: int = 0


class LinkMeter:
    """Per-server meter of the speed to each overlay neighbour.

    Call `sent` when a message starts going out on the link to `neighbor` (the authors stamp
    it when the sender thread takes it off the queue, so queueing before that is not timed),
    and `replied` when it is known to have arrived. The authors' sample is one-way: the
    receiving server subtracts the sender's stamp (carried in the message) from its own
    receive time, clocks being shared (containers on one host) - so give `replied` the
    neighbour's receive time if the reply carries it (Mininet hosts share CLOCK_MONOTONIC);
    the reply's arrival time instead adds one propagation delay to every sample.

    Every NUM_MSG_REPORT samples of a neighbour make one speed, sum of bytes / sum of times;
    the window then starts afresh whether or not the speed was reported (ProcessRecvReplyCommand
    zeroes it after every NUM_MSG_REPORT samples). The speed is reported when it differs from
    the last REPORTED one by more than report_rate (relative); the first one always is (van.cc
    divides by a last speed of 0: infinity). An unreported speed does not become the
    reference, so slow drifts add up until they are reported.
    """

    def __init__(self, size_threshold: int = SIZE_MSG_REPORT, samples: int = NUM_MSG_REPORT,
                 report_rate: float = REPORT_RATE):
        if samples < 1:
            raise ValueError(f"samples must be >= 1, not {samples}")
        self.size_threshold = size_threshold
        self.samples = samples
        self.report_rate = report_rate
        self._in_flight: dict[tuple[int, Hashable], tuple[int, float]] = {}
        self._windows: dict[int, _Window] = {}
        self._reported: dict[int, float] = {}

    def sent(self, neighbor: int, msg_id: Hashable, nbytes: int, now: float) -> bool:
        """Start timing this message if it is large enough; True if it is timed."""
        if nbytes < self.size_threshold or nbytes <= 0:
            return False
        self._in_flight[(neighbor, msg_id)] = (nbytes, now)
        return True

    def replied(self, neighbor: int, msg_id: Hashable, now: float) -> float | None:
        """Record the arrival of a timed message; the speed (Mbps) to report to the
        scheduler for link me->neighbor, or None. Unknown or repeated ids give None."""
        started = self._in_flight.pop((neighbor, msg_id), None)
        if started is None:
            return None
        nbytes, t_sent = started
        seconds = now - t_sent
        if seconds <= 0:
            # van.cc would add a zero or negative time (and divide by a zero sum); a sample
            # that took no time measures nothing, so it is left out of the window
            return None
        window = self._windows.setdefault(neighbor, _Window())
        window.nbytes += nbytes
        window.seconds += seconds
        window.count += 1
        if window.count < self.samples:
            return None
        speed = mbps(window.nbytes, window.seconds)
        self._windows[neighbor] = _Window()
        if not self._moved(neighbor, speed):
            return None
        self._reported[neighbor] = speed
        return speed

    def _moved(self, neighbor: int, speed: float) -> bool:
        last = self._reported.get(neighbor)
        if last is None or last == 0:
            return True
        return abs(speed - last) / last > self.report_rate

    def last_reported(self, neighbor: int) -> float | None:
        return self._reported.get(neighbor)

    def in_flight(self) -> int:
        """Timed messages still waiting for their reply."""
        return len(self._in_flight)


class ThroughputMatrix:
    """The scheduler's tps: overwritten by every speed report; tells when to plan again.

    check_change (van.cc) compares the current tps with the copy taken at the last plan:
    entries that differ (by value: one reported with the same value, or changed and changed
    back, does not count) are "changed"; their mean relative change |now - then| / then is
    compared with update_rate. No changed entry: no re-plan (van.cc computes 0/0 = NaN, and
    NaN > rate is false). A planned value of 0 makes the change infinite (van.cc: x/0).
    """

    def __init__(self, initial: Mapping[tuple[int, int], float], update_rate: float = UPDATE_RATE):
        self.update_rate = update_rate
        self._now: dict[tuple[int, int], float] = {k: float(v) for k, v in initial.items()}
        self._planned = dict(self._now)

    @property
    def tps(self) -> dict[tuple[int, int], float]:
        return dict(self._now)

    @property
    def planned(self) -> dict[tuple[int, int], float]:
        """The matrix the current plan was made from (reports since then are in tps)."""
        return dict(self._planned)

    def report(self, i: int, j: int, speed: float) -> bool:
        """Speed of link i->j (measured by i's meter). Non-positive or non-finite speeds are
        ignored (ProcessSpeedReportCommand skips 0 entries; a server never sends them).
        Returns whether the entry was written."""
        if (i, j) not in self._now:
            raise ValueError(f"{i}->{j} is not an overlay link")
        if not (math.isfinite(speed) and speed > 0):
            return False
        self._now[(i, j)] = float(speed)
        return True

    def mean_change(self) -> float | None:
        """Mean relative change of the changed entries since the last plan (None: none)."""
        changes = [self._relative_change(k) for k, v in self._now.items() if v != self._planned[k]]
        if not changes:
            return None
        return sum(changes) / len(changes)

    def _relative_change(self, link: tuple[int, int]) -> float:
        then = self._planned[link]
        if then == 0:
            return math.inf
        return abs(self._now[link] - then) / then

    def should_replan(self) -> bool:
        change = self.mean_change()
        return change is not None and change > self.update_rate

    def mark_planned(self) -> dict[tuple[int, int], float]:
        """Take the reference copy and return it: plan with exactly these tps, so a report
        arriving while the plan is computed counts as a change for the next check (van.cc
        copies tps after planning, so such a report would be silently absorbed)."""
        self._planned = dict(self._now)
        return dict(self._planned)
