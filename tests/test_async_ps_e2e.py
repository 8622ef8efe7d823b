"""ps in ssp and asp end to end in Mininet, with a straggler (needs root; run under
`flock /tmp/gdml-mininet.lock`). Node names carry the prefix 'as'.

Each run completes; the server's final model and every model a worker pulled equal
numpy's replay of the recorded updates in their applied order (bit for bit); the
staleness section of summary.json matches the per-update records; in ssp no update
exceeds s (and the straggler makes the fast workers reach it), in asp they run past it;
accuracy is recorded per iteration; no process of the run is left behind."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from analysis.staleness import distribution
from tests.async_replay import replay, sha1, update_records
from testbed.lifecycle import RunOptions, run_scenario
from workers.events import read_events

pytestmark = pytest.mark.mininet

REPO = Path(__file__).resolve().parent.parent
ITERATIONS, WORKERS, PORT = 8, 4, 7371
MODES = {"ssp": ["training={mode: ssp, staleness: 1}"], "asp": ["training.mode=asp"]}


def leftover_processes(run_dir: Path) -> list[str]:
    """Processes of this run still alive: workers (their config is in the run folder) and
    the server (its module and port)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(run_dir).encode() in cmd or (b"schemes.ps.async_server" in cmd and str(PORT).encode() in cmd):
            out.append(pid + ": " + cmd.replace(b"\0", b" ").decode(errors="replace"))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("async")
    dirs = {}
    for mode, over in MODES.items():
        (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"),
                                       over + [f"iterations={ITERATIONS}", "duration_s=null",
                                               f"scheme_options.base_port={PORT}",
                                               "compute_time={model: constant, value_ms: 40}",
                                               "stragglers.persistent=[{worker: 3, factor: 5}]"],
                                       str(out / mode), prefix="as", show_progress=False, timeout_s=240),
                            log=lambda *a, **k: None)
        dirs[mode] = d
    return dirs


@pytest.mark.parametrize("mode", list(MODES))
def test_async_ps_runs_exactly_and_reports_its_staleness(runs, mode):
    d = runs[mode]
    summary = json.loads((d / "summary.json").read_text())
    assert summary["complete"], summary.get("reason")
    assert not summary["app"]["errors"] and summary["metrics"]["worker_errors"] == 0
    (server,) = summary["app"]["servers"].values()
    assert server["mode"] == mode and server["final_version"] == WORKERS * ITERATIONS
    events = {p.stem: read_events(p) for p in sorted((d / "events").glob("*.jsonl"))}
    recs = update_records(events)
    assert len(recs) == WORKERS * ITERATIONS
    # exactness: numpy's replay in applied order gives the server's and every pulled model
    scn = yaml.safe_load((d / "scenario.yaml").read_text())
    models = replay(scn["workload"], scn["seed"], WORKERS, recs)
    assert sha1(models[-1]) == server["model_sha1"]
    for es in events.values():
        ends = [e for e in es if e["event"] == "iteration_end"]
        assert len(ends) == ITERATIONS and all(e["accuracy"] is not None for e in ends)
        for e in ends:
            assert e["result_sha1"] == sha1(models[e["model_version"]])
    # summary.json's staleness section is the records' distribution
    st = summary["staleness"]
    assert st["mode"] == mode and st["updates"] == len(recs)
    assert st["staleness"] == distribution(r["staleness"] for r in recs)
    assert st["delay"] == distribution(r["delay"] for r in recs)
    worst = max(r["staleness"] for r in recs)
    if mode == "ssp":
        assert st["bound"] == 1 and st["within_bound"] is True and worst == 1
    else:
        assert st["within_bound"] is None and worst >= 2   # the straggler is 5x slower
    assert leftover_processes(d) == []
