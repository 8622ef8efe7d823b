"""The `gdml` command (testbed/cli.py; run.py is its shim): verbs, entry point, one-line
errors, and settings that cannot be applied fail before start."""
import importlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from testbed import cli
from topologies import linkemu

VERBS = ["run", "sweep", "merge", "plot", "validate", "predict", "bench", "clean", "doctor", "show", "demo",
         "train"]

REPO = Path(__file__).resolve().parent.parent


def run_py(*args):
    p = subprocess.run([sys.executable, str(REPO / "run.py"), *args], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_the_gdml_entry_point_is_declared_and_is_the_cli(capsys):
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"gdml": "testbed.cli:main"}
    module, func = scripts["gdml"].split(":")
    main = getattr(importlib.import_module(module), func)
    assert main is cli.main
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("usage: gdml ")


def test_run_py_and_the_cli_have_the_same_verbs_and_refuse_unknown_ones():
    assert cli.verbs() == VERBS
    rc, out, err = run_py("frobnicate")
    assert rc == 2 and out == ""
    assert err.startswith("usage: gdml [-h] VERB ...")
    listed = re.search(r"invalid choice: 'frobnicate' \(choose from (.*)\)", err).group(1)
    assert [v.strip(" '") for v in listed.split(",")] == VERBS
    rc, out, err = run_py()
    assert rc == 2 and "the following arguments are required: VERB" in err


def test_the_installed_gdml_script_runs_the_cli():
    gdml = Path(sys.executable).parent / "gdml"
    if not gdml.exists():
        pytest.skip(f"{gdml} not installed in this venv yet: make setup")
    p = subprocess.run([str(gdml), "frobnicate"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("usage: gdml [-h] VERB ...")


def test_show_parses_its_arguments():
    a = cli.parser().parse_args(["show", "scenarios/geo-3dc.yaml", "--set", "scheme=ring", "--set",
                                 "seed=2", "--out", "figs", "--format", "png"])
    assert (a.fn, a.scenario, a.set, a.out, a.format) == (
        cli.cmd_show, "scenarios/geo-3dc.yaml", ["scheme=ring", "seed=2"], "figs", "png")
    a = cli.parser().parse_args(["show", "x.yaml"])
    assert (a.set, a.out, a.format) == ([], None, "pdf,png")


def test_verbs_that_need_root_say_so_by_the_program_name(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for argv, what in ((["clean"], "clean"), (["run", "x.yaml"], "run"), (["sweep", "x.yaml"], "sweep")):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert str(e.value).startswith(f"error: `gdml {what}` needs root"), e.value


def test_sweep_and_plot_missing_input_is_one_line_error():
    rc, out, err = run_py("plot", "no-such-results")
    assert rc == 1 and err.startswith("error: no-such-results: no such folder") and len(err.splitlines()) == 1
    rc, out, err = run_py("sweep", "no-such-sweep.yaml")
    if os.geteuid() != 0:
        assert "needs root" in err
        return
    assert rc == 1 and err.strip() == "error: no-such-sweep.yaml: cannot read the file (No such file or directory)"


def test_bad_scenario_is_one_line_without_traceback():
    rc, out, err = run_py("run", "scenarios/quickstart.yaml", "--set", "wan.default.bandwidth_mbps=-3")
    if os.geteuid() != 0:
        assert "needs root" in err
        return
    assert rc == 1
    assert err.strip() == ("error: scenarios/quickstart.yaml: wan.default.bandwidth_mbps: "
                           "must be > 0 (got -3)")
    assert "Traceback" not in err


TWO_MISTAKES = """name: t
datacenters:
  - {name: a, region: "aws:us-east-1", racks: 0}
  - {name: b, region: "aws:eu-west-1"}
wan: {edges: [{a: a, b: c}]}
scheme: ps
iterations: 3
"""


def test_validate_prints_every_problem_then_the_count_and_exits_1(tmp_path):
    bad = tmp_path / "two.yaml"
    bad.write_text(TWO_MISTAKES)
    rc, out, err = run_py("validate", "scenarios/quickstart.yaml", str(bad))
    assert rc == 1 and err == ""
    assert out.splitlines() == [
        "scenarios/quickstart.yaml: ok",
        f"{bad}: datacenters.0.racks: must be >= 1 (got 0)",
        f"{bad}: wan.edges.0.b: unknown datacenter 'c' (datacenters: a, b)",
        f"{bad}: 2 problems",
    ]
    rc, out, err = run_py("validate", "scenarios/quickstart.yaml")
    assert (rc, out) == (0, "scenarios/quickstart.yaml: ok\n")


def test_run_prints_every_problem_of_the_scenario_before_anything_starts(tmp_path):
    bad = tmp_path / "two.yaml"
    bad.write_text(TWO_MISTAKES)
    rc, out, err = run_py("run", str(bad), "--out", str(tmp_path / "out"))
    if os.geteuid() != 0:
        assert "needs root" in err
        return
    assert rc == 1 and "Traceback" not in err
    assert err.splitlines() == [
        f"error: {bad}: datacenters.0.racks: must be >= 1 (got 0)",
        f"error: {bad}: wan.edges.0.b: unknown datacenter 'c' (datacenters: a, b)",
        f"error: {bad}: 2 problems",
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="probing netem needs root")
def test_forced_netem_without_netem_fails_before_anything_starts(tmp_path):
    if linkemu.kernel_has_netem():
        pytest.skip("this kernel has sch_netem: forcing it is valid here")
    rc, out, err = run_py("run", "scenarios/quickstart.yaml", "--set", "link_emulation.mode=netem",
                          "--out", str(tmp_path), "--prefix", "tn")
    assert rc == 1
    assert err.startswith("error: link emulation 'netem' was forced but this kernel has no sch_netem")
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())   # nothing was started, not even a results folder
    assert not [n for n in os.listdir("/sys/class/net") if n.startswith("tn")]




@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_existing_interface_names_refuse_the_run_and_are_left_alone(tmp_path):
    subprocess.run(["ip", "link", "add", "tdg1-eth1", "type", "veth", "peer", "name", "tdzz0"], check=True)
    try:
        rc, out, err = run_py("run", "scenarios/quickstart.yaml", "--out", str(tmp_path), "--prefix", "td")
        assert rc == 1
        assert err.startswith("error: interface(s) tdg1-eth1 already exist: another run uses these node names")
        assert os.path.exists("/sys/class/net/tdg1-eth1")   # someone else's: never deleted
        summary = next(tmp_path.glob("quickstart/*/summary.json")).read_text()
        assert '"complete": false' in summary
    finally:
        subprocess.run(["ip", "link", "del", "tdg1-eth1"], stderr=subprocess.DEVNULL)


def test_train_l3dml_quick_writes_a_loadable_model_set(tmp_path, capsys):
    from schemes.l3dml import modelset
    out = tmp_path / "sets" / "toy.json"
    assert cli.main(["train", "l3dml", "--quick", "--seed", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "dc3-4-mild-low  generation   1/2  best" in text          # progress per generation
    assert re.search(r"^regime +train s +agent +set +start +none +rule", text, re.M)   # the table
    ms = modelset.load(out)
    assert len(ms.agents) == len(modelset.REGIMES) and ms.agents[0].training["seed"] == 2
    assert cli.main(["train", "l3dml", "--quick", "--out", str(tmp_path)]) == 1    # a folder
    assert "is a folder: give a file name" in capsys.readouterr().err


def test_gdml_bench_runs_the_bench_program_from_any_folder(tmp_path):
    """`gdml bench` runs `python3 -m bench` (nothing imports the bench room): its output and
    exit status come through, from whichever folder it is called."""
    p = subprocess.run([sys.executable, str(REPO / "run.py"), "bench", "client", "--help"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("usage: gdml bench client"), p.stderr
    p = subprocess.run([sys.executable, "-m", "bench", "nope"], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("usage: gdml bench {switch,")


def test_a_failing_benchmark_prints_its_error_as_every_command_does(monkeypatch, capsys):
    import types
    import bench.__main__ as bench_main
    def fails(argv):
        raise RuntimeError("switch s1 did not start\nlog tail: bind failed")
    monkeypatch.setitem(sys.modules, "bench.fake", types.SimpleNamespace(main=fails))
    monkeypatch.setitem(bench_main.BENCHES, "client", ("bench.fake", False))
    monkeypatch.delenv("GDML_DEBUG", raising=False)
    assert bench_main.main(["client"]) == 1
    assert capsys.readouterr().err == "error: switch s1 did not start\nlog tail: bind failed\n"
