"""analysis/figures.py and analysis/report.py from the stored results fixture
(tests/data/results_fixture: two small synthetic sweeps in the results format)."""
import shutil
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest
import yaml

from analysis import figures as F
from analysis.report import ReportError, SweepReport, load_table, make_report, run_jobs
from analysis.rundata import RunData
from analysis.style import SCHEME_STYLE, scheme_style

FIXTURE = Path(__file__).parent / "data" / "results_fixture"


@pytest.fixture()
def results(tmp_path):
    """A writable copy of the fixture (reports write figures next to the results)."""
    dst = tmp_path / "results"
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("figures", "report.md"))
    return dst


@pytest.fixture(autouse=True)
def close_figures():
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


def series_line(ax, label):
    """The data line of the errorbar series with this legend label."""
    (c,) = [c for c in ax.containers if c.get_label() == label]
    return c.lines[0]


def legend_texts(ax):
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg else []


def figs_by_name(folder):
    rep = SweepReport(folder)
    return {j.name: j.make() for j in rep.jobs()}


def test_sweep_report_writes_every_supported_figure_as_pdf_and_png(results):
    md = make_report(results / "sweep-bw")
    names = ["speedup_vs_bandwidth_mbps", "wan_bytes_per_iteration", "goodput_over_time",
             "accuracy_vs_time", "iteration_time_cdf"]
    for n in names:
        for ext in ("pdf", "png"):
            f = results / "sweep-bw" / "figures" / f"{n}.{ext}"
            assert f.is_file() and f.stat().st_size > 1000, f
        assert (results / "sweep-bw" / "figures" / f"{n}.pdf").read_bytes().startswith(b"%PDF")
        assert f"](figures/{n}.png)" in md.read_text()
    text = md.read_text()
    assert "| ps | 20 | 2/2 |" in text and "speedup vs ps" in text


def test_speedup_figure_reads_back_labels_legend_and_paired_values(results):
    fig = figs_by_name(results / "sweep-bw")["speedup_vs_bandwidth_mbps"]
    ax = fig.axes[0]
    assert ax.get_title() == "Speedup (time per iteration) vs WAN bandwidth"
    assert ax.get_xlabel() == "WAN bandwidth (Mbps)" and ax.get_ylabel() == "Speedup over PS"
    assert legend_texts(ax) == ["PS (baseline)", "Geo-INA"]
    line = series_line(ax, "Geo-INA")
    x, y = line.get_data()
    # the plotted speedup is the mean over repetitions of ps time / geo-ina time, paired by repetition
    rows = load_table(results / "sweep-bw" / "table.csv")
    t = {(r["scheme"], r["wan.default.bandwidth_mbps"], r["repetition"]): r["iteration_period_s"] for r in rows}
    expect = [np.mean([t["ps", bw, k] / t["geo-ina", bw, k] for k in (0, 1)]) for bw in (20, 50)]
    np.testing.assert_allclose(x, [20, 50])
    np.testing.assert_allclose(y, expect, rtol=1e-9)
    assert all(v > 1 for v in y)
    assert mcolors.to_hex(line.get_color()) == SCHEME_STYLE["geo-ina"]["color"].lower()
    assert line.get_marker() == SCHEME_STYLE["geo-ina"]["marker"]
    assert any("time dilation s = 2" in t.get_text() for t in ax.texts)


def test_time_series_figures_have_data_and_the_bandwidth_behind(results):
    figs = figs_by_name(results / "sweep-strag")
    ax = figs["goodput_over_time"].axes[0]
    assert ax.get_title() == "Goodput over time"
    assert ax.get_xlabel() == "Time (s)" and ax.get_ylabel() == "Goodput (Mbps)"
    assert legend_texts(ax) == ["WAN bandwidth (bottleneck)", "PS", "Geo-INA", "model"]
    assert all(len(l.get_xdata()) >= 3 and np.all(np.asarray(l.get_ydata()) > 0) for l in ax.get_lines())
    # the model's job goodput per schedule step: dashed, in each scheme's color, one level per step
    model = [l for l in ax.get_lines() if l.get_linestyle() == "--"]
    assert [l.get_color() for l in model] == [scheme_style("ps")["color"], scheme_style("geo-ina")["color"]]
    assert all(len(set(np.round(l.get_ydata(), 6))) == 2 for l in model)     # 50 then 20 Mbps
    (area,) = ax.collections
    ys = {round(float(v), 6) for p in area.get_paths() for v in p.vertices[:, 1]}
    assert {50.0, 20.0} <= ys            # the schedule's two rates, in real-world Mbps
    cdf = figs["iteration_time_cdf"].axes[0]
    assert cdf.get_ylabel() == "CDF" and cdf.get_xlabel() == "Iteration time (s)"
    # colors name the schemes, line styles the conditions
    assert legend_texts(cdf) == ["PS", "Geo-INA", "no stragglers", "straggler probability 0.3"]
    assert [l.get_label() for l in cdf.get_lines()] == [
        "PS, no stragglers", "Geo-INA, no stragglers", "PS, straggler probability 0.3",
        "Geo-INA, straggler probability 0.3"]
    assert [l.get_linestyle() for l in cdf.get_lines()] == ["-", "-", "--", "--"]
    for l in cdf.get_lines():
        y = np.asarray(l.get_ydata())
        # 12 iterations, the first (warm-up) left out as in every iteration-time statistic
        assert len(y) == 11 and y[-1] == pytest.approx(1.0) and np.all(np.diff(y) >= 0)
    # stragglers shift PS's distribution right
    lines = {l.get_label(): l for l in cdf.get_lines()}
    assert np.median(lines["PS, straggler probability 0.3"].get_xdata()) > \
        np.median(lines["PS, no stragglers"].get_xdata())
    acc = figs["accuracy_vs_time"].axes[0]
    assert acc.get_xlabel() == "Wall-clock time (s)" and acc.get_ylabel() == "Accuracy"
    assert legend_texts(acc) == ["PS", "Geo-INA"]
    assert all(len(l.get_xdata()) == 12 for l in acc.get_lines())


def test_straggler_sweep_gets_speedup_and_iteration_time_vs_probability(results):
    figs = figs_by_name(results / "sweep-strag")
    ax = figs["speedup_vs_transient_probability"].axes[0]
    assert ax.get_xlabel() == "Straggler probability"
    ax2 = figs["iteration_period_s_vs_transient_probability"].axes[0]
    assert ax2.get_ylabel() == "Time per iteration (s)" and legend_texts(ax2) == ["PS", "Geo-INA"]
    assert len(ax2.containers) == 2
    # both schemes at p = 0 and 0.3, drawn 1% of the span apart so the bars stay visible
    xs = [np.asarray(c.lines[0].get_xdata()) for c in ax2.containers]
    for x in xs:
        np.testing.assert_allclose(x, [0.0, 0.3], atol=0.3 * 0.01)
    assert not np.allclose(xs[0], xs[1])


def test_wan_bytes_bars_by_scheme(results):
    ax = figs_by_name(results / "sweep-bw")["wan_bytes_per_iteration"].axes[0]
    assert ax.get_ylabel() == "WAN MB per iteration" and legend_texts(ax) == ["PS", "Geo-INA"]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([2 * 2 * 4 * 65536 / 1e6, 2 * 1 * 4 * 65536 / 1e6], rel=1e-4)


def test_scaling_and_metric_figures_from_rows():
    rows = [{"status": "ok", "scheme": s, "repetition": r, "datacenters": [0] * n, "n_datacenters": n,
             "iteration_period_s": n * (1.0 if s == "ps" else 0.5) + 0.01 * r, "time_dilation": 1.0}
            for s in ("ps", "ring") for n in (2, 3, 4) for r in (0, 1)]
    fig = F.fig_speedup(rows, ["scheme", "datacenters"], "n_datacenters", "ps")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "Datacenters" and legend_texts(ax) == ["PS (baseline)", "Ring all-reduce"]
    line = series_line(ax, "Ring all-reduce")
    np.testing.assert_allclose(line.get_xdata(), [2, 3, 4])     # the only series: not moved
    assert np.all(np.asarray(line.get_ydata()) > 1.9)
    assert not any(t.get_text() for t in ax.texts)          # no dilation note at s = 1
    fig = F.fig_metric(rows, "n_datacenters", "iteration_period_s")
    ps = series_line(fig.axes[0], "PS")
    np.testing.assert_allclose(ps.get_ydata(), [2.005, 3.005, 4.005])


def test_accuracy_figures_at_two_settings_are_two_figures(results):
    import yaml
    spec_path = results / "sweep-bw" / "sweep.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    spec["figures"] = [{"kind": "accuracy_time", "at": {"wan.default.bandwidth_mbps": v}} for v in (20, 50)]
    spec_path.write_text(yaml.safe_dump(spec))
    jobs = SweepReport(results / "sweep-bw").jobs()
    assert [j.name for j in jobs] == ["accuracy_vs_time_bandwidth_mbps20", "accuracy_vs_time_bandwidth_mbps50"]
    assert "bandwidth" in jobs[1].caption and "50" in jobs[1].caption


def test_single_run_report_and_errors(results):
    run = next((results / "sweep-strag" / "points" / "p0001-r0").glob("*/*/summary.json")).parent
    md = make_report(run, ["png"])
    assert (run / "figures" / "goodput_over_time.png").is_file()
    assert not (run / "figures" / "goodput_over_time.pdf").exists()
    assert "| " + run.name + " | ps | True | 12 |" in md.read_text()
    # under the goodput figure: the per-step table against the model and the verdict
    assert "| scheme | step | from (s) | to (s) | bottleneck (Mbps) |" in md.read_text()
    assert "- ps: tracks within 15%" in md.read_text()   # this run's steps: 0.98 and 1.02 of the median
    jobs = run_jobs([RunData.load(run)])
    assert [j.name for j in jobs] == ["goodput_over_time", "iteration_time_cdf", "accuracy_vs_time"]
    with pytest.raises(ReportError, match="use pdf, png or svg"):
        make_report(run, ["gif"])
    with pytest.raises(ReportError, match="neither a sweep"):
        make_report(results / "sweep-bw" / "points")


def test_paper_style_serif_fonts_and_fixed_scheme_styles():
    fig = F.fig_cdf([("ps", "", [1.0, 2.0]), ("my-scheme", "", [1.5])])
    ax = fig.axes[0]
    assert ax.title.get_fontfamily()[0] in ("DejaVu Serif", "serif", "Times New Roman")
    w, h = fig.get_size_inches()
    assert w == pytest.approx(3.5)
    # every known scheme distinct; an unknown one gets a stable style
    colors = {v["color"] for v in SCHEME_STYLE.values()}
    assert len(colors) == len(SCHEME_STYLE)
    assert scheme_style("my-scheme") == scheme_style("my-scheme")


def test_paired_speedups_agree_with_analysis_speedup():
    """Figures pair table rows; analysis/speedup.py compares the runs' rows: same ratio."""
    from analysis import speedup as SP
    rows = load_table(FIXTURE / "sweep-bw" / "table.csv")
    sp = F.speedup_rows(rows, ["scheme", "wan.default.bandwidth_mbps"], "ps")
    runs = {(r["scheme"], r["wan.default.bandwidth_mbps"], r["repetition"]):
            RunData.load(FIXTURE / "sweep-bw" / r["run_dir"]).metrics() for r in rows}
    checked = 0
    for r in sp:
        key = (r["wan.default.bandwidth_mbps"], r["repetition"])
        expect = SP.speedup(runs[("ps",) + key], runs[(r["scheme"],) + key])["iteration"]
        assert r["speedup"] == pytest.approx(expect, rel=1e-5)      # the table keeps 6 digits
        checked += 1
    assert checked == 8     # every row paired with its own repetition's ps run (ps with itself: 1)


def test_measured_against_model_figure():
    rows = [{"status": "ok", "scheme": s, "repetition": r, "model_iteration_time_s": model,
             "iteration_period_s": model * k + 0.01 * r}
            for s, model, k in (("ps", 1.0, 2.0), ("geo-ina", 0.5, 1.1)) for r in (0, 1)]
    rows.append({"status": "ok", "scheme": "ring", "repetition": 0, "model_iteration_time_s": None,
                 "iteration_period_s": 3.0})                      # no model: left out
    ax = F.fig_fidelity(rows).axes[0]
    assert legend_texts(ax)[1:] == ["PS", "Geo-INA"] and "band 0.9-1.2" in legend_texts(ax)[0]
    pts = {tuple(np.round(c.lines[0].get_xydata()[0], 3)) for c in ax.containers}
    assert pts == {(1.0, 2.005), (0.5, 0.555)}                   # model on x, measured mean on y
    assert ax.get_xlim() == ax.get_ylim() and ax.get_xlim()[1] == pytest.approx(2.01 * 1.1)   # the largest value, with room


def test_bars_over_a_categorical_axis_with_paired_speedups():
    sched = {"min_mbps": 20, "max_mbps": 155, "every_s": 3}
    t = {("mxnet-ps", None): 2.0, ("netstorm", None): 0.5, ("mxnet-ps", "d"): 3.0, ("netstorm", "d"): 1.0}
    rows = [{"status": "ok", "scheme": s, "repetition": r, "wan.bandwidth_schedule": v,
             "iteration_period_s": t[(s, None if v is None else "d")] * (1 + 0.1 * r), "time_dilation": 20.0}
            for s in ("mxnet-ps", "netstorm") for v in (None, sched) for r in (0, 1, 2)]
    fig = F.fig_bars(rows, ["wan.bandwidth_schedule"], "wan.bandwidth_schedule", [None, sched],
                     ["static", "dynamic"], baseline="mxnet-ps")
    ax = fig.axes[0]
    assert [x.get_text() for x in ax.get_xticklabels()] == ["static", "dynamic"]
    assert ax.get_ylabel() == "Speedup over MXNet PS"
    assert legend_texts(ax) == ["MXNet PS (baseline)", "NetStorm"]
    # paired by repetition: the (1 + 0.1 r) factor cancels, so 4 and 3 exactly, zero interval
    assert [p.get_height() for p in ax.patches] == pytest.approx([4.0, 3.0])
    assert any("time dilation s = 20" in x.get_text() for x in ax.texts)
    fig = F.fig_bars(rows, ["wan.bandwidth_schedule"], "wan.bandwidth_schedule", [None, sched],
                     ["static", "dynamic"])
    assert [round(p.get_height(), 6) for p in fig.axes[0].patches] == [2.2, 3.3, 0.55, 1.1]


def test_bars_over_the_series_axis_draw_one_full_bar_per_category():
    # x: label: each labelled series lives in its own category, so each gets one centred bar
    labels = ["inart", "inart-sp", "single"]
    rows = [{"status": "ok", "scheme": "inart", "label": lab, "repetition": r,
             "comm_time_mean_s": c * (1 + 0.1 * r)}
            for lab, c in zip(labels, (0.5, 1.0, 2.0)) for r in (0, 1, 2)]
    ax = F.fig_bars(rows, [], "label", labels, labels, y="comm_time_mean_s", series="label",
                    baseline="single").axes[0]
    assert [p.get_x() + p.get_width() / 2 for p in ax.patches] == pytest.approx([0, 1])
    assert [p.get_height() for p in ax.patches] == pytest.approx([4.0, 2.0])   # paired
    assert ax.get_title() == "Speedup (communication time)"


def test_speedups_pair_across_per_scheme_options_of_a_zip_sweep(tmp_path):
    # scheme_options zipped with scheme belong to the scheme: pairing on them would leave
    # every scheme without a baseline row
    from analysis.report import SweepReport as Report
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({
        "axes": {"scheme": ["mxnet-ps", "netstorm"], "scheme_options": [{}, {"block_values": 8}],
                 "wan.bandwidth_schedule": [None, {"every_s": 2}]},
        "mode": "zip", "cross": ["wan.bandwidth_schedule"],
        "figures": [{"kind": "bars", "x": "wan.bandwidth_schedule", "baseline": "mxnet-ps"}]}))
    rep = Report.__new__(Report)
    rep.spec = yaml.safe_load((tmp_path / "sweep.yaml").read_text())
    rep.axes = list(rep.spec["axes"])
    rep.series = ["mxnet-ps", "netstorm"]
    assert rep.pair_axes() == ["wan.bandwidth_schedule"]
    assert rep.baseline() == "mxnet-ps"
    rep.rows = rep.ok = [{"scheme": s, "series": s, "repetition": 0, "scheme_options": o,
                          "wan.bandwidth_schedule": w, "status": "ok"}
                         for s, o in (("mxnet-ps", {}), ("netstorm", {"block_values": 8}))
                         for w in (None, {"every_s": 2})]
    rep.run = lambda row: object()      # every row's run folder is there
    got = rep.representative({"wan.bandwidth_schedule": None})
    assert [r["scheme"] for r in got] == ["mxnet-ps", "netstorm"]
