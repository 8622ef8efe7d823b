"""libra end to end in Mininet beside its baselines, on the sparse workload.

Needs root and Mininet (skipped otherwise). Node names carry the prefix 'lb'. Quickstart
(2 datacenters x 2 workers, 20 Mbps WAN) with the default sparse workload, 10 iterations of
libra (verify on), ps with push touched_rows, and ina: libra completes, every sum is within
its bound (ina's quantization bound on the switch's values, float32 summation on the
server's), all workers hold the same sum, both parts carry traffic every iteration (INA
packets and row frames), and the test prints bytes and time per iteration of the three
(schemes/libra/README.md gives the numbers measured here).
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
RUNS = {"libra": ["scheme=libra", "scheme_options.verify=true"],
        "ps touched_rows": ["scheme=ps", "scheme_options.push=touched_rows"],
        "ina": ["scheme=ina"]}


def run(overrides: list[str], out: Path) -> Path:
    (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"),
                                   ["workload={kind: sparse}", f"iterations={ITERATIONS}", "duration_s=null",
                                    *overrides], str(out), prefix="lb", show_progress=False, timeout_s=240),
                        log=lambda *a, **k: None)
    return d


def test_libra_uses_switch_and_server_with_correct_sums(tmp_path):
    dirs = {name: run(o, tmp_path / name.replace(" ", "-")) for name, o in RUNS.items()}
    summaries = {n: json.loads((d / "summary.json").read_text()) for n, d in dirs.items()}
    for n, s in summaries.items():
        assert s["complete"], (n, s["reason"])
        assert s["metrics"]["iterations"] == ITERATIONS and s["metrics"]["worker_errors"] == 0, n
    s = summaries["libra"]
    m, app = s["metrics"], s["app"]
    assert m["within_quantization_bound"] is True and m["max_error"] is not None
    assert 0 < app["hot_rows"] <= app["hot_rows_budget"] and app["switch_values"] < app["values"]
    packets = -(-app["switch_values"] // app["k"])
    ends = {p.stem: [e for e in read_events(p) if e["event"] == "iteration_end"]
            for p in sorted((dirs["libra"] / "events").glob("*.jsonl"))}
    assert len(ends) == 4
    ref = [e["result_sha1"] for e in next(iter(ends.values()))]
    for w, es in ends.items():
        assert [e["result_sha1"] for e in es] == ref, w
        for e in es:
            st = e["comm_stats"]
            assert st["switch_packets"] >= packets, (w, st)           # the switch part
            assert 0 < st["rows_pushed"] <= st["rows_pulled"], (w, st)  # the server part
            assert e["max_error"] <= e["error_bound"]
    print(f"\nlibra: {app['hot_rows']} hot rows (budget {app['hot_rows_budget']}), "
          f"{app['switch_values']} of {app['values']} values through the switch, window {app['window']}")
    print(f"{'scheme':16} {'s/iteration':>11} {'sent MB/it':>10} {'WAN MB/it':>9} {'final AUC':>9}")
    for n, sm in summaries.items():
        mm = sm["metrics"]
        print(f"{n:16} {mm['iteration_period_s']:11.3f} {mm['bytes_sent_per_iteration'] / 1e6:10.3f} "
              f"{mm['wan_bytes_per_iteration'] / 1e6:9.3f} {mm['final_auc']:9.3f}")
    # same model, same data: the three train alike (the INA sums differ by the quantization)
    assert abs(m["final_auc"] - summaries["ps touched_rows"]["metrics"]["final_auc"]) < 0.02
