"""What the worker loop (workers/worker.py) asks of a scheme's communicator.

A communicator is the worker side of a synchronization scheme. It lives in the scheme's
folder (`schemes/<name>/communicator.py`); the worker loads it by the dotted path its
config names ("schemes.ps.communicator:PSCommunicator"), so this room never imports a
scheme. The class is built as `Cls(comm, me)`: `comm` is the per-worker dict the
scheme's plan wrote, `me` the worker's identity (`Me`).

    allreduce(grad, iteration) -> sum     grad: float64 gradient of this worker (the
                                          communicator picks its wire type: float32 for
                                          TCP schemes, quantized int32 for INA); the
                                          result: the sum over all workers, the same on
                                          every worker
    counters() -> Counters                cumulative since construction
    stats() -> dict                       scheme-specific diagnostics, called once per
                                          iteration and logged as iteration_end.comm_stats
                                          ({} if none); counts in it are this iteration's
    describe() -> dict                    fixed facts, logged once in comm_ready
    error_bound(grads) -> float           max |result - exact float64 sum| the scheme
                                          guarantees for these inputs (verify mode)
    close()

`CommunicatorBase` gives the optional ones their defaults.

In the asynchronous training modes (ssp, asp: workers/training_modes.py) there is no sum:
the server holds the model, applies each worker's gradient when it arrives and releases
the newest model. A communicator for them offers, instead of allreduce:

    init_model(model)                     the initial model (float32), once, before the start
    push_pull(grad, iteration) -> Pulled  push this iteration's gradient, wait until the
                                          server releases the model for iteration + 1
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

U32 = 2.0 ** -24   # unit roundoff of float32


@dataclass(frozen=True)
class Me:
    """The worker a communicator serves."""
    name: str              # node name (with prefix)
    rank: int              # position among the job's workers, 0..n_workers-1
    n_workers: int
    ip: str
    dilation: float = 1.0  # time dilation s: real-world timeouts x s


@dataclass(frozen=True)
class Counters:
    """Cumulative traffic of one worker's communicator.

    bytes_sent / bytes_received: bytes handed to / taken from the sockets (payload with
    its framing or aggregation header; INA's re-sent packets count, the kernel's TCP
    retransmissions do not). packets_sent: TCP segments or UDP datagrams sent.
    retransmissions: TCP segments the kernel re-sent, or INA packets the worker re-sent."""
    bytes_sent: int = 0
    bytes_received: int = 0
    packets_sent: int = 0
    retransmissions: int = 0

    def minus(self, before: "Counters") -> dict:
        return {k: getattr(self, k) - getattr(before, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Pulled:
    """What an asynchronous server released to a worker after its push."""
    model: np.ndarray      # float32: the newest model
    version: int           # its version (updates applied)
    clock: int             # its clock (workers/training_modes.py)
    applied_at: int | None   # the version the pushed update was applied to (None: it was
                             # not applied: dropped, or lost with a failed server)


def float_sum_bound(grads: list[np.ndarray]) -> float:
    """Upper bound on max |float32 sum in any order - exact sum| for these float64 inputs,
    rounded to float32 first: gamma_W * max_j sum_i |g_ij| (Higham, recursive summation:
    W - 1 additions plus the rounding of the inputs; gamma_W = W u / (1 - W u))."""
    w = len(grads)
    gamma = w * U32 / (1 - w * U32)
    return float(gamma * np.max(np.sum(np.abs(grads), axis=0)))


class CommunicatorBase:
    """Defaults for the optional parts of the interface."""

    def stats(self) -> dict:
        return {}

    def describe(self) -> dict:
        return {}

    def error_bound(self, grads: list[np.ndarray]) -> float:
        return float_sum_bound(grads)

    def close(self) -> None:
        pass
