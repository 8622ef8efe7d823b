"""Paper-style figures from a sweep's table rows and from runs' time series.

Each `fig_*` function takes plain data (table rows as dicts, numpy series) and returns a
matplotlib Figure in the paper style of analysis/style.py; analysis/report.py decides which
figures the results support and saves them. A figure draws one series per value of the
`series` column (default the scheme; the report passes its label-or-scheme column,
analysis/series.py) in the styles given (`styles`: analysis/style.series_styles), or, without
them, in each scheme's own. Over repetitions a point is the mean with a
95% interval (error bars, or a band for time series); a dashed line marks speedup 1.
"""
from __future__ import annotations

import json

from collections import defaultdict
from typing import Iterable, Sequence

import numpy as np

from analysis.measure import TIME_PER_ITERATION
from analysis.metrics import cdf_points, mean_ci
from analysis.speedup import ratio
from analysis.style import (BACKGROUND_TRAFFIC_COLOR, BANDWIDTH_COLOR, FAILURE_COLOR, FIG_SIZE, legend_above,
                            new_figure, note_dilation, paper_style,
                            scheme_sort_key, scheme_style, series_styles)

LABELS = {
    "model_iteration_time_s": "Model time per iteration (s; model output)",
    "measured_over_model": "Measured / model",
    "wan.default.bandwidth_mbps": "WAN bandwidth (Mbps)",
    "wan.default.delay_ms": "WAN one-way delay (ms)",
    "wan.default.loss_pct": "WAN loss (%)",
    "stragglers.transient.probability": "Straggler probability",
    "stragglers.transient.factor": "Straggler slowdown (x)",
    "stragglers.persistent.0.factor": "Straggler slowdown (x)",
    "n_workers": "Workers", "n_datacenters": "Datacenters",
    "workload.batch_size": "Minibatch per worker (samples)",
    "workload.zipf_exponent": "Zipf exponent of the ids",
    "final_auc": "Final test AUC",
    "iteration_period_s": "Time per iteration (s)",
    "iteration_time_mean_s": "Job iteration time (s)",
    "iteration_time_p99_s": "99th pct. iteration time (s)",
    "goodput_mbps": "Goodput per worker (Mbps)",
    "job_goodput_mbps": "Job goodput (Mbps)",
    "wan_bytes_per_iteration": "WAN MB per iteration",
    "time_to_accuracy_s": "Time to target accuracy (s)",
    "comm_time_mean_s": "Communication time (s)",
}


def label(name: str) -> str:
    return LABELS.get(name, name)


def _bare(text: str) -> str:
    """A label without its unit, lower case inside a title unless an acronym:
    'WAN bandwidth (Mbps)' -> 'WAN bandwidth', 'Datacenters' -> 'datacenters'."""
    t = text.split(" (")[0]
    return t if len(t) > 1 and t[1].isupper() else t[:1].lower() + t[1:]


def _integer_ticks(ax, xs) -> None:
    """Whole-number x ticks when every x is a whole number (workers, datacenters)."""
    from matplotlib.ticker import MaxNLocator
    if len(xs) and all(float(x).is_integer() for x in xs):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _ok(rows: Iterable[dict]) -> list[dict]:
    return [r for r in rows if r.get("status", "ok") == "ok"]


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _dilation(rows: Sequence[dict]) -> float | None:
    vals = {_num(r.get("time_dilation")) for r in rows}
    vals = {v for v in vals if v == v}
    return max(vals) if vals else None


def _styles(rows: Iterable[dict], series: str, styles: dict | None) -> dict:
    """The styles given, else the rows' own: a series per value of `series`, each keyed to
    its row's scheme (without labels, the scheme's own style)."""
    if styles is not None:
        return styles
    return series_styles((str(r.get(series)), str(r.get("scheme") or r.get(series))) for r in rows)


def style_of(styles: dict | None, name) -> dict:
    """One series' style: from `styles`, else the scheme's (with the line defaults)."""
    if styles and str(name) in styles:
        return styles[str(name)]
    return dict(scheme_style(str(name)), linestyle="-", hatch=None)


def _ordered(names: Iterable, styles: dict | None) -> list:
    """Series in the styles' order (the report's), unknown ones after, by scheme order."""
    keys = list(styles or {})
    return sorted(names, key=lambda s: (0, keys.index(str(s))) if str(s) in keys
                  else (1, scheme_sort_key(str(s))))


def speedup_rows(rows: Sequence[dict], axes: Sequence[str], baseline: str,
                 metric: str = TIME_PER_ITERATION, series: str = "scheme") -> list[dict]:
    """Paired speedups: each ok row divided into the baseline row with the same values of
    every other axis and the same repetition (same seed: same stragglers and schedules).
    Returns copies of the rows with `speedup` = analysis/speedup.ratio(baseline row, row,
    metric) (None when either has no number)."""
    key_cols = [a for a in axes if a != series] + ["repetition"]
    base = {tuple(str(r.get(c)) for c in key_cols): r
            for r in _ok(rows) if r.get(series) == baseline}
    out = []
    for r in _ok(rows):
        b = base.get(tuple(str(r.get(c)) for c in key_cols))
        if b is None:
            continue
        out.append(dict(r, speedup=ratio(b, r, metric)))
    return out


def series_stats(rows: Sequence[dict], x: str, y: str, series: str = "scheme",
                 styles: dict | None = None):
    """{series value: (xs, means, 95% half-widths)} over repetitions, xs sorted; series in
    the styles' order (without styles, by scheme order)."""
    acc: dict = defaultdict(lambda: defaultdict(list))
    for r in _ok(rows):
        xv, yv = _num(r.get(x)), _num(r.get(y))
        if xv == xv and yv == yv:
            acc[r.get(series)][xv].append(yv)
    out = {}
    for s in _ordered(acc, styles):
        xs = sorted(acc[s])
        stats = [mean_ci(acc[s][v]) for v in xs]
        out[s] = (np.array(xs), np.array([m for m, _ in stats]), np.array([c for _, c in stats]))
    return out


def _log_x(ax, stats: dict) -> None:
    """Log x axis labelled at the swept values (10, 20, 50, 100), not at powers of ten."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter
    xs = sorted({float(x) for xs, _, _ in stats.values() for x in xs})
    ax.set_xscale("log")
    if xs:
        ax.xaxis.set_major_locator(FixedLocator(xs))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(ScalarFormatter())


def dodge(xs: np.ndarray, k: int, n: int, log: bool, span: float) -> np.ndarray:
    """x positions of series k of n, spread a little around the true x so that error bars
    at the same x do not hide each other: +-2.5% per step on log axes, 1% of the x span
    on linear ones. The true values are in the table; the figure only separates them."""
    off = k - (n - 1) / 2
    return xs * 1.025 ** off if log else xs + 0.01 * span * off


def _lines(ax, stats: dict, log_x: bool = False, styles: dict | None = None) -> None:
    allx = [x for xs, _, _ in stats.values() for x in xs]
    span = (max(allx) - min(allx)) if allx else 0.0
    for k, (s, (xs, m, ci)) in enumerate(stats.items()):
        st = style_of(styles, s)
        ax.errorbar(dodge(xs, k, len(stats), log_x, span), m, yerr=ci, color=st["color"],
                    marker=st["marker"], label=st["label"], linestyle=st["linestyle"])
    _integer_ticks(ax, allx)


def fig_metric(rows: Sequence[dict], x: str, y: str, *, series: str = "scheme", title: str | None = None,
               xlabel: str | None = None, ylabel: str | None = None, log_x: bool = False,
               styles: dict | None = None):
    """A line per series of metric y against axis x (mean and 95% interval over repetitions)."""
    styles = _styles(rows, series, styles)
    with paper_style():
        fig, ax = new_figure()
        stats = series_stats(rows, x, y, series, styles)
        _lines(ax, stats, log_x, styles)
        ax.set_xlabel(xlabel or label(x))
        ax.set_ylabel(ylabel or label(y))
        ax.set_ylim(bottom=0)           # times, rates and bytes: intervals below 0 say nothing
        if log_x:
            _log_x(ax, stats)
        legend_above(ax, title or f"{label(y).split(' (')[0]} vs {_bare(label(x))}")
        note_dilation(ax, _dilation(rows))
    return fig


def fig_speedup(rows: Sequence[dict], axes: Sequence[str], x: str, baseline: str, *,
                metric: str = TIME_PER_ITERATION, series: str = "scheme", title: str | None = None,
                xlabel: str | None = None, log_x: bool = False, include_baseline: bool = False,
                styles: dict | None = None):
    """Speedup over `baseline` (its time per iteration, or to accuracy, over the series') vs
    axis x, a line per series (scheme or label), paired by repetition, mean and 95% interval."""
    styles = _styles(rows, series, styles)
    sp = [r for r in speedup_rows(rows, axes, baseline, metric, series)
          if include_baseline or r.get(series) != baseline]
    what = "time to accuracy" if metric.startswith("time_to_accuracy") else "time per iteration"
    base_label = style_of(styles, baseline)["label"]
    with paper_style():
        fig, ax = new_figure()
        ax.axhline(1.0, color="#777777", linestyle="--", linewidth=0.8, label=f"{base_label} (baseline)")
        stats = series_stats(sp, x, "speedup", series, styles)
        _lines(ax, stats, log_x, styles)
        ax.set_xlabel(xlabel or label(x))
        ax.set_ylabel(f"Speedup over {base_label}")
        ax.set_ylim(bottom=0)           # an interval below 0 says nothing a speedup can be
        if log_x:
            _log_x(ax, stats)
        legend_above(ax, title or f"Speedup ({what}) vs {_bare(label(x))}")
        note_dilation(ax, _dilation(rows))
    return fig


def fig_wan_bytes(rows: Sequence[dict], x: str | None = None, *, series: str = "scheme",
                  title: str | None = None, styles: dict | None = None):
    """WAN bytes per iteration (MB) by series: bars with 95% intervals; grouped by x when
    given (one group per value of x)."""
    styles = _styles(rows, series, styles)
    rows = [r for r in _ok(rows) if _num(r.get("wan_bytes_per_iteration")) == _num(r.get("wan_bytes_per_iteration"))]
    schemes = _ordered({r.get(series) for r in rows}, styles)
    xs = sorted({_num(r.get(x)) for r in rows}) if x else [None]
    width = 0.8 / max(1, len(schemes))
    with paper_style():
        fig, ax = new_figure()
        for k, s in enumerate(schemes):
            st = style_of(styles, s)
            ms, cis = [], []
            for xv in xs:
                vals = [_num(r["wan_bytes_per_iteration"]) / 1e6 for r in rows
                        if r.get(series) == s and (x is None or _num(r.get(x)) == xv)]
                m, c = mean_ci(vals)
                ms.append(m)
                cis.append(c)
            pos = np.arange(len(xs)) + (k - (len(schemes) - 1) / 2) * width
            ax.bar(pos, ms, width * 0.9, yerr=cis, color=st["color"], label=st["label"],
                   hatch=st["hatch"], edgecolor="white" if st["hatch"] else None,
                   error_kw={"elinewidth": 0.8})
        ax.set_xticks(np.arange(len(xs)) if x else [])
        if x:
            ax.set_xticklabels([f"{v:g}" for v in xs])
        ax.set_xlabel(label(x) if x else "")
        ax.set_ylabel(label("wan_bytes_per_iteration"))
        legend_above(ax, title or "WAN bytes per iteration by scheme")
        ax.grid(axis="x", visible=False)
    return fig


def category_key(v) -> str:
    """A value of a categorical axis (None, a number, a schedule mapping...) as a stable key."""
    return json.dumps(v, sort_keys=True)


def fig_bars(rows: Sequence[dict], axes: Sequence[str], x: str, categories: Sequence,
             labels: Sequence[str], *, y: str = TIME_PER_ITERATION, baseline: str | None = None,
             series: str = "scheme", title: str | None = None, xlabel: str | None = None,
             styles: dict | None = None):
    """Grouped bars for a categorical axis x (e.g. static vs dynamic WAN): one group per
    value in `categories` (labelled `labels`), a bar per series, mean and 95% interval over
    repetitions; with `baseline`, the speedup over it paired by repetition (as fig_speedup)."""
    styles = _styles(rows, series, styles)
    if baseline:
        rows = [r for r in speedup_rows(rows, axes, baseline, y, series) if r.get(series) != baseline]
        col = "speedup"
    else:
        rows, col = _ok(rows), y
    keys = [category_key(c) for c in categories]
    schemes = _ordered({r.get(series) for r in rows}, styles)
    # x names the series themselves (x: label): one bar per category, full width
    own = {s: {category_key(r.get(x)) for r in rows if r.get(series) == s} for s in schemes}
    diagonal = all(len(v) <= 1 for v in own.values())
    width = 0.6 if diagonal else 0.8 / max(1, len(schemes))
    with paper_style():
        fig, ax = new_figure()
        if baseline:
            ax.axhline(1.0, color="#777777", linestyle="--", linewidth=0.8,
                       label=f"{style_of(styles, baseline)['label']} (baseline)")
        for k, s in enumerate(schemes):
            st = style_of(styles, s)
            ms, cis = [], []
            for key in keys:
                vals = [_num(r.get(col)) for r in rows
                        if r.get(series) == s and category_key(r.get(x)) == key]
                m, c = mean_ci([v for v in vals if v == v])
                ms.append(m)
                cis.append(c)
            pos = np.arange(len(keys)) + (0 if diagonal else (k - (len(schemes) - 1) / 2) * width)
            if diagonal:    # only the series' own category
                keep = [i for i, m in enumerate(ms) if m == m]
                pos, ms, cis = pos[keep], [ms[i] for i in keep], [cis[i] for i in keep]
            ax.bar(pos, ms, width * 0.9, yerr=cis, color=st["color"], label=st["label"],
                   hatch=st["hatch"], edgecolor="white" if st["hatch"] else None,
                   error_kw={"elinewidth": 0.8})
        ax.set_xticks(np.arange(len(keys)))
        ax.set_xticklabels(list(labels), rotation=20 if diagonal and len(keys) > 3 else 0,
                           ha="right" if diagonal and len(keys) > 3 else "center")
        ax.set_xlabel(xlabel or "")
        if baseline:
            ax.set_ylabel(f"Speedup over {style_of(styles, baseline)['label']}")
            ax.set_ylim(bottom=0)
        else:
            ax.set_ylabel(label(y))
        legend_above(ax, title or (f"Speedup ({label(y).split(' (')[0].lower()})" if baseline else label(y)))
        ax.grid(axis="x", visible=False)
        note_dilation(ax, _dilation(rows))
    return fig


def fig_fidelity(rows: Sequence[dict], band: tuple[float, float] = (0.9, 1.2), *,
                 series: str = "scheme", title: str | None = None, styles: dict | None = None):
    """Measured iteration time against the model's (model output), one marker per point
    (mean and 95% interval over its repetitions), a marker style per series; the diagonal
    is measured = model, the grey wedge the fidelity band."""
    styles = _styles(rows, series, styles)
    rows = [r for r in _ok(rows) if _num(r.get("model_iteration_time_s")) > 0
            and _num(r.get(TIME_PER_ITERATION)) == _num(r.get(TIME_PER_ITERATION))]
    groups: dict = defaultdict(list)
    for r in rows:
        groups[(r.get(series), _num(r["model_iteration_time_s"]))].append(_num(r[TIME_PER_ITERATION]))
    with paper_style():
        fig, ax = new_figure()
        top = max([m for _, m in groups] + [max(v) for v in groups.values()] + [1e-3]) * 1.1
        line = np.array([0.0, top])
        ax.fill_between(line, band[0] * line, band[1] * line, color=BANDWIDTH_COLOR, alpha=0.35,
                        linewidth=0, label=f"band {band[0]:g}-{band[1]:g}")
        ax.plot(line, line, "k--", linewidth=0.8)
        seen = set()
        order = _ordered({s for s, _ in groups}, styles)
        for (s, model), vals in sorted(groups.items(), key=lambda kv: order.index(kv[0][0])):
            st = style_of(styles, s)
            m, c = mean_ci(vals)
            ax.errorbar([model], [m], yerr=[c], fmt=st["marker"], color=st["color"],
                        label=None if s in seen else st["label"], markersize=4, elinewidth=0.8)
            seen.add(s)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel(label("model_iteration_time_s"))
        ax.set_ylabel("Measured time per iteration (pace, s)")
        legend_above(ax, title or "Measured against model, per point")
    return fig


MARKER_LINE = {"kill": "-", "link_down": "--", "link_up": ":"}


def draw_disturbances(ax, disturbances) -> None:
    """Background traffic as light shaded spans behind the data, failures (kills, links
    down and up) as labelled vertical lines: disturbances = (spans, markers) of
    analysis/disturbance_marks.py, or None. One legend entry each."""
    if not disturbances:
        return
    spans, markers = disturbances
    for i, sp in enumerate(spans):
        ax.axvspan(sp.start, sp.end, color=BACKGROUND_TRAFFIC_COLOR, alpha=0.18, linewidth=0,
                   zorder=0, label="background traffic" if i == 0 else None)
    for i, m in enumerate(markers):
        ax.axvline(m.t, color=FAILURE_COLOR, linestyle=MARKER_LINE.get(m.kind, "-"), linewidth=0.8,
                   zorder=3, label="failure" if i == 0 else None)
        ax.text(m.t, 0.98, f" {m.label}", transform=ax.get_xaxis_transform(), rotation=90,
                ha="right", va="top", fontsize=5.5, color=FAILURE_COLOR, zorder=3)


def fig_goodput_time(series: Sequence[tuple[str, np.ndarray, np.ndarray]],
                     bandwidth: tuple[np.ndarray, np.ndarray] | None = None, *,
                     title: str | None = None, dilation: float | None = None,
                     bandwidth_label: str = "WAN bandwidth (bottleneck)",
                     model: Sequence[tuple[str, np.ndarray, np.ndarray]] = (),
                     disturbances=None, styles: dict | None = None):
    """Job goodput over time, a line per series (t, Mbps), with the WAN capacity as a grey
    step area behind it; `model`: the model's job goodput per bandwidth-schedule step,
    (series, t, Mbps) step points, dashed in the series' color (one legend entry, "model");
    `disturbances`: background traffic and failures (draw_disturbances)."""
    with paper_style():
        fig, ax = new_figure()
        draw_disturbances(ax, disturbances)
        if bandwidth is not None and len(bandwidth[0]):
            t, m = bandwidth
            ax.fill_between(t, m, step="post", color=BANDWIDTH_COLOR, alpha=0.6, linewidth=0,
                            label=bandwidth_label, zorder=0)
        for scheme, t, mbps in series:
            st = style_of(styles, scheme)
            ax.plot(t, mbps, color=st["color"], label=st["label"], linestyle=st["linestyle"], zorder=2)
        labelled = False
        for scheme, t, mbps in model:
            if not len(t):
                continue
            ax.step(t, mbps, where="post", color=style_of(styles, scheme)["color"], linestyle="--",
                    linewidth=0.9, label=None if labelled else "model", zorder=1)
            labelled = True
        ax.set_xlabel("Time (s)")
        ax.set_ylabel("Goodput (Mbps)")
        ax.set_ylim(bottom=0)
        legend_above(ax, title or "Goodput over time")
        note_dilation(ax, dilation)
    return fig


def fig_cdf(groups: Sequence[tuple[str, str, Sequence[float]]], *, title: str | None = None,
            xlabel: str = "Iteration time (s)", dilation: float | None = None,
            styles: dict | None = None):
    """Empirical CDFs: (series, condition, values); the series sets the color (and, for a
    scheme's further labelled series, the line style, or with several conditions markers),
    the condition the line style (first condition solid, then dashed, dotted). With several
    conditions the legend lists series (colors) and conditions (styles) separately."""
    from matplotlib.lines import Line2D
    cond_styles = ["-", "--", ":", "-."]
    conds: list[str] = []
    names: list[str] = []
    several = len({cond for _, cond, _ in groups}) > 1

    def marked(st: dict) -> bool:
        """A scheme's further series among several conditions: its marker tells it apart
        (the line style is the condition's)."""
        return several and st["linestyle"] != "-"

    with paper_style():
        fig, ax = new_figure()
        for name, cond, values in groups:
            if cond not in conds:
                conds.append(cond)
            if name not in names:
                names.append(name)
            x, f = cdf_points(values)
            st = style_of(styles, name)
            lab = st["label"] + (f", {cond}" if cond else "")
            ax.step(x, f, where="post", color=st["color"], label=lab,
                    linestyle=cond_styles[conds.index(cond) % 4] if several else st["linestyle"],
                    marker=st["marker"] if marked(st) else None, markevery=max(1, len(x) // 6))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CDF")
        ax.set_ylim(0, 1.02)
        handles = labels = None
        if len(conds) > 1:
            sts = [style_of(styles, n) for n in names]
            handles = [Line2D([], [], color=st["color"], marker=st["marker"] if marked(st) else None)
                       for st in sts] + \
                [Line2D([], [], color="#444444", linestyle=cond_styles[i % 4]) for i in range(len(conds))]
            labels = [st["label"] for st in sts] + conds
        legend_above(ax, title or "CDF of iteration time", handles, labels)
        note_dilation(ax, dilation)
    return fig


def fig_accuracy_time(series: Sequence[tuple[str, np.ndarray, np.ndarray]], *, target: float | None = None,
                      title: str | None = None, dilation: float | None = None, disturbances=None,
                      styles: dict | None = None):
    """Accuracy vs wall-clock time (real-world s), a line per series; the target dotted;
    `disturbances`: background traffic and failures (draw_disturbances).
    A series may carry a fourth element, a condition (e.g. the training mode) that tells
    runs of one series apart: it sets the line style and joins the label."""
    cond_styles = ["-", "--", ":", "-."]
    conds: list[str] = []
    with paper_style():
        fig, ax = new_figure()
        draw_disturbances(ax, disturbances)
        for scheme, t, acc, *cond in series:
            cond = cond[0] if cond else ""
            if cond not in conds:
                conds.append(cond)
            st = style_of(styles, scheme)
            ax.plot(t, acc, color=st["color"], marker=st["marker"], markevery=max(1, len(t) // 8),
                    linestyle=cond_styles[conds.index(cond) % len(cond_styles)] if cond else st["linestyle"],
                    label=st["label"] + (f", {cond}" if cond else ""))
        if target is not None:
            ax.axhline(target, color="#777777", linestyle=":", linewidth=0.8, label=f"target {target:g}")
        ax.set_xlabel("Wall-clock time (s)")
        ax.set_ylabel("Accuracy")
        legend_above(ax, title or "Accuracy vs wall-clock time")
        note_dilation(ax, dilation)
    return fig


def fig_staleness(series: Sequence[tuple[str, str, Sequence[int], Sequence[int]]], *,
                  bounds: Sequence[int] = (), title: str | None = None):
    """Staleness and delay of every update (analysis/staleness.py), as CDFs side by side:
    (scheme, mode label, staleness values, delay values) per run; the scheme sets the color,
    the mode the line style. Dotted verticals: the ssp bounds on the left panel."""
    styles = ["-", "--", ":", "-."]
    modes: list[str] = []
    import matplotlib.pyplot as plt
    with paper_style():
        fig, (left, right) = plt.subplots(1, 2, figsize=(2 * FIG_SIZE[0], FIG_SIZE[1]),
                                          constrained_layout=True)
        for scheme, mode, stale, delay in series:
            if mode not in modes:
                modes.append(mode)
            st = scheme_style(scheme)
            ls = styles[modes.index(mode) % len(styles)]
            for ax, values in ((left, stale), (right, delay)):
                if len(values):
                    x, f = cdf_points(values)
                    ax.step(x, f, where="post", color=st["color"], linestyle=ls,
                            label=f"{st['label']}, {mode}")
        for b in sorted(set(bounds)):
            left.axvline(b, color="#777777", linestyle=":", linewidth=0.8)
        left.set_xlabel("Staleness (clocks behind)")
        right.set_xlabel("Delay (updates applied in between)")
        for ax in (left, right):
            ax.set_ylabel("CDF")
            ax.set_ylim(0, 1.02)
            _integer_ticks(ax, [0, 1])
        legend_above(left, title or "Staleness and delay of the updates")
    return fig
