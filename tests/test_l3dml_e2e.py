"""Scheme l3dml in Mininet under WAN loss: the switches repair what the WAN loses.

Two datacenters of two workers (the quickstart's), 2 % loss on each WAN direction, the same
run with geo-ina and with l3dml (every switch's data path the softswitch's; l3dml's gateway
below the WAN gets its timer loop, a delayed veth pair between two of its ports). Both must
be exact (within the quantization bound); with l3dml the gateway's timers re-send what the
WAN lost, so the workers re-send next to nothing, where geo-ina's workers re-send every
lost chunk themselves. The counts are printed (a behaviour check, not a timing benchmark).
Needs root and Mininet."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.lifecycle import RunOptions, run_scenario

pytestmark = pytest.mark.mininet

REPO = Path(__file__).resolve().parent.parent
LOSS_PCT = 2.0


def run(scheme: str, out: Path) -> dict:
    (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"), [
        f"scheme={scheme}", "iterations=4", "duration_s=null", "time_dilation=2",
        "workload={kind: synthetic, parameters: 16384}", "scheme_options.verify=true",
        f"wan.default.loss_pct={LOSS_PCT}"], str(out), prefix="l3", show_progress=False,
        timeout_s=240), log=lambda *a, **k: None)
    return json.loads((d / "summary.json").read_text())


def test_the_switches_repair_wan_losses_so_the_workers_do_not(tmp_path):
    geo, l3 = run("geo-ina", tmp_path / "geo"), run("l3dml", tmp_path / "l3")
    for s in (geo, l3):
        assert s["complete"], s["reason"]
        assert s["metrics"]["within_quantization_bound"] is True and not s["app"]["errors"]
    rep = l3["app"]["switch_repair"]
    assert rep["error"] is None
    (gw,) = l3["app"]["repair_switches"]
    ev, root = rep["events"][gw], rep["events"][l3["app"]["root"]]
    worker_retx = {n: s["metrics"]["retransmissions"] for n, s in (("geo-ina", geo), ("l3dml", l3))}
    print(f"\nWAN loss {LOSS_PCT}% each way, 4 iterations of 512 chunks: worker retransmissions "
          f"{worker_retx}; l3dml's {gw}: {ev['repair']} repairs, {ev['timer_done']} timers ended, "
          f"{ev['repair_giveup']} given up; root answered {root['dup_answer']} duplicates")
    assert ev["repair"] > 0 and ev["repair_giveup"] == 0
    # timers end as results come back (the last ones may still be in the loop at the end)
    assert 0 < ev["timer_done"] <= ev["complete"]
    assert worker_retx["geo-ina"] > 20               # the loss was there for geo-ina's workers
    assert worker_retx["l3dml"] <= worker_retx["geo-ina"] / 10
