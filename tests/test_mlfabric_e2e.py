"""mlfabric end to end in Mininet (needs root; run under `flock /tmp/gdml-mininet.lock`).
Node names carry the prefix 'mf'.

1. quickstart (2 datacenters, 4 workers, a straggler) in asp: the run completes; the
   primary's final model is numpy's replay of the logged updates in their applied order
   and the replica followed it to the same bits; every applied update is within tau_max
   (drop); summary.json has the staleness section and accuracy per iteration.
2. The same with `failures: [{at_s, kill: server:primary}]` mid-run: every worker ends
   all its iterations on the replica, summary.json's replica stats count the lost updates
   (primary version at death - replica version) within d_rep, and no process of the run
   is left behind."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.async_replay import sha1
from tests.test_mlfabric_local import replay_records
from testbed.lifecycle import RunOptions, run_scenario
from workers.events import read_events

pytestmark = pytest.mark.mininet

REPO = Path(__file__).resolve().parent.parent
PORT = 7391
BASE = ["scheme=mlfabric", "training.mode=asp", "duration_s=null", f"scheme_options.base_port={PORT}",
        "scheme_options.tau_max=3", "scheme_options.d_rep=2",
        "stragglers.persistent=[{worker: 3, factor: 4}]"]


def run(tmp: Path, overrides: list[str]) -> tuple[Path, dict, dict]:
    (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"), BASE + overrides,
                                   str(tmp), prefix="mf", show_progress=False, timeout_s=240),
                        log=lambda *a, **k: None)
    summary = json.loads((d / "summary.json").read_text())
    ev = {p.stem: read_events(p) for p in sorted((d / "events").glob("*.jsonl"))}
    return d, summary, ev


def leftovers(run_dir: Path) -> list[str]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        ports = [str(p).encode() for p in range(PORT, PORT + 16)]   # the servers' and aggregators'
        if str(run_dir).encode() in cmd or (b"schemes.mlfabric" in cmd and any(p in cmd for p in ports)):
            out.append(pid + ": " + cmd.replace(b"\0", b" ").decode(errors="replace"))
    return out


def ends(ev):
    return [e for es in ev.values() for e in es if e["event"] == "iteration_end"]


def test_mlfabric_runs_to_the_end_and_the_replica_follows(tmp_path):
    d, s, ev = run(tmp_path, ["iterations=8", "compute_time={model: constant, value_ms: 40}"])
    assert s["complete"], s["reason"]
    servers = s["app"]["servers"]
    p, r = servers["primary"], servers["replica"]
    recs = [e["update"] for e in ends(ev) if e["update"]]
    assert len(ends(ev)) == 4 * 8 and len(recs) + p["dropped"] == 4 * 8
    models = replay_records(recs, {"kind": "model", "name": "logreg"}, seed=1)
    assert sha1(models[p["final_version"]]) == p["model_sha1"] == r["model_sha1"]
    assert r["failover"] is None and r["followed_versions"] == p["final_version"]
    assert max(x["delay"] for x in recs) <= 3
    st = s["staleness"]
    assert st["mode"] == "asp" and st["updates"] == len(recs) and st["delay"]["max"] <= 3
    assert all(e.get("accuracy") is not None for e in ends(ev))
    assert not leftovers(d)


def test_killing_the_primary_fails_over_to_the_replica_within_d_rep(tmp_path):
    d, s, ev = run(tmp_path, ["iterations=40", "compute_time={model: constant, value_ms: 60}",
                              "failures=[{at_s: 6, kill: 'server:primary'}]"])
    kills = [json.loads(x) for x in (d / "run_events.jsonl").read_text().splitlines()
             if json.loads(x)["event"] == "kill"]
    assert len(kills) == 1 and not kills[0].get("error"), kills
    r = s["app"]["servers"]["replica"]
    f = r["failover"]
    assert f is not None, r
    assert 0 <= f["lost_updates"] == f["primary_version"] - f["replica_version"] <= f["d_rep"] == 2
    servers = {e["comm_stats"].get("server") for e in ends(ev)}
    assert servers == {"primary", "replica"}, "the kill did not land mid-run"
    assert all(sum(e["iteration"] == 39 for e in es if e["event"] == "iteration_end") == 1
               for es in ev.values())            # every worker finished, on the replica
    assert s["metrics"]["worker_errors"] == 0
    assert not leftovers(d)


def test_groups_go_through_aggregators_and_replay_exactly(tmp_path):
    # no replica: the aggregators and the primary only; compute 0 so requests queue up
    # behind the serialized WAN transfers and same-window groups form
    d, s, ev = run(tmp_path, ["iterations=8", "compute_time={model: constant, value_ms: 0}",
                              "scheme_options.replicate=false", "scheme_options.tau_max=20",
                              "scheme_options.agg_window=20", "scheme_options.aggregation=true",
                              "stragglers.persistent=[]"])
    assert s["complete"], s["reason"]
    servers = s["app"]["servers"]
    p = servers["primary"]
    a = p["aggregation"]
    assert a["groups_applied"] >= 1 and not a["fell_back"], a     # at least one group went through one
    names = {x["name"] for x in s["app"]["mlfabric"]["aggregators"]}
    assert set(a["aggregators"]) == names and names <= set(servers)
    assert sum(servers[n]["groups"] for n in names) == a["groups_applied"] == sum(a["by_aggregator"].values())
    recs = [e["update"] for e in ends(ev) if e["update"]]
    assert len(ends(ev)) == 4 * 8 and len(recs) + p["dropped"] == 4 * 8
    assert sum(e["comm_stats"]["route"] == "aggregated" for e in ends(ev)) >= 2
    models = replay_records(recs, {"kind": "model", "name": "logreg"}, seed=1)
    assert sha1(models[p["final_version"]]) == p["model_sha1"]
    assert s["metrics"]["worker_errors"] == 0
    assert not leftovers(d)
