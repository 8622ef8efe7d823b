"""What the two worker loops share (workers/ina_worker.py, workers/worker_main.py): the
compute phase of a BSP iteration, so every scheme is compared on identical compute
times and gradients, and the orderly end on SIGTERM."""
from __future__ import annotations

import time

from workers.compute_time import WorkerIdentity, compute_sample


class Terminated(Exception):
    """SIGTERM arrived: the app stops the worker; it logs worker_end and exits 0."""


def on_sigterm(signum, frame):
    raise Terminated()


def compute_phase(log, work, worker: int, ident: WorkerIdentity, it: int, compute_time: dict,
                  stragglers: dict | None, seed: int, dilation: float):
    """Log iteration_start, compute `worker`'s real gradient, sleep until the time drawn
    from the compute-time model has passed (the numpy work counts towards it; if it took
    longer, no sleep), log compute_end. -> (gradient, batch loss, ComputeSample, t_start,
    t_compute_end)."""
    t_start = log.log("iteration_start", iteration=it)["t"]
    sample = compute_sample(compute_time, stragglers, ident, it, seed, dilation)
    grad, batch_loss = work.gradient(worker, it)
    rest = t_start + sample.emulated_ms / 1000.0 - time.monotonic()
    if rest > 0:
        time.sleep(rest)
    t_comp = log.log("compute_end", iteration=it, compute_ms=sample.emulated_ms,
                     straggle_factor=sample.factor, reasons=list(sample.reasons))["t"]
    return grad, batch_loss, sample, t_start, t_comp
