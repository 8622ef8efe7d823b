"""`gdml plot RESULTS [--format pdf,png]`: the figures the results support + report.md.

RESULTS is a sweep folder (table.csv, points/), one run's folder (summary.json), or a
folder of runs (results/<scenario>/); given a folder that is none of them, `gdml plot`
draws the one such folder below it (analysis/locate.py). A sweep's figures and tables draw a series per
scheme, or per label when the sweep names its zipped rows (analysis/series.py). Figures go to RESULTS/figures/<name>.<format>;
report.md next to them shows the PNGs and the numbers behind them. A sweep file's
`figures:` list chooses the figures (kinds in testbed/sweep_model.FIGURE_KINDS); without
it the report picks them from the sweep's axes:
  every numeric axis x other than scheme   speedup vs x (baseline ps, else the first
                                           series) and iteration time vs x
  an axis of lists (e.g. datacenters)      scaling: the same vs number of workers/datacenters
  always                                   WAN bytes per iteration by scheme, goodput over
                                           time (first value of every axis, repetition 0),
                                           CDF of iteration time (with vs without stragglers
                                           when an axis varies them), accuracy vs time
                                           (when the workload reports accuracy)
A run, or a folder of runs, also gets the figure of its network (analysis/netfigure.py),
one per distinct scenario, rebuilt from the runs' scenario.yaml; a run that cannot have
one gets a line in the report saying why.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from analysis import figures as F
from analysis.locate import locate, not_results, results_kind
from analysis.measure import TIME_PER_ITERATION
from analysis.rundata import RunData, is_run_dir
from analysis.series import SERIES, series_schemes, with_series
from analysis.style import save, scheme_sort_key, series_styles
from testbed.sweep_model import LABEL_AXIS

SUMMARY_METRICS = (TIME_PER_ITERATION, "iteration_time_mean_s", "iteration_time_p99_s", "comm_time_mean_s",
                   "goodput_mbps", "wan_bytes_per_iteration", "time_to_accuracy_s")
# beside the measured time per iteration (the pace): the model's (model output, summary.json "model";
# testbed/fidelity.py) and measured / model
MODEL_COLUMNS = ("model_iteration_time_s", "measured_over_model")
TABLE_METRICS = SUMMARY_METRICS[:1] + MODEL_COLUMNS + SUMMARY_METRICS[1:]


class ReportError(ValueError):
    pass


@dataclass
class FigureJob:
    name: str
    caption: str
    make: Callable[[], object]     # -> matplotlib Figure


# ---------------------------------------------------------------- loading

def _parse_cell(v: str):
    if v == "":
        return None
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if v in ("True", "False"):
        return v == "True"
    if v[:1] in "[{":
        try:
            return json.loads(v)
        except ValueError:
            pass
    return v


def load_table(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return [{k: _parse_cell(v) for k, v in r.items()} for r in csv.DictReader(f)]


def load_sweep_spec(folder: Path) -> dict:
    try:
        return yaml.safe_load((folder / "sweep.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def x_column(rows: list[dict], axis: str) -> str | None:
    """The numeric column to plot an axis against: the axis itself when its values are
    numbers, else the derived n_datacenters / n_workers that varies with it."""
    vals = [r.get(axis) for r in rows if r.get(axis) is not None]
    if vals and all(_is_number(v) for v in vals):
        return axis
    for derived in ("n_datacenters", "n_workers"):
        if len({r.get(derived) for r in rows}) > 1:
            return derived
    return None


# ---------------------------------------------------------------- plans

class SweepReport:
    def __init__(self, folder: Path):
        self.folder = folder
        self.rows = with_series(load_table(folder / "table.csv"))
        self.spec = load_sweep_spec(folder)
        self.axes = list((self.spec.get("axes") or {}).keys()) or \
            [c for c in self.rows[0] if c == "scheme"] if self.rows else []
        self.ok = [r for r in self.rows if r.get("status") == "ok"]
        # one style per series from every row (failed points too), so that every figure
        # draws a series alike; the series' order is the styles' (schemes, then the file's)
        self.styles = series_styles(series_schemes(self.rows))
        ok_series = {r[SERIES] for r in self.ok}
        self.series = [s for s in self.styles if s in ok_series]
        self._runs: dict[str, RunData] = {}

    @property
    def per(self) -> str:
        """What a series is in this sweep's captions: a label, or a scheme."""
        return "label" if LABEL_AXIS in self.axes else "scheme"

    def series_label(self, name: str) -> str:
        """A series' legend label (a scheme's pretty name, or the label itself)."""
        return F.style_of(self.styles, name)["label"]

    def baseline(self, wanted: str | None = None) -> str | None:
        if wanted:
            return wanted
        named = next((f.get("baseline") for f in (self.spec.get("figures") or []) if f.get("baseline")), None)
        if named in self.series:    # the sweep file's own choice, for the table too
            return named
        return "ps" if "ps" in self.series else (self.series[0] if self.series else None)

    def run(self, row: dict) -> RunData | None:
        rd = row.get("run_dir")
        if not rd:
            return None
        if rd not in self._runs:
            p = Path(rd) if Path(rd).is_absolute() else self.folder / rd
            try:
                self._runs[rd] = RunData.load(p)
            except FileNotFoundError:
                return None
        return self._runs[rd]

    def representative(self, fixed: dict | None = None) -> list[dict]:
        """One ok row per series whose run folder is here, for the figures drawn from runs:
        from the lowest repetition that has any (repetition 0, but in a table merged with a
        published one whose rows keep no runs: docs/sweeps.md) and, for every other axis (but
        those zipped with the scheme or label), its first value (or the value in `fixed`)."""
        fixed = dict(fixed or {})
        for a in self.pair_axes():           # axes zipped with the scheme follow it
            if a not in fixed:
                first = next((r.get(a) for r in self.rows if r.get(a) is not None), None)
                fixed[a] = first
        for k in sorted({r.get("repetition") for r in self.ok if isinstance(r.get("repetition"), int)}):
            out = []
            for s in self.series:
                for r in self.ok:
                    if r[SERIES] == s and r.get("repetition") == k and \
                            all(r.get(a) == v for a, v in fixed.items()) and self.run(r) is not None:
                        out.append(r)
                        break
            if out:
                return out
        return []

    def pair_axes(self) -> list[str]:
        """The axes a speedup pairs rows on: every axis but the scheme, the label and those
        zipped with them (zip mode, scheme or label not crossed: e.g. per-scheme
        scheme_options), which belong to the series and so differ between a series and its
        baseline by design."""
        cross = set(self.spec.get("cross") or [])
        zipped = self.spec.get("mode") == "zip" and \
            any(a in self.axes and a not in cross for a in ("scheme", LABEL_AXIS))
        return [a for a in self.axes if a not in ("scheme", LABEL_AXIS) and not (zipped and a not in cross)]

    def dilation(self) -> float | None:
        return F._dilation(self.ok)

    # ------------------------------------------------------------ figure jobs
    def jobs(self) -> list[FigureJob]:
        specs = self.spec.get("figures") or self.default_specs()
        return [job for job in map(self.job, specs) if job is not None]

    def default_specs(self) -> list[dict]:
        specs = []
        for a in self.axes:
            if a in ("scheme", LABEL_AXIS):
                continue
            x = x_column(self.ok, a)
            if x is None:
                continue
            kind = "scaling" if x in ("n_workers", "n_datacenters") else "speedup"
            if len(self.series) > 1:
                specs.append({"kind": kind, "x": a})
            specs.append({"kind": "metric", "x": a, "y": TIME_PER_ITERATION})
        specs += [{"kind": "wan_bytes"}, {"kind": "fidelity"}, {"kind": "goodput_time"}, {"kind": "cdf"},
                  {"kind": "accuracy_time"}]
        return specs

    def job(self, spec: dict) -> FigureJob | None:
        where = spec.get("where") or {}
        ok = [r for r in self.ok if all(_same(r.get(k), v) for k, v in where.items())]
        if not ok:
            return None
        suffix = "".join(f"_{_slug(k)}{v:g}" if _is_number(v) else f"_{_slug(k)}" for k, v in where.items())
        cond = "; ".join(f"{_short_axis(k).split(' (')[0].lower()} {_fmt_axis(v)}" for k, v in where.items())
        job = self._job(spec, ok)
        if job is not None and where:
            job.name += suffix
            job.caption += f" Points with {cond}."
        return job

    def _job(self, spec: dict, ok: list[dict]) -> FigureJob | None:
        kind = spec["kind"]
        if kind in ("speedup", "scaling", "metric"):
            axis = spec.get("x") or ("n_workers" if kind == "scaling" else None)
            x = spec.get("x_column") or (x_column(ok, axis) if axis in self.axes else axis)
            if x is None:
                return None
            if kind == "metric" or (kind == "scaling" and "y" in spec):
                y = spec.get("y", TIME_PER_ITERATION)
                if not any(F._num(r.get(y)) == F._num(r.get(y)) for r in ok):
                    return None
                name = f"{y}_vs_{_slug(x)}"
                return FigureJob(name, f"{F.label(y)} against {F.label(x)}, a line per {self.per} "
                                 f"(mean and 95% interval over repetitions).",
                                 lambda: F.fig_metric(ok, x, y, log_x=spec.get("log_x", False),
                                                      title=spec.get("title"), series=SERIES,
                                                      styles=self.styles))
            base = self.baseline(spec.get("baseline"))
            metric = spec.get("metric", TIME_PER_ITERATION)
            if base is None or len(self.series) < 2:
                return None
            # pair on the axes, with list-valued axes standing for their derived column
            pair_axes = self.pair_axes()
            name = f"speedup_vs_{_slug(x)}" if kind == "speedup" else f"scaling_{_slug(x)}"
            return FigureJob(name, f"Speedup over {self.series_label(base)} in "
                             f"{'time to accuracy' if metric.startswith('time_to') else 'time per iteration'} "
                             f"against {F.label(x)}, paired by repetition (mean and 95% interval).",
                             lambda: F.fig_speedup(ok, pair_axes, x, base, metric=metric,
                                                   log_x=spec.get("log_x", False), title=spec.get("title"),
                                                   series=SERIES, styles=self.styles))
        if kind == "bars":
            return self._bars_job(spec, ok)
        if kind == "wan_bytes":
            if not any(F._num(r.get("wan_bytes_per_iteration")) == F._num(r.get("wan_bytes_per_iteration"))
                       for r in ok):
                return None
            x = spec.get("x")
            return FigureJob("wan_bytes_per_iteration", "Bytes sent onto the WAN per training iteration, "
                             f"by {self.per} (mean and 95% interval over all points).",
                             lambda: F.fig_wan_bytes(ok, x, series=SERIES,
                                                     title=spec.get("title") or f"WAN bytes per iteration by {self.per}",
                                                     styles=self.styles))
        if kind == "fidelity":
            if not any(F._num(r.get("model_iteration_time_s")) > 0 for r in ok):
                return None
            return FigureJob("measured_vs_model", "Measured time per iteration against the model's "
                             "prediction (model output, docs/model.md), one marker per point (mean "
                             "and 95% interval over repetitions); dashed: measured = model; grey: "
                             "the fidelity band.", lambda: F.fig_fidelity(ok, title=spec.get("title"),
                                                                          series=SERIES, styles=self.styles))
        if kind == "goodput_time":
            reps = self.representative(spec.get("at"))
            runs = [(r[SERIES], self.run(r)) for r in reps]
            runs = [(s, rd) for s, rd in runs if rd is not None and rd.records]
            if not runs:
                return None

            def make():
                series = [(s, *rd.goodput_series()) for s, rd in runs]
                bw = _bottleneck(runs[0][1], _longest(rd for _, rd in runs))
                return F.fig_goodput_time(series, bw, dilation=self.dilation(), title=spec.get("title"),
                                          model=[(s, *rd.model_goodput_series()) for s, rd in runs],
                                          disturbances=runs[0][1].disturbances(), styles=self.styles)
            return FigureJob("goodput_over_time", f"Job goodput over time, one run per {self.per} "
                             f"({_setting(reps[0], self.pair_axes())}), with the WAN bottleneck bandwidth "
                             "behind it." + tracking_section(runs, self.dilation()), make)
        if kind == "cdf":
            return self._cdf_job(spec)
        if kind == "accuracy_time":
            reps = self.representative(spec.get("at"))
            runs = [(r[SERIES], self.run(r)) for r in reps]
            series = [(s, *rd.accuracy_series()) for s, rd in runs if rd is not None]
            series = [s for s in series if len(s[1])]
            if not series:
                return None
            target = self.spec.get("target_accuracy")
            at = spec.get("at") or {}     # one figure per setting: the setting in its name
            name = "accuracy_vs_time" + "".join(f"_{_slug(k)}{v:g}" if _is_number(v) else f"_{_slug(k)}"
                                                for k, v in at.items())
            return FigureJob(name, "Model accuracy against wall-clock time, one run per "
                             f"{self.per} ({_setting(reps[0], self.pair_axes())}).",
                             lambda: F.fig_accuracy_time(series, target=target, dilation=self.dilation(),
                                                         title=spec.get("title"), styles=self.styles))
        return None

    def _bars_job(self, spec: dict, ok: list[dict]) -> FigureJob | None:
        """Grouped bars over a categorical axis (its values in the sweep file's order,
        labelled by the spec's `labels`), of `y` or, with `baseline`, the speedup over it."""
        x = spec.get("x")
        cats, seen = [], set()
        for c in (self.spec.get("axes") or {}).get(x) or []:   # zip axes repeat their values
            if F.category_key(c) not in seen:
                seen.add(F.category_key(c))
                cats.append(c)
        if not cats:
            return None
        labels = spec.get("labels") or [_fmt_axis(c) for c in cats]
        base = self.baseline(spec.get("baseline")) if spec.get("baseline") else None
        y = spec.get("y", TIME_PER_ITERATION)
        pair_axes = self.pair_axes()
        what = f"speedup over {self.series_label(base)} in {F.label(y).lower()}" if base else F.label(y)
        name = f"{'speedup' if base else _slug(y)}_by_{_slug(x)}"
        return FigureJob(name, f"{what[:1].upper() + what[1:]} by {', '.join(labels)}, a bar per {self.per} "
                         f"(mean and 95% interval over repetitions{', paired by repetition' if base else ''}).",
                         lambda: F.fig_bars(ok, pair_axes, x, cats, labels, y=y, baseline=base,
                                            title=spec.get("title"), xlabel=spec.get("xlabel"),
                                            series=SERIES, styles=self.styles))

    def _cdf_job(self, spec: dict) -> FigureJob | None:
        split = spec.get("split") or next((a for a in self.axes if a.startswith("stragglers")), None)
        groups = []
        if split:
            vals = sorted({r.get(split) for r in self.ok if _is_number(r.get(split))})
            if len(vals) < 2:
                split = None
        if split:
            lo, hi = vals[0], vals[-1]
            conds = [(lo, "no stragglers" if lo == 0 else f"{F.label(split).lower()} {lo:g}"),
                     (hi, f"{F.label(split).lower()} {hi:g}")]
            for v, cond in conds:
                for r in self.representative({split: v}):
                    rd = self.run(r)
                    if rd is not None:
                        groups.append((r[SERIES], cond, rd.iteration_times_s()))
            caption = (f"CDF of iteration time per {self.per}, without and with stragglers "
                       f"({F.label(split).lower()} {lo:g} vs {hi:g}).")
        else:
            reps = self.representative()
            for r in reps:
                groups.append((r[SERIES], "", self.run(r).iteration_times_s()))
            caption = f"CDF of iteration time per {self.per} ({_setting(reps[0], self.pair_axes()) if reps else ''})."
        groups = [g for g in groups if len(g[2])]
        if not groups:
            return None
        return FigureJob("iteration_time_cdf", caption,
                         lambda: F.fig_cdf(groups, dilation=self.dilation(), title=spec.get("title"),
                                           styles=self.styles))

    # ------------------------------------------------------------ the numbers
    def summary_table(self) -> str:
        """Markdown: per setting (every axis but the repetition), mean of each metric over
        repetitions, and the paired speedup over the baseline."""
        axes = self.axes
        base = self.baseline()
        sp = {}
        if base and len(self.series) > 1:
            for r in F.speedup_rows(self.ok, self.pair_axes(), base, series=SERIES):
                sp.setdefault(tuple(json.dumps(r.get(a)) for a in axes), []).append(r["speedup"])
        groups: dict[tuple, list[dict]] = {}
        for r in self.rows:
            groups.setdefault(tuple(json.dumps(r.get(a)) for a in axes), []).append(r)
        metrics = [m for m in TABLE_METRICS if any(F._num(r.get(m)) == F._num(r.get(m)) for r in self.ok)]
        head = [_short_axis(a) for a in axes] + ["ok/runs"] + [F.label(m) for m in metrics] + \
            ([f"speedup vs {base}"] if sp else [])
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for key, rs in groups.items():
            okr = [r for r in rs if r.get("status") == "ok"]
            cells = [_fmt_axis(rs[0].get(a)) for a in axes] + [f"{len(okr)}/{len(rs)}"]
            for m in metrics:
                mean, ci = F.mean_ci([F._num(r.get(m)) for r in okr])
                scale = 1e-6 if m == "wan_bytes_per_iteration" else 1
                cells.append(_fmt(mean * scale, ci * scale))
            if sp:
                cells.append(_fmt(*F.mean_ci(sp.get(key, []))))
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def failures(self) -> list[str]:
        return [f"- {r['point_id']}: {r.get('status')}: {r.get('error')}" for r in self.rows
                if r.get("status") != "ok"]


def _bottleneck(rd: RunData, end_s: float | None = None):
    """The lowest WAN link rate at every change point (real s, Mbps), for the background."""
    import numpy as np
    bw = rd.bandwidth_series(end_s)
    if not bw:
        return None
    ts = np.unique(np.concatenate([t for t, _ in bw.values()]))
    m = np.array([min(float(mb[np.searchsorted(t, x, side="right") - 1]) for t, mb in bw.values())
                  for x in ts])
    return ts, m


def _longest(runs) -> float:
    """Real seconds of the longest of these runs (first start to last end)."""
    from analysis.metrics import makespan
    return max(makespan(r.records) / r.dilation for r in runs)


def _same(a, b) -> bool:
    if _is_number(a) and _is_number(b):
        return abs(float(a) - float(b)) < 1e-12
    return a == b


def _slug(s: str) -> str:
    return s.replace("wan.default.", "").replace("stragglers.", "").replace(".", "_")


def _short_axis(a: str) -> str:
    return F.label(a) if a in F.LABELS else a


def _fmt_axis(v) -> str:
    if isinstance(v, list):
        if v and all(isinstance(d, dict) and "name" in d for d in v):   # a datacenters list
            workers = sum(int(d.get("racks", 1)) * int(d.get("workers_per_rack", 1)) for d in v)
            return f"{len(v)} DCs, {workers} workers"
        return f"{len(v)} entries"
    return str(v)


def _setting(row: dict, axes: list[str]) -> str:
    """The row's values of `axes` (the pair axes: those of its series are the series')."""
    parts = [f"{_short_axis(a).split(' (')[0].lower()} {_fmt_axis(row.get(a))}" for a in axes]
    if row.get("repetition") not in (0, None):    # the runs of repetition 0 are not here
        parts.append(f"repetition {row['repetition']}")
    return ", ".join(parts) or "the only setting"


def _fmt(mean: float, ci: float) -> str:
    if mean != mean:
        return "-"
    if ci != ci or ci == 0:
        return f"{mean:.4g}"
    return f"{mean:.4g} ± {ci:.2g}"


# ---------------------------------------------------------------- single runs

def run_jobs(runs: list[RunData]) -> list[FigureJob]:
    runs = sorted((r for r in runs if r.records), key=lambda r: scheme_sort_key(r.scheme))
    if not runs:
        return []
    s = runs[0].dilation
    marks = runs[0].disturbances(_longest(runs))
    shown = ("; background traffic shaded, failures as vertical lines"
             f" (run {runs[0].path.name})" if marks else "")
    jobs = [FigureJob("goodput_over_time", "Job goodput over time with the WAN bottleneck bandwidth behind it"
                      + shown + "." + tracking_section([(r.scheme, r) for r in runs], s),
                      lambda: F.fig_goodput_time([(r.scheme, *r.goodput_series()) for r in runs],
                                                 _bottleneck(runs[0], _longest(runs)), dilation=s,
                                                 model=[(r.scheme, *r.model_goodput_series()) for r in runs],
                                                 disturbances=marks)),
            FigureJob("iteration_time_cdf", "CDF of iteration time.",
                      lambda: F.fig_cdf([(r.scheme, _run_condition(r, runs), r.iteration_times_s())
                                         for r in runs], dilation=s))]
    if any(len(r.accuracy_series()[0]) for r in runs):
        jobs.append(FigureJob("accuracy_vs_time", "Model accuracy against wall-clock time" + shown + ".",
                              lambda: F.fig_accuracy_time([(r.scheme, *r.accuracy_series(), _run_condition(r, runs))
                                                           for r in runs], dilation=s, disturbances=marks)))
    stale = [r for r in runs if r.staleness]
    if stale:
        jobs.append(staleness_job(stale))
    return jobs


def staleness_job(runs: list[RunData]) -> FigureJob:
    """CDFs of the updates' staleness (clocks) and delay (updates) per run, with the ssp
    bounds and each run's distribution under the figure (analysis/staleness.py)."""
    from analysis.staleness import mode_label
    lines = ["", "", "| run | scheme | mode | updates | staleness mean / p95 / max | delay mean / p95 / max |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in runs:
        st = r.staleness
        a, d = st["staleness"], st["delay"]
        lines.append(f"| {r.path.name} | {r.scheme} | {mode_label(st)} | {st['updates']} | "
                     f"{a['mean']:.3g} / {a['p95']} / {a['max']} | {d['mean']:.3g} / {d['p95']} / {d['max']} |")
    bounds = [r.staleness["bound"] for r in runs if r.staleness["mode"] == "ssp"]
    return FigureJob("staleness", "Staleness of every applied update (clocks the model it was computed on "
                     "lagged behind its iteration; dotted: the ssp bound) and its delay (updates applied "
                     "between its read and its write); bsp: 0 for all." + "\n".join(lines),
                     lambda: F.fig_staleness([(r.scheme, mode_label(r.staleness), *r.update_values())
                                              for r in runs], bounds=bounds))


def network_jobs(paths: list[Path]) -> tuple[list[FigureJob], list[str]]:
    """The network figure of each distinct scenario among these runs (analysis/netfigure.py,
    rebuilt from each run's scenario.yaml), and for a run that cannot have one a line
    saying why."""
    from analysis.netfigure import describe_run, render
    groups: dict[str, list[Path]] = {}
    for p in paths:
        try:
            key = (p / "scenario.yaml").read_text()
        except OSError:
            key = f"<no scenario: {p}>"
        groups.setdefault(key, []).append(p)
    jobs, missing = [], []
    for members in groups.values():
        drawing, why = describe_run(members[0])
        runs = ", ".join(m.name for m in members)
        if drawing is None:
            missing.append(f"- No network figure for run{'s' if len(members) > 1 else ''} {runs}: {why}")
            continue
        name = f"network-{drawing.scenario}" + (f"-{members[0].name}" if len(groups) > 1 else "")
        jobs.append(FigureJob(name, f"The emulated network (run{'s' if len(members) > 1 else ''} {runs}). "
                              + drawing.caption, lambda d=drawing: render(d)))
    return jobs, missing


def tracking_section(runs: list[tuple[str, RunData]], dilation: float | None = None) -> str:
    """Markdown under the goodput-over-time figure, for runs under a bandwidth schedule: per
    run and schedule step the settled measured goodput, the model's and their ratio, and
    whether goodput tracks the model (analysis/schedule_tracking.py). '' without a schedule."""
    from analysis.schedule_tracking import SETTLE_ITERATIONS, TOLERANCE
    tracked = [(s, rd, rd.goodput_tracking) for s, rd in runs]
    tracked = [x for x in tracked if x[2]["steps"]]
    if not tracked:
        return ""
    s = f"time dilation s = {dilation:g}; " if dilation and dilation != 1 else ""
    lines = ["", "", "The dashed lines are the model's job goodput for each schedule step (model "
             "output, schemes/model_schedule.py). Goodput per schedule step, settled: the steady "
             f"complete iterations inside the step, less the first "
             f"{'iteration' if SETTLE_ITERATIONS == 1 else f'{SETTLE_ITERATIONS} iterations'} "
             f"after a change made during the job; measured goodput per worker (8 x gradient bytes / communication time) "
             f"against the model's for the step's rates ({s}real-world units). Goodput tracks when "
             f"every step's measured/model ratio is within {TOLERANCE:.0%} of its median over the steps.",
             "", "| scheme | step | from (s) | to (s) | bottleneck (Mbps) | settled iterations | "
             "measured goodput (Mbps) | model goodput (Mbps) | measured/model | / median |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = []

    def f(v, fmt=".3g"):
        return "-" if v is None else format(v, fmt)
    for scheme, rd, tr in tracked:
        for x in tr["steps"]:
            lines.append(f"| {scheme} | {x['step']} | {f(x['t_start_s'], '.1f') if x['t_start_s'] is not None else 'start'} "
                         f"| {f(x['t_end_s'], '.1f') if x['t_end_s'] is not None else 'end'} | {f(x['bottleneck_mbps'])} "
                         f"| {len(x['iterations'])} | {f(x['measured_goodput_mbps'])} | {f(x['model_goodput_mbps'])} "
                         f"| {f(x['measured_over_model'])} | {f(x['relative'])} |")
        word = {True: "tracks", False: "does not track", None: "cannot tell"}[tr["tracks"]]
        verdicts.append(f"- {scheme}: {word} within {tr['tolerance']:.0%}"
                        + (f" (median measured/model {tr['median_ratio']:.3g})" if tr["median_ratio"] else "")
                        + f": {tr['reason']}.")
    return "\n".join(lines + [""] + verdicts)


def _run_condition(run: RunData, runs: list[RunData]) -> str:
    """'' when the scheme alone tells the runs apart, else the training mode when it tells
    the runs of that scheme apart, else the run's position among them (the legend then
    shows line styles per run)."""
    from analysis.staleness import mode_label
    same = [r for r in runs if r.scheme == run.scheme]
    if len(same) == 1:
        return ""
    modes = [mode_label(r.staleness) for r in same]   # the same scheme in bsp, ssp, asp
    return modes[same.index(run)] if len(set(modes)) == len(same) else f"run {same.index(run) + 1}"


def runs_table(runs: list[RunData]) -> str:
    from testbed.fidelity import model_columns
    cols = ["run", "scheme", "complete", "iterations"] + list(TABLE_METRICS) + ["retransmissions", "switch_drops"]
    lines = ["| " + " | ".join(F.label(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for r in runs:
        row = r.metrics()
        m = dict(row, **model_columns(r.summary, row, r.path / "scenario.yaml"))
        m["run"] = r.path.name
        cells = []
        for c in cols:
            v = m.get(c)
            if c == "wan_bytes_per_iteration" and _is_number(v):
                v = v / 1e6
            missing = v is None or (isinstance(v, float) and v != v)
            cells.append("-" if missing else (f"{v:.4g}" if isinstance(v, float) else str(v)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- entry point

def make_report(results, formats=("pdf", "png")) -> Path:
    """Draw the figures RESULTS supports, write RESULTS/report.md, return its path."""
    folder = Path(results)
    kind = results_kind(folder) if folder.is_dir() else None
    if kind is None:
        raise ReportError(not_results(folder))
    formats = tuple(f.strip().lower() for f in formats if f.strip())
    bad = [f for f in formats if f not in ("pdf", "png", "svg")]
    if bad or not formats:
        raise ReportError(f"--format {','.join(formats)}: use pdf, png or svg, comma-separated")
    net_missing: list[str] = []
    if kind == "sweep":
        rep = SweepReport(folder)
        jobs, title = rep.jobs(), f"Sweep {folder.name}"
        table = rep.summary_table()
        extra = rep.failures()
        intro = (f"{len(rep.ok)} of {len(rep.rows)} points ok; axes: {', '.join(rep.axes)}. "
                 f"All numbers in real-world units (time dilation undone). Full table: "
                 f"[table.csv](table.csv), [table.sqlite](table.sqlite).")
        merged = folder / "merged_from.txt"
        if merged.is_file():    # gdml merge: say so, the runs of some rows may not be here
            n = len(merged.read_text().split())
            intro += (f" The table was merged from {n} tables of this sweep run apart (`gdml merge`; "
                      f"[merged_from.txt](merged_from.txt)); figures drawn from runs use the runs "
                      f"that are here.")
    else:
        paths = [folder] if kind == "run" else sorted(p for p in folder.iterdir() if is_run_dir(p))
        runs = [RunData.load(p) for p in paths]
        net_jobs, net_missing = network_jobs(paths)
        jobs, title = net_jobs + run_jobs(runs), f"Run{'s' if len(runs) > 1 else ''} {folder.name}"
        table, extra = runs_table(runs), []
        intro = f"{len(runs)} run(s). All numbers in real-world units (time dilation undone)."
    fig_dir = folder / "figures"
    lines = [f"# {title}", "", intro, ""]
    import matplotlib.pyplot as plt
    for job in jobs:
        fig = job.make()
        save(fig, fig_dir / job.name, formats)
        plt.close(fig)
        img = "png" if "png" in formats else formats[0]
        lines += [f"## {fig.axes[0].get_title()}", "", f"![{job.name}](figures/{job.name}.{img})", "",
                  job.caption, ""]
    if net_missing:
        lines += ["## Network", "", *net_missing, ""]
    lines += ["## Numbers", "", table, ""]
    if extra:
        lines += ["## Failed points", ""] + extra + [""]
    (folder / "report.md").write_text("\n".join(lines))
    return folder / "report.md"


def main(results: str, fmt: str = "pdf,png") -> int:
    """`gdml plot`: RESULTS itself, or the one sweep or folder of runs below it."""
    folder, kind, below = locate(results)
    if below:
        print(f"plotting {folder} ({kind}: the only results below {results})")
    path = make_report(folder, fmt.split(","))
    print(f"report: {path}")
    print(f"figures: {path.parent / 'figures'}")
    return 0
