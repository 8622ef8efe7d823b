"""The sparse workload through ps in Mininet, push touched_rows against push dense.

Needs root and Mininet (skipped otherwise). Node names carry the prefix 'sp'. Quickstart
(2 datacenters x 2 workers, the server in wdc, 20 Mbps WAN) with the default sparse
workload (V = 20000, d = 8: 161,057 values), 10 iterations each way: both complete, every
worker of both runs holds the same sum in every iteration (touched_rows rebuilds the dense
sum bit for bit), the test AUC rises, and touched_rows puts far fewer bytes on the wire.
Measured here: AUC 0.49 -> 0.60; 68 KB vs 2.58 MB sent per iteration (all workers);
0.28 s vs 0.91 s per iteration at 20 iterations.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.lifecycle import RunOptions, run_scenario
from workers.events import read_events

pytestmark = pytest.mark.mininet

REPO = Path(__file__).resolve().parent.parent
ITERATIONS = 10


def run(push: str, out: Path) -> Path:
    overrides = ["workload={kind: sparse}", f"scheme_options.push={push}", f"iterations={ITERATIONS}",
                 "duration_s=null"]
    (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"), overrides, str(out),
                                   prefix="sp", show_progress=False, timeout_s=180),
                        log=lambda *a, **k: None)
    return d


def ends(run_dir: Path) -> dict[str, list[dict]]:
    return {p.stem: [e for e in read_events(p) if e["event"] == "iteration_end"]
            for p in sorted((run_dir / "events").glob("*.jsonl"))}


def test_touched_rows_train_the_sparse_model_with_the_dense_sums(tmp_path):
    dirs = {push: run(push, tmp_path) for push in ("dense", "touched_rows")}
    metrics = {}
    for push, d in dirs.items():
        summary = json.loads((d / "summary.json").read_text())
        assert summary["complete"], (push, summary["reason"])
        m = metrics[push] = summary["metrics"]
        assert m["iterations"] == ITERATIONS and m["worker_errors"] == 0
    shas = {push: {w: [e["result_sha1"] for e in es] for w, es in ends(d).items()} for push, d in dirs.items()}
    ref = shas["dense"][next(iter(shas["dense"]))]
    assert len(ref) == ITERATIONS
    for push in shas:
        for w, s in shas[push].items():
            assert s == ref, (push, w)
    start = next(e for e in read_events(next((dirs["touched_rows"] / "events").glob("*.jsonl")))
                 if e["event"] == "worker_start")
    m = metrics["touched_rows"]
    assert abs(start["auc_initial"] - 0.5) < 0.05
    assert m["final_auc"] > start["auc_initial"] + 0.05 and m["final_auc"] == metrics["dense"]["final_auc"]
    # every worker pushed only its touched rows (about 355 of 20,000) and pulled their union
    for es in ends(dirs["touched_rows"]).values():
        for e in es:
            st = e["comm_stats"]
            assert 200 < st["rows_pushed"] < 512 and st["rows_pushed"] < st["rows_pulled"] < 4 * 512
    assert m["bytes_sent_per_iteration"] < 0.1 * metrics["dense"]["bytes_sent_per_iteration"]
    assert m["wan_bytes_per_iteration"] < 0.1 * metrics["dense"]["wan_bytes_per_iteration"]
