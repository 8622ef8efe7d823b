"""Per-worker event logs (JSON lines) and what the testbed computes from them.

Every line is one event: {"event": name, "t": CLOCK_MONOTONIC seconds, "worker": id, ...}.
CLOCK_MONOTONIC (Python's time.monotonic()) is shared by all network namespaces of
the machine, so events of different hosts can be put on one time line.

Events a worker writes (workers/worker.py, the one loop of every scheme, which says where
each is stamped), once at the start:
  worker_start     {index, pid, scheme, parameters, model, dataset, preset (synthetic
                    layer structure or null), layers (tensors in the gradient), n_workers,
                    loss_initial, accuracy_initial (the model before training; the
                    sparse workload also auc_initial), dilation}
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
                    (test set, after the update; the sparse workload also auc), stragglers, result_sha1, comm_stats
                    {scheme-specific: INA's srtt_s, rto_s, cwnd, ...}, [max_error, error_bound]}
and once at the end: worker_end {iterations, reason: finished | duration reached |
terminated (SIGTERM), elapsed_s, cpu_s, ...} or worker_error {error}.

What these events measure (iteration, compute and communication time, goodput, the
warm-up rule, real-world units) is defined once, in analysis/measure.py.
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
