"""testbed/sweep_model.py and testbed/sweep.py with a fake runner (synthetic results, no root)."""
import csv
import json
import sqlite3
from pathlib import Path

import pytest

from testbed import sweep as S
from testbed.sweep_model import SweepError, load_sweep, parse_sweep
from tests.synthetic_runs import write_run

BASE = Path(__file__).parent / "data" / "results_fixture" / "base.yaml"
REPO = Path(__file__).resolve().parent.parent


def sweep_file(tmp_path, body: str) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"base: {BASE}\n" + body)
    return p


SMALL = """name: s
axes:
  scheme: [ps, geo-ina]
  wan.default.bandwidth_mbps: [20, 50]
repetitions: 2
seeds: {policy: per-repetition, base: 5}
quick: {axes: {wan.default.bandwidth_mbps: [20]}, repetitions: 1, set: [iterations=3]}
"""


class Runner:
    """Counts calls; raises on chosen calls (by call number or by a parameter value)."""

    def __init__(self, interrupt_at=None, fail_when=None):
        self.calls = []
        self.interrupt_at, self.fail_when = interrupt_at, fail_when

    def __call__(self, scenario, overrides, out_root, log):
        self.calls.append(list(overrides))
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        if self.fail_when and any(self.fail_when in o for o in overrides):
            raise RuntimeError("switch s1 did not start\nlog tail: ...")
        return write_run(out_root, scenario, overrides)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- the sweep file

def test_product_points_in_order_with_per_repetition_seeds(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, SMALL))
    pts = sw.points(scenario_seed=1)
    assert len(pts) == 8
    assert [p.params for p in pts[:4]] == [
        {"scheme": "ps", "wan.default.bandwidth_mbps": 20}, {"scheme": "ps", "wan.default.bandwidth_mbps": 50},
        {"scheme": "geo-ina", "wan.default.bandwidth_mbps": 20}, {"scheme": "geo-ina", "wan.default.bandwidth_mbps": 50}]
    assert [p.repetition for p in pts] == [0] * 4 + [1] * 4
    assert {p.seed for p in pts[:4]} == {5} and {p.seed for p in pts[4:]} == {6}
    assert len({p.point_id for p in pts}) == 8
    assert pts[0].overrides() == ['scheme="ps"', "wan.default.bandwidth_mbps=20", "seed=5", "repetitions=1"]


def test_fixed_seed_policy_defaults_to_the_scenario_seed(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, "name: s\naxes: {scheme: [ps]}\nrepetitions: 3\n"))
    assert {p.seed for p in S.plan(sw)} == {1}          # base.yaml has seed: 1


def test_zip_mode_pairs_values_and_crosses_scheme(tmp_path):
    body = """name: s
mode: zip
axes:
  scheme: [ps, geo-ina]
  datacenters.0.workers_per_rack: [1, 2, 3]
  datacenters.1.workers_per_rack: [1, 2, 3]
"""
    sw = load_sweep(sweep_file(tmp_path, body))
    combos = sw.combinations()
    assert len(combos) == 6
    assert all(c["datacenters.0.workers_per_rack"] == c["datacenters.1.workers_per_rack"] for c in combos)
    bad = body.replace("[1, 2, 3]\n", "[1, 2]\n", 1)
    with pytest.raises(SweepError, match="equal-length"):
        load_sweep(sweep_file(tmp_path, bad))


def test_excluded_combinations_are_not_run(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, SMALL + "exclude: [{scheme: geo-ina, wan.default.bandwidth_mbps: 50}]\n"))
    combos = sw.combinations()
    assert len(combos) == 3 and {"scheme": "geo-ina", "wan.default.bandwidth_mbps": 50} not in combos
    assert len(S.plan(sw)) == 6
    assert len(load_sweep(sweep_file(tmp_path, SMALL + "exclude: [{scheme: ps}]\n")).combinations()) == 2
    labelled = """name: s
mode: zip
axes:
  scheme: [ps, l3dml]
  scheme_options: [{}, {policy: rule}]
  label: [ps, l3dml-rule]
  wan.default.loss_pct: [0, 5]
cross: [wan.default.loss_pct]
exclude: [{label: ps, wan.default.loss_pct: 5}]
"""
    assert [c["label"] for c in load_sweep(sweep_file(tmp_path, labelled)).combinations()] == \
        ["ps", "l3dml-rule", "l3dml-rule"]
    for bad, field in [("exclude: {scheme: ps}\n", "exclude: must be a list"),
                       ("exclude: [{}]\n", "exclude.0: must be a non-empty mapping"),
                       ("exclude: [{schem: ps}]\n", "exclude.0.schem: not an axis"),
                       ("exclude: [{scheme: ps}, {scheme: geo-ina}]\n", "exclude: leaves no point")]:
        with pytest.raises(SweepError, match=field):
            load_sweep(sweep_file(tmp_path, SMALL + bad))


def test_quick_variant_replaces_axes_and_repetitions_and_goes_to_its_own_folder(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, SMALL), quick=True)
    pts = S.plan(sw)
    assert len(pts) == 2 and all(p.params["wan.default.bandwidth_mbps"] == 20 for p in pts)
    assert sw.fixed == ["iterations=3"] and S.sweep_folder(sw, tmp_path).name == "s-quick"


@pytest.mark.parametrize("body, field", [
    ("name: s\naxes: {scheme: [ps]}\nmode: grid\n", "mode"),
    ("name: s\naxes: {scheme: []}\n", "axes.scheme"),
    ("name: s\naxes: {scheme: [ps]}\nrepetitions: 0\n", "repetitions"),
    ("name: s\naxes: {scheme: [ps]}\nseeds: {policy: random}\n", "seeds.policy"),
    ("name: s\naxes: {scheme: [ps]}\ncolour: red\n", "colour"),
    ("name: s\naxes: {scheme: [ps]}\nquick: {axes: {nope: [1]}}\n", "quick.axes.nope"),
    ("name: s\naxes: {scheme: [ps]}\nfigures: [{kind: pie}]\n", "figures.0.kind"),
])
def test_bad_sweep_files_name_the_field(tmp_path, body, field):
    with pytest.raises(SweepError) as e:
        load_sweep(sweep_file(tmp_path, body), quick=True)
    assert f": {field}: " in str(e.value) and str(e.value).startswith(str(tmp_path))


def test_missing_base_and_bad_axis_values_fail_before_anything_runs(tmp_path):
    with pytest.raises(SweepError, match=r"base: scenario file '.*nope.yaml' not found; give a path relative to the sweep file"):
        parse_sweep({"name": "s", "base": "nope.yaml", "axes": {"scheme": ["ps"]}}, str(tmp_path / "x.yaml"))
    sw = load_sweep(sweep_file(tmp_path, "name: s\naxes: {wan.default.bandwidth_mbps: [20, -1]}\n"))
    runner = Runner()
    with pytest.raises(SweepError, match=r"wan.default.bandwidth_mbps: must be > 0 \(got -1\)"):
        S.run_sweep(sw, tmp_path / "out", runner=runner, progress=False)
    assert runner.calls == [] and not (tmp_path / "out").exists()


# ---------------------------------------------------------------- running

def test_full_sweep_table_has_parameters_and_metrics_of_every_point(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, SMALL))
    folder = S.run_sweep(sw, tmp_path / "out", runner=Runner(), progress=True)
    rows = read_csv(folder / "table.csv")
    assert [r["point_id"] for r in rows] == [p.point_id for p in S.plan(sw)]
    assert all(r["status"] == "ok" for r in rows)
    assert [(r["scheme"], r["wan.default.bandwidth_mbps"], r["seed"]) for r in rows[:2]] == [("ps", "20", "5"), ("ps", "50", "5")]
    # the metrics are the run's own: iteration time from its folder, scheme as configured
    from analysis.rundata import RunData
    r0 = rows[0]
    run = RunData.load(folder / r0["run_dir"])
    assert run.scheme == "ps" and run.scenario["wan"]["default"]["bandwidth_mbps"] == 20
    assert float(r0["iteration_time_mean_s"]) == pytest.approx(run.metrics()["iteration_time_mean_s"], rel=1e-5)
    # ps moves twice the WAN bytes of geo-ina in the model, and is slower at 20 Mbps
    by = {(r["scheme"], r["wan.default.bandwidth_mbps"], r["repetition"]): r for r in rows}
    assert float(by["ps", "20", "0"]["wan_bytes_per_iteration"]) == pytest.approx(
        2 * float(by["geo-ina", "20", "0"]["wan_bytes_per_iteration"]), rel=1e-4)
    assert float(by["ps", "20", "0"]["iteration_time_mean_s"]) > float(by["geo-ina", "20", "0"]["iteration_time_mean_s"])
    # SQLite holds the same rows, queryable by parameter
    con = sqlite3.connect(folder / "table.sqlite")
    n, = con.execute("select count(*) from points").fetchone()
    ps20 = con.execute('select avg(iteration_time_mean_s) from points where scheme = ? and '
                       '"wan.default.bandwidth_mbps" = 20', ("ps",)).fetchone()[0]
    con.close()
    assert n == 8
    assert ps20 == pytest.approx((float(by["ps", "20", "0"]["iteration_time_mean_s"]) +
                                  float(by["ps", "20", "1"]["iteration_time_mean_s"])) / 2, rel=1e-5)
    assert (folder / "sweep.yaml").read_text() == sw_text(tmp_path)


def sw_text(tmp_path):
    return (tmp_path / "sweep.yaml").read_text()


def test_interrupt_then_resume_completes_the_table_without_duplicates(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, SMALL), quick=True)     # 2 points
    out = tmp_path / "out"
    first = Runner(interrupt_at=2)
    with pytest.raises(S.SweepInterrupted):
        S.run_sweep(sw, out, runner=first, progress=False)
    folder = S.sweep_folder(sw, out)
    rows = read_csv(folder / "table.csv")
    assert [(r["point_id"], r["status"]) for r in rows] == [("p0000-r0", "ok"), ("p0001-r0", "interrupted")]
    # without --resume the earlier points are protected
    with pytest.raises(SweepError, match="--resume"):
        S.run_sweep(sw, out, runner=Runner(), progress=False)
    second = Runner()
    S.run_sweep(sw, out, runner=second, resume=True, progress=False)
    assert len(second.calls) == 1 and 'scheme="geo-ina"' in second.calls[0]   # the finished point was skipped
    rows = read_csv(folder / "table.csv")
    assert [r["point_id"] for r in rows] == ["p0000-r0", "p0001-r0"]
    assert all(r["status"] == "ok" for r in rows)
    assert sorted(r["scheme"] for r in rows) == ["geo-ina", "ps"]
    # resuming a finished sweep runs nothing
    third = Runner()
    S.run_sweep(sw, out, runner=third, resume=True, progress=False)
    assert third.calls == [] and len(read_csv(folder / "table.csv")) == 2


def test_a_failing_point_is_recorded_and_the_others_finish(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, SMALL))
    runner = Runner(fail_when="wan.default.bandwidth_mbps=50")
    folder = S.run_sweep(sw, tmp_path / "out", runner=runner, progress=False)
    assert len(runner.calls) == 8
    rows = read_csv(folder / "table.csv")
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 4 and all(r["wan.default.bandwidth_mbps"] == "50" for r in failed)
    assert failed[0]["error"] == "RuntimeError: switch s1 did not start: ... log tail: ..."
    assert failed[0]["iteration_time_mean_s"] == ""
    assert all(r["status"] == "ok" and r["iteration_time_mean_s"] for r in rows if r not in failed)
    rec = json.loads((folder / "points" / failed[0]["point_id"] / "point.json").read_text())
    assert rec["status"] == "failed" and rec["params"]["wan.default.bandwidth_mbps"] == 50
    # resume retries only the failed points
    again = Runner()
    S.run_sweep(sw, tmp_path / "out", runner=again, resume=True, progress=False)
    assert len(again.calls) == 4 and all(r["status"] == "ok" for r in read_csv(folder / "table.csv"))


def test_an_incomplete_run_counts_as_failed(tmp_path):
    def incomplete(scenario, overrides, out_root, log):
        d = write_run(out_root, scenario, overrides)
        s = json.loads((d / "summary.json").read_text())
        s.update(complete=False, reason="worker errors: {'h1r1w1': 'timeout'}")
        (d / "summary.json").write_text(json.dumps(s))
        return d
    sw = load_sweep(sweep_file(tmp_path, "name: s\naxes: {scheme: [ps]}\n"))
    folder = S.run_sweep(sw, tmp_path / "out", runner=incomplete, progress=False)
    (row,) = read_csv(folder / "table.csv")
    assert row["status"] == "failed" and "worker errors" in row["error"] and row["iteration_time_mean_s"]


def test_resume_refuses_a_changed_sweep(tmp_path):
    p = sweep_file(tmp_path, SMALL)
    S.run_sweep(load_sweep(p, quick=True), tmp_path / "out", runner=Runner(), progress=False)
    p.write_text(p.read_text().replace("[ps, geo-ina]", "[ring, geo-ina]"))
    with pytest.raises(SweepError, match="sweep changed"):
        S.run_sweep(load_sweep(p, quick=True), tmp_path / "out", runner=Runner(), resume=True, progress=False)


def test_cli_main_reports_interrupt_with_the_resume_command(tmp_path, capsys):
    p = sweep_file(tmp_path, SMALL + f"output: {tmp_path / 'out'}\n")
    assert S.main(str(p), quick=True, runner=Runner(interrupt_at=1)) == 130
    assert f"gdml sweep {p} --quick --resume" in capsys.readouterr().out
    assert S.main(str(p), quick=True, resume=True, runner=Runner()) == 0
    assert "2 of 2 points ok" in capsys.readouterr().out


def test_the_warm_up_is_the_one_rule_of_every_row(tmp_path):
    """The table's iteration times leave out iteration 0 like every other reader of the run
    (analysis/measure.py); a sweep file may state that rule but not change it."""
    from analysis.rundata import RunData
    sw = load_sweep(sweep_file(tmp_path, "name: s\naxes: {scheme: [ps]}\nwarmup_iterations: 1\n"))
    folder = S.run_sweep(sw, tmp_path / "out", runner=Runner(), progress=False)
    (row,) = read_csv(folder / "table.csv")
    run = RunData.load(folder / row["run_dir"])
    all_times = [j["time_s"] for j in run.per_iteration()]
    assert row["warmup_iterations"] == "1" and row["iterations"] == "8" and len(all_times) == 8
    assert float(row["iteration_time_mean_s"]) == pytest.approx(sum(all_times[1:]) / 7, rel=1e-5)
    assert float(row["iteration_time_mean_s"]) != pytest.approx(sum(all_times) / 8, rel=1e-5)
    assert list(run.iteration_times_s()) == pytest.approx(all_times[1:])
    for bad in ("2", "0", "true"):
        with pytest.raises(SweepError, match="warmup_iterations: the warm-up is fixed at 1"):
            load_sweep(sweep_file(tmp_path, f"name: s\naxes: {{scheme: [ps]}}\nwarmup_iterations: {bad}\n"))


@pytest.mark.parametrize("name", ["sweep-bandwidth", "sweep-stragglers", "sweep-scale"])
def test_shipped_sweeps_and_their_quick_variants_are_valid(name):
    from testbed.sweep_model import validate_sweep
    path = REPO / "scenarios" / f"{name}.yaml"
    validate_sweep(path)                    # every point's scenario loads and its topology builds
    full, quick = S.plan(load_sweep(path)), S.plan(load_sweep(path, quick=True))
    assert len(quick) <= 4 < len(full)
    assert {p.params["scheme"] for p in full} == {"ps", "hier-ps", "ring", "ina", "geo-ina"}
    assert load_sweep(path).figures, "shipped sweeps choose their figures"


@pytest.mark.mininet
def test_real_quick_sweep_through_the_lifecycle(tmp_path):
    """Two real runs (ps and ring, 2 iterations, 2 datacenters of 1 worker) end to end."""
    import os
    import functools
    if os.geteuid() != 0:
        pytest.skip("needs root (Mininet)")
    body = """name: real
set: [iterations=2, "datacenters=[{name: a, region: 'ibm:us-east'}, {name: b, region: 'ibm:eu-de'}]",
      "workload={kind: synthetic, parameters: 4096}"]
axes: {scheme: [ps, ring]}
"""
    p = tmp_path / "sweep.yaml"
    p.write_text(f"base: {REPO / 'scenarios' / 'geo-3dc-small.yaml'}\n" + body)
    runner = functools.partial(S.lifecycle_runner, prefix="swt")
    folder = S.run_sweep(load_sweep(p), tmp_path / "out", runner=runner, progress=False)
    rows = read_csv(folder / "table.csv")
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    for r in rows:
        assert r["iterations"] == "2" and float(r["iteration_time_mean_s"]) > 0.09   # RTT 91 ms at least
        assert float(r["wan_bytes_per_iteration"]) > 4096 * 4      # the gradient crossed the WAN
        # the table's row is the one the run wrote into its summary.json (one pipeline)
        m = json.loads((folder / r["run_dir"] / "summary.json").read_text())["metrics"]
        for k, v in m.items():
            if isinstance(v, float):
                assert float(r[k]) == pytest.approx(v, rel=1e-5), k
            elif v is not None:
                assert r[k] == str(v), k


def test_eta_is_mean_time_of_points_run_this_session_times_points_left(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(S.time, "monotonic", lambda: now[0])
    bar = S.SweepProgress(total=10, skipped=4, enabled=False)     # 4 done before a resume
    assert bar.eta_s() is None                                    # nothing measured yet
    now[0] += 30.0
    bar.end_point({"status": "ok"})
    now[0] += 10.0
    bar.end_point({"status": "failed"})
    # 2 points in 40 s -> 20 s each; 4 of 10 left
    assert bar.eta_s() == pytest.approx(80.0) and bar.failed == 1 and bar.done == 6


def test_run_py_validate_accepts_sweep_files_and_names_a_bad_point(tmp_path):
    from testbed.validate import validate_file
    assert validate_file(REPO / "scenarios" / "sweep-bandwidth.yaml") is None
    bad = sweep_file(tmp_path, "name: s\naxes: {scheme: [ps, allreduce]}\n")
    err = validate_file(bad)
    assert err.startswith(f"{bad}: point p0001-r0 {{'scheme': 'allreduce'}}: ") and "unknown scheme 'allreduce'" in err


# ---------------------------------------------------------------- every problem at once
def test_a_sweep_file_reports_every_problem_before_its_points_are_judged(tmp_path):
    path = sweep_file(tmp_path, "name: s\naxes: {scheme: [ps, allreduce]}\nmode: grid\nrepetitions: 0\n"
                                "colour: red\nquick: {repetitions: 0, set: iterations=2}\n")
    with pytest.raises(SweepError) as e:
        load_sweep(path)
    assert e.value.problems == [
        "colour: unknown field (known: axes, base, cross, description, exclude, figures, mode, name, output, "
        "quick, repetitions, seeds, set, target_accuracy, warmup_iterations)",
        "mode: must be one of product, zip (got 'grid')",
        "repetitions: must be an integer >= 1 (got 0)",
        "quick.repetitions: must be an integer >= 1 (got 0)",
        "quick.set: must be a list of 'field.path=value' strings, e.g. [iterations=20]",
    ]
    assert str(e.value).splitlines()[-1] == f"{path}: 5 problems"
    from testbed.validate import validate_file
    # the points come from the sweep file: the scheme 'allreduce' is not judged yet
    assert validate_file(path) == str(e.value)


def test_validate_groups_the_problems_of_the_points(tmp_path):
    from testbed.validate import validate_file
    import schemes
    path = sweep_file(tmp_path, "name: s\naxes: {scheme: [ps, allreduce], "
                                "wan.default.bandwidth_mbps: [20, -1]}\n")
    assert validate_file(path).splitlines() == [
        f"{path}: points p0001-r0, p0003-r0 {{'wan.default.bandwidth_mbps': -1}}: {BASE}: "
        "wan.default.bandwidth_mbps: must be > 0 (got -1)",
        f"{path}: points p0002-r0, p0003-r0 {{'scheme': 'allreduce'}}: {BASE}: "
        f"scheme: unknown scheme 'allreduce' (known: {', '.join(schemes.NAMES)})",
        f"{path}: 2 problems",
    ]
    # a problem every point shares (here from `set`) is said once
    path = sweep_file(tmp_path, "name: s\nset: [wan.default.loss_pct=200]\naxes: {scheme: [ps, ring]}\n")
    assert validate_file(path) == f"{path}: every point: {BASE}: wan.default.loss_pct: must be <= 100 (got 200)"
    # the quick variant's points are checked too (its own `set` makes them other scenarios)
    path = sweep_file(tmp_path, "name: s\naxes: {scheme: [ps, ring]}\nquick: {set: [iterations=0]}\n")
    assert validate_file(path) == (f"{path}: points quick p0000-r0, quick p0001-r0: {BASE}: "
                                   "iterations: must be > 0 (got 0)")


def test_run_sweep_refuses_with_every_bad_point_before_anything_runs(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, "name: s\naxes: {wan.default.bandwidth_mbps: [-1, 20, 3000]}\n"))
    runner = Runner()
    with pytest.raises(SweepError) as e:
        S.run_sweep(sw, tmp_path / "out", runner=runner, progress=False)
    assert [line.split(f": {BASE}: ")[0] for line in e.value.problems] == [
        "point p0000-r0 {'wan.default.bandwidth_mbps': -1}", "point p0002-r0 {'wan.default.bandwidth_mbps': 3000}"]
    assert "must be > 0 (got -1)" in e.value.problems[0] and "above the 1000 Mbps" in e.value.problems[1]
    assert runner.calls == [] and not (tmp_path / "out").exists()


def test_a_yaml_syntax_error_in_a_sweep_file_is_one_problem_with_its_place(tmp_path):
    path = sweep_file(tmp_path, "name: s\naxes: {scheme: [ps, ring}\n")
    with pytest.raises(SweepError) as e:
        load_sweep(path)
    assert e.value.problems == ["invalid YAML at line 3, column 25: expected ',' or ']', but got '}'"]
    assert str(e.value) == f"{path}: invalid YAML at line 3, column 25: expected ',' or ']', but got '}}'"


def test_only_the_chosen_repetitions_run_with_the_whole_sweep_s_ids_and_seeds(tmp_path):
    sw = load_sweep(sweep_file(tmp_path, SMALL))      # 4 points x 2 repetitions, seeds 5 and 6
    runner = Runner()
    folder = S.run_sweep(sw, tmp_path / "out", runner=runner, progress=False, repetitions=[1])
    rows = read_csv(folder / "table.csv")
    whole = {p.point_id: p for p in S.plan(sw)}
    assert len(runner.calls) == 4 and all("seed=6" in c for c in runner.calls)
    assert [r["point_id"] for r in rows] == [p for p in whole if p.endswith("-r1")]
    assert all(r["seed"] == "6" and r["repetition"] == "1" for r in rows)
    # the other repetition afterwards, into the same folder: resume, and nothing runs twice
    again = Runner()
    S.run_sweep(sw, tmp_path / "out", runner=again, progress=False, resume=True, repetitions=[0])
    assert len(again.calls) == 4 and all("seed=5" in c for c in again.calls)
    assert len(read_csv(folder / "table.csv")) == 8
    with pytest.raises(SweepError, match="repetitions 0-1, not 2"):
        S.run_sweep(sw, tmp_path / "out2", runner=Runner(), progress=False, repetitions=[2])


def test_an_interrupted_repetition_names_itself_in_the_resume_command(tmp_path, capsys):
    p = sweep_file(tmp_path, SMALL + f"output: {tmp_path / 'out'}\n")
    assert S.main(str(p), runner=Runner(interrupt_at=1), repetitions=[1]) == 130
    assert f"gdml sweep {p} --repetitions 1 --resume" in capsys.readouterr().out
