"""Speedup of a scheme over a baseline scheme on the same scenario (pure functions).

    speedup (time per iteration) = baseline's time per iteration / scheme's
    speedup (time to accuracy)   = baseline's time to reach the target accuracy / scheme's

The ratio is analysis.metrics.speedup, the one sweeps' tables and figures use too
(analysis/figures.speedup_rows); this module feeds it from summary.json's app section.

The baseline is named in the scenario or sweep (default `ps`). Both are computed in
real-world seconds (emulated seconds / time dilation), so runs at different dilations
compare correctly.

Definitions (iteration 0 carries connection set-up, ARP and TCP slow start from cold,
so steady-state figures skip `skip` iterations, default 1):
  time per iteration     mean over iterations i >= skip of the job's iteration time: the
                         slowest worker's end minus the earliest worker's start of i (BSP)
  comm time per iteration  mean over i >= skip of the slowest worker's communication
                         time (first gradient byte sent -> last result byte received)
  time to accuracy       from the start of iteration 0 to the end of the first iteration
                         whose test accuracy (after the update) is >= the target
  bytes per iteration    bytes the workers handed to their sockets per iteration (payload
                         with its framing or aggregation header; INA's re-sent packets count,
                         the kernel's TCP retransmissions do not), summed over workers: what
                         leaves the hosts, LAN included, NOT WAN bytes (those are
                         analysis/metrics.wan_bytes_per_iteration, from WAN interface counters)

What summary.json must carry (under "app"; workers/events.summarize_job produces it for
every scheme, from the per-worker event logs):
  time_dilation                     s of the run
  per_iteration: [{iteration, time_s, max_comm_s, max_compute_s, accuracy, t_end}]
                                    emulated seconds; accuracy may be null (no model)
  workers: {w: {iterations, mean_iteration_s, mean_comm_s, mean_compute_s,
                gradient_bytes, bytes_sent, bytes_received}}
  iteration_time_s: {mean, min, max}  fallback when per_iteration is absent

    python3 -m analysis.speedup RUN_DIR... [--baseline ps] [--target-accuracy 0.7]
prints one row per run: scheme, time per iteration, comm time, speedups.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from analysis.metrics import speedup as _speedup


def _dilation(app: dict) -> float:
    return float(app.get("time_dilation") or 1.0)


def _steady(app: dict, skip: int) -> list[dict]:
    its = sorted(app.get("per_iteration") or [], key=lambda j: j["iteration"])
    return its[skip:] if len(its) > skip else its


def time_per_iteration(app: dict, skip: int = 1) -> float | None:
    """Real-world seconds per BSP iteration (see module doc)."""
    its = _steady(app, skip)
    if its:
        t = sum(j["time_s"] for j in its) / len(its)
    else:
        t = (app.get("iteration_time_s") or {}).get("mean")
        if t is None:
            return None
    return t / _dilation(app)


def comm_time_per_iteration(app: dict, skip: int = 1) -> float | None:
    """Real-world seconds of the slowest worker's communication per iteration."""
    its = [j for j in _steady(app, skip) if j.get("max_comm_s") is not None]
    if not its:
        return None
    return sum(j["max_comm_s"] for j in its) / len(its) / _dilation(app)


def time_to_accuracy(app: dict, target: float) -> float | None:
    """Real-world seconds until the test accuracy first reaches `target`; None if never."""
    its = sorted(app.get("per_iteration") or [], key=lambda j: j["iteration"])
    if not its:
        return None
    t0 = its[0]["t_end"] - its[0]["time_s"]
    for j in its:
        if j.get("accuracy") is not None and j["accuracy"] >= target:
            return (j["t_end"] - t0) / _dilation(app)
    return None


def bytes_per_iteration(app: dict) -> float | None:
    """Bytes all workers handed to their sockets per iteration (see the module doc; not WAN bytes)."""
    ws = [w for w in (app.get("workers") or {}).values() if w.get("iterations")]
    if not ws:
        return None
    return sum(w.get("bytes_sent", 0) / w["iterations"] for w in ws)


def _ratio(base: float | None, this: float | None) -> float | None:
    """analysis.metrics.speedup with None for "no number" (never reached, no data)."""
    if base is None or this is None:
        return None
    r = _speedup(base, this)
    return None if math.isnan(r) else r


def speedup(baseline: dict, scheme: dict, target_accuracy: float | None = None, skip: int = 1) -> dict:
    """Speedups of `scheme` over `baseline` (both summary.json "app" sections)."""
    out = {"iteration": _ratio(time_per_iteration(baseline, skip), time_per_iteration(scheme, skip)),
           "communication": _ratio(comm_time_per_iteration(baseline, skip),
                                   comm_time_per_iteration(scheme, skip))}
    if target_accuracy is not None:
        out["time_to_accuracy"] = _ratio(time_to_accuracy(baseline, target_accuracy),
                                         time_to_accuracy(scheme, target_accuracy))
    return out


def speedup_table(apps: dict[str, dict], baseline: str = "ps", target_accuracy: float | None = None,
                  skip: int = 1) -> list[dict]:
    """One row per scheme (apps: scheme -> summary "app" section) against `baseline`."""
    if baseline not in apps:
        raise ValueError(f"baseline scheme {baseline!r} has no run here (schemes: "
                         f"{', '.join(sorted(apps))}); run it on the same scenario, or name "
                         f"another baseline")
    rows = []
    for name, app in apps.items():
        rows.append({"scheme": name, "time_per_iteration_s": time_per_iteration(app, skip),
                     "comm_per_iteration_s": comm_time_per_iteration(app, skip),
                     "bytes_per_iteration": bytes_per_iteration(app),
                     **{f"speedup_{k}": v for k, v in
                        speedup(apps[baseline], app, target_accuracy, skip).items()}})
    return rows


def _fmt(v) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m analysis.speedup", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="results folders results/<scenario>/<run-id>")
    ap.add_argument("--baseline", default="ps")
    ap.add_argument("--target-accuracy", type=float, default=None)
    ap.add_argument("--skip", type=int, default=1, help="warm-up iterations left out")
    a = ap.parse_args(argv)
    apps = {}
    for r in a.runs:
        try:
            app = json.loads((Path(r) / "summary.json").read_text())["app"]
        except (OSError, ValueError, KeyError, TypeError):
            print(f"error: {r}: no summary.json with an app section (is it a finished run folder?)",
                  file=sys.stderr)
            return 1
        apps[app.get("scheme", app.get("app", r))] = app
    try:
        rows = speedup_table(apps, a.baseline, a.target_accuracy, a.skip)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    cols = list(rows[0])
    print("  ".join(f"{c:>22}" for c in cols))
    for row in rows:
        print("  ".join(f"{_fmt(row[c]):>22}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
