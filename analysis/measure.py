"""The measurement pipeline: a run's event logs and link counters -> THE row of its metrics.

`run_metrics` is the only place a metric is defined. summary.json's "metrics" section,
`run.py plot`, sweep tables, speedups (analysis/speedup.py) and the benchmarks all take
their numbers from it (through analysis/rundata.RunData.metrics for a results folder).
Inputs are plain data, so it is pure: per-worker event lists, counters.csv rows, the WAN
interface names, the switches' names and drop counts, the time dilation s.

Units: every time is real-world seconds (emulated CLOCK_MONOTONIC seconds / s), every rate
real-world Mbps (emulated rate x s, 10^6 bit/s); bytes and counts are unchanged by dilation.
A metric the run cannot give (no complete iteration, no counters, no target) is None.

Warm-up. Iterations are numbered from 0 by the workers. The first WARMUP_ITERATIONS (= 1)
iteration(s) carry connection set-up, ARP, TCP slow start from cold and the INA timer
learning the RTT, so they are left out of the steady-state statistics: iteration time,
compute time, communication time and goodput. Counts, bytes and accuracy cover all
iterations. One rule, everywhere; the row says it in `warmup_iterations`.

Definitions, for worker w and iteration i (fields of workers/events.py's iteration_end):
  iteration time of w in i   t_end - t_start: iteration start -> the update applied
  job iteration time of i    max_w t_end(w, i) - min_w t_start(w, i) (BSP: the slowest
                             worker's end minus the earliest worker's start), over the
                             *complete* iterations: those every worker (every event log)
                             finished
  compute time               compute_s: iteration start -> end of the compute phase
  communication time         comm_s: first_send -> last_result, the gradient handed to the
                             communicator until it returned the sum: sending, aggregation
                             and, in BSP, waiting for stragglers
  useful bytes               gradient_bytes: 4 x parameters (float32); retransmissions,
                             headers and protocol bytes not counted
  goodput of w               8 x its useful bytes / its communication time, both summed over
                             its steady iterations

Columns of the row:
  warmup_iterations          WARMUP_ITERATIONS
  time_dilation              s
  iterations                 complete iterations (all, warm-up included)
  iteration_period_s         the steady pace of the job: (end of the last complete
                             iteration - end of the last warm-up iteration) / steady
                             iterations, ends taken at the slowest worker. Below the job
                             iteration time when workers start an iteration at different
                             times (a worker near the server gets the sum first and starts
                             the next iteration while far ones still wait for theirs), so
                             iterations of different workers overlap; it is what a long job
                             takes per iteration. THE time per iteration (TIME_PER_ITERATION):
                             speedups, the model's measured/model ratio and the sweeps'
                             default figures use it
  iteration_time_mean_s, iteration_time_p50_s, iteration_time_p99_s
                             mean, median, 99th percentile of the job iteration time over
                             steady complete iterations (its spread shows stragglers; its mean
                             overstates a long job's time when iterations overlap: a ring's
                             workers start iteration i+1 as soon as their own result of i is in,
                             so the ring at 50 Mbps measured 0.685 s job iteration time and a
                             pace of 0.542 s)
  compute_time_mean_s, comm_time_mean_s
                             mean over every steady iteration of every worker
  goodput_mbps               mean over workers of their goodput; goodput_min_mbps the lowest
  job_goodput_mbps           8 x all workers' useful bytes of steady iterations / the time
                             from the first steady start to the last steady end (compute,
                             stragglers and gaps included)
  wan_bytes_per_iteration    bytes sent on the WAN interfaces (tx_bytes of both ends of every
                             WAN link, last minus first counter sample: headers,
                             retransmissions, control, everything) / iterations
  bytes_sent_per_iteration   sum over workers of the bytes it handed to its sockets per
                             iteration (LAN included, not WAN bytes; TCP's own
                             retransmissions not seen)
  packets_sent, retransmissions, duplicate_results
                             sums over all iterations of all workers: packets sent; packets
                             or TCP segments the worker re-sent; results received again (INA)
  retransmission_rate        retransmissions / packets_sent
  switch_drops               softswitch socket-overrun drops + the kernel's rx_dropped +
                             tx_dropped on the switches' interfaces over the run
  accuracy_initial, loss_initial  the model before training (worker_start)
  final_accuracy, final_loss test accuracy and loss after the last complete iteration
  final_auc                  test AUC after the last complete iteration (workloads that
                             report it: sparse); None otherwise
  target_accuracy, time_to_accuracy_s
                             from the earliest start of the first iteration to the end of
                             the first iteration (or eval) whose accuracy >= the target
  max_error, within_quantization_bound
                             with verify on: the largest |aggregated - float64 reference|
                             and whether every iteration stayed within its bound
  worker_errors              workers whose log ends in worker_error

Speedup is not a column: it compares two rows (analysis/speedup.py).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping, Sequence

import numpy as np

from analysis import metrics as M

WARMUP_ITERATIONS = 1
# the column that is "time per iteration" wherever one number stands for it (docstring)
TIME_PER_ITERATION = "iteration_period_s"

COLUMNS = (
    "warmup_iterations", "time_dilation", "iterations",
    "iteration_time_mean_s", "iteration_time_p50_s", "iteration_time_p99_s", "iteration_period_s",
    "compute_time_mean_s", "comm_time_mean_s", "goodput_mbps", "goodput_min_mbps",
    "job_goodput_mbps", "wan_bytes_per_iteration", "bytes_sent_per_iteration",
    "packets_sent", "retransmissions", "retransmission_rate", "duplicate_results",
    "switch_drops", "accuracy_initial", "loss_initial", "final_accuracy", "final_loss",
    "final_auc", "target_accuracy", "time_to_accuracy_s", "max_error", "within_quantization_bound",
    "worker_errors")


def steady(iteration: int) -> bool:
    """Whether an iteration counts in steady-state statistics (the warm-up rule)."""
    return iteration >= WARMUP_ITERATIONS


def records(events: Mapping[str, Sequence[dict]]) -> list[M.IterationRecord]:
    """Every worker's iteration records (analysis/metrics.iteration_records), start order;
    the key of `events` names the worker (its log file), whatever the lines say."""
    out = []
    for w, ev in events.items():
        out += [r if r.worker == w else replace(r, worker=w) for r in M.iteration_records(ev, worker=w)]
    out.sort(key=lambda r: (r.t_start, r.worker))
    return out


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _pct(xs, q) -> float | None:
    return float(np.percentile(xs, q)) if len(xs) else None


def _div(a, b) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def _goodput_bps(rs: Sequence[M.IterationRecord]) -> float | None:
    b = sum(r.bytes for r in rs if r.comm_s is not None)
    c = sum(r.comm_s for r in rs if r.comm_s is not None)
    return _div(8.0 * b, c)


def iteration_table(events: Mapping[str, Sequence[dict]], dilation: float = 1.0,
                    recs: Sequence[M.IterationRecord] | None = None) -> list[dict]:
    """The job's complete iterations, in order, real-world seconds:
    {iteration, warmup (left out of steady statistics), start_s, end_s (since the job's
    first start), time_s (job iteration time), compute_max_s, comm_max_s (slowest worker's),
    retransmissions, accuracy, loss, auc (the first worker's report: in BSP all hold one
    model; auc None unless the workload reports it)}."""
    s = float(dilation)
    recs = records(events) if recs is None else recs
    by_it: dict[int, list[M.IterationRecord]] = {}
    for r in recs:
        by_it.setdefault(r.iteration, []).append(r)
    t0 = min((r.t_start for r in recs), default=0.0)
    out = []
    for i, start, end in M.job_iterations(recs, events.keys()):
        rs = sorted(by_it[i], key=lambda r: r.worker)
        comp = [r.compute_s for r in rs if r.compute_s is not None]
        comm = [r.comm_s for r in rs if r.comm_s is not None]
        first = next((r for r in rs if r.accuracy is not None or r.loss is not None), rs[0])
        out.append({"iteration": i, "warmup": not steady(i),
                    "start_s": (start - t0) / s, "end_s": (end - t0) / s, "time_s": (end - start) / s,
                    "compute_max_s": max(comp) / s if comp else None,
                    "comm_max_s": max(comm) / s if comm else None,
                    "retransmissions": sum(r.retransmissions for r in rs),
                    "accuracy": first.accuracy, "loss": first.loss, "auc": first.auc})
    return out


def worker_table(events: Mapping[str, Sequence[dict]], dilation: float = 1.0,
                 recs: Sequence[M.IterationRecord] | None = None) -> dict[str, dict]:
    """Per worker, real-world units: {iterations (all it finished), iteration_time_mean_s,
    compute_time_mean_s, comm_time_mean_s, goodput_mbps (steady iterations), bytes_sent,
    retransmissions (all), error (its worker_error, else None)}."""
    s = float(dilation)
    recs = records(events) if recs is None else recs
    out = {}
    for w, ev in events.items():
        rs = [r for r in recs if r.worker == w]
        st = [r for r in rs if steady(r.iteration)]
        g = _goodput_bps(st)
        out[w] = {"iterations": len(rs),
                  "iteration_time_mean_s": _div(_mean([r.iteration_s for r in st]), s),
                  "compute_time_mean_s": _div(_mean([r.compute_s for r in st]), s),
                  "comm_time_mean_s": _div(_mean([r.comm_s for r in st]), s),
                  "goodput_mbps": None if g is None else g * s / 1e6,
                  "bytes_sent": sum(r.bytes_sent for r in rs),
                  "retransmissions": sum(r.retransmissions for r in rs),
                  "error": next((e.get("error") for e in ev if e.get("event") == "worker_error"), None)}
    return out


def _period(its: list[dict]) -> float | None:
    """iteration_period_s of an iteration_table (module docstring)."""
    warm = [j for j in its if j["warmup"]]
    steady_its = [j for j in its if not j["warmup"]]
    if not warm or not steady_its:
        return None
    return (steady_its[-1]["end_s"] - warm[-1]["end_s"]) / len(steady_its)


def run_metrics(events: Mapping[str, Sequence[dict]], counters: Sequence[dict] = (), *,
                wan_intfs: Iterable[str] | None = None, switch_nodes: Iterable[str] = (),
                switch_drops: Mapping[str, dict] | None = None, dilation: float = 1.0,
                target_accuracy: float | None = None) -> dict:
    """THE row of a run (columns and definitions: the module docstring).

    events         worker -> its events (every worker of the run, also one whose log is
                   empty or torn: complete iterations need all of them)
    counters       counters.csv rows (testbed/counters.py); () when there are none
    wan_intfs      names of both ends' interfaces of every WAN link; None when unknown
                   (then wan_bytes_per_iteration is None; [] means a run without WAN)
    switch_nodes   switch names, for the kernel's drop counters of their interfaces
    switch_drops   summary.json's switch_drops: {switch: {socket_drops, rx_frames}}
    dilation       the run's time dilation s
    target_accuracy  for time_to_accuracy_s (None: not asked)"""
    s = float(dilation)
    recs = records(events)
    st = [r for r in recs if steady(r.iteration)]
    its = iteration_table(events, s, recs)
    n_it = len(its)
    times = [j["time_s"] for j in its if not j["warmup"]]
    workers = worker_table(events, s, recs)
    good = [w["goodput_mbps"] for w in workers.values() if w["goodput_mbps"] is not None]
    span = (max(r.t_end for r in st) - min(r.t_start for r in st)) if st else 0.0
    job_good = _div(8.0 * sum(r.bytes for r in st), span)
    wan = M.wan_bytes(counters, wan_intfs) if (wan_intfs is not None and counters) else None
    packets = sum(r.packets_sent for r in recs)
    retx = sum(r.retransmissions for r in recs)
    sent = [workers[w]["bytes_sent"] / workers[w]["iterations"] for w in workers if workers[w]["iterations"]]
    start = next((e for ev in events.values() for e in ev if e.get("event") == "worker_start"), {})
    last = its[-1] if its else {}
    tta = None
    if target_accuracy is not None and recs:
        pts = M.accuracy_series(e for ev in events.values() for e in ev)
        tta = _div(M.time_to_accuracy(pts, target_accuracy, min(r.t_start for r in recs)), s)
    errs = [r for r in recs if r.max_error is not None]
    return {
        "warmup_iterations": WARMUP_ITERATIONS,
        "time_dilation": s,
        "iterations": n_it,
        "iteration_time_mean_s": _mean(times),
        "iteration_time_p50_s": _pct(times, 50),
        "iteration_time_p99_s": _pct(times, 99),
        "iteration_period_s": _period(its),
        "compute_time_mean_s": _div(_mean([r.compute_s for r in st]), s),
        "comm_time_mean_s": _div(_mean([r.comm_s for r in st]), s),
        "goodput_mbps": _mean(good),
        "goodput_min_mbps": min(good) if good else None,
        "job_goodput_mbps": None if job_good is None else job_good * s / 1e6,
        "wan_bytes_per_iteration": _div(wan, n_it),
        "bytes_sent_per_iteration": sum(sent) if sent else None,
        "packets_sent": packets,
        "retransmissions": retx,
        "retransmission_rate": _div(retx, packets),
        "duplicate_results": sum(r.duplicate_results for r in recs),
        "switch_drops": switch_drop_count(switch_drops, counters, switch_nodes),
        "accuracy_initial": start.get("accuracy_initial"),
        "loss_initial": start.get("loss_initial"),
        "final_accuracy": last.get("accuracy"),
        "final_loss": last.get("loss"),
        "final_auc": last.get("auc"),
        "target_accuracy": target_accuracy,
        "time_to_accuracy_s": tta,
        "max_error": max((r.max_error for r in errs), default=None),
        "within_quantization_bound": all(r.error_bound is not None and r.max_error <= r.error_bound
                                         for r in errs) if errs else None,
        "worker_errors": sum(1 for w in workers.values() if w["error"] is not None),
    }


def switch_drop_count(switch_drops: Mapping[str, dict] | None, counters: Sequence[dict] = (),
                      switch_nodes: Iterable[str] = ()) -> int:
    """Frames the switches lost: the softswitch's socket-overrun drops (summary.json's
    switch_drops) plus the kernel's rx_dropped + tx_dropped on the switches' interfaces over
    the run (counters.csv)."""
    total = sum(int(v.get("socket_drops") or 0) for v in (switch_drops or {}).values())
    nodes = set(switch_nodes)
    for node, intf in {(r["node"], r["intf"]) for r in counters if r["node"] in nodes}:
        total += M.counter_delta(counters, intf, "rx_dropped", node) + \
            M.counter_delta(counters, intf, "tx_dropped", node)
    return total


# ---------------------------------------------------------------- from the topology graph

def wan_interfaces(graph) -> list[str]:
    """Both ends' interface names of every WAN link of a topology graph (dilated or not)."""
    from topologies.ports import interface_name
    return [interface_name(graph, a, b) for u, v, d in graph.edges(data=True) if d.get("kind") == "wan"
            for a, b in ((u, v), (v, u))]


def switch_names(graph) -> list[str]:
    return [n for n, d in graph.nodes(data=True) if d.get("role") != "host"]
