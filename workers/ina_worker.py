"""A training worker that synchronizes gradients through aggregating switches.

    python3 -m workers.ina_worker --config FILE

Runs in a Mininet host. FILE is JSON written by testbed/app_ina.py (see WorkerConfig).
Per iteration (BSP):
  1. compute: the real numpy gradient on this worker's shard, and a sleep so that the
     compute phase lasts the time drawn from the compute-time model (stragglers and time
     dilation included; if numpy took longer, no sleep);
  2. quantize with the exponent every worker derives from the agreed clipping bound and
     the number of workers (no overflow, workers/quantize.py);
  3. aggregate through the switches with the UDP driver (workers/ina_udp.py: window,
     adaptive timeouts, retransmissions);
  4. dequantize; optionally compare with the float reference (every worker can
     regenerate every other worker's gradient because the inputs are seeded) and log
     the max error against the quantization bound;
  5. apply the update (identical on every worker), evaluate loss and accuracy, log events.
SIGTERM ends the worker cleanly: it logs worker_end and closes its socket.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from workers.iteration import Terminated, compute_phase, on_sigterm


@dataclass
class WorkerConfig:
    worker: str                    # node name (may carry a prefix)
    index: int                     # global worker index
    host_id: str                   # host id without prefix (straggler rules use it)
    dc: str
    ip: str
    n_workers: int
    seed: int
    events: str                    # event log path
    client: dict                   # workers.ina_client.ClientConfig fields
    workload: dict                 # the scenario's workload section
    compute_time: dict = field(default_factory=lambda: {"model": "constant", "value_ms": 0.0})
    stragglers: dict = field(default_factory=dict)
    compute_speed: float = 1.0
    dilation: float = 1.0
    iterations: int | None = None
    duration_s: float | None = None        # emulated seconds
    clip: float = 4.0
    check: bool = False                    # compare every sum with the float reference
    go_file: str | None = None             # start iteration 0 when this file exists
    go_timeout_s: float = 120.0
    aggregate_timeout_s: float | None = None
    rto_margin_s: float | None = None      # RTO >= SRTT + this (None: the estimator's 1 ms)

    @classmethod
    def load(cls, path) -> "WorkerConfig":
        data = json.loads(Path(path).read_text())
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{path}: unknown worker config field(s) {sorted(unknown)}")
        return cls(**data)


def wait_for_go(path: str | None, timeout_s: float) -> None:
    """Barrier: the app creates the file once every worker is ready, so all workers
    start iteration 0 together (no retransmission storm from slow start-ups)."""
    if not path:
        return
    t0 = time.monotonic()
    while not Path(path).exists():
        if time.monotonic() - t0 > timeout_s:
            raise TimeoutError(f"start signal {path} did not appear within {timeout_s:.0f} s; "
                               "did the other workers fail to start? see their logs")
        time.sleep(0.01)


def runqueue_wait_s(pid: str = "self") -> float | None:
    """Seconds this process waited for a CPU while runnable (Linux schedstat): tells a
    worker starved by a busy machine from one limited by the network."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def run(cfg: WorkerConfig) -> int:
    import numpy as np

    from workers import ina_udp, quantize
    from workers.compute_time import WorkerIdentity
    from workers.events import EventLog
    from workers.ina_client import ClientConfig, InaClient
    from workers.workload import Workload, WorkloadSpec

    log = EventLog(cfg.events, cfg.worker)
    sock = None
    done_its = 0
    reason = "finished"
    try:
        work = Workload(WorkloadSpec.from_scenario(cfg.workload, clip=cfg.clip), cfg.seed, cfg.n_workers)
        client = InaClient(ClientConfig(**cfg.client))
        if cfg.rto_margin_s is not None:
            # RFC 6298's clock granularity G is the RTO's floor above SRTT. Result times of
            # a steady stream vary so little that 4 x RTTVAR decays to ~0 and RTO hugs SRTT;
            # then a few ms of switch queueing times out the whole window. A margin of
            # scheduling-noise size (tens of ms on a shared machine) keeps RTO above it.
            client.rtt.granularity = cfg.rto_margin_s
        ident = WorkerIdentity(cfg.index, cfg.host_id, cfg.dc, cfg.compute_speed)
        exponent = quantize.choose_exponent(cfg.clip, cfg.n_workers)
        bound = quantize.sum_error_bound(exponent, cfg.n_workers)
        sock = ina_udp.open_socket(cfg.ip)
        grad_bytes = 4 * work.size          # float32 gradient values: what the job needs
        loss0, acc0 = work.evaluate()       # before any update: the curve's starting point
        log.log("worker_start", index=cfg.index, parameters=work.size, model=work.spec.model,
                loss_initial=loss0, accuracy_initial=acc0,
                k=client.cfg.k, window=client.cfg.window, agg_ip=client.cfg.agg_ip,
                exponent=exponent, error_bound=bound, dilation=cfg.dilation)
        log.log("worker_ready")
        wait_for_go(cfg.go_file, cfg.go_timeout_s)
        t_run, cpu_at_go, wait_at_go = time.monotonic(), time.process_time(), runqueue_wait_s()
        it = 0
        while cfg.iterations is None or it < cfg.iterations:
            if cfg.duration_s is not None and time.monotonic() - t_run >= cfg.duration_s:
                reason = "duration reached"
                break
            grad, batch_loss, _, t_start, t_comp = compute_phase(
                log, work, cfg.index, ident, it, cfg.compute_time, cfg.stragglers, cfg.seed,
                cfg.dilation)
            q, saturated = quantize.quantize(grad, exponent, cfg.n_workers)
            before = (client.stats.sent, client.stats.retransmissions, client.stats.bytes_sent,
                      client.stats.bytes_received, client.stats.duplicate_results)
            t_send = log.log("first_send", iteration=it)["t"]
            total = ina_udp.aggregate(sock, client, q, exponent=exponent, overflow=saturated,
                                      timeout_s=cfg.aggregate_timeout_s)
            t_last = log.log("last_result", iteration=it)["t"]
            summed = quantize.dequantize(total, exponent)
            extra = {}
            if cfg.check:
                err = float(np.max(np.abs(summed - work.reference_sum(it))))
                extra = {"max_error": err, "error_bound": bound}
            work.apply(summed)
            loss, acc = work.evaluate()
            s = client.stats
            log.log("iteration_end", iteration=it, t_start=t_start, t_end=time.monotonic(),
                    compute_s=t_comp - t_start, comm_s=t_last - t_send, gradient_bytes=grad_bytes,
                    packets_sent=s.sent - before[0], retransmissions=s.retransmissions - before[1],
                    bytes_sent=s.bytes_sent - before[2], bytes_received=s.bytes_received - before[3],
                    duplicate_results=s.duplicate_results - before[4], overflow=client.overflow,
                    batch_loss=batch_loss, loss=loss, accuracy=acc, srtt_s=client.rtt.srtt,
                    rto_s=client.rtt.rto, cwnd=client.cc.cwnd,
                    cwnd_decreases=client.stats.cwnd_decreases,
                    cwnd_undos=client.stats.cwnd_undos, **extra)
            done_its = it = it + 1
        # CPU seconds of this process since the start signal: shows when workers, not the
        # network, limit the rate (bench/ina.py)
        log.log("worker_end", iterations=done_its, reason=reason, cpu_s=time.process_time(),
                cpu_s_at_go=cpu_at_go, runqueue_wait_s=runqueue_wait_s(),
                runqueue_wait_s_at_go=wait_at_go)
        return 0
    except Terminated:
        log.log("worker_end", iterations=done_its, reason="terminated (SIGTERM)")
        return 0
    except Exception as e:
        log.log("worker_error", error=f"{type(e).__name__}: {e}", iterations=done_its)
        traceback.print_exc()
        return 1
    finally:
        if sock is not None:
            sock.close()
        log.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m workers.ina_worker",
                                description="INA training worker (run inside a Mininet host)")
    p.add_argument("--config", required=True, help="worker config JSON (written by testbed/app_ina.py)")
    a = p.parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        cfg = WorkerConfig.load(a.config)
    except (OSError, ValueError, TypeError) as e:
        print(f"error: cannot load worker config: {e}", file=sys.stderr)
        return 2
    return run(cfg)


if __name__ == "__main__":
    sys.exit(main())
