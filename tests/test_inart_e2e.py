"""inart end to end in Mininet: two parameter servers, switches and servers both aggregating.

Needs root and Mininet (skipped otherwise). Node names carry the prefix 'ia'. Two datacenters
(a: 2 racks x 2 hosts, b: 1 rack x 2), two PS hosts (the last of each datacenter), four
workers. `fan_in: 2` lets a switch point take two workers per PS, so the plan (seed 2) has
switch points summing two workers and a worker sent straight to its PS. Checked:
the run completes with verify on and every sum within the quantization bound, all workers
hold the same sums, each root server completed its chunks every iteration and was stopped
cleanly (its JSON stats read), switch points sum two workers and a PS takes a worker
directly, and the planned paths are what the tables route.
"""
from __future__ import annotations

import json
import math

import pytest

from testbed.lifecycle import RunOptions, run_scenario
from workers.events import read_events

pytestmark = pytest.mark.mininet

ITERATIONS = 4
PARAMETERS = 4096
SCENARIO = f"""
name: inart-e2e
seed: 2
datacenters:
  - {{name: a, lat: 0, lon: 0, racks: 2, workers_per_rack: 2}}
  - {{name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 2}}
wan:
  default: {{bandwidth_mbps: 20, delay_ms: 10}}
intra_dc:
  access: {{bandwidth_mbps: 50, delay_ms: 0}}
  uplink: {{bandwidth_mbps: 100, delay_ms: 0}}
scheme: inart
scheme_options: {{num_servers: 2, fan_in: 2, verify: true}}
workload: {{kind: synthetic, parameters: {PARAMETERS}}}
iterations: {ITERATIONS}
"""


FALLBACK = SCENARIO.replace("scheme: inart", "scheme: inart\nswitch: {defines: {AGG_SLOTS: 96}}") \
    .replace("{num_servers: 2, fan_in: 2, verify: true}", "{num_servers: 2, fan_in: 2, window: 64, verify: true}")


@pytest.mark.parametrize("text", [SCENARIO, FALLBACK], ids=["whole", "fallback"])
def test_inart_sums_through_switches_and_two_servers(tmp_path, text):
    """`fallback`: switches of 96 slots serving both PSs' points of 64 give the second 32: its
    slots 32-63 fall back to the PS, which sums them from the workers themselves."""
    path = tmp_path / "inart-e2e.yaml"
    path.write_text(text)
    (d,) = run_scenario(RunOptions(str(path), [], str(tmp_path / "out"), prefix="ia",
                                   show_progress=False, timeout_s=240), log=lambda *a, **k: None)
    s = json.loads((d / "summary.json").read_text())
    assert s["complete"], s["reason"]
    m, app = s["metrics"], s["app"]
    assert m["iterations"] == ITERATIONS and m["worker_errors"] == 0
    assert m["within_quantization_bound"] is True
    assert app["server_hosts"] == ["iah1r2w2", "iah2r1w2"] and len(app["ranks"]) == 4
    # the PSs at the roots; switch points that sum two workers; a worker straight to a PS
    roots = [p for p in app["trees"] if p["level"] == "server"]
    assert [p["switch"] for p in roots] == app["server_hosts"]
    points = [p for p in app["trees"] if p["level"] != "server"]
    assert all(p["parent"] in {r["id"] for r in roots} for p in points)
    assert any(len(p["children"]) == 2 for p in points)
    assert any(set(r["children"]) & set(app["ranks"]) for r in roots)
    # each root server completed every chunk of its share, every iteration, and reported
    shares = app["shares"]
    sizes = [math.floor(a * PARAMETERS) for a in shares]
    for i, (name, st) in enumerate(sorted(app["servers"].items())):
        assert st["role"] == "inart-root" and st["events"]["bad"] == 0, st
        chunks = -(-sizes[i] // 32)
        assert chunks * ITERATIONS <= st["events"]["complete"] <= (chunks + 1) * ITERATIONS, (name, st)
        assert st["events"]["add"] > 0     # more than one child per slot
    assert app["paths"]["mode"] == "planned" and app["paths"]["off_plan"] == []
    short = {j: sw for j, sw in app["fallback_slots"].items() if sw}
    if text is FALLBACK:
        assert short and all(n == 32 for sw in short.values() for n in sw.values()), short
    else:
        assert not short
    ends = {p.stem: [e for e in read_events(p) if e["event"] == "iteration_end"]
            for p in sorted((d / "events").glob("*.jsonl"))}
    assert len(ends) == 4
    ref = [e["result_sha1"] for e in next(iter(ends.values()))]
    for w, es in ends.items():
        assert [e["result_sha1"] for e in es] == ref, w
        assert all(e["max_error"] <= e["error_bound"] for e in es), w
    print(f"\ninart: shares {[round(a, 3) for a in shares]}, streams {app['streams']}, "
          f"{m['iteration_period_s']:.3f} s per iteration")
