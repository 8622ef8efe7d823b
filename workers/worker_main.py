"""A training worker for the TCP baseline schemes (ps, hier-ps, ring), inside a Mininet host.

    python3 -m workers.worker_main CONFIG.json

Each BSP iteration: compute (the workload's real gradient, padded to the compute-time
model's duration by sleeping: workers/iteration.py), then communicate (the scheme's
communicator sums the gradients of all workers), then apply the sum (workers/workload.py).
The same workload, compute-time and straggler models as the INA schemes, so schemes are
compared on identical inputs.

The communicator is chosen by `scheme` (`make_communicator`): anything with
`allreduce(float32 vector, iteration) -> summed vector`, `bytes_sent`, `bytes_received`,
`tcp_counters()` and `close()` plugs in (docs/adding-a-scheme.md).

Events: the schema of workers/events.py (shared with the INA worker): worker_start,
comm_ready {setup_s}, then per iteration iteration_start, compute_end, first_send,
last_result, iteration_end {t_start, t_end, compute_s, comm_s, gradient_bytes,
bytes_sent, bytes_received (framed payload), packets_sent, retransmissions (the
kernel's TCP segment counters, TCP_INFO), batch_loss, loss and accuracy (test set,
after the update), result_sha1, [max_error, error_bound]}; then worker_end or
worker_error. max_error / error_bound (with verify): the largest |sum - exact float64
sum| and the float32 recursive-summation bound gamma_W * max_j sum_i |g_ij|
(gamma_W = W u / (1 - W u), u = 2^-24; input rounding to float32 included).
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time

import numpy as np

from workers.compute_time import WorkerIdentity
from workers.events import EventLog
from workers.iteration import Terminated, compute_phase, on_sigterm
from workers.workload import Workload, WorkloadSpec


def make_communicator(scheme: str, comm: dict, rank: int, name: str):
    """The communicator of one worker. `comm` is what testbed/app_baselines.py planned."""
    timeout = float(comm.get("timeout_s", 60.0))
    connect_timeout = float(comm.get("connect_timeout_s", timeout))
    if scheme in ("ps", "hier-ps"):
        from workers.comm_ps import PSClient
        return PSClient([tuple(s) for s in comm["servers"]], comm.get("child_rank", rank),
                        timeout, connect_timeout, name)
    if scheme == "ring":
        from workers.comm_ring import RingCommunicator
        return RingCommunicator(comm["ring_rank"], comm["ring_size"], tuple(comm["listen"]),
                                tuple(comm["right"]), timeout, connect_timeout, name)
    raise ValueError(f"worker_main: no communicator for scheme {scheme!r} (known: ps, hier-ps, ring)")


U32 = 2.0 ** -24   # unit roundoff of float32


def float_sum_bound(grads: list[np.ndarray]) -> float:
    """Upper bound on max |float32 sum in any order - exact sum| for these float64 inputs,
    rounded to float32 first: gamma_W * max_j sum_i |g_ij| (Higham, recursive summation)."""
    w = len(grads)
    gamma = w * U32 / (1 - w * U32)
    return float(gamma * np.max(np.sum(np.abs(grads), axis=0)))


def run(cfg: dict, log) -> int:
    w, rank, n = cfg["worker"], cfg["index"], cfg["n_workers"]
    wl = Workload(WorkloadSpec.from_scenario(cfg["workload"]), cfg["seed"], n)
    ident = WorkerIdentity(cfg.get("compute_index", rank), cfg.get("host_id", w), cfg.get("dc", ""), cfg.get("compute_speed", 1.0))
    t0 = time.monotonic()
    log.log("worker_start", index=rank, pid=os.getpid(), scheme=cfg["scheme"], parameters=wl.size,
            n_workers=n)
    comm = make_communicator(cfg["scheme"], cfg["comm"], rank, w)
    log.log("comm_ready", setup_s=time.monotonic() - t0)
    it = 0
    try:
        stop, t_run = False, None
        while it < cfg["iterations"] and not stop:
            grad, batch_loss, sample, ts, tc = compute_phase(
                log, wl, rank, ident, it, cfg["compute_time"], cfg.get("stragglers"), cfg["seed"],
                cfg.get("dilation", 1.0))
            grad = grad.astype(np.float32)
            sent0, recv0 = comm.bytes_sent, comm.bytes_received
            segs0, retr0 = comm.tcp_counters()
            tf = log.log("first_send", iteration=it)["t"]
            if cfg.get("duration_s"):
                # BSP with a time limit: every worker must stop after the same iteration, so
                # the "my time is up" flags ride along as one extra value and are summed too
                # (counted from the end of iteration 0, the first moment all workers share:
                # process start-up times differ)
                up = float(t_run is not None and time.monotonic() - t_run >= cfg["duration_s"])
                total = comm.allreduce(np.append(grad, np.float32(up)), it)
                stop, total = bool(total[-1] > 0), total[:-1]
            else:
                total = comm.allreduce(grad, it)
            te = log.log("last_result", iteration=it)["t"]
            t_run = te if t_run is None else t_run
            segs1, retr1 = comm.tcp_counters()
            extra = {}
            if cfg.get("verify"):   # outside the timed span: every worker can rebuild the sum
                grads = [wl.gradient(k, it)[0] for k in range(n)]
                exact = np.sum(grads, axis=0)
                extra = {"max_error": float(np.max(np.abs(total.astype(np.float64) - exact))),
                         "error_bound": float_sum_bound(grads)}
            wl.apply(total)
            loss, acc = wl.evaluate()   # test set, after the update (as the INA worker)
            log.log("iteration_end", t=te, iteration=it, t_start=ts, t_end=te, compute_s=tc - ts,
                    comm_s=te - tf, gradient_bytes=grad.nbytes,
                    bytes_sent=comm.bytes_sent - sent0, bytes_received=comm.bytes_received - recv0,
                    packets_sent=segs1 - segs0, retransmissions=retr1 - retr0,
                    batch_loss=batch_loss, loss=loss, accuracy=acc, stragglers=list(sample.reasons),
                    result_sha1=hashlib.sha1(np.ascontiguousarray(total, dtype=np.float32)).hexdigest(),
                    **extra)
            it += 1
    finally:
        comm.close()
    log.log("worker_end", iterations=it, reason="duration reached" if stop else "finished",
            elapsed_s=time.monotonic() - t0)
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python3 -m workers.worker_main CONFIG.json", file=sys.stderr)
        return 2
    cfg = json.loads(open(argv[0]).read())
    log = EventLog(cfg["events"], cfg["worker"])
    signal.signal(signal.SIGTERM, on_sigterm)   # the app stopping us is an orderly end
    try:
        return run(cfg, log)
    except Terminated:
        log.log("worker_end", reason="terminated (SIGTERM)")
        return 0
    except Exception as e:   # recorded, then the worker ends: the run reports it
        log.log("worker_error", error=f"{type(e).__name__}: {e}")
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
