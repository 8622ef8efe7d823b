"""MLfabric's scheduler, sans I/O: which pending update goes into the parameter server
when, through which aggregator, and when grants pause so the replica keeps up.

Pure: requests, arrivals, replica acknowledgements and departures in; grants, drops and
releases out; no sockets and no clocks (schemes/mlfabric/server.py is the socket edge, and
tests/test_mlfabric_scheduler.py checks hand-worked cases). Training mode asp only:
MLfabric bounds the delay (tau_max) instead of ssp's clock gate.

Vocabulary (workers/training_modes.py): version k is the model after k applied updates;
the delay of an update read at version v and applied to version V is V - v.

  request    a worker finished computing the gradient of its iteration and asks to send
             it (worker, iteration, bytes; the server knows the version it read)
  grant      one group of pending updates may go now: straight to the PS (via None) or
             through an aggregator that sums them and forwards one update. The group is
             applied as ONE version (the float32 sum of its members in rank order).
  slots      how many grants may be in flight at once (1: transfers into the PS are
             serialized, each at the full rate of its path, instead of fair-shared)
  order      pending updates are granted oldest version read first (then first asked)
  tau_max    the next grant's update lands on version nxt = version + grants in flight;
             an update with nxt - version_read > tau_max is late:
               on_late "drop"       it is not sent (Drop), the worker goes on with the
                                    newest model; every applied update has delay <= tau_max
               on_late "aggregate"  it is held and sent in one group with the next update
                                    that is not late, so it shares that update's version
                                    (its own delay, reported as is, exceeds tau_max; it
                                    costs no version of its own). With no fresher update
                                    to come (every other worker is waiting on its own
                                    late update or left) the late ones go together.
  d_rep      replication bound: a grant is issued only while
             version + grants in flight + 1 - replica_acked <= d_rep, so the primary never
             runs more than d_rep versions ahead of what its replica has applied (grants
             pause: replication goes first). None: no replica.
  choose     the aggregation policy (schemes/mlfabric/placement.py): given a group of
             pending updates that read versions within agg_window of the head's, and the
             workers now idle, the aggregator to route them through, or None (the head
             goes alone, straight to the PS)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from workers.training_modes import Applied, Release

ON_LATE = ("drop", "aggregate")


@dataclass(frozen=True)
class Request:
    worker: int
    iteration: int
    size: int              # bytes of the update
    version_read: int      # the model version its gradient was computed on
    clock_read: int        # that model's clock
    seq: int               # order the requests came in (ties of version_read)


@dataclass(frozen=True)
class Grant:
    group: int                        # id, unique in a run
    members: tuple[Request, ...]      # in rank order: the order they are summed in
    via: str | None = None            # aggregator name; None: each member sends to the PS
    late: tuple[int, ...] = ()        # workers merged in late (on_late aggregate)

    @property
    def workers(self) -> tuple[int, ...]:
        return tuple(m.worker for m in self.members)


@dataclass(frozen=True)
class Drop:
    request: Request                  # not sent: its delay would exceed tau_max


class MlfabricCore:
    def __init__(self, workers: int, tau_max: int, on_late: str = "drop", slots: int = 1,
                 d_rep: int | None = None, agg_window: int = 0,
                 choose: Callable[[list[Request], list[int]], str | None] | None = None):
        if workers < 1:
            raise ValueError(f"mlfabric needs at least one worker (got {workers})")
        if tau_max < 0 or slots < 1 or agg_window < 0 or (d_rep is not None and d_rep < 1):
            raise ValueError(f"scheme_options: tau_max >= 0, slots >= 1, agg_window >= 0 and "
                             f"d_rep >= 1 (got {tau_max}, {slots}, {agg_window}, {d_rep})")
        if on_late not in ON_LATE:
            raise ValueError(f"scheme_options.on_late: {on_late!r} is not one of {', '.join(ON_LATE)}")
        self.n, self.tau_max, self.on_late, self.slots = workers, tau_max, on_late, slots
        self.d_rep, self.agg_window, self.choose = d_rep, agg_window, choose
        self.version = 0
        self.replica_acked = 0
        self.done = [0] * workers                   # each worker's clock (iterations completed)
        self.left = [False] * workers
        self.reads = [(0, 0)] * workers             # (version, clock) each worker computes on
        self.pending: dict[int, Request] = {}
        self.inflight: dict[int, Grant] = {}
        self.log: list[Applied] = []
        self.dropped: list[Request] = []
        self.late_merged = 0
        self._seq = 0
        self._gid = 0

    # ------------------------------------------------------------------ state
    @property
    def clock(self) -> int:
        active = [d for d, gone in zip(self.done, self.left) if not gone]
        return min(active) if active else min(self.done)

    def busy(self, worker: int) -> bool:
        """Waiting on the network (a pending or granted update): its host may aggregate."""
        return worker in self.pending or any(worker in g.workers for g in self.inflight.values())

    def idle_workers(self) -> list[int]:
        return [w for w in range(self.n) if not self.left[w] and self.busy(w)]

    # ------------------------------------------------------------------ inputs
    def request(self, worker: int, iteration: int, size: int) -> list:
        self._check(worker)
        if self.busy(worker):
            raise ValueError(f"worker {worker} asked to send iteration {iteration} while its previous "
                             f"update is still pending: protocol error")
        if iteration != self.done[worker]:
            raise ValueError(f"worker {worker} asked to send iteration {iteration}, expected "
                             f"{self.done[worker]}: updates must come in iteration order")
        v, k = self.reads[worker]
        self.pending[worker] = Request(worker, iteration, int(size), v, k, self._seq)
        self._seq += 1
        return self._schedule()

    def arrived(self, group: int) -> tuple[list[Applied], list]:
        """Group `group`'s update reached the PS and is applied now, as one version:
        -> its members' log rows and what follows (their releases, new grants)."""
        g = self.inflight.pop(group, None)
        if g is None:
            raise ValueError(f"update of group {group} arrived, but no such grant is in flight")
        rows = [Applied(m.worker, m.iteration, m.version_read, m.clock_read, self.version)
                for m in g.members]
        self.log.extend(rows)
        self.version += 1
        outs: list = []
        for m in g.members:
            self.done[m.worker] += 1
        for m in g.members:
            if not self.left[m.worker]:
                outs.append(self._release(m.worker))
        return rows, outs + self._schedule()

    def acked(self, version: int) -> list:
        """The replica has applied versions up to `version` (its model is version `version`)."""
        if version > self.version:
            raise ValueError(f"replica acknowledged version {version}, the primary holds {self.version}")
        self.replica_acked = max(self.replica_acked, version)
        return self._schedule()

    def leave(self, worker: int) -> list:
        self._check(worker)
        self.left[worker] = True
        self.pending.pop(worker, None)
        return self._schedule()

    def join(self, worker: int, iteration: int) -> Release:
        """A worker that lost its server (failover) starts `iteration` on this model."""
        if not 0 <= worker < self.n:
            raise ValueError(f"worker {worker} is out of range 0..{self.n - 1}")
        self.left[worker] = False
        self.pending.pop(worker, None)
        self.done[worker] = iteration
        return self._release(worker)

    # ------------------------------------------------------------------ decisions
    def _schedule(self) -> list:
        outs: list = []
        while self.pending and len(self.inflight) < self.slots:
            if self.d_rep is not None and \
                    self.version + len(self.inflight) + 1 - self.replica_acked > self.d_rep:
                break                                       # the replica must catch up first
            queue = sorted(self.pending.values(), key=lambda r: (r.version_read, r.seq))
            nxt = self.version + len(self.inflight)         # version the next grant lands on
            late = [r for r in queue if nxt - r.version_read > self.tau_max]
            if late and self.on_late == "drop":
                outs += self._drop(late[0])
                continue
            if late:
                fresh = [r for r in queue if r not in late]
                if fresh:
                    outs.append(self._grant(late + fresh[:1], late))
                elif self._fresher_may_come():
                    break                                   # hold the late ones
                else:
                    outs.append(self._grant(late, late))
                continue
            head = queue[0]
            group = [r for r in queue if abs(r.version_read - head.version_read) <= self.agg_window]
            via = self.choose(group, self.idle_workers()) if self.choose and len(group) > 1 else None
            outs.append(self._grant(group if via else [head], [], via))
        return outs

    def _fresher_may_come(self) -> bool:
        return any(not self.left[w] and w not in self.pending for w in range(self.n))

    def _grant(self, members: list[Request], late: list[Request], via: str | None = None) -> Grant:
        if via is None and len(members) > 1 and self.choose:
            via = self.choose(members, self.idle_workers())
        g = Grant(self._gid, tuple(sorted(members, key=lambda r: r.worker)), via,
                  tuple(sorted(r.worker for r in late)))
        self._gid += 1
        for m in members:
            del self.pending[m.worker]
        self.inflight[g.group] = g
        self.late_merged += len(late) if len(members) > len(late) else 0
        return g

    def _drop(self, r: Request) -> list:
        del self.pending[r.worker]
        self.dropped.append(r)
        self.done[r.worker] += 1
        return [Drop(r), self._release(r.worker)]

    def _release(self, worker: int) -> Release:
        rel = Release(worker, self.done[worker], self.version, self.clock)
        self.reads[worker] = (rel.version, rel.clock)
        return rel

    def _check(self, worker: int) -> None:
        if not 0 <= worker < self.n:
            raise ValueError(f"worker {worker} is out of range 0..{self.n - 1}")
        if self.left[worker]:
            raise ValueError(f"worker {worker} already left")
