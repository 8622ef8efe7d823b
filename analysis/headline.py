"""The headline of a sweep in the terminal: per series (scheme or label) and setting, time per iteration,
speedup over the baseline, WAN bytes, each with its 95 % interval over repetitions.

The same numbers as report.md's "Numbers" table (analysis/report.SweepReport), only the
three columns a first look needs, so that `make demo` can print them where the user is.
"""
from __future__ import annotations

import json
from pathlib import Path

from analysis import figures as F
from analysis.measure import TIME_PER_ITERATION
from analysis.metrics import mean_ci
from analysis.report import SweepReport
from analysis.series import SERIES

COLUMNS = (("time per iteration (s)", TIME_PER_ITERATION, 1.0),
           ("WAN MB per iteration", "wan_bytes_per_iteration", 1e-6))


def headline_rows(folder: Path) -> tuple[str | None, list[dict]]:
    """(baseline series, one dict per setting): the setting's axis values, runs ok/total,
    (mean, half-width of the 95 % interval) of each column and of the paired speedup."""
    rep = SweepReport(Path(folder))
    base = rep.baseline()
    axes = rep.axes
    speedups: dict[tuple, list[float]] = {}
    if base and len(rep.series) > 1:
        for r in F.speedup_rows(rep.ok, rep.pair_axes(), base, series=SERIES):
            speedups.setdefault(_key(r, axes), []).append(r["speedup"])
    groups: dict[tuple, list[dict]] = {}
    for r in rep.rows:
        groups.setdefault(_key(r, axes), []).append(r)
    out = []
    for key, rows in groups.items():
        ok = [r for r in rows if r.get("status") == "ok"]
        line = {"setting": {a: rows[0].get(a) for a in axes}, "ok": len(ok), "runs": len(rows),
                "repetitions": len({r.get("repetition") for r in ok})}
        for name, col, scale in COLUMNS:
            m, ci = mean_ci([F._num(r.get(col)) for r in ok])
            line[name] = (m * scale, ci * scale)
        if rows[0][SERIES] == base:
            line["speedup"] = (1.0, 0.0)
        else:
            line["speedup"] = mean_ci(speedups.get(key, []))
        out.append(line)
    return base, out


def _key(row: dict, axes) -> tuple:
    return tuple(json.dumps(row.get(a)) for a in axes)


def _fmt(pair) -> str:
    m, ci = pair
    if m != m:
        return "-"
    return f"{m:.3g}" if not ci or ci != ci else f"{m:.3g} ± {ci:.2g}"


def format_headline(base: str | None, rows: list[dict]) -> str:
    """Plain-text table, one line per setting; the axes that vary name the setting."""
    varying = [a for a in (rows[0]["setting"] if rows else {})
               if len({json.dumps(r["setting"][a]) for r in rows}) > 1]
    head = varying + ["runs ok"] + [n for n, _, _ in COLUMNS] + [f"speedup vs {base}"]
    body = [[str(r["setting"][a]) for a in varying] + [f"{r['ok']}/{r['runs']}"]
            + [_fmt(r[n]) for n, _, _ in COLUMNS] + [_fmt(r["speedup"])] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    reps = sorted({r["repetitions"] for r in rows})
    lines.append(f"(mean ± half-width of the 95 % Student-t interval over {'/'.join(map(str, reps))} "
                 f"repetition(s); speedup = {base}'s time per iteration / the scheme's, paired "
                 f"by repetition; real-world units, time dilation undone)")
    return "\n".join(lines)
