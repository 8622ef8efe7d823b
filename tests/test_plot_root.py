"""`gdml plot ROOT`: a folder above the results (what `sweep --out DIR` and `run --out DIR`
leave) plots the one sweep or folder of runs below it, lists several, says what it sought."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.locate import LocateError, find_results, locate, results_kind
from synthetic_runs import write_run

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "results_fixture"


def sweep_copy(dst: Path, name: str = "sweep-bw") -> Path:
    shutil.copytree(FIXTURE / name, dst / name, ignore=shutil.ignore_patterns("figures", "report.md"))
    return dst / name


def gdml_plot(*args):
    p = subprocess.run([sys.executable, str(REPO / "run.py"), "plot", *args], capture_output=True,
                       text=True, cwd=REPO, timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_kinds_of_folders(tmp_path):
    sweep = sweep_copy(tmp_path)
    run = write_run(tmp_path / "runs", REPO / "scenarios" / "quickstart.yaml", ["iterations=3"])
    assert results_kind(sweep) == "sweep"
    assert results_kind(run) == "run"
    assert results_kind(run.parent) == "runs"
    assert results_kind(tmp_path) is None and results_kind(tmp_path / "runs") is None


def test_a_sweep_below_the_out_folder_is_plotted_and_named(tmp_path):
    sweep = sweep_copy(tmp_path / "out")               # gdml sweep X --out tmp/out
    rc, out, err = gdml_plot(str(tmp_path / "out"), "--format", "png")
    assert rc == 0, err
    assert out.splitlines()[0] == f"plotting {sweep} (sweep: the only results below {tmp_path / 'out'})"
    assert (sweep / "report.md").is_file() and (sweep / "figures" / "wan_bytes_per_iteration.png").is_file()
    assert not (tmp_path / "out" / "report.md").exists()


def test_runs_two_levels_below_are_found_as_their_scenario_folder(tmp_path):
    run = write_run(tmp_path / "out", REPO / "scenarios" / "quickstart.yaml", ["iterations=3"])
    assert locate(tmp_path) == (run.parent, "runs", True)           # tmp/out/quickstart
    assert locate(run.parent) == (run.parent, "runs", False)         # a results folder as given
    assert locate(run) == (run, "run", False)


def test_several_results_below_are_listed_and_none_is_plotted(tmp_path):
    a = sweep_copy(tmp_path / "out")
    b = sweep_copy(tmp_path / "out", "sweep-strag")
    run = write_run(tmp_path / "out" / "more", REPO / "scenarios" / "quickstart.yaml", ["iterations=3"])
    rc, out, err = gdml_plot(str(tmp_path / "out"))
    assert rc == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"error: {tmp_path / 'out'}: 3 results below it, not one:"
    assert lines[1:4] == [f"  {run.parent}  runs", f"  {a}  sweep", f"  {b}  sweep"]
    assert lines[4] == "pick one: gdml plot PATH"
    assert not (a / "report.md").exists() and not (b / "report.md").exists()


def test_nothing_below_says_what_it_looked_for(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    rc, out, err = gdml_plot(str(tmp_path))
    assert rc == 1
    assert err.strip() == (f"error: {tmp_path}: neither a sweep (table.csv), nor a run (summary.json or "
                           f"manifest.json), nor a folder of runs, here or up to 3 levels below; "
                           f"run `gdml run` or `gdml sweep` first")


def test_the_search_is_bounded_and_stops_at_what_it_finds(tmp_path):
    deep = tmp_path / "1" / "2" / "3"
    sweep_copy(deep)                                    # at depth 4: out of reach
    assert find_results(tmp_path) == []
    with pytest.raises(LocateError, match="up to 3 levels below"):
        locate(tmp_path)
    assert find_results(tmp_path, depth=4) == [(deep / "sweep-bw", "sweep")]
    # a sweep's own points (runs below it) are not listed beside it
    assert find_results(deep) == [(deep / "sweep-bw", "sweep")]


def test_a_missing_folder_is_still_one_line(tmp_path):
    with pytest.raises(LocateError, match=r"no-such: no such folder; give a sweep folder"):
        locate(tmp_path / "no-such")
