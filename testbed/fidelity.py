"""The model beside the measurement: predictions of a scenario (run.py predict) and the
measured/model ratio of a run (summary.json's "model" section).

The model (schemes/<name>/model.py, schemes/model.py) takes the real-world graph, never
the dilated one, so its seconds compare with analysis/measure.py's row directly. It is
model output, labelled so everywhere; measure.py stays the only definition of measured
metrics.
"""
from __future__ import annotations

import logging
import sys

from topologies.graph import build_graph

# measured / model outside this band: the run warns and names the model's largest term
BAND = (0.9, 1.2)


def show_model_progress() -> None:
    """The model's long simulations say where they are (schemes/model_packets.py logs a
    line per seed when a prediction takes more than a few seconds): on stderr, bare. The
    command line and the benchmarks call it once; a library user's logging is left alone."""
    lg = logging.getLogger("schemes")
    if not lg.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(message)s"))
        lg.addHandler(h)
        lg.setLevel(logging.INFO)


def predict_scenario(scn, scheme: str | None = None):
    """The Prediction of a validated scenario (its own scheme unless `scheme` is given:
    then `scn` must have been loaded for that scheme, testbed.scenario.load_scenario)."""
    from schemes.model import predict
    return predict(scheme or scn.scheme, build_graph(scn), scn)


def model_section(scn, metrics: dict | None, servers: dict | None = None) -> tuple[dict, list[str]]:
    """(summary.json's "model" section, warnings). The section is the prediction
    (kind "model", terms, limits, notes) plus model_iteration_time_s and
    measured_over_model = metrics' iteration_period_s (the job's pace, analysis/measure.py's
    TIME_PER_ITERATION: the model predicts a steady period) / the model's iteration_s.
    servers: the scheme's server processes' stats (summary app.servers): their TCP
    sockets' retransmissions count with the workers' in the suspects (hier-ps's WAN
    streams are its servers')."""
    p = predict_scenario(scn)
    sec = p.as_dict()
    from analysis.measure import TIME_PER_ITERATION
    measured = (metrics or {}).get(TIME_PER_ITERATION)
    ratio = measured / p.iteration_s if measured is not None and p.iteration_s > 0 else None
    if has_schedule(scn):
        # the pace spans every step of the schedule, the model is at the configured rates:
        # no ratio; per step, analysis/schedule_tracking.py compares goodput with the model
        ratio = None
        sec["notes"] = list(sec["notes"]) + ["bandwidth schedule: no measured/model ratio for the "
                                             "whole run; see the goodput tracking per step"]
    sec["model_iteration_time_s"] = round(p.iteration_s, 6)
    sec["measured_over_model"] = None if ratio is None else round(ratio, 4)
    sec["band"] = list(BAND)
    warnings = []
    if ratio is not None and not BAND[0] <= ratio <= BAND[1]:
        name, secs = p.largest_term()
        found = suspects(ratio, p.caveats, with_servers(metrics or {}, servers), configured_loss(scn),
                         queued=any(QUEUES_SIMULATED in t for t in p.terms))
        warnings.append(f"measured {ratio:.2f}x the model ({measured:.3f} s vs {p.iteration_s:.3f} s "
                        f"per iteration, band {BAND[0]}-{BAND[1]}); largest term: {name} "
                        f"({secs:.3f} s)" + "".join(f"; suspect: {x}" for x in found))
    return sec, warnings


def with_servers(metrics: dict, servers: dict | None) -> dict:
    """metrics with retransmissions and retransmission_rate over the workers' and the
    servers' TCP sockets (servers: name -> stats with tcp_retransmissions and
    tcp_segments_sent; others ignored)."""
    stats = [v for v in (servers or {}).values() if isinstance(v, dict) and "tcp_retransmissions" in v]
    if not stats or metrics.get("retransmissions") is None:
        return metrics
    n = metrics["retransmissions"] + sum(v["tcp_retransmissions"] for v in stats)
    sent = (metrics.get("packets_sent") or 0) + sum(v.get("tcp_segments_sent") or 0 for v in stats)
    return dict(metrics, retransmissions=n, retransmission_rate=n / sent if sent else None)


# retransmissions above twice the configured per-link loss (a path may cross two lossy
# links) plus this fraction of segments count as congestion loss (a drop-tail queue
# overflowing) worth naming: a heuristic to point at a suspect, not a measurement of it
CONGESTION_LOSS = 0.001


# what a model term that simulated the links' queues says of itself (schemes/ps/model.py)
QUEUES_SIMULATED = "drop-tail queues"


def suspects(ratio: float, caveats: list, metrics: dict, loss: float, queued: bool = False) -> list[str]:
    """What to suspect when a run is outside the band, from the run's own evidence first.
    Slower than the model: loss the scenario did not configure (a queue overflowed and TCP
    recovered: not in the model unless it simulated the links' queues, `queued`), then the
    model's caveats (what it leaves out). Faster: the model over-estimates its largest term
    (the warning names it), and the model's caveats that say what could make a run faster."""
    from schemes.model import FASTER
    if ratio < BAND[0]:
        return ["the model over-estimates (its largest term above is the first to check)"] + \
            [c for c in caveats if c.startswith(FASTER)]
    out = []
    rate, n = metrics.get("retransmission_rate"), metrics.get("retransmissions")
    if rate is not None and rate > 2 * loss + CONGESTION_LOSS:
        out.append(f"loss recovery: {n} segment(s) retransmitted ({100 * rate:.2f}% of those its "
                   f"workers and servers sent) "
                   f"against {100 * loss:g}% configured loss: a queue overflowed ("
                   + ("the model simulated the queues; more loss than it had" if queued
                      else "congestion loss is not in the model") + ")")
    return out + [c for c in caveats if not c.startswith(FASTER)]


def configured_loss(scn) -> float:
    """The largest loss probability the scenario sets on a WAN link (0..1)."""
    pcts = [scn.wan.default.loss_pct or 0.0] + [e.loss_pct or 0.0 for e in scn.wan.edges]
    return max(pcts) / 100.0


def has_schedule(scn) -> bool:
    """Whether any WAN link of the scenario has a bandwidth schedule."""
    return scn.wan.bandwidth_schedule is not None or any(
        getattr(e, "bandwidth_schedule", None) is not None for e in scn.wan.edges)


def model_columns(summary: dict | None, row: dict | None = None, scenario_path=None) -> dict:
    """model_iteration_time_s and measured_over_model of a run (None if absent). With the
    run's scenario file, the model is predicted again (the model of today's code, not the
    one stored when the run was made); with its metrics row, the ratio is that row's time per
    iteration over it, so the two columns always agree with the row beside them."""
    m = (summary or {}).get("model") or {}
    model_s, ratio = m.get("model_iteration_time_s"), m.get("measured_over_model")
    if scenario_path is not None:
        try:
            from testbed.scenario import load_scenario
            scn = load_scenario(str(scenario_path), [], emulation_limits=False)
            model_s = round(predict_scenario(scn).iteration_s, 6)
            if has_schedule(scn):
                return {"model_iteration_time_s": model_s, "measured_over_model": None}
        except Exception:   # an old run whose scenario no longer loads: keep what it stored
            pass
    comparable = scenario_path is not None or ratio is not None   # (a schedule stored None)
    if row is not None and model_s and comparable:
        from analysis.measure import TIME_PER_ITERATION
        measured = row.get(TIME_PER_ITERATION)
        ratio = None if measured is None else round(measured / model_s, 4)
    return {"model_iteration_time_s": model_s, "measured_over_model": ratio}


# ---------------------------------------------------------------- run.py predict
def _fmt_table(rows: list[tuple]) -> str:
    w = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i]) for i, c in enumerate(r))
                     for r in rows)


def main(scenario: str, overrides: list[str], schemes_arg: str | None = None, out=print) -> int:
    from testbed.scenario import load_scenario
    base = load_scenario(scenario, overrides, emulation_limits=False)
    names = [s.strip() for s in schemes_arg.split(",")] if schemes_arg else [base.scheme]
    n_w = base.total_workers
    out(f"MODEL OUTPUT (analytic, schemes/<name>/model.py; not a measurement): {base.name}, "
        f"{len(base.datacenters)} datacenters, {n_w} workers, real-world seconds")
    preds, errors = {}, {}
    for name in names:
        try:
            scn = base if name == base.scheme else load_scenario(scenario, overrides, False, name)
            preds[name] = predict_scenario(scn, name)
        except Exception as e:   # a scheme whose plan refuses the scenario (e.g. fan-in)
            errors[name] = str(e).splitlines()[0]
    if len(names) == 1 and preds:
        p = preds[names[0]]
        out(f"model: scheme {p.scheme}: {p.iteration_s:.4f} s per iteration (comm {p.comm_s:.4f} s, "
            f"compute {p.compute_s:.4f} s), WAN {p.wan_bytes_per_iteration / 1e6:.3f} MB per iteration")
        out("model terms (they add up):")
        for k, v in p.terms.items():
            out(f"  {v:10.4f} s  {k}")
        out("model limits (candidate bottlenecks; the largest is the term above):")
        for k, v in p.limits.items():
            out(f"  {v:10.4f} s  {k}")
        for n in p.notes:
            out(f"  note: {n}")
        for c in p.caveats:
            out(f"  caveat (not in the model): {c}")
    elif preds:
        rows = [("scheme", "model s/iter", "comm s", "WAN MB/iter", "largest term")]
        for name, p in preds.items():
            t, _ = p.largest_term()
            rows.append((name, f"{p.iteration_s:.4f}", f"{p.comm_s:.4f}",
                         f"{p.wan_bytes_per_iteration / 1e6:.3f}", t))
        out(_fmt_table(rows))
    schedule_table(base, scenario, overrides, list(preds), out)
    for name, e in errors.items():
        out(f"model: scheme {name}: no prediction: {e}")
    return 0 if preds else 1


def schedule_table(base, scenario, overrides, names, out=print) -> None:
    """Under a bandwidth schedule: the model per step (schemes/model_schedule.py), one row
    per scheme and step; nothing without a schedule. Random schedules are cut at the run's
    duration (or lifecycle's default horizon)."""
    from schemes.model_schedule import predict_schedule
    from topologies.schedule import DEFAULT_HORIZON_S
    from testbed.scenario import load_scenario
    g = build_graph(base)
    horizon = base.duration_s or DEFAULT_HORIZON_S
    rows = [("scheme", "step from s", "to s", "bottleneck Mbps", "model s/iter", "goodput Mbps",
             "job goodput Mbps", "binding")]
    for name in names:
        scn = base if name == base.scheme else load_scenario(scenario, overrides, False, name)
        for sp in predict_schedule(name, g, scn, horizon):
            st = sp.step
            rows.append((name, f"{st.t_start_s:g}", "end" if st.t_end_s is None else f"{st.t_end_s:g}",
                         f"{st.bottleneck_mbps:g}", f"{sp.prediction.iteration_s:.4f}",
                         f"{sp.goodput_mbps:.3f}", f"{sp.job_goodput_mbps:.3f}", sp.binding))
    if len(rows) > 1:
        out("model per bandwidth-schedule step (every link at the step's rate; schemes/model_schedule.py):")
        out(_fmt_table(rows))
