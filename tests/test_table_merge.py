"""gdml merge: one table from tables of one sweep run apart (repetitions on different days,
a published table without its run folders), checked against the sweep file."""
import csv
import shutil
import sqlite3

import pytest

from analysis.table_merge import MergeError, merge
from testbed import sweep as S
from testbed.cli import main as cli
from testbed.sweep_model import load_sweep
from tests.test_sweep import SMALL, Runner, sweep_file


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_repetition(tmp_path, sw, rep, name, runner=None):
    return S.run_sweep(sw, tmp_path / name, runner=runner or Runner(), progress=False, repetitions=[rep])


def test_two_repetitions_run_apart_make_the_whole_sweep_s_table(tmp_path):
    p = sweep_file(tmp_path, SMALL)
    sw = load_sweep(p)
    a, b = run_repetition(tmp_path, sw, 0, "day1"), run_repetition(tmp_path, sw, 1, "day2")
    whole = S.run_sweep(sw, tmp_path / "whole", runner=Runner(), progress=False)
    out = merge(p, [a, b], tmp_path / "merged")
    got, want = rows(out / "table.csv"), rows(whole / "table.csv")
    assert [r["point_id"] for r in got] == [r["point_id"] for r in want]
    skip = {"run_dir", "elapsed_s"}
    assert [{k: v for k, v in r.items() if k not in skip} for r in got] == \
           [{k: v for k, v in r.items() if k not in skip} for r in want]
    # run folders kept (absolute), so the figures drawn from runs find them
    assert all((a / r["run_dir"]).exists() or (b / r["run_dir"]).exists() for r in got)
    con = sqlite3.connect(out / "table.sqlite")
    assert con.execute("select count(*), count(distinct seed) from points").fetchone() == (8, 2)
    assert (out / "sweep.yaml").read_text() == p.read_text()
    assert (out / "merged_from.txt").read_text().split() == [str(a), str(b)]


def published_and_new(tmp_path):
    """(sweep file, a published table of repetition 0 whose runs are gone, the merge of it
    with a new run of repetition 1)."""
    p = sweep_file(tmp_path, SMALL)
    sw = load_sweep(p)
    pub = tmp_path / "published"
    pub.mkdir()
    shutil.copy(run_repetition(tmp_path, sw, 0, "old") / "table.csv", pub)
    shutil.rmtree(tmp_path / "old")                  # the runs are gone, the table stays
    return p, pub, merge(p, [pub, run_repetition(tmp_path, sw, 1, "new")], tmp_path / "merged")


def test_a_published_table_without_run_folders_merges_with_new_runs(tmp_path):
    _, _, out = published_and_new(tmp_path)
    got = rows(out / "table.csv")
    assert len(got) == 8
    assert all(r["run_dir"] == "" for r in got if r["repetition"] == "0")
    assert all(r["run_dir"] for r in got if r["repetition"] == "1")


def test_an_ok_row_replaces_a_failed_one_and_two_ok_rows_are_refused(tmp_path):
    p = sweep_file(tmp_path, SMALL)
    sw = load_sweep(p)
    bad = run_repetition(tmp_path, sw, 1, "bad", Runner(fail_when="seed=6"))   # all fail
    good = run_repetition(tmp_path, sw, 1, "good")
    got = rows(merge(p, [bad, good], tmp_path / "m1") / "table.csv")
    assert len(got) == 4 and all(r["status"] == "ok" for r in got)
    got = rows(merge(p, [good, bad], tmp_path / "m2") / "table.csv")   # order does not matter
    assert all(r["status"] == "ok" for r in got)
    with pytest.raises(MergeError, match="ok in both"):
        merge(p, [good, good], tmp_path / "m3")


def test_tables_of_a_changed_sweep_are_refused_and_nothing_is_written(tmp_path):
    p = sweep_file(tmp_path, SMALL)
    old = run_repetition(tmp_path, load_sweep(p), 0, "old")
    p.write_text(p.read_text().replace("[20, 50]", "[20, 100]"))
    with pytest.raises(MergeError, match="sweep changed"):
        merge(p, [old], tmp_path / "m")
    p.write_text(p.read_text().replace("base: 5", "base: 7"))     # other seeds
    with pytest.raises(MergeError, match="seed"):
        merge(p, [old], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_the_command_line_says_what_is_wrong(tmp_path, capsys):
    p = sweep_file(tmp_path, SMALL)
    src = run_repetition(tmp_path, load_sweep(p), 0, "day1")
    assert cli(["merge", str(p), str(tmp_path), "--out", str(tmp_path / "m")]) != 0
    assert "no table.csv here" in capsys.readouterr().err
    assert cli(["merge", str(p), str(src), "--out", str(src)]) != 0
    assert "also a source" in capsys.readouterr().err
    assert cli(["merge", str(p), str(src), "--out", str(tmp_path / "m")]) == 0
    assert "merged 4 points (4 ok; repetitions 0) of 8" in capsys.readouterr().out


def test_figures_from_runs_use_the_first_repetition_whose_runs_are_here(tmp_path):
    from analysis.report import SweepReport
    p, pub, out = published_and_new(tmp_path)
    rep = SweepReport(out)
    reps = rep.representative()
    assert sorted(r["scheme"] for r in reps) == ["geo-ina", "ps"]
    assert {r["repetition"] for r in reps} == {1} and all(rep.run(r) is not None for r in reps)
    cdf = rep.job({"kind": "cdf"})
    assert cdf is not None and "repetition 1" in cdf.caption
    from analysis.report import main as plot
    assert plot(str(out), "png") == 0
    assert "merged from 2 tables of this sweep run apart" in (out / "report.md").read_text()
    # without any run folder, the figures drawn from runs are left out, not drawn empty
    alone = merge(p, [pub], tmp_path / "alone")
    assert SweepReport(alone).representative() == [] and SweepReport(alone).job({"kind": "cdf"}) is None
