"""run.py: one-line errors, stubs, and settings that cannot be applied fail before start."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from topologies import linkemu

REPO = Path(__file__).resolve().parent.parent


def run_py(*args):
    p = subprocess.run([sys.executable, str(REPO / "run.py"), *args], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    return p.returncode, p.stdout, p.stderr


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
