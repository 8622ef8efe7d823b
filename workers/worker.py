"""The training worker of every scheme, inside a Mininet host.

    python3 -m workers.worker CONFIG.json

CONFIG is JSON written by the testbed (testbed/scheme_app.py; fields: WorkerConfig). The
scheme enters only through its communicator (workers/communicator.py), loaded by the
dotted path the config names, so every scheme runs this one loop and is measured at the
same points.

Start: build the workload (seeded; the same on every worker), log worker_start, build the
communicator (connections, sockets), log comm_ready and worker_ready, then wait for the
start file: the testbed creates it once every worker is ready, so iteration 0 starts
everywhere together and no scheme's start-up is counted as its first iteration.

Each BSP iteration i, stamped at the same points for every scheme:
  iteration_start   before the gradient is computed
  compute_end       after the real numpy gradient and the sleep that pads the compute
                    phase to the time drawn from the compute-time model (stragglers and
                    time dilation included; no sleep if numpy took longer)
  first_send        just before the gradient is handed to the communicator
  last_result       when the communicator returns the sum over all workers
  iteration_end     t_end = after the update is applied (the model is ready for the next
                    iteration); evaluation on the test set and the verify check come after
                    t_end and are not part of any iteration's time
Training modes (WorkerConfig.training; workers/training_modes.py): in bsp the
communicator's allreduce returns the sum and the worker applies it. In ssp and asp the
server holds the model: the worker sends its initial model once (init_model, before the
start file), then per iteration pushes its gradient and gets back the newest model the
server releases (push_pull: first_send .. last_result covers the push, the wait at the SSP
gate and the pull), which it loads (t_end). Every iteration_end carries `update`: the
version and clock of the model the gradient was computed on, the version it was applied
to, its staleness and delay (bsp: the round, staleness and delay 0); `model_version` is
the version of the model the worker holds after it (the one evaluated).
Stop rules, the same for every scheme: `iterations` done, or `duration_s` (emulated
seconds, counted from the start file) passed. With a duration, each worker's "my time is
up" flag rides along as one extra value and is summed with the gradient, so all workers
stop after the same iteration (BSP: one worker leaving alone would hang the others).
SIGTERM ends the worker in order: worker_end {reason: terminated (SIGTERM)}, exit 0.
An exception: worker_error {error}, exit 1. Event fields: workers/events.py.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workers.communicator import Me
from workers.compute_time import WorkerIdentity, compute_sample
from workers.events import EventLog
from workers.training_modes import Applied, bsp_applied, mode_bound
from workers.workload import Workload, WorkloadSpec


@dataclass
class WorkerConfig:
    worker: str                    # node name (may carry a prefix)
    host_id: str                   # host id without prefix (straggler rules use it)
    index: int                     # rank among the job's workers: the gradient's shard
    n_workers: int
    dc: str
    ip: str
    seed: int
    events: str                    # event log path
    scheme: str
    communicator: str             # "module:Class", built as Class(comm, Me)
    comm: dict                     # what the scheme's plan wrote for this worker
    workload: dict                 # the scenario's workload section
    compute_index: int | None = None       # worker index in the scenario (compute-time model)
    compute_time: dict = field(default_factory=lambda: {"model": "constant", "value_ms": 0.0})
    stragglers: dict = field(default_factory=dict)
    compute_speed: float = 1.0
    dilation: float = 1.0
    iterations: int | None = None
    duration_s: float | None = None        # emulated seconds from the start file
    verify: bool = False                   # compare every sum with the exact float64 sum
    go_file: str | None = None             # start iteration 0 when this file exists
    go_timeout_s: float = 300.0
    training: dict = field(default_factory=lambda: {"mode": "bsp", "staleness": None})

    @classmethod
    def load(cls, path) -> "WorkerConfig":
        data = json.loads(Path(path).read_text())
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"{path}: unknown worker config field(s) {sorted(unknown)}")
        return cls(**data)


class Terminated(Exception):
    """SIGTERM arrived: the testbed stops the worker; it logs worker_end and exits 0."""


def on_sigterm(signum, frame):
    raise Terminated()


def load_communicator(path: str):
    """The class named "package.module:Class"."""
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"communicator {path!r} cannot be loaded ({e}); is the scheme's folder "
                         f"complete and registered in schemes/__init__.py?") from None


def wait_for_go(path: str | None, timeout_s: float, clock=time.monotonic) -> None:
    """Barrier: the testbed creates the file once every worker is ready."""
    if not path:
        return
    t0 = clock()
    while not Path(path).exists():
        if clock() - t0 > timeout_s:
            raise TimeoutError(f"start signal {path} did not appear within {timeout_s:.0f} s; "
                               "did the other workers fail to start? see their logs")
        time.sleep(0.01)


def float32_sha1(x: np.ndarray, block: int = 1 << 20) -> str:
    """sha1 of x's values as contiguous float32, converted a block at a time (a whole
    float32 copy of a tens-of-MB sum costs its page faults every iteration)."""
    h, x = hashlib.sha1(), np.asarray(x).reshape(-1)
    buf = np.empty(min(block, x.size), dtype=np.float32)
    for a in range(0, x.size, block):
        part = buf[:min(block, x.size - a)]
        np.copyto(part, x[a:a + block], casting="unsafe")
        h.update(part)
    return h.hexdigest()


def runqueue_wait_s(pid: str = "self") -> float | None:
    """Seconds this process waited for a CPU while runnable (Linux schedstat): tells a
    worker starved by a busy machine from one limited by the network."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def compute_phase(log, work, cfg: WorkerConfig, ident: WorkerIdentity, it: int, clock, sleep):
    """iteration_start, the real gradient, the sleep to the drawn compute time, compute_end.
    -> (float64 gradient, batch loss, straggler reasons, t_start, t_compute_end)."""
    t_start = log.log("iteration_start", iteration=it)["t"]
    sample = compute_sample(cfg.compute_time, cfg.stragglers, ident, it, cfg.seed, cfg.dilation)
    # BSP consumes the gradient within the iteration: one buffer serves every iteration
    grad, batch_loss = work.gradient(cfg.index, it, reuse=cfg.training.get("mode", "bsp") == "bsp")
    rest = t_start + sample.emulated_ms / 1000.0 - clock()
    if rest > 0:
        sleep(rest)
    t_comp = log.log("compute_end", iteration=it, compute_ms=sample.emulated_ms,
                     straggle_factor=sample.factor, reasons=list(sample.reasons))["t"]
    return grad, batch_loss, list(sample.reasons), t_start, t_comp


def synchronize(comm, grad: np.ndarray, it: int, time_up: bool | None):
    """The sum over workers, and whether any worker's time is up (None: no duration)."""
    if time_up is None:
        return comm.allreduce(grad, it), False
    total = comm.allreduce(np.append(grad, 1.0 if time_up else 0.0), it)
    return total[:-1], bool(total[-1] > 0.5)


def run(cfg: WorkerConfig, log: EventLog, make_comm=None, clock=time.monotonic,
        sleep=time.sleep) -> int:
    """The loop (module doc). make_comm(comm, me) defaults to the configured communicator."""
    t0 = clock()
    mode, bound = cfg.training.get("mode", "bsp"), cfg.training.get("staleness")
    mode_bound(mode, bound)             # a bad mode fails here, before any connection
    work = Workload(WorkloadSpec.from_scenario(cfg.workload), cfg.seed, cfg.n_workers)
    if mode != "bsp":                   # version 0 is the float32 model the server will hold
        work.load_model(work.model_vector())
    ident = WorkerIdentity(cfg.index if cfg.compute_index is None else cfg.compute_index,
                           cfg.host_id, cfg.dc, cfg.compute_speed)
    initial = work.test_metrics()       # before any update: the curve's starting point
    log.log("worker_start", index=cfg.index, pid=os.getpid(), scheme=cfg.scheme,
            parameters=work.size, model=work.spec.model, dataset=work.spec.dataset,
            preset=work.spec.preset, layers=len(work.layers), n_workers=cfg.n_workers,
            **{f"{k}_initial": v for k, v in initial.items()}, dilation=cfg.dilation,
            training={"mode": mode, "staleness": bound})
    make_comm = make_comm or load_communicator(cfg.communicator)
    comm = make_comm(cfg.comm, Me(cfg.worker, cfg.index, cfg.n_workers, cfg.ip, cfg.dilation))
    done, reason = 0, "finished"
    read = (0, 0)                       # (version, clock) of the model the next gradient sees
    try:
        if mode != "bsp":
            comm.init_model(work.model_vector())
        log.log("comm_ready", setup_s=clock() - t0, comm=comm.describe())
        log.log("worker_ready")
        wait_for_go(cfg.go_file, cfg.go_timeout_s, clock)
        t_go, cpu_at_go, wait_at_go = clock(), time.process_time(), runqueue_wait_s()
        grad_bytes = 4 * work.size      # float32 gradient values: what the job needs
        while cfg.iterations is None or done < cfg.iterations:
            it = done
            grad, batch_loss, reasons, t_start, t_comp = compute_phase(log, work, cfg, ident, it,
                                                                       clock, sleep)
            before = comm.counters()
            time_up = None if cfg.duration_s is None else clock() - t_go >= cfg.duration_s
            t_send = log.log("first_send", iteration=it)["t"]
            params = work.model.params   # apply() replaces it: the model the gradients saw
            if mode == "bsp":
                total, stop = synchronize(comm, grad, it, time_up)
                t_last = log.log("last_result", iteration=it)["t"]
                work.apply(total)
                update = bsp_applied(cfg.index, it)
            else:
                pulled = comm.push_pull(grad, it)
                t_last = log.log("last_result", iteration=it)["t"]
                work.load_model(pulled.model)
                total, stop = pulled.model, bool(time_up)
                # applied_at None: the update was not applied (mlfabric: dropped past its
                # maximum delay, or lost with a server that died): no update record
                update = None if pulled.applied_at is None else \
                    Applied(cfg.index, it, read[0], read[1], pulled.applied_at)
                read = (pulled.version, pulled.clock)
            t_end = clock()
            counts = comm.counters().minus(before)
            extra = {}
            if cfg.verify and mode == "bsp":   # every worker can rebuild every gradient (seeded)
                grads = work.all_gradients(it, params)
                exact = np.sum(grads, axis=0)
                extra = {"max_error": float(np.max(np.abs(np.asarray(total, np.float64) - exact))),
                         "error_bound": comm.error_bound(grads)}
            tested = work.test_metrics()   # loss, accuracy (and auc: sparse workload)
            log.log("iteration_end", iteration=it, t_start=t_start, t_end=t_end,
                    compute_s=t_comp - t_start, comm_s=t_last - t_send, gradient_bytes=grad_bytes,
                    **counts, batch_loss=batch_loss, **tested, stragglers=reasons,
                    result_sha1=float32_sha1(total),
                    comm_stats=comm.stats(), update=update.record() if update else None,
                    model_version=it + 1 if mode == "bsp" else read[0], **extra)
            done = it + 1
            if stop:
                reason = "duration reached"
                break
        # CPU seconds of this process since the start signal: shows when workers, not the
        # network, limit the rate (bench/ina.py)
        log.log("worker_end", iterations=done, reason=reason, elapsed_s=clock() - t0,
                cpu_s=time.process_time(), cpu_s_at_go=cpu_at_go,
                runqueue_wait_s=runqueue_wait_s(), runqueue_wait_s_at_go=wait_at_go)
        return 0
    except Terminated:
        log.log("worker_end", iterations=done, reason="terminated (SIGTERM)")
        return 0
    finally:
        comm.close()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python3 -m workers.worker CONFIG.json", file=sys.stderr)
        return 2
    try:
        cfg = WorkerConfig.load(argv[0])
    except (OSError, ValueError, TypeError) as e:
        print(f"error: cannot load worker config: {e}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, on_sigterm)   # the testbed stopping us is an orderly end
    log = EventLog(cfg.events, cfg.worker)
    try:
        return run(cfg, log)
    except Terminated:
        log.log("worker_end", reason="terminated (SIGTERM)")
        return 0
    except Exception as e:   # recorded, then the worker ends: the run reports it
        log.log("worker_error", error=f"{type(e).__name__}: {e}")
        traceback.print_exc()
        return 1
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
