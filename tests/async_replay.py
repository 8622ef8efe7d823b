"""numpy's replay of an asynchronous ps run: the models of every version, rebuilt from the
update records the workers logged (iteration_end.update) in their applied order.

Every gradient is a pure function of (seed, worker, iteration, model), so the replay
recomputes each update on the model of the version it was read at and applies it with the
server's arithmetic (schemes/ps/async_server.py: float32, model -= float32(lr / N) * g).
A run is exact when its server's final model and every model a worker pulled have the
bits of the replay's model of that version."""
from __future__ import annotations

import hashlib

import numpy as np

from workers.workload import Workload, WorkloadSpec


def sha1(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a, np.float32)).hexdigest()


def update_records(events: dict[str, list[dict]]) -> list[dict]:
    return [e["update"] for es in events.values() for e in es if e["event"] == "iteration_end"]


def replay(workload: dict, seed: int, n_workers: int, records: list[dict]) -> list[np.ndarray]:
    """The float32 model of every version 0 .. len(records), in order."""
    work = Workload(WorkloadSpec.from_scenario(workload), seed, n_workers)
    model = work.model_vector()
    step = np.float32(work.spec.lr / n_workers)
    models = [model]
    for rec in sorted(records, key=lambda r: r["version_applied"]):
        assert rec["version_applied"] == len(models) - 1, "versions applied are not 0, 1, 2, ..."
        assert rec["version_read"] <= rec["version_applied"]
        work.load_model(models[rec["version_read"]])
        grad, _ = work.gradient(rec["worker"], rec["iteration"])
        model = model - step * grad.astype(np.float32)
        models.append(model)
    return models
