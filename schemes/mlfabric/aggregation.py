"""Aggregation on the wire, the pure part: which aggregator a group goes through, and
which groups fall back to the PS (schemes/mlfabric/server.py is the socket edge).

Candidates (the plan lists them, schemes/mlfabric/plan.py):
  idle worker   an aggregator process on worker w's host; eligible only while w is idle,
                i.e. waiting on the network (its own update pending or granted: its CPU
                has nothing to do). A worker that computes is not idle (this testbed's
                reading of the paper's "idle workers", README.md)
  gateway       a dedicated aggregator process on one host of a datacenter (the testbed
                has no separate gateway machine: the datacenter's last host, on the
                gateway side of its rack), always eligible
Dead or timed-out aggregators are never chosen again in the run.

The choice is placement.py's rule over the eligible candidates, on bandwidths from
placement.Bandwidth (planned rates, worker -> PS replaced by measured transfers).

A group sent through an aggregator must come back as one sum before its deadline
(timeout_s + 2 x the completion time predicted at the choice). Otherwise, or when its
aggregator's connection breaks, or when a member cannot reach it, the group falls back:
every member sends its gradient straight to the PS, and a sum that still comes is
discarded. Each group is applied exactly once, by whichever path the tracker accepts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from schemes.mlfabric.placement import Bandwidth, completion_time, serial_time


@dataclass(frozen=True)
class Candidate:
    name: str                  # the server's name in the plan (agg-<host>, gw-<datacenter>)
    host: str                  # node it runs on (the bandwidth table's key)
    worker: int | None = None  # rank whose host it shares (idle-worker kind); None: gateway


class AggregatorChoice:
    """The scheduler's `choose` policy: (group, idle workers) -> candidate name or None."""

    def __init__(self, candidates: list[Candidate], worker_hosts: list[str], ps: str, bw: Bandwidth):
        names = [c.name for c in candidates]
        if len(set(names)) != len(names):
            raise ValueError(f"aggregator names must be unique (got {names})")
        self.candidates, self.worker_hosts, self.ps, self.bw = candidates, worker_hosts, ps, bw
        self.out: set[str] = set()          # dead or timed out: not chosen again
        self.predicted: dict[str, float] = {}   # the last choice's T per candidate chosen

    def index(self, name: str) -> int:
        return next(i for i, c in enumerate(self.candidates) if c.name == name)

    def eligible(self, idle: list[int]) -> list[Candidate]:
        return [c for c in self.candidates if c.name not in self.out
                and (c.worker is None or c.worker in idle)]

    def members(self, group) -> list[tuple[str, int]]:
        return [(self.worker_hosts[r.worker], r.size) for r in group]

    def __call__(self, group, idle: list[int]) -> str | None:
        m = self.members(group)
        best, best_t = None, serial_time(m, self.ps, self.bw)
        for c in self.eligible(idle):
            t = completion_time(m, c.host, self.ps, self.bw)
            if t < best_t:
                best, best_t = c.name, t
        if best is not None:
            self.predicted[best] = best_t
        return best


@dataclass
class Sent:
    via: str
    members: tuple[int, ...]
    deadline: float


@dataclass
class GroupTracker:
    """Groups at aggregators: which sum to accept, which groups fall back, and why."""
    sent: dict[int, Sent] = field(default_factory=dict)       # at an aggregator now
    fell_back: dict[int, str] = field(default_factory=dict)   # group -> why
    applied: int = 0                                          # sums accepted
    discarded: int = 0                                        # sums that came too late

    def send(self, group: int, via: str, members: tuple[int, ...], now: float, timeout_s: float,
             predicted_s: float) -> None:
        if group in self.sent or group in self.fell_back:
            raise ValueError(f"group {group} was sent through an aggregator already")
        self.sent[group] = Sent(via, tuple(members), now + timeout_s + 2 * predicted_s)

    def at_aggregator(self, group: int) -> bool:
        return group in self.sent

    def sum_arrived(self, group: int, via: str, members: tuple[int, ...]) -> bool:
        """True: apply this sum now. False: the group fell back, the sum is discarded.
        ValueError: a sum nobody asked this aggregator for, or of other members."""
        s = self.sent.get(group)
        if s is None:
            if group in self.fell_back:
                self.discarded += 1
                return False
            raise ValueError(f"a sum for group {group}, which was never sent through an aggregator")
        if s.via != via or s.members != tuple(members):
            raise ValueError(f"the sum of group {group} came from {via} with members {list(members)}; "
                             f"it was sent to {s.via} with members {list(s.members)}")
        del self.sent[group]
        self.applied += 1
        return True

    def expired(self, now: float) -> list[tuple[int, Sent]]:
        """Groups past their deadline, now fallen back."""
        late = [(g, s) for g, s in self.sent.items() if now >= s.deadline]
        for g, s in late:
            self._fall_back(g, f"{s.via} timed out")
        return late

    def aggregator_lost(self, via: str, why: str) -> list[tuple[int, Sent]]:
        """Every group at `via`, now fallen back."""
        lost = [(g, s) for g, s in self.sent.items() if s.via == via]
        for g, _ in lost:
            self._fall_back(g, why)
        return lost

    def _fall_back(self, group: int, why: str) -> None:
        del self.sent[group]
        self.fell_back[group] = why
