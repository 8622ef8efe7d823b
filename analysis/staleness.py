"""Staleness and delay of a run's updates, from the workers' event logs (pure).

Every worker logs, per iteration, the update it made (iteration_end.update: the version and
clock of the model its gradient was computed on, the version it was applied to;
workers/training_modes.py defines staleness = iteration - clock read, in clocks, <= s under
ssp, and delay = version applied - version read, in updates). This module turns them into
summary.json's "staleness" section and the series of `plot`'s staleness figure. Logs of
workers older than the training modes carry no update: the section is then None.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np


def update_records(events: dict[str, list[dict]]) -> list[dict]:
    """Every logged update, in the order the server applied them (bsp: by round, then worker)."""
    out = [e["update"] for es in events.values() for e in es
           if e.get("event") == "iteration_end" and isinstance(e.get("update"), dict)]
    return sorted(out, key=lambda u: (u["version_applied"], u["worker"]))


def training_mode(events: dict[str, list[dict]]) -> dict:
    """{mode, staleness} the workers ran (worker_start.training); bsp for older logs."""
    for es in events.values():
        for e in es:
            if e.get("event") == "worker_start" and isinstance(e.get("training"), dict):
                return {"mode": e["training"].get("mode", "bsp"), "staleness": e["training"].get("staleness")}
    return {"mode": "bsp", "staleness": None}


def distribution(values: Iterable[int]) -> dict:
    """count, mean, p50, p95, max and the histogram [[value, count], ...] of integer values
    (percentiles by nearest rank: values that occurred)."""
    v = np.asarray(list(values), dtype=np.int64)
    if v.size == 0:
        return {"count": 0, "mean": None, "p50": None, "p95": None, "max": None, "histogram": []}
    vals, counts = np.unique(v, return_counts=True)
    pct = lambda q: int(np.percentile(v, q, method="inverted_cdf"))
    return {"count": int(v.size), "mean": float(v.mean()), "p50": pct(50), "p95": pct(95),
            "max": int(v.max()), "histogram": [[int(a), int(b)] for a, b in zip(vals, counts)]}


def staleness_section(events: dict[str, list[dict]]) -> dict | None:
    """summary.json's "staleness": the mode and bound, how many updates, and the
    distributions of staleness (clocks) and delay (updates); None without update records."""
    recs = update_records(events)
    if not recs:
        return None
    t = training_mode(events)
    return {"mode": t["mode"], "bound": 0 if t["mode"] == "bsp" else t["staleness"],
            "updates": len(recs),
            "staleness": distribution(r["staleness"] for r in recs),
            "delay": distribution(r["delay"] for r in recs),
            "within_bound": None if t["mode"] == "asp" else
            all(r["staleness"] <= (t["staleness"] or 0) for r in recs)}


def mode_label(section: dict | None) -> str:
    """'bsp', 'ssp s=2', 'asp': how figures and tables name a run's mode."""
    if not section or section["mode"] == "bsp":
        return "bsp"
    return f"ssp s={section['bound']}" if section["mode"] == "ssp" else section["mode"]
