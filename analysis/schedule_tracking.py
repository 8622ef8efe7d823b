"""Does goodput follow bandwidth? A run under a bandwidth schedule, cut into the
schedule's steps as applied: per step the settled measured goodput beside the model's
goodput for that step's rates, and whether the measurement tracks the model (pure).

Inputs are plain data: the workers' events, the records of bandwidth_events.jsonl (one
per WAN edge and change, as testbed/lifecycle.py's ScheduleDriver applied it: `t` the
emulated CLOCK_MONOTONIC time after the change, `t_s` the scheduled time, `edge` "u-v",
`mbps` the emulated rate), every WAN edge's configured (real-world) rate, the time
dilation s and, for the model, a function of a step's real-world rates (RunData passes
schemes/model_schedule.predict_at's goodputs).

Steps. The changes made for one scheduled time (every edge, or every direction of a
per-direction schedule, of a schedule point) make one step, from the last of them to the next step's first change; the step before the first
change has the configured rates. Steps that ended before the job's first iteration are
left out; the others are numbered from 0.

Settling (the decision): a step's settled iterations are the steady (not warm-up),
complete job iterations that start at or after the step's change and end before the next
change, less the first SETTLE_ITERATIONS (= 1) of them when the change came during the job
(after the first iteration's start). An iteration that straddles a change ran at two
rates; the first one after a change runs with TCP congestion windows (and INA windows)
sized for the old rate and queues holding the old rate's backlog. The first step and a
step whose change came before the job's start need no settling beyond the warm-up.
A step with no settled iteration has no measured goodput and does not count.

Measured, per step, over its settled iterations, as analysis/measure.py defines the row's
columns: goodput (`goodput_mbps`: per worker 8 x useful bytes / communication time, summed
over the iterations, mean over workers) and job goodput (8 x all workers' useful bytes /
first settled start to last settled end).

Tracking within TOLERANCE (= 15%), the criterion: with r_k = measured goodput / model
goodput of step k over the steps that have both, and m the median of the r_k, goodput
tracks when every |r_k / m - 1| <= TOLERANCE: the measurement follows the model's step
by step up to one common factor (proportional tracking), so a scheme whose absolute
measured/model ratio is off (implementation slack being fixed elsewhere) still shows
whether its goodput follows the rate. Fewer than two such steps: cannot tell (None).
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from analysis import measure
from analysis import metrics as M
from topologies.schedule import apply_change

TOLERANCE = 0.15
SETTLE_ITERATIONS = 1

# a step's real-world rates {edge: Mbps} -> (model goodput, model job goodput), Mbps
ModelFn = Callable[[Mapping[str, float]], tuple[float, float]]


def applied_steps(changes: Sequence[dict], initial_mbps: Mapping[str, float],
                  dilation: float = 1.0) -> list[dict]:
    """The schedule's steps as applied: [{t_start, t_end (emulated monotonic s; None: open),
    rates_mbps (every WAN edge "u-v", or its two directions "u>v" once a change record with
    `src` has set one direction: topologies.schedule.apply_change; real-world)}], the first
    step (configured rates) from None. [] when nothing changed (no schedule)."""
    s = float(dilation)
    groups: dict = {}
    for c in changes:
        key = c.get("t_s", c["t"])
        groups.setdefault(key, []).append(c)
    if not groups:
        return []
    rates = {k: float(v) for k, v in initial_mbps.items()}
    steps = [{"t_start": None, "t_end": None, "rates_mbps": dict(rates)}]
    for key in sorted(groups):
        cs = groups[key]
        for c in cs:
            apply_change(rates, c["edge"], float(c["mbps"]) * s, c.get("src"))
        steps[-1]["t_end"] = min(float(c["t"]) for c in cs)
        steps.append({"t_start": max(float(c["t"]) for c in cs), "t_end": None, "rates_mbps": dict(rates)})
    return steps


def _ratio(a, b):
    return None if a is None or b is None or not b > 0 else a / b


def goodput_tracking(events: Mapping[str, Sequence[dict]], changes: Sequence[dict],
                     initial_mbps: Mapping[str, float], dilation: float = 1.0,
                     model: ModelFn | None = None, tolerance: float = TOLERANCE) -> dict:
    """Per schedule step: settled measured goodput, the model's, their ratio; and whether
    goodput tracks the model within `tolerance` (module docstring). Returns
    {tolerance, settle_iterations, steps: [{step, t_start_s, t_end_s (real s since the job's
    first start; None: before the job / open), bottleneck_mbps, rates_mbps, iterations
    (settled iteration numbers), measured_goodput_mbps, measured_job_goodput_mbps,
    model_goodput_mbps, model_job_goodput_mbps, measured_over_model, relative (ratio /
    median), within}], median_ratio, tracks (True/False/None), reason}."""
    s = float(dilation)
    out = {"tolerance": tolerance, "settle_iterations": SETTLE_ITERATIONS, "steps": [],
           "median_ratio": None, "tracks": None, "reason": ""}
    steps = applied_steps(changes, initial_mbps, s)
    if not steps:
        out["reason"] = "no bandwidth schedule in this run (no bandwidth change was applied)"
        return out
    recs = measure.records(events)
    if not recs:
        out["reason"] = "no iteration in this run"
        return out
    t0 = min(r.t_start for r in recs)
    jobs = [(i, a, b) for i, a, b in M.job_iterations(recs, events.keys()) if measure.steady(i)]
    # a step that ended before the job's first start saw no iteration: not a step of the job
    steps = [st for st in steps if st["t_end"] is None or st["t_end"] > t0]
    for k, st in enumerate(steps):
        lo = -np.inf if st["t_start"] is None else st["t_start"]
        hi = np.inf if st["t_end"] is None else st["t_end"]
        inside = [i for i, a, b in jobs if a >= lo and b <= hi]
        if st["t_start"] is not None and st["t_start"] > t0:
            inside = inside[SETTLE_ITERATIONS:]
        chosen = set(inside)
        rs = [r for r in recs if r.iteration in chosen]
        per_worker = []
        for w in events:
            mine = [r for r in rs if r.worker == w and r.comm_s is not None]
            c = sum(r.comm_s for r in mine)
            if mine and c > 0:
                per_worker.append(8.0 * sum(r.bytes for r in mine) / c * s / 1e6)
        good = float(np.mean(per_worker)) if per_worker else None
        span = (max(r.t_end for r in rs) - min(r.t_start for r in rs)) if rs else 0.0
        job = 8.0 * sum(r.bytes for r in rs) / span * s / 1e6 if span > 0 else None
        mg, mj = model(st["rates_mbps"]) if model is not None else (None, None)
        out["steps"].append({
            "step": k,
            "t_start_s": None if st["t_start"] is None or st["t_start"] <= t0 else (st["t_start"] - t0) / s,
            "t_end_s": None if st["t_end"] is None else (st["t_end"] - t0) / s,
            "bottleneck_mbps": min(st["rates_mbps"].values()) if st["rates_mbps"] else None,
            "rates_mbps": st["rates_mbps"], "iterations": sorted(chosen),
            "measured_goodput_mbps": good, "measured_job_goodput_mbps": job,
            "model_goodput_mbps": mg, "model_job_goodput_mbps": mj,
            "measured_over_model": _ratio(good, mg), "relative": None, "within": None})
    ratios = [x["measured_over_model"] for x in out["steps"] if x["measured_over_model"] is not None]
    if model is None:
        out["reason"] = "no model for this run's scheme"
        return out
    if len(ratios) < 2:
        out["reason"] = (f"{len(ratios)} step(s) with a settled iteration; tracking needs two "
                         f"(steps too short for this scheme's iterations?)")
        return out
    med = float(np.median(ratios))
    out["median_ratio"] = med
    for x in out["steps"]:
        if x["measured_over_model"] is not None:
            x["relative"] = x["measured_over_model"] / med
            x["within"] = abs(x["relative"] - 1.0) <= tolerance
    out["tracks"] = all(x["within"] for x in out["steps"] if x["within"] is not None)
    bad = [x["step"] for x in out["steps"] if x["within"] is False]
    out["reason"] = (f"every settled step within {tolerance:.0%} of the median measured/model ratio"
                     if out["tracks"] else f"step(s) {', '.join(map(str, bad))} outside {tolerance:.0%} "
                     f"of the median measured/model ratio")
    return out


def model_series(tracking: dict, end_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The model's job goodput per step as step points (real s since the job's start,
    Mbps) from 0 to end_s, for the goodput-over-time figure. Empty without a model."""
    pts = [(x["t_start_s"] or 0.0, x["model_job_goodput_mbps"]) for x in tracking.get("steps", [])
           if x["model_job_goodput_mbps"] is not None and (x["t_start_s"] or 0.0) < end_s]
    if not pts:
        return np.array([]), np.array([])
    # steps that began before the job: the last of them holds at 0
    before = [p for p in pts if p[0] <= 0.0]
    pts = ([(0.0, before[-1][1])] if before else []) + [p for p in pts if p[0] > 0.0]
    return np.array([p[0] for p in pts] + [end_s]), np.array([p[1] for p in pts] + [pts[-1][1]])
