"""Building blocks of the measurement pipeline: event logs -> iteration records, link
counters -> byte counts, time series for figures, statistics over repetitions.

The metrics themselves (what a table row, summary.json, a speedup or a benchmark reports,
with the warm-up rule and the conversion to real-world units) are defined in one place,
analysis/measure.py; nothing here drops warm-up iterations or knows about time dilation.

Inputs are the formats of a results folder (testbed/results.py): per-worker events (dicts
from JSON lines; times are CLOCK_MONOTONIC seconds of the *emulation*) and counters.csv
rows (testbed/counters.py).

Events read (the schema of workers/events.py; other events and fields are ignored):
  iteration_start  {t, worker, iteration}
  compute_end      {t, worker, iteration}         end of the compute phase
  iteration_end    {t | t_end, worker, iteration, t_start?, gradient_bytes (or bytes),
                    compute_s?, comm_s?, retransmissions? (or retransmits), bytes_sent?,
                    packets_sent?, loss?, accuracy?, auc?, max_error?, error_bound?,
                    comm_stats? {duplicate_results?, ...} (older INA logs: top level)}
  eval             {t, iteration?, accuracy}       optional: accuracy measured off the
                                                   iteration path
`gradient_bytes` is the number of useful gradient bytes the worker synchronized in that
iteration (parameters x 4 for float32), not the bytes it put on the wire.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np


@dataclass(frozen=True)
class IterationRecord:
    """One iteration of one worker (emulated seconds)."""
    worker: str
    iteration: int
    t_start: float
    t_end: float
    compute_s: float | None       # None when the log does not say
    bytes: int                    # useful gradient bytes
    retransmissions: int
    comm_logged_s: float | None = None   # the log's comm_s, when it has one
    bytes_sent: int = 0                  # bytes handed to the sockets (framing included)
    packets_sent: int = 0
    duplicate_results: int = 0           # INA: results received again (comm_stats)
    loss: float | None = None            # test loss after the update
    accuracy: float | None = None        # test accuracy after the update
    max_error: float | None = None       # verify: |sum - float64 reference|, and its bound
    error_bound: float | None = None
    auc: float | None = None             # test AUC after the update (binary workloads)

    @property
    def iteration_s(self) -> float:
        return self.t_end - self.t_start

    @property
    def comm_s(self) -> float | None:
        if self.comm_logged_s is not None:
            return self.comm_logged_s
        return None if self.compute_s is None else max(0.0, self.iteration_s - self.compute_s)


def iteration_records(events: Iterable[dict], worker: str | None = None) -> list[IterationRecord]:
    """Per-worker iterations from one worker's events (or several workers' events mixed),
    in start-time order. What each field means is analysis/measure.py's docstring; read
    from the log as:
      t_start    the iteration_end's t_start, else the t of the matching iteration_start;
      t_end      the iteration_end's t_end, else its t;
      compute_s  the iteration_end's compute_s, else compute_end.t - t_start;
      comm_s     the iteration_end's comm_s, else iteration time - compute time (logs of
                 older workers).
    An iteration_end without a start time is skipped (the log was cut at its start)."""
    starts: dict[tuple[str, int], float] = {}
    cends: dict[tuple[str, int], float] = {}
    ends: list[dict] = []
    for e in events:
        kind = e.get("event")
        w = e.get("worker", worker)
        if kind == "iteration_start":
            starts[(w, e.get("iteration"))] = float(e["t"])
        elif kind == "compute_end":
            cends[(w, e.get("iteration"))] = float(e["t"])
        elif kind == "iteration_end":
            ends.append(e)
    out = []
    for e in ends:
        w = e.get("worker", worker)
        i = e.get("iteration")
        t_end = float(e.get("t_end", e.get("t")))
        t_start = e.get("t_start", starts.get((w, i)))
        if t_start is None:
            continue
        t_start = float(t_start)
        comp = e.get("compute_s")
        if comp is None and (w, i) in cends:
            comp = cends[(w, i)] - t_start
        retx = e.get("retransmissions", e.get("retransmits")) or 0
        nbytes = e.get("gradient_bytes", e.get("bytes")) or 0
        comm = e.get("comm_s")
        stats = e.get("comm_stats") or {}
        dup = stats.get("duplicate_results", e.get("duplicate_results")) or 0
        out.append(IterationRecord(str(w), int(i) if i is not None else len(out), t_start, t_end,
                                   None if comp is None else float(comp), int(nbytes), int(retx),
                                   None if comm is None else float(comm),
                                   int(e.get("bytes_sent") or 0), int(e.get("packets_sent") or 0),
                                   int(dup), _num(e.get("loss")), _num(e.get("accuracy")),
                                   _num(e.get("max_error")), _num(e.get("error_bound")),
                                   _num(e.get("auc"))))
    out.sort(key=lambda r: (r.t_start, r.worker))
    return out


def _num(v) -> float | None:
    return None if v is None else float(v)


def job_iterations(records: Sequence[IterationRecord],
                   workers: Iterable[str] | None = None) -> list[tuple[int, float, float]]:
    """(iteration, start, end) of the whole job: start = min over workers of t_start,
    end = max over workers of t_end. Only iterations that every worker finished count (a
    run cut in the middle leaves a partial last iteration); `workers` names them all
    (default: the workers that have records, so a worker that never finished an iteration
    is not noticed unless named)."""
    workers = {r.worker for r in records} if workers is None else set(workers)
    by_it: dict[int, list[IterationRecord]] = {}
    for r in records:
        by_it.setdefault(r.iteration, []).append(r)
    out = []
    for i in sorted(by_it):
        rs = by_it[i]
        if {r.worker for r in rs} != workers:
            continue
        out.append((i, min(r.t_start for r in rs), max(r.t_end for r in rs)))
    return out


def makespan(records: Sequence[IterationRecord]) -> float:
    """Seconds from the first iteration start to the last iteration end (any worker)."""
    if not records:
        return 0.0
    return max(r.t_end for r in records) - min(r.t_start for r in records)


def goodput_over_time(records: Sequence[IterationRecord], window_s: float,
                      t0: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Goodput in consecutive windows [t0 + k w, t0 + (k+1) w): each worker-iteration's
    useful bytes are spread evenly over its [t_start, t_end], so the windows' bytes add up
    to the run's; a window's rate is 8 x its bytes / its length, the last window being cut
    at the last iteration's end. Returns (window centres relative to t0, bit/s); t0
    defaults to the first start."""
    if window_s <= 0:
        raise ValueError(f"window must be > 0 s (got {window_s})")
    if not records:
        return np.array([]), np.array([])
    t0 = min(r.t_start for r in records) if t0 is None else t0
    t1 = max(r.t_end for r in records)
    n = max(1, int(math.ceil((t1 - t0) / window_s - 1e-9)))
    edges = t0 + window_s * np.arange(n + 1)
    acc = np.zeros(n)
    for r in records:
        dur = r.t_end - r.t_start
        if dur <= 0:
            k = min(n - 1, max(0, int((r.t_end - t0) // window_s)))
            acc[k] += r.bytes
            continue
        lo = np.clip(edges[:-1], r.t_start, r.t_end)
        hi = np.clip(edges[1:], r.t_start, r.t_end)
        acc += r.bytes * (hi - lo) / dur
    # the last window ends at the run's end: divide by the part of it the run covered
    widths = np.minimum(edges[1:], max(t1, edges[-2] + 1e-9)) - edges[:-1]
    centres = (edges[:-1] + np.minimum(edges[1:], t1)) / 2 - t0
    return centres, 8.0 * acc / widths


def speedup(baseline_s: float, scheme_s: float) -> float:
    """Speedup of a scheme over a baseline on the same scenario: the baseline's time (per
    iteration, or to a target accuracy) divided by the scheme's. > 1: the scheme is faster."""
    if not (scheme_s > 0) or not (baseline_s > 0):
        return float("nan")
    return baseline_s / scheme_s


def accuracy_series(events: Iterable[dict]) -> list[tuple[float, float]]:
    """(t, accuracy) in time order: one point per iteration from the iteration_end events
    carrying `accuracy`, at the job's end of that iteration (the last worker's t_end; in
    BSP every worker holds the same model, the first report's accuracy counts), plus every
    `eval` event at its t. Iterations are those of analysis/measure.py's time to accuracy."""
    its: dict = {}
    pts = []
    for e in events:
        if e.get("accuracy") is None:
            continue
        t = float(e.get("t_end", e.get("t")))
        if e.get("event") == "iteration_end" and e.get("iteration") is not None:
            cur = its.get(e["iteration"])
            its[e["iteration"]] = (max(t, cur[0]), cur[1]) if cur else (t, float(e["accuracy"]))
        elif e.get("event") in ("iteration_end", "eval"):
            pts.append((t, float(e["accuracy"])))
    return sorted(pts + list(its.values()))


def time_to_accuracy(series: Sequence[tuple[float, float]], target: float,
                     t0: float) -> float | None:
    """Seconds from t0 (the job's start) to the first report with accuracy >= target;
    None if the run never reached it."""
    for t, acc in series:
        if acc >= target:
            return t - t0
    return None


def cdf_points(values: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF: the sorted values x_(1) <= ... <= x_(n) and F(x_(k)) = k / n."""
    x = np.sort(np.asarray(list(values), dtype=float))
    n = len(x)
    return x, (np.arange(1, n + 1) / n if n else np.array([]))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (numpy's linear interpolation); nan for no values."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


# ---------------------------------------------------------------- link counters

def counter_delta(rows: Sequence[dict], intf: str, field: str = "tx_bytes",
                  node: str | None = None) -> int:
    """Last minus first sample of one interface's counter (0 with fewer than 2 samples)."""
    vals = [(float(r["t_mono"]), int(r[field])) for r in rows
            if r["intf"] == intf and (node is None or r["node"] == node)]
    if len(vals) < 2:
        return 0
    vals.sort()
    return vals[-1][1] - vals[0][1]


def wan_bytes(rows: Sequence[dict], wan_intfs: Iterable[str]) -> int:
    """Bytes sent onto the WAN: sum over both ends of every WAN link of the tx_bytes the
    interface counted during the workload (each direction counted once, at its sender)."""
    return sum(counter_delta(rows, i) for i in wan_intfs)


def link_rate_series(rows: Sequence[dict], intf: str, field: str = "tx_bytes") -> tuple[np.ndarray, np.ndarray]:
    """(sample times, bit/s between the previous sample and this one) of one interface."""
    pts = sorted((float(r["t_mono"]), int(r[field])) for r in rows if r["intf"] == intf)
    t = np.array([b[0] for b in pts[1:]])
    rate = np.array([8.0 * (b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(pts, pts[1:])])
    return t, rate


def capacity_at(t: float, initial_mbps: float, changes: Sequence[tuple[float, float]]) -> float:
    """A link's rate (Mbps) at time t: the last change at or before t, else the initial."""
    mbps = initial_mbps
    for tc, m in sorted(changes):
        if tc <= t:
            mbps = m
        else:
            break
    return mbps


def link_utilization(rows: Sequence[dict], intf: str, initial_mbps: float,
                     changes: Sequence[tuple[float, float]] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Utilization over time of one interface: its tx rate between consecutive samples
    divided by the link's configured rate at the end of that interval (0..1, may exceed 1
    slightly from sampling jitter). changes: (t, Mbps) bandwidth changes of that link."""
    t, rate = link_rate_series(rows, intf)
    cap = np.array([capacity_at(x, initial_mbps, changes) * 1e6 for x in t])
    return t, rate / cap


# ---------------------------------------------------------------- over repetitions

# Student's t, 97.5% quantile, for 1..30 degrees of freedom (two-sided 95% interval)
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with df degrees of freedom (1.96 beyond 30)."""
    return T975[df - 1] if 1 <= df <= len(T975) else 1.96


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of the 95% confidence interval of the mean: t_{0.975, n-1} x sample
    std / sqrt(n), Student's t because repetitions are few); half-width 0 for one value;
    nans and None ignored."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if len(v) == 1:
        return float(v[0]), 0.0
    return float(v.mean()), float(t975(len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
