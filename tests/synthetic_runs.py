"""Synthetic results folders in the format of testbed/results.py, for tests without root.

`write_run(out_root, scenario, overrides)` loads the scenario exactly as a real run would
and writes results/<scenario>/<run-id>/ with scenario.yaml, manifest.json,
events/<worker>.jsonl, counters.csv, bandwidth_events.jsonl and summary.json, from a
simple closed-form BSP model (numbers are made up, never presented as measurements):

  events as workers/events.py (worker_start, iteration_start, compute_end, iteration_end
  with t_start, t_end, compute_s, comm_s, gradient_bytes, bytes_sent, packets_sent,
  retransmissions, accuracy, loss; worker_end)
  compute(w, i)  = 0.1 s x N(1, 0.05), x 3 when a transient straggler (probability p)
  comm(i)        = crossing(scheme) x gradient bits / bottleneck rate at the start + RTT
  every worker of iteration i starts at T_i and ends at T_i + max_w compute + comm
  WAN bytes of iteration i = crossing(scheme) x 2 x gradient bytes, split evenly over
  the WAN interfaces; accuracy(i) = 0.9 - 0.5 exp(-i / 4), loss(i) = 0.2 + exp(-i / 4)

Timestamps are emulated (x time_dilation), like a real run's. Also the stored fixture
under tests/data/results_fixture/ is made by `python3 tests/synthetic_runs.py`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from testbed.scenario import dump_scenario, load_scenario   # noqa: E402
from topologies.graph import build_graph, wan_edges          # noqa: E402
from topologies.schedule import bandwidth_events, rate_at     # noqa: E402

SCHEMES = ["ps", "hier-ps", "ring", "ina", "geo-ina"]
T_BASE = 1000.0          # monotonic clock at the first iteration (emulated s)
SAMPLE_S = 0.1           # counters period (emulated s), as testbed.counters


def crossings(scheme: str, n_dc: int, n_workers: int, w_first_dc: int) -> int:
    """How many gradient copies cross the bottleneck WAN link per direction (model only)."""
    return {"ps": n_workers - w_first_dc, "ina": n_workers - w_first_dc,
            "hier-ps": n_dc - 1, "geo-ina": n_dc - 1, "ring": n_dc - 1}.get(scheme, n_dc)


def _params(scn) -> int:
    return int(getattr(scn.workload, "parameters", 65536))


def write_run(out_root, scenario, overrides=(), run_id: str | None = None) -> Path:
    scn = load_scenario(scenario, list(overrides))
    g = build_graph(scn)
    s = scn.time_dilation
    hosts = sorted((n for n, d in g.nodes(data=True) if d["role"] == "host"),
                   key=lambda n: g.nodes[n]["worker_index"])
    n_dc = len(scn.datacenters)
    w1 = scn.datacenters[0].racks * scn.datacenters[0].workers_per_rack
    grad_bytes = 4 * _params(scn)
    cross = crossings(scn.scheme, n_dc, len(hosts), w1)
    wans = wan_edges(g)
    rtt = 2 * max(g.edges[e]["delay_ms"] for e in wans) / 1000
    events = bandwidth_events(g, horizon_s=10_000)
    p = scn.stragglers.transient.probability if scn.stragglers.transient else 0.0
    rng = np.random.default_rng([scn.seed, SCHEMES.index(scn.scheme) if scn.scheme in SCHEMES else 9])
    run_id = run_id or f"20260101T000000Z-{rng.integers(1 << 16):04x}"
    d = Path(out_root) / scn.name / run_id
    (d / "events").mkdir(parents=True)
    (d / "scenario.yaml").write_text(dump_scenario(scn))
    logs = {h: [{"event": "worker_start", "t": T_BASE - 0.5 * s, "worker": h, "index": k,
                 "scheme": scn.scheme, "parameters": grad_bytes // 4, "n_workers": len(hosts),
                 "loss_initial": 1.4, "accuracy_initial": 0.35, "dilation": s}]
            for k, h in enumerate(hosts)}
    t = 0.0                                    # real seconds since the first iteration
    per_iter = []
    n_it = scn.iterations or 8
    for i in range(n_it):
        bw = min(rate_at(g, events, e, t) for e in wans)
        comp = 0.1 * rng.normal(1.0, 0.05, len(hosts))
        comp *= np.where(rng.random(len(hosts)) < p, 3.0, 1.0)
        comm = cross * grad_bytes * 8 / (bw * 1e6) + rtt
        end = t + comp.max() + comm
        for k, h in enumerate(hosts):
            ts, tc, te = (T_BASE + x * s for x in (t, t + comp[k], end + 0.0005 * k))
            logs[h] += [{"event": "iteration_start", "t": ts, "worker": h, "iteration": i},
                        {"event": "compute_end", "t": tc, "worker": h, "iteration": i},
                        {"event": "iteration_end", "t": te, "t_start": ts, "t_end": te, "worker": h,
                         "iteration": i, "compute_s": tc - ts, "comm_s": te - tc,
                         "gradient_bytes": grad_bytes, "bytes_sent": grad_bytes + 64 * (grad_bytes // 1400 + 1),
                         "bytes_received": grad_bytes, "packets_sent": grad_bytes // 1400 + 1,
                         "retransmissions": int(i == 2 and k == 0),
                         "accuracy": round(0.9 - 0.5 * np.exp(-i / 4), 6),
                         "loss": round(0.2 + np.exp(-i / 4), 6)}]
        per_iter.append((t, end, 2 * cross * grad_bytes))
        t = end + 0.001
    for h, ev in logs.items():
        ev.append({"event": "worker_end", "t": T_BASE + t * s, "worker": h, "iterations": n_it,
                   "reason": "finished"})
        (d / "events" / f"{h}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev))
    # counters: WAN bytes of each iteration spread evenly over it, on every WAN interface
    intfs = [(u, f"{u}-eth{g.edges[u, v]['ports'][u]}") for u, v in wans] + \
            [(v, f"{v}-eth{g.edges[u, v]['ports'][v]}") for u, v in wans]
    rows = ["t_mono,node,intf,rx_bytes,rx_packets,rx_dropped,tx_bytes,tx_packets,tx_dropped"]
    horizon = per_iter[-1][1] + SAMPLE_S
    for k in range(int(horizon / SAMPLE_S) + 2):
        tr = k * SAMPLE_S - SAMPLE_S / 2
        sent = sum(b * min(1.0, max(0.0, (tr - a) / (e - a))) for a, e, b in per_iter)
        for node, intf in intfs:
            tx = int(round(sent / len(intfs)))
            rows.append(f"{T_BASE + tr * s:.6f},{node},{intf},{tx},{tx // 1000},0,{tx},{tx // 1000},0")
    (d / "counters.csv").write_text("\n".join(rows) + "\n")
    changes = [{"t": T_BASE + ev.t_s * s, "t_s": ev.t_s * s, "edge": "-".join(ev.edge), "mbps": ev.mbps / s}
               for ev in events if ev.t_s <= t]
    (d / "bandwidth_events.jsonl").write_text("".join(json.dumps(c) + "\n" for c in changes))
    manifest = {"run_id": run_id, "scenario": scn.name, "repetition": 0, "seed": scn.seed,
                "time_dilation": s, "backend": "softswitch", "link_emulation": "userspace",
                "node_prefix": "", "overrides": list(overrides), "synthetic": True}
    # the app section holds the scheme's facts only; the measurement is added as
    # testbed/lifecycle.py adds it, by the one pipeline (analysis/rundata.summary_sections)
    from analysis.rundata import summary_sections
    app = {"app": scn.scheme, "scheme": scn.scheme, "errors": {}}
    summary = {"complete": True, "reason": "finished", "elapsed_s": round(t * s + 3.0, 3),
               "time_dilation": s, "app": app, "warnings": [],
               "switch_drops": {"g1": {"rx_frames": 1000, "socket_drops": 0}},
               "bandwidth_changes": changes}
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    summary.update(summary_sections(d, summary))
    from testbed.fidelity import model_section   # as testbed/lifecycle.py adds it
    summary["model"], warns = model_section(scn, summary["metrics"])
    summary["warnings"] += warns
    (d / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return d


def fake_runner(scenario, overrides, out_root, log=print) -> Path:
    """A sweep runner (testbed.sweep.Runner) that writes a synthetic run."""
    log(f"synthetic run of {scenario} {overrides}")
    return write_run(out_root, scenario, overrides)


def make_fixture() -> None:
    """Regenerate tests/data/results_fixture/ (two small sweeps) with testbed.sweep."""
    import shutil
    from testbed.sweep import run_sweep
    from testbed.sweep_model import load_sweep
    root = REPO / "tests" / "data" / "results_fixture"
    for name in ("sweep-bw", "sweep-strag"):
        if (root / name).exists():
            shutil.rmtree(root / name)
        sw = load_sweep(root / f"{name}.yaml")
        run_sweep(sw, root, runner=fake_runner, progress=False)
        for log in (root / name).glob("sweep.log"):
            log.unlink()     # timestamps of the regeneration: noise in git


if __name__ == "__main__":
    make_fixture()
