"""Speedup of a scheme over a baseline scheme on the same scenario, from two runs' rows.

    speedup = the baseline's metric / the scheme's metric      (> 1: the scheme is faster)

with the metric one column of the row of analysis/measure.py (RunData.metrics), so the
warm-up rule, the real-world units (time dilation undone, so runs at different dilations
compare) and the definitions are the row's:
  iteration          iteration_period_s: the job's pace, time per steady iteration of a long
                     job (TIME_PER_ITERATION; analysis/measure.py says why the pace and not
                     the job iteration time)
  communication      comm_time_mean_s: communication time per steady worker-iteration
  time_to_accuracy   time_to_accuracy_s: time until the test accuracy first reaches the target

The baseline is named in the scenario or sweep (default `ps`). Sweep figures pair rows by
repetition with analysis/figures.speedup_rows, which uses `ratio` below.

    python3 -m analysis.speedup RUN_DIR... [--baseline ps] [--target-accuracy 0.7]
prints one row per run: scheme, time per iteration, communication time, bytes per
iteration (sent by the workers, and on the WAN), speedups.
"""
from __future__ import annotations

import argparse
import math
import sys

from analysis.measure import TIME_PER_ITERATION
from analysis.metrics import speedup as _speedup

KINDS = {"iteration": TIME_PER_ITERATION, "communication": "comm_time_mean_s",
         "time_to_accuracy": "time_to_accuracy_s"}


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def ratio(baseline_row: dict, row: dict, metric: str = TIME_PER_ITERATION) -> float | None:
    """baseline_row[metric] / row[metric] (analysis.metrics.speedup); None when either has
    no number (never reached the target, no steady iteration). Rows may come from a CSV
    table (strings) or from RunData.metrics."""
    r = _speedup(_num(baseline_row.get(metric)), _num(row.get(metric)))
    return None if math.isnan(r) else r


def speedup(baseline_row: dict, row: dict) -> dict:
    """Speedups of `row`'s run over `baseline_row`'s: {iteration, communication,
    time_to_accuracy} (the latter None unless both rows have a time to the target)."""
    return {k: ratio(baseline_row, row, col) for k, col in KINDS.items()}


def speedup_table(rows: dict[str, dict], baseline: str = "ps") -> list[dict]:
    """One line per scheme (rows: scheme -> its run's row) against `baseline`."""
    if baseline not in rows:
        raise ValueError(f"baseline scheme {baseline!r} has no run here (schemes: "
                         f"{', '.join(sorted(rows))}); run it on the same scenario, or name "
                         f"another baseline")
    out = []
    for name, row in rows.items():
        out.append({"scheme": name, "time_per_iteration_s": row.get(TIME_PER_ITERATION),
                    "comm_per_iteration_s": row.get("comm_time_mean_s"),
                    "bytes_sent_per_iteration": row.get("bytes_sent_per_iteration"),
                    "wan_bytes_per_iteration": row.get("wan_bytes_per_iteration"),
                    **{f"speedup_{k}": v for k, v in speedup(rows[baseline], row).items()}})
    return out


def _fmt(v) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def main(argv=None) -> int:
    from analysis.rundata import RunData
    ap = argparse.ArgumentParser(prog="python3 -m analysis.speedup", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="results folders results/<scenario>/<run-id>")
    ap.add_argument("--baseline", default="ps")
    ap.add_argument("--target-accuracy", type=float, default=None)
    a = ap.parse_args(argv)
    rows = {}
    for r in a.runs:
        try:
            run = RunData.load(r)
        except FileNotFoundError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        rows[run.scheme] = run.metrics(a.target_accuracy)
    try:
        table = speedup_table(rows, a.baseline)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    cols = list(table[0])
    print("  ".join(f"{c:>24}" for c in cols))
    for row in table:
        print("  ".join(f"{_fmt(row[c]):>24}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
