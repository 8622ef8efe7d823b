"""Per-worker event logs (JSON lines) and what the testbed computes from them.

Every line is one event: {"event": name, "t": CLOCK_MONOTONIC seconds, "worker": id, ...}.
CLOCK_MONOTONIC (Python's time.monotonic()) is shared by all network namespaces of
the machine, so events of different hosts can be put on one time line.

Events a worker writes (workers/worker.py, the one loop of every scheme, which says where
each is stamped), once at the start:
  worker_start     {index, pid, scheme, parameters, model, n_workers, loss_initial,
                    accuracy_initial (the model before training), dilation}
  comm_ready       {setup_s, comm: {the communicator's fixed facts}}
  worker_ready     (then the worker waits for the start file)
per iteration i:
  iteration_start  {iteration}
  compute_end      {iteration, compute_ms (emulated, drawn), straggle_factor, reasons}
  first_send       {iteration}                the gradient is handed to the communicator
  last_result      {iteration}                the communicator returned the sum
  iteration_end    {iteration, t_start, t_end (after the update is applied), compute_s,
                    comm_s (first_send -> last_result), gradient_bytes (4 x parameters),
                    bytes_sent, bytes_received, packets_sent, retransmissions (this
                    iteration's, workers.communicator.Counters), batch_loss, loss, accuracy
                    (test set, after the update), stragglers, result_sha1, comm_stats
                    {scheme-specific: INA's srtt_s, rto_s, cwnd, ...}, [max_error, error_bound]}
and once at the end: worker_end {iterations, reason: finished | duration reached |
terminated (SIGTERM), elapsed_s, cpu_s, ...} or worker_error {error}.

Metrics (emulated seconds; divide times / multiply rates by the time dilation s for the
real world, see testbed/dilation.py):
  iteration time     t_end - t_start of an iteration
  compute time       iteration_start -> compute_end
  communication time first_send -> last_result
  goodput            useful gradient bytes (4 bytes per float32 parameter, padding and
                     headers and retransmissions excluded) / communication time
  iteration goodput  the same bytes / iteration time
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np


class EventLog:
    """Append-only JSON-lines writer; each line is flushed so a killed worker leaves
    whole lines behind (a torn last line is skipped by read_events)."""

    def __init__(self, path, worker: str, clock=time.monotonic):
        self.path, self.worker, self.clock = Path(path), worker, clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", buffering=1)

    def log(self, event: str, **fields) -> dict:
        rec = {"event": event, "t": self.clock(), "worker": self.worker}
        rec.update({k: _plain(v) for k, v in fields.items()})
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()
        return rec

    def close(self) -> None:
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _plain(v):
    """numpy scalars and arrays -> JSON types."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def read_events(path) -> list[dict]:
    """Events of one worker (or any JSON-lines file); a torn last line is skipped."""
    out = []
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue          # torn last line of a killed worker
    return out


# ---------------------------------------------------------------- summaries (pure)
def iterations(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("event") == "iteration_end"]


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def summarize_worker(events: list[dict]) -> dict:
    """Per-worker totals and means over its completed iterations (emulated time)."""
    its = iterations(events)
    if not its:
        err = next((e.get("error") for e in events if e.get("event") == "worker_error"), None)
        return {"iterations": 0, "error": err}
    comm = sum(e["comm_s"] for e in its)
    grad = sum(e["gradient_bytes"] for e in its)
    it_time = sum(e["t_end"] - e["t_start"] for e in its)
    errs = [e for e in its if e.get("max_error") is not None]
    last = its[-1]
    return {
        "iterations": len(its),
        "mean_iteration_s": it_time / len(its),
        "mean_compute_s": _mean([e["compute_s"] for e in its]),
        "mean_comm_s": comm / len(its),
        "goodput_bytes_per_s": grad / comm if comm > 0 else None,
        "iteration_goodput_bytes_per_s": grad / it_time if it_time > 0 else None,
        "gradient_bytes": grad,
        "bytes_sent": sum(e["bytes_sent"] for e in its),
        "bytes_received": sum(e["bytes_received"] for e in its),
        "packets_sent": sum(e["packets_sent"] for e in its),
        "retransmissions": sum(e["retransmissions"] for e in its),
        "duplicate_results": sum(e.get("duplicate_results", 0) for e in its),
        "loss_first": its[0].get("loss"), "loss_last": last.get("loss"),
        "accuracy_first": its[0].get("accuracy"), "accuracy_last": last.get("accuracy"),
        "max_error": max((e["max_error"] for e in errs), default=None),
        "within_bound": all(e["max_error"] <= e["error_bound"] for e in errs) if errs else None,
        "error": next((e.get("error") for e in events if e.get("event") == "worker_error"), None),
    }


def summarize_job(per_worker: dict[str, list[dict]], dilation: float = 1.0) -> dict:
    """The job's summary: per-worker summaries, BSP iteration times (the slowest worker's
    end minus the earliest start of that iteration), goodput, accuracy curve; times also
    in real-world seconds and rates in real-world bytes/s (time dilation s)."""
    workers = {w: summarize_worker(ev) for w, ev in per_worker.items()}
    by_it: dict[int, list[dict]] = {}
    for ev in per_worker.values():
        for e in iterations(ev):
            by_it.setdefault(e["iteration"], []).append(e)
    n = len(per_worker)
    complete = sorted(i for i, es in by_it.items() if len(es) == n)
    job_its = []
    for i in complete:
        es = by_it[i]
        t = max(e["t_end"] for e in es) - min(e["t_start"] for e in es)
        job_its.append({"iteration": i, "time_s": t,
                        "max_compute_s": max(e["compute_s"] for e in es),
                        "max_comm_s": max(e["comm_s"] for e in es),
                        "retransmissions": sum(e["retransmissions"] for e in es),
                        "accuracy": es[0].get("accuracy"), "loss": es[0].get("loss"),
                        "t_end": max(e["t_end"] for e in es)})
    good = [w["goodput_bytes_per_s"] for w in workers.values() if w.get("goodput_bytes_per_s")]
    start = next((e for ev in per_worker.values() for e in ev if e.get("event") == "worker_start"), {})
    mean_it = _mean([j["time_s"] for j in job_its])
    s = float(dilation)
    out = {
        "workers": workers,
        "iterations_completed": len(complete),
        "iteration_time_s": {"mean": mean_it,
                             "min": min((j["time_s"] for j in job_its), default=None),
                             "max": max((j["time_s"] for j in job_its), default=None)},
        "goodput_bytes_per_s_per_worker": {"mean": _mean(good), "min": min(good, default=None)},
        "retransmissions": sum(w.get("retransmissions", 0) for w in workers.values()),
        "packets_sent": sum(w.get("packets_sent", 0) for w in workers.values()),
        "accuracy_initial": start.get("accuracy_initial"), "loss_initial": start.get("loss_initial"),
        "accuracy": [j["accuracy"] for j in job_its],
        "loss": [j["loss"] for j in job_its],
        "per_iteration": job_its,
        "within_quantization_bound": _all_known(w.get("within_bound") for w in workers.values()),
        "max_error": max((w["max_error"] for w in workers.values() if w.get("max_error") is not None),
                         default=None),
        "time_dilation": s,
        "real": {"mean_iteration_s": mean_it / s if mean_it is not None else None,
                 "goodput_mbps_per_worker": _mean(good) * 8 * s / 1e6 if good else None},
    }
    out["retransmission_rate"] = out["retransmissions"] / out["packets_sent"] if out["packets_sent"] else None
    return out


def _all_known(vals):
    vals = [v for v in vals if v is not None]
    return all(vals) if vals else None
