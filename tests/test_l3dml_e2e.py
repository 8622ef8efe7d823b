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
ITERATIONS = 3


def run(scheme: str, out: Path) -> dict:
    (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"), [
        f"scheme={scheme}", f"iterations={ITERATIONS}", "duration_s=null", "time_dilation=2",
        "workload={kind: synthetic, parameters: 16384}", "scheme_options.verify=true",
        f"wan.default.loss_pct={LOSS_PCT}"], str(out), prefix="l3", show_progress=False,
        timeout_s=240), log=lambda *a, **k: None)
    return json.loads((d / "summary.json").read_text())


def test_the_switches_repair_wan_losses_so_the_workers_do_not(tmp_path):
    geo, l3 = run("geo-ina", tmp_path / "geo"), run("l3dml", tmp_path / "l3")
    for s in (geo, l3):
        assert s["complete"], s["reason"]
        assert s["metrics"]["within_quantization_bound"] is True and not s["app"]["errors"]
    rep = l3["app"]["l3dml"]["switch_repair"]
    assert rep["error"] is None
    (gw,) = l3["app"]["repair_switches"]
    ev, root = rep["events"][gw], rep["events"][l3["app"]["root"]]
    worker_retx = {n: s["metrics"]["retransmissions"] for n, s in (("geo-ina", geo), ("l3dml", l3))}
    print(f"\nWAN loss {LOSS_PCT}% each way, {ITERATIONS} iterations of 512 chunks: worker retransmissions "
          f"{worker_retx}; l3dml's {gw}: {ev['repair']} repairs, {ev['timer_done']} timers ended, "
          f"{ev['repair_giveup']} given up; root answered {root['dup_answer']} duplicates")
    assert ev["repair"] > 0 and ev["repair_giveup"] == 0
    # timers end as results come back (the last ones may still be in the loop at the end)
    assert 0 < ev["timer_done"] <= ev["complete"]
    assert worker_retx["geo-ina"] > 20               # the loss was there for geo-ina's workers
    assert worker_retx["l3dml"] <= worker_retx["geo-ina"] / 10


MESH3 = {"name": "l3-sync", "seed": 2, "time_dilation": 4,
         "datacenters": [{"name": "a", "lat": 0, "lon": 0, "racks": 1, "workers_per_rack": 2},
                         {"name": "b", "lat": 0, "lon": 10, "racks": 1, "workers_per_rack": 2},
                         {"name": "c", "lat": 10, "lon": 0, "racks": 1, "workers_per_rack": 2}],
         "wan": {"topology": "full-mesh", "default": {"bandwidth_mbps": 20, "delay_ms": 10}},
         "scheme": "l3dml", "workload": {"kind": "synthetic", "parameters": 131072},
         "compute_time": {"model": "constant", "value_ms": 100},
         "stragglers": {"persistent": [{"dc": "b", "factor": 4}]},
         "switch": {"pcap": ["g1"]}, "iterations": 4}


def test_rate_sync_narrows_the_arrival_spread_of_a_persistent_straggler(tmp_path):
    """Datacenter b computes 4x slower; policy rule sends part of its partial sums through
    c (slot ranges) and paces the others, none keeps them on the direct link. From the
    root's pcaps, per iteration (after the first, whose start includes the set-up's noise):
    the mean over chunks of a chunk's arrival spread across datacenters (how long the root
    holds a slot waiting) is smaller with rule; the spread of the datacenters' last chunks
    is printed (geo-ina's shared window bounds it to a window of the slowest stream)."""
    import yaml
    from analysis.root_arrivals import (arrivals, chunk_arrivals, chunk_spreads, root_frames,
                                        spreads)
    path = tmp_path / "mesh3.yaml"
    path.write_text(yaml.safe_dump(MESH3))
    got = {}
    for policy in ("none", "rule"):
        (d,) = run_scenario(RunOptions(str(path), [
            f"scheme_options={{root: a, window: 512, policy: {policy}}}"], str(tmp_path / policy),
            prefix="l3", show_progress=False, timeout_s=300), log=lambda *a, **k: None)
        s = json.loads((d / "summary.json").read_text())
        assert s["complete"], s["reason"]
        app = s["app"]
        chunks = -(-131072 // app["k"])
        frames = root_frames(d / "pcap", "l3g1")
        sp = spreads(arrivals(frames, "10.0.0.1", app["job"], app["window"], chunks))
        per_chunk = chunk_spreads(chunk_arrivals(frames, "10.0.0.1", app["job"], app["window"]), chunks)
        assert sorted(sp) == sorted(per_chunk) == [0, 1, 2, 3]
        mean = lambda x: sum(x[i] for i in (1, 2, 3)) / 3
        got[policy] = (mean(per_chunk), mean(sp), s["metrics"]["iteration_period_s"], app)
    print("\nat the root, iterations 1-3 (emulated s): mean chunk spread / last chunks' spread; "
          "iteration period (real s): " + "; ".join(
              f"{p} {got[p][0]:.3f} / {got[p][1]:.3f}; {got[p][2]:.3f}" for p in got)
          + f"; flow model (real s): {got['rule'][3]['flow_model']}")
    assert any(len(a["slot_ranges"]) > 1 for a in got["rule"][3]["allocation"])
    assert got["rule"][0] < got["none"][0]
    # the flow model against the emulation (its calibration error): iteration time, real s.
    # Bound wide: at this point geo-ina itself runs ~1.8 x its analytic model (the same
    # 0.725 s as the flow model's), so the error is the emulation's gap more than the model's
    fm = got["rule"][3]["flow_model"]
    ratio = {p: got[p][2] / fm[p]["completion_s"] for p in ("none", "rule")}
    print(f"measured / flow model: none {ratio['none']:.2f}, rule {ratio['rule']:.2f}; "
          f"gain of rule over none: measured {1 - got['rule'][2] / got['none'][2]:+.1%}, "
          f"flow model {1 - fm['rule']['completion_s'] / fm['none']['completion_s']:+.1%}")
    assert all(0.8 <= r <= 2.5 for r in ratio.values()), ratio


def iteration_ends(run_dir: Path) -> dict[int, float]:
    """iteration -> when its last worker finished it (monotonic s, the run events' clock)."""
    from workers.events import read_events
    ends: dict[int, float] = {}
    for f in (run_dir / "events").glob("*.jsonl"):
        for e in read_events(f):
            if e.get("event") == "iteration_end":
                ends[e["iteration"]] = max(ends.get(e["iteration"], 0.0), e["t_end"])
    return ends


def test_the_controller_re_routes_when_a_straggler_s_uplink_narrows(tmp_path):
    """No compute straggler; at 2 s (real) datacenter b's uplink to the root (b -> a only: the
    results still come down at 20 Mbps) narrows from 20 to 4 Mbps. Policy rule decided at
    plan time keeps b on its direct link (the plan saw 20 Mbps); with replan_interval_s the
    controller reads the new htb rate, moves part of b's slot range onto b -> c -> a, and
    the iterations after its install are faster than the static plan's after the drop."""
    import yaml
    scn = {**MESH3, "name": "l3-replan", "stragglers": {"persistent": []}, "switch": {},
           "workload": {"kind": "synthetic", "parameters": 65536}, "iterations": 8,
           "time_dilation": 2,
           "wan": {**MESH3["wan"], "edges": [{"a": "a", "b": "b", "bandwidth_schedule": [
               {"t_s": 2.0, "mbps": 4, "from_dc": "b"}]}]}}
    path = tmp_path / "narrow.yaml"
    path.write_text(yaml.safe_dump(scn))
    got = {}
    for name, extra in (("static", ""), ("replan", ", replan_interval_s: 0.5")):
        (d,) = run_scenario(RunOptions(str(path), [
            f"scheme_options={{root: a, window: 512, policy: rule{extra}}}"], str(tmp_path / name),
            prefix="l3", show_progress=False, timeout_s=300), log=lambda *a, **k: None)
        s = json.loads((d / "summary.json").read_text())
        assert s["complete"], s["reason"]
        assert not s["app"]["errors"]
        ends = iteration_ends(d)
        (drop,) = [json.loads(x)["t"] for x in (d / "run_events.jsonl").read_text().splitlines()
                   if json.loads(x)["event"] == "bandwidth_change"]
        got[name] = (ends, drop, s["app"]["l3dml"]["replan"])
    ends, drop, _ = got["static"]
    dur = lambda e, i: (e[i] - e[i - 1]) / 2                      # real s (dilation 2)
    after_static = [dur(ends, i) for i in sorted(ends)[1:] if ends[i - 1] >= drop]
    ends, drop, rp = got["replan"]
    assert rp["error"] is None and len(rp["plans"]) >= 1
    plan = rp["plans"][0]
    first_after = min(i for i in ends if ends[i] >= drop)          # the iteration the drop hit
    assert "paths" in plan["why"] and plan["from_iteration"] <= first_after + 2
    assert plan["new"]["split"]["2"][0] < 0.9 and plan["old"]["split"]["2"][0] == 1.0
    after_replan = [dur(ends, i) for i in sorted(ends) if i > plan["from_iteration"]]
    mean = lambda x: sum(x) / len(x) if x else float("nan")
    print(f"\nb's uplink 20 -> 4 Mbps: iterations after the drop (static rule) "
          f"{[round(x, 3) for x in after_static]} s; after the controller's install (from "
          f"iteration {plan['from_iteration']}, b split {plan['new']['split']['2']}) "
          f"{[round(x, 3) for x in after_replan]} s (real)")
    assert after_static and after_replan
    assert mean(after_replan) < 0.75 * mean(after_static)
    # the flow model against the emulation on this second scenario (its calibration error):
    # before the drop (the plan's decision, no straggler) and after the install (the
    # controller's decision on the measured rates), iteration time in real s
    # (iteration 0's length varies with the set-up, so which iteration the drop hits does
    # too: the iterations before it, from both runs, share the plan's decision)
    before = [dur(e, i) for e, d, _ in got.values() for i in sorted(e)[1:] if e[i] < d]
    ratio = {"before the drop": mean(before) / plan["old"]["completion_s"],
             "after the install": mean(after_replan) / plan["new"]["completion_s"]}
    print("measured / flow model: " + ", ".join(f"{k} {v:.2f}" for k, v in ratio.items()))
    assert before and all(0.8 <= r <= 2.5 for r in ratio.values()), ratio
