"""Series labels in sweeps: a zipped `label` axis names each zipped row's series
(testbed/sweep_model.py), is recorded with the point and in the table but never applied to
the scenario, and keys every figure, legend, speedup baseline and table of the report
(analysis/report.py, analysis/series.py) - here on synthetic runs (tests/synthetic_runs.py)."""
import csv
import json
import sqlite3
from pathlib import Path

import matplotlib.colors as mcolors
import pytest

from analysis import figures as F
from analysis.headline import headline_rows
from analysis.report import SweepReport, make_report
from analysis.style import series_styles
from testbed import sweep as S
from testbed.sweep_model import SweepError, load_sweep
from tests.synthetic_runs import write_run

BASE = Path(__file__).parent / "data" / "results_fixture" / "base.yaml"

# geo-ina twice (64k and 16k parameters: different times in the synthetic model) beside ps,
# each zipped row labelled, crossed with the WAN bandwidth; the baseline is a label
LABELLED = """name: lab
mode: zip
axes:
  scheme: [ps, geo-ina, geo-ina]
  workload.parameters: [65536, 65536, 16384]
  label: [ps, geo-ina-64k, geo-ina-16k]
  wan.default.bandwidth_mbps: [20, 50]
cross: [wan.default.bandwidth_mbps]
repetitions: 2
seeds: {policy: per-repetition, base: 1}
figures:
  - {kind: speedup, x: wan.default.bandwidth_mbps, baseline: geo-ina-64k}
  - {kind: metric, x: wan.default.bandwidth_mbps, y: iteration_period_s}
  - {kind: wan_bytes}
  - {kind: fidelity}
  - {kind: goodput_time}
  - {kind: cdf}
"""


def sweep_file(tmp_path, body: str) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"base: {BASE}\n" + body)
    return p


class Recorder:
    """A runner that writes synthetic runs and keeps the overrides it was given."""

    def __init__(self):
        self.calls = []

    def __call__(self, scenario, overrides, out_root, log):
        self.calls.append(list(overrides))
        return write_run(out_root, scenario, overrides)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """The labelled sweep, run once with synthetic runs: (folder, the runner's calls)."""
    tmp = tmp_path_factory.mktemp("labels")
    runner = Recorder()
    folder = S.run_sweep(load_sweep(sweep_file(tmp, LABELLED)), tmp / "out", runner=runner, progress=False)
    return folder, runner.calls


@pytest.fixture(autouse=True)
def close_figures():
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


# ---------------------------------------------------------------- the sweep file

def test_a_label_is_a_zipped_axis_recorded_but_never_an_override(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, LABELLED))
    combos = sw.combinations()
    assert [(c["scheme"], c["workload.parameters"], c["label"]) for c in combos[:3]] == [
        ("ps", 65536, "ps"), ("geo-ina", 65536, "geo-ina-64k"), ("geo-ina", 16384, "geo-ina-16k")]
    assert len(combos) == 6
    p = sw.points(1)[2]
    assert p.params["label"] == "geo-ina-16k"
    assert p.overrides() == ['scheme="geo-ina"', "workload.parameters=16384",
                             "wan.default.bandwidth_mbps=20", "seed=1", "repetitions=1"]
    assert "geo-ina-16k" in p.key()       # two labels of identical rows stay two points


def test_with_labels_the_scheme_is_zipped_by_default(tmp_path):
    body = LABELLED.replace("cross: [wan.default.bandwidth_mbps]\n", "").replace(
        "  wan.default.bandwidth_mbps: [20, 50]\n", "")
    sw = load_sweep(sweep_file(tmp_path, body))
    assert sw.cross == [] and [c["label"] for c in sw.combinations()] == ["ps", "geo-ina-64k", "geo-ina-16k"]


def test_labels_may_name_the_variants_of_a_scheme_not_swept(tmp_path):
    body = """name: s
mode: zip
axes:
  workload.parameters: [65536, 16384]
  label: [ps-64k, ps-16k]
"""
    sw = load_sweep(sweep_file(tmp_path, body))
    assert [p.overrides()[0] for p in sw.points(1)] == ["workload.parameters=65536", "workload.parameters=16384"]


@pytest.mark.parametrize("edit, field, says", [
    (("mode: zip", "mode: product"), "axes.label", "use mode: zip"),
    (("[ps, geo-ina-64k, geo-ina-16k]", "[ps, geo-ina-64k]"), "axes.label",
     "needs one label per zipped row: got 2 label(s) for 3 rows of scheme, workload.parameters"),
    (("[ps, geo-ina-64k, geo-ina-16k]", "[ps, geo-ina-64k, geo-ina-64k]"), "axes.label.2",
     "'geo-ina-64k' already names row 1"),
    (("[ps, geo-ina-64k, geo-ina-16k]", "[ps, geo ina, geo-ina-16k]"), "axes.label.1",
     "use only letters, digits, '_', '.' and '-' (got 'geo ina')"),
    (("[ps, geo-ina-64k, geo-ina-16k]", "[ps, geo-ina-64k, 16]"), "axes.label.2", "(got 16)"),
    (("[ps, geo-ina-64k, geo-ina-16k]", "[ps, ps, geo-ina-16k]"), "axes.label.1",
     "'ps' is the name of a scheme of this sweep but its row runs 'geo-ina'"),
    (("cross: [wan.default.bandwidth_mbps]", "cross: [wan.default.bandwidth_mbps, scheme]"), "cross",
     "'scheme' is crossed but a label names a zipped row"),
    (("baseline: geo-ina-64k", "baseline: geo-ina"), "figures.0.baseline",
     "'geo-ina' is no label of the sweep: with labels, the baseline names one "
     "(labels: ps, geo-ina-64k, geo-ina-16k)"),
])
def test_bad_labels_name_the_field(tmp_path, edit, field, says):
    body = LABELLED.replace(*edit)
    assert body != LABELLED
    with pytest.raises(SweepError) as e:
        load_sweep(sweep_file(tmp_path, body))
    assert f": {field}: " in str(e.value) and says in str(e.value), str(e.value)
    assert str(e.value).startswith(str(tmp_path))


def test_a_label_cannot_be_crossed_nor_stand_alone(tmp_path):
    crossed = LABELLED.replace("cross: [wan.default.bandwidth_mbps]", "cross: [wan.default.bandwidth_mbps, label]")
    with pytest.raises(SweepError, match=r": cross: 'label' cannot be crossed"):
        load_sweep(sweep_file(tmp_path, crossed))
    alone = ("name: s\nmode: zip\naxes: {wan.default.bandwidth_mbps: [20, 50], label: [a, b]}\n"
             "cross: [wan.default.bandwidth_mbps]\n")
    with pytest.raises(SweepError, match=r": axes.label: labels name the rows of the zipped axes, "
                                         r"and no other axis is zipped"):
        load_sweep(sweep_file(tmp_path, alone))


def test_the_quick_variant_must_keep_one_label_per_row_and_the_baseline(tmp_path):
    body = LABELLED + "quick: {axes: {scheme: [ps, geo-ina], workload.parameters: [65536, 65536]}}\n"
    load_sweep(sweep_file(tmp_path, body))              # the full sweep is fine
    with pytest.raises(SweepError, match=r": quick.axes.label: needs one label per zipped row: got 3"):
        load_sweep(sweep_file(tmp_path, body), quick=True)
    body = LABELLED + ("quick: {axes: {scheme: [ps, geo-ina], workload.parameters: [65536, 16384], "
                       "label: [ps, geo-ina-16k]}}\n")
    with pytest.raises(SweepError, match=r": figures.0.baseline: 'geo-ina-64k' is no label of the sweep --quick"):
        load_sweep(sweep_file(tmp_path, body), quick=True)


def test_sweeps_without_labels_keep_the_scheme_crossed_by_default(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, "name: s\nmode: zip\naxes: {scheme: [ps, ring], "
                               "workload.parameters: [1024, 2048]}\n"))
    assert sw.cross == ["scheme"] and len(sw.combinations()) == 4


# ---------------------------------------------------------------- the table

def test_the_table_and_point_records_carry_the_label(labelled):
    folder, calls = labelled
    assert len(calls) == 12 and not any(o.startswith("label=") for c in calls for o in c)
    with open(folder / "table.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert "label" in rows[0] and [r["label"] for r in rows[:3]] == ["ps", "geo-ina-64k", "geo-ina-16k"]
    assert {(r["label"], r["scheme"]) for r in rows} == {("ps", "ps"), ("geo-ina-64k", "geo-ina"),
                                                         ("geo-ina-16k", "geo-ina")}
    con = sqlite3.connect(folder / "table.sqlite")
    try:
        got = con.execute('SELECT label, COUNT(*) FROM points GROUP BY label ORDER BY label').fetchall()
    finally:
        con.close()
    assert got == [("geo-ina-16k", 4), ("geo-ina-64k", 4), ("ps", 4)]
    rec = json.loads((folder / "points" / rows[2]["point_id"] / "point.json").read_text())
    assert rec["params"]["label"] == "geo-ina-16k" and rec["status"] == "ok"


# ---------------------------------------------------------------- the report

def paired(rows, label, base, bw):
    """The expected speedups of `label` over `base` at bandwidth bw, by repetition."""
    t = {(r["label"], r["repetition"]): r["iteration_period_s"] for r in rows
         if r["wan.default.bandwidth_mbps"] == bw}
    return [t[(base, k)] / t[(label, k)] for k in (0, 1)]


def test_two_labels_of_one_scheme_are_two_series_with_a_label_baseline(labelled):
    folder, _ = labelled
    rep = SweepReport(folder)
    assert rep.series == ["ps", "geo-ina-64k", "geo-ina-16k"] and rep.baseline() == "geo-ina-64k"
    assert rep.pair_axes() == ["wan.default.bandwidth_mbps"]
    figs = {j.name: j for j in rep.jobs()}
    ax = figs["speedup_vs_bandwidth_mbps"].make().axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["geo-ina-64k (baseline)", "PS", "geo-ina-16k"]
    assert ax.get_ylabel() == "Speedup over geo-ina-64k"
    (small,) = [c for c in ax.containers if c.get_label() == "geo-ina-16k"]
    ys = small.lines[0].get_ydata()
    for y, bw in zip(ys, (20, 50)):
        assert y == pytest.approx(sum(paired(rep.ok, "geo-ina-16k", "geo-ina-64k", bw)) / 2, rel=1e-9)
    assert all(y > 1.1 for y in ys)      # a quarter of the gradient: faster than its 64k variant
    # the two geo-ina series: the scheme's color, told apart by marker and line style
    ax = figs["iteration_period_s_vs_bandwidth_mbps"].make().axes[0]
    big, small = ([c for c in ax.containers if c.get_label() == n][0].lines[0] for n in ("geo-ina-64k", "geo-ina-16k"))
    assert mcolors.to_hex(big.get_color()) == mcolors.to_hex(small.get_color()) == "#0072b2"
    assert (big.get_marker(), big.get_linestyle()) != (small.get_marker(), small.get_linestyle())
    for name in ("wan_bytes_per_iteration", "measured_vs_model", "goodput_over_time", "iteration_time_cdf"):
        ax = figs[name].make().axes[0]
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert {"PS", "geo-ina-64k", "geo-ina-16k"} <= set(texts), (name, texts)
    bars = figs["wan_bytes_per_iteration"].make().axes[0]
    assert bars.get_title() == "WAN bytes per iteration by label"
    assert {p.get_hatch() for p in bars.patches} == {None, "//"}     # the 16k variant hatched


def test_the_report_table_and_headline_have_a_row_per_label(labelled):
    folder, _ = labelled
    text = make_report(folder, ["png"]).read_text()
    assert "speedup vs geo-ina-64k" in text and "a line per label" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("| geo-ina | 16384 | geo-ina-16k | 20 |"))
    rep = SweepReport(folder)
    m, ci = F.mean_ci(paired(rep.ok, "geo-ina-16k", "geo-ina-64k", 20))
    assert ci > 0 and line.endswith(f"| {m:.4g} ± {ci:.2g} |"), line
    base, rows = headline_rows(folder)
    assert base == "geo-ina-64k"
    got = {(r["setting"]["label"], r["setting"]["wan.default.bandwidth_mbps"]): r["speedup"][0] for r in rows}
    assert got[("geo-ina-64k", 50)] == 1.0
    assert got[("geo-ina-16k", 50)] == pytest.approx(F.mean_ci(paired(rep.ok, "geo-ina-16k", "geo-ina-64k", 50))[0])


def test_a_failed_label_keeps_its_style_and_the_others_theirs():
    styles = series_styles([("ps", "ps"), ("libra-a", "libra"), ("libra-b", "libra"), ("libra-c", "libra")])
    assert list(styles) == ["ps", "libra-a", "libra-b", "libra-c"]
    assert styles["ps"]["label"] == "PS" and styles["libra-a"]["linestyle"] == "-"
    assert len({(s["marker"], s["linestyle"], s["hatch"]) for s in styles.values()}) == 4
    assert len({s["color"] for n, s in styles.items() if n.startswith("libra")}) == 1
    # the styles come from every row, so a figure missing a series draws the rest alike
    rows = [{"status": "ok", "scheme": "libra", "series": n, "repetition": 0, "x": 1, "y": 2.0}
            for n in ("libra-a", "libra-c")]
    ax = F.fig_metric(rows, "x", "y", series="series", styles=styles).axes[0]
    (c,) = [c for c in ax.containers if c.get_label() == "libra-c"]
    assert c.lines[0].get_marker() == styles["libra-c"]["marker"]
    assert c.lines[0].get_linestyle() == styles["libra-c"]["linestyle"]


def test_the_shipped_hot_set_sweep_is_valid_and_labels_each_size():
    from testbed.sweep_model import validate_sweep
    path = Path(__file__).resolve().parent.parent / "scenarios" / "repro-libra-hot.yaml"
    validate_sweep(path)                    # every point's scenario loads and its topology builds
    for quick in (False, True):
        pts = S.plan(load_sweep(path, quick=quick))
        labels = {p.params["label"]: p.params["scheme_options"].get("hot_rows") for p in pts}
        assert labels == {"ps": None, "libra-990": 990, "libra-1980": 1980, "libra-auto": "auto",
                          "libra-7926": 7926}
        assert {p.repetition for p in pts} == ({0} if quick else {0, 1, 2})
