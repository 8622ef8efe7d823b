"""`make demo` (analysis/demo.py): the sweep, its report, the headline table and figure.

The logic with synthetic runs (no root); the real thing, at the sweep's quick length, in
Mininet (test_demo_runs_the_comparison_end_to_end)."""
from __future__ import annotations

import csv
import datetime as dt
import math

import pytest

from analysis import demo
from analysis.headline import format_headline, headline_rows
from analysis.metrics import mean_ci
from testbed.sweep_model import load_sweep
from tests.synthetic_runs import fake_runner


def test_demo_sweep_compares_ps_with_geo_ina_under_stragglers_with_repetitions():
    sw = load_sweep(demo.DEMO)
    schemes = {p.params["scheme"] for p in sw.points()}
    assert schemes == {"ps", "geo-ina"}
    assert sw.repetitions >= 3            # an interval on every comparison
    assert all(p.params["stragglers.transient.probability"] > 0 for p in sw.points())
    assert len(load_sweep(demo.DEMO, quick=True).points()) == 2


def test_fresh_folder_never_reuses_an_earlier_demo(tmp_path):
    a = demo.fresh_folder(tmp_path, dt.datetime(2026, 1, 2, 3, 4, 5))
    assert a == tmp_path / "demo-20260102-030405"


def test_demo_prints_the_headline_table_and_the_figure_paths(tmp_path, capsys):
    assert demo.main(str(tmp_path), runner=fake_runner) == 0
    out = capsys.readouterr().out
    (folder,) = [p.parent for p in tmp_path.glob("demo-*/*/table.csv")]
    figs = demo.headline_figure(folder)
    assert {f.suffix for f in figs} == {".pdf", ".png"}
    for f in figs:
        assert f.stat().st_size > 1000 and f"figure: {f}" in out
    assert f"report: {folder / 'report.md'}" in out
    # the table's numbers are the table.csv's, mean and 95 % interval over repetitions
    rows = list(csv.DictReader(open(folder / "table.csv")))
    ps = [float(r["iteration_period_s"]) for r in rows if r["scheme"] == "ps"]
    m, ci = mean_ci(ps)
    line = next(ln for ln in out.splitlines() if ln.startswith("ps "))
    assert f"{m:.3g} ± {ci:.2g}" in line and "3/3" in line
    assert "geo-ina" in out and "speedup vs ps" in out and "3 repetition(s)" in out


def test_headline_speedups_are_paired_by_repetition(tmp_path):
    demo.main(str(tmp_path), runner=fake_runner)
    (folder,) = [p.parent for p in tmp_path.glob("demo-*/*/table.csv")]
    rows = list(csv.DictReader(open(folder / "table.csv")))
    by = {(r["scheme"], r["repetition"]): float(r["iteration_period_s"]) for r in rows}
    pairs = [by[("ps", k)] / by[("geo-ina", k)] for s, k in by if s == "geo-ina"]
    base, lines = headline_rows(folder)
    assert base == "ps"
    geo = next(x for x in lines if x["setting"]["scheme"] == "geo-ina")
    assert geo["speedup"] == pytest.approx(mean_ci(pairs))
    assert next(x for x in lines if x["setting"]["scheme"] == "ps")["speedup"] == (1.0, 0.0)
    text = format_headline(base, lines)
    assert "stragglers" not in text.splitlines()[0]    # a one-value axis does not name rows


def test_headline_of_a_failed_point_shows_no_number(tmp_path):
    def failing(scenario, overrides, out_root, log=print):
        if any("geo-ina" in o for o in overrides):
            raise RuntimeError("switch did not start")
        return fake_runner(scenario, overrides, out_root, log)
    assert demo.main(str(tmp_path), runner=failing, quick=True) == 1
    (folder,) = [p.parent for p in tmp_path.glob("demo-*/*/table.csv")]
    _, lines = headline_rows(folder)
    geo = next(x for x in lines if x["setting"]["scheme"] == "geo-ina")
    assert geo["ok"] == 0 and math.isnan(geo["time per iteration (s)"][0])
    assert "geo-ina  0/1" in format_headline("ps", lines).replace("   ", "  ")


@pytest.mark.mininet
def test_demo_runs_the_comparison_end_to_end(tmp_path, capsys):
    assert demo.main(str(tmp_path), quick=True, prefix="dm") == 0
    out = capsys.readouterr().out
    (folder,) = [p.parent for p in tmp_path.glob("demo-*/*/table.csv")]
    rows = list(csv.DictReader(open(folder / "table.csv")))
    assert {r["scheme"]: r["status"] for r in rows} == {"ps": "ok", "geo-ina": "ok"}
    for r in rows:   # real runs: a pace, and WAN bytes of at least one gradient per worker
        assert float(r["iteration_period_s"]) > 0
        assert float(r["wan_bytes_per_iteration"]) > 4 * 65536
    assert all(f.stat().st_size > 1000 for f in demo.headline_figure(folder))
    assert "speedup vs ps" in out and "figure: " in out
