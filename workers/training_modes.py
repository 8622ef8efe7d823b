"""Training modes bsp / ssp / asp: the sans-I/O core of an asynchronous parameter server
(model versions, the SSP gate, the staleness log) and the update record every worker logs.

Pure: arrivals in, decisions out, no sockets and no clocks, so a hand-worked trace can be
checked without a network (tests/test_training_modes.py). The ps scheme's asynchronous
server (schemes/ps/async_server.py) feeds it the pushes and BYEs in the order it reads
them and sends the models it releases. docs/training-modes.md has the semantics.

Vocabulary:
  version    the model after k applied updates is version k. In ssp and asp every worker's
             gradient is one update, applied when it arrives; in bsp the round's sum is one
             update, so version c is the model after c rounds.
  clock      a worker's clock: how many of its updates were applied. The model's clock:
             the smallest clock over the workers still training, so the model holds every
             update of every iteration below it.
  gate       ssp with bound s (Ho et al. 2013): a worker may start iteration c only on a
             model whose clock is >= c - s, i.e. once the slowest worker completed clock
             c - s. asp: no gate. bsp is ssp with s = 0 (and the updates of a round summed).
  staleness  of the update of iteration c computed on a model of clock k: c - k, in
             clocks. The gate keeps it <= s; bsp has 0.
  delay      of an update read at version v and applied to version V: V - v, the updates
             applied in between (MLfabric's delay). With per-update versions it reaches
             N - 1 within one round even at s = 0, so the ssp bound is on staleness.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

MODES = ("bsp", "ssp", "asp")
ASYNC_MODES = ("ssp", "asp")


def mode_bound(mode: str, staleness: int | None) -> int | None:
    """The gate's bound in clocks: bsp 0, ssp s, asp None (no gate)."""
    if mode not in MODES:
        raise ValueError(f"training.mode: unknown mode {mode!r} (known: {', '.join(MODES)})")
    if mode == "bsp":
        return 0
    if mode == "asp":
        return None
    if staleness is None or staleness < 0:
        raise ValueError(f"training.staleness: ssp needs a bound >= 0 (got {staleness!r})")
    return int(staleness)


@dataclass(frozen=True)
class Applied:
    """One applied update: the staleness log's row, and what a worker logs per iteration."""
    worker: int
    iteration: int
    version_read: int      # the model version the gradient was computed on
    clock_read: int        # that model's clock
    version_applied: int   # the version the update was applied to (the model became +1)

    @property
    def staleness(self) -> int:
        return self.iteration - self.clock_read

    @property
    def delay(self) -> int:
        return self.version_applied - self.version_read

    def record(self) -> dict:
        """The `update` field of a worker's iteration_end event."""
        return {**asdict(self), "staleness": self.staleness, "delay": self.delay}


def bsp_applied(worker: int, iteration: int) -> Applied:
    """A bsp update: computed on the model after `iteration` rounds and applied, summed with
    the round's others, to that same version."""
    return Applied(worker, iteration, iteration, iteration, iteration)


@dataclass(frozen=True)
class Release:
    """`worker` may start `iteration` on the model of `version` (whose clock is `clock`)."""
    worker: int
    iteration: int
    version: int
    clock: int


class SspCore:
    """The bookkeeping of an asynchronous parameter server with N workers.

    Every worker starts iteration 0 on version 0. A worker pushes the update of its
    iteration c (push), then waits until the core releases it to start c + 1 on the
    newest model. bound: None for asp, s for ssp (0: bsp's schedule, per-arrival updates).
    A worker that leaves (leave) no longer holds the others back."""

    def __init__(self, workers: int, bound: int | None):
        if workers < 1:
            raise ValueError(f"an asynchronous server needs at least one worker (got {workers})")
        if bound is not None and bound < 0:
            raise ValueError(f"training.staleness: the bound must be >= 0 (got {bound})")
        self.n, self.bound = workers, bound
        self.version = 0
        self.done = [0] * workers                  # each worker's clock
        self.left = [False] * workers
        self.reads = [(0, 0)] * workers            # (version, clock) each worker computes on
        self.waiting: dict[int, int] = {}          # worker -> the iteration it waits to start
        self.log: list[Applied] = []

    @property
    def clock(self) -> int:
        """The model's clock: the smallest clock over the workers still training."""
        active = [d for d, gone in zip(self.done, self.left) if not gone]
        return min(active) if active else min(self.done)

    def may_start(self, iteration: int) -> bool:
        return self.bound is None or iteration - self.bound <= self.clock

    def push(self, worker: int, iteration: int) -> tuple[Applied, list[Release]]:
        """Apply `worker`'s update of `iteration` now: -> its log row and the workers
        released by it (possibly `worker` itself, for iteration + 1), in rank order."""
        self._check(worker)
        if worker in self.waiting:
            raise ValueError(f"worker {worker} pushed iteration {iteration} before it was released "
                             f"to start iteration {self.waiting[worker]}: protocol error")
        if iteration != self.done[worker]:
            raise ValueError(f"worker {worker} pushed iteration {iteration}, expected "
                             f"{self.done[worker]}: updates must arrive in iteration order")
        v, k = self.reads[worker]
        applied = Applied(worker, iteration, v, k, self.version)
        self.log.append(applied)
        self.version += 1
        self.done[worker] += 1
        self.waiting[worker] = iteration + 1
        return applied, self._release()

    def leave(self, worker: int) -> list[Release]:
        """`worker` ended (BYE): it stops counting in the model's clock; -> the releases."""
        self._check(worker)
        self.left[worker] = True
        self.waiting.pop(worker, None)
        return self._release()

    def _check(self, worker: int) -> None:
        if not 0 <= worker < self.n:
            raise ValueError(f"worker {worker} is out of range 0..{self.n - 1}")
        if self.left[worker]:
            raise ValueError(f"worker {worker} already left")

    def _release(self) -> list[Release]:
        out = []
        for w in sorted(self.waiting):
            c = self.waiting[w]
            if self.may_start(c):
                out.append(Release(w, c, self.version, self.clock))
        for r in out:
            del self.waiting[r.worker]
            self.reads[r.worker] = (r.version, r.clock)
        return out
