"""geo-ina end to end in Mininet: 2 datacenters x 2 racks x 2 workers, real worker
processes training the MLP through three aggregation levels, 5 % random loss on the WAN
link (both directions) and 40 ms WAN delay, through the whole run path
(testbed.lifecycle.run_once). Checks:
- every iteration's aggregated gradient matches the float reference within the
  quantization bound, on every worker (the workers regenerate each other's seeded
  gradients: scheme_options.verify);
- the model's test accuracy rises across iterations, identically on every worker;
- the loss made the workers retransmit, and the run still completed;
- the gateways' pcaps (softswitch --pcap) dissect with the scapy layer: partial sums
  cross the WAN from the datacenter point to the global point, results come back;
- nothing of the run is left behind (processes, interfaces).
Node names carry the prefix 'i'.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed import lifecycle
from testbed.scenario import parse_scenario
from workers.events import read_events

pytestmark = pytest.mark.mininet

ITERATIONS = 6
SCENARIO = f"""
name: ina-e2e
seed: 5
datacenters:
  - {{name: a, lat: 0, lon: 0, racks: 2, workers_per_rack: 2}}
  - {{name: b, lat: 0, lon: 10, racks: 2, workers_per_rack: 2}}
wan:
  default: {{bandwidth_mbps: 20, delay_ms: 40, loss_pct: 5}}
intra_dc:
  access: {{bandwidth_mbps: 100, delay_ms: 0}}
  uplink: {{bandwidth_mbps: 100, delay_ms: 0}}
scheme: geo-ina
scheme_options: {{verify: true, window: 16, root: a}}
workload: {{kind: model, name: mlp, lr: 0.2}}
compute_time: {{model: normal, mean_ms: 20, std_ms: 5}}
stragglers:
  persistent: [{{worker: h2r2w2, factor: 2}}]
iterations: {ITERATIONS}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ina-e2e")
    scn = parse_scenario(SCENARIO, "<ina-e2e>")
    assert scn.switch.program == "p4/aggregation.p4"      # chosen for geo-ina automatically
    orig = lifecycle.switch_params

    def with_pcap(graph, program, defines, run_dir, *rest):
        params = orig(graph, program, defines, run_dir, *rest)
        for n, p in params.items():
            if graph.nodes[n]["role"] == "gateway":
                p["pcap_dir"] = str(Path(run_dir) / "pcap")
        return params

    mp = pytest.MonkeyPatch()
    mp.setattr(lifecycle, "switch_params", with_pcap)
    try:
        run_dir = lifecycle.run_once(lifecycle.RunOptions("<ina-e2e>", prefix="i", out=str(out),
                                                          show_progress=False, timeout_s=150), scn,
                                     log=lambda *a: None)
    finally:
        mp.undo()
    import json
    return run_dir, json.loads((run_dir / "summary.json").read_text())


def test_run_completes_with_every_iteration(run):
    run_dir, summary = run
    assert summary["complete"], summary.get("reason")
    app = summary["app"]
    assert app["scheme"] == "geo-ina" and app["levels"] == 3 and app["errors"] == {}
    assert summary["metrics"]["iterations"] == ITERATIONS


def test_every_sum_matches_the_float_reference_within_the_bound(run):
    run_dir, summary = run
    checked = 0
    for f in sorted((run_dir / "events").glob("*.jsonl")):
        for e in read_events(f):
            if e["event"] == "iteration_end":
                assert e["max_error"] <= e["error_bound"], (f.name, e)
                checked += 1
    assert checked == 8 * ITERATIONS
    assert summary["metrics"]["within_quantization_bound"] is True


def test_accuracy_rises_identically_on_every_worker(run):
    run_dir, summary = run
    curves = {f.name: [e["accuracy"] for e in read_events(f) if e["event"] == "iteration_end"]
              for f in (run_dir / "events").glob("*.jsonl")}
    first = next(iter(curves.values()))
    assert all(c == first for c in curves.values())
    assert first[-1] > first[0] + 0.05 and first[-1] > 0.2          # chance is 1/8
    loss = [j["loss"] for j in summary["per_iteration"]]
    assert loss[-1] < loss[0]


def test_wan_loss_caused_retransmissions_and_goodput_is_reported(run):
    _, summary = run
    m = summary["metrics"]
    assert m["retransmissions"] > 0
    assert m["goodput_mbps"] > 0
    assert m["iteration_time_mean_s"] > 0.08       # at least one WAN RTT (80 ms) per iteration


def test_pcap_dissects_with_the_scapy_layer(run):
    from scapy.all import rdpcap
    from workers.agg_packet import DATA, RESULT, AggHeader
    run_dir, _ = run
    pcaps = sorted((run_dir / "pcap").glob("*.pcap"))
    assert pcaps, "the gateways wrote no pcap"
    agg = []
    for p in pcaps:
        agg += [(p.name, pkt) for pkt in rdpcap(str(p)) if AggHeader in pkt]
    assert agg
    for _, pkt in agg:
        h = pkt[AggHeader]
        assert h.k == 32 and len(h.values) == 32 and h.job == 1 and h.shadow == h.gen & 1
    # datacenter b's partial sums go up to the global point at a's gateway (10.0.0.1)
    up = [pkt for _, pkt in agg if pkt["IP"].src == "10.2.0.254" and pkt["IP"].dst == "10.0.0.1"
          and pkt[AggHeader].flags & DATA]
    down = [pkt for _, pkt in agg if pkt[AggHeader].flags & RESULT]
    # pcaps are flushed when a switch stops on SIGTERM; one killed after its stop timeout
    # on a loaded machine loses its buffered frames: say so if that is why
    stopped = {f.name: "stopping:" in f.read_text() for f in (run_dir / "logs").glob("ig*.switch.log")}
    assert up and down, (f"{len(up)} partial sums up, {len(down)} results in {len(agg)} packets "
                         f"of {[p.name for p in pcaps]}; switches stopped cleanly: {stopped}")


def test_nothing_is_left_behind(run):
    names = os.listdir("/sys/class/net")
    assert not [n for n in names if n.startswith(("ig", "is", "ih")) and "-eth" in n]
    run_dir, _ = run
    for f in (run_dir / "events").glob("*.jsonl"):
        assert read_events(f)[-1]["event"] == "worker_end"
