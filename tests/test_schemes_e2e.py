"""Every scheme end to end in Mininet, and the analytic bounds of ps and ina.

Needs root and Mininet (skipped otherwise). Node names carry the prefix 'b' (quickstart
runs) and 'bb' (bound runs) so that they do not collide with other tests on the machine.

1. Every registered scheme on the quickstart topology, through the one worker loop: the
   run completes, every worker logs every event of every iteration, the event schema is
   identical for every scheme (same events, same fields), the gap between the sum's
   arrival and the iteration's end is the loop's (the update only) for every scheme,
   every aggregated sum is within its bound of numpy's (float32 summation bound, or the
   quantization bound for INA), all workers agree, and the schemes agree with each other
   (same inputs: the training losses match).
2. The analytic bound: W workers, S gradient bytes each, one bottleneck of B Mbps, zero
   compute time. ps must push W*S bytes through the server's access link: its
   communication time per iteration is >= W*S/B; with INA every worker only sends S:
   >= S/B. The test prints measured/bound and fails above 2.0 (and below 0.95: faster
   than the link means the emulation is wrong).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import schemes
from testbed.lifecycle import RunOptions, run_scenario

pytestmark = pytest.mark.mininet

REPO = Path(__file__).resolve().parent.parent
# every scheme that runs bsp on the quickstart's 4 hosts with 4 workers: not mlfabric (asp
# only: test_mlfabric_e2e.py), not inart (its parameter servers take hosts of their own, so
# fewer workers train: test_inart_e2e.py)
SCHEMES = tuple(n for n in schemes.NAMES if "bsp" in schemes.get(n).modes and n != "inart")
ITERATIONS = 3
PER_ITERATION = ("iteration_start", "compute_end", "first_send", "last_result", "iteration_end")


def run(scenario: str, overrides: list[str], out: Path, prefix: str) -> Path:
    (d,) = run_scenario(RunOptions(scenario, overrides, str(out), prefix=prefix, show_progress=False,
                                   timeout_s=180), log=lambda *a, **k: None)
    return d


def events(run_dir: Path) -> dict[str, list[dict]]:
    from workers.events import read_events
    return {p.stem: read_events(p) for p in sorted((run_dir / "events").glob("*.jsonl"))}


@pytest.fixture(scope="module")
def quickstart_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("schemes")
    dirs = {}
    for s in SCHEMES:
        dirs[s] = run(str(REPO / "scenarios" / "quickstart.yaml"),
                      [f"scheme={s}", f"iterations={ITERATIONS}", "duration_s=null",
                       "workload={kind: synthetic, parameters: 16384}", "scheme_options.verify=true"],
                      out, "b")
    return dirs


@pytest.mark.parametrize("scheme", SCHEMES)
def test_scheme_completes_with_correct_values_and_complete_events(quickstart_runs, scheme):
    d = quickstart_runs[scheme]
    summary = json.loads((d / "summary.json").read_text())
    assert summary["complete"], summary["reason"]
    app, m = summary["app"], summary["metrics"]
    assert app["scheme"] == scheme and not app["errors"]
    assert m["iterations"] == ITERATIONS and m["scheme"] == scheme and m["worker_errors"] == 0
    assert m["within_quantization_bound"] is True and m["max_error"] is not None
    assert m["iteration_time_mean_s"] > 0 and m["goodput_mbps"] > 0
    ev = events(d)
    assert len(ev) == 4
    for w, es in ev.items():
        kinds = [e["event"] for e in es]
        assert kinds[0] == "worker_start" and kinds[-1] == "worker_end", (w, kinds)
        for i in range(ITERATIONS):
            got = [e["event"] for e in es if e.get("iteration") == i and e["event"] in PER_ITERATION]
            assert got == list(PER_ITERATION), (w, i, got)
        for e in es:
            if e["event"] == "iteration_end":
                assert e["max_error"] <= e["error_bound"]
                assert e["gradient_bytes"] == 4 * 16384 and e["bytes_sent"] >= e["gradient_bytes"]
        for i in range(ITERATIONS):   # after the sum arrives: the update only, no communication
            last = next(e["t"] for e in es if e["event"] == "last_result" and e["iteration"] == i)
            end = next(e for e in es if e["event"] == "iteration_end" and e["iteration"] == i)
            assert 0 <= end["t_end"] - last < 0.05, (w, i, end["t_end"] - last)
    if scheme in ("ps", "mxnet-ps", "hier-ps", "ring", "alltoall"):   # one float32 sum, the same bits everywhere
        for i in range(ITERATIONS):
            shas = {e["result_sha1"] for es in ev.values() for e in es
                    if e["event"] == "iteration_end" and e["iteration"] == i}
            assert len(shas) == 1


def schema(run_dir: Path) -> dict[str, set[str]]:
    """event name -> the fields it carries, over all workers of a run."""
    out: dict[str, set[str]] = {}
    for es in events(run_dir).values():
        for e in es:
            out.setdefault(e["event"], set()).update(e)
    return out


def test_every_scheme_logs_the_same_event_schema(quickstart_runs):
    ref = schema(quickstart_runs["ps"])
    assert {"worker_start", "comm_ready", "worker_ready", "iteration_end", "worker_end"} <= set(ref)
    for s, d in quickstart_runs.items():
        assert schema(d) == ref, s


def test_schemes_agree_with_each_other(quickstart_runs):
    """Same inputs, same model updates: the per-iteration training losses coincide (float
    schemes to float rounding, INA to its quantization error)."""
    losses = {s: [j["loss"] for j in json.loads((d / "summary.json").read_text())["per_iteration"]]
              for s, d in quickstart_runs.items()}
    for s, l in losses.items():
        assert len(l) == ITERATIONS
        assert l == pytest.approx(losses["ps"], rel=1e-4), s


# ---------------------------------------------------------------- mxnet-ps over 3 datacenters
MX_PARAMS = 16384


def test_mxnet_ps_splits_over_every_datacenter_with_ps_bits(tmp_path):
    """mxnet-ps with its servers sharded over 3 datacenters (bigarray_bound below the tensor:
    MXNet's parts 5461 / 5462 / 5461), 2 workers each: complete, every sum within the float32
    bound of numpy's float64 sum (verify), the same bits on every worker and the same bits as
    ps (each element is summed over the workers in rank order either way), every server
    saw every iteration, and only its part of every gradient."""
    scn = {"name": "mx3", "seed": 4,
           "datacenters": [{"name": "a", "region": "ibm:us-east", "workers_per_rack": 2},
                           {"name": "b", "region": "ibm:eu-de", "workers_per_rack": 2},
                           {"name": "c", "region": "ibm:eu-gb", "workers_per_rack": 2}],
           "wan": {"default": {"bandwidth_mbps": 20.0, "delay_ms": 5.0}},
           "scheme": "mxnet-ps",
           "workload": {"kind": "synthetic", "parameters": MX_PARAMS},
           "compute_time": {"model": "constant", "value_ms": 0.0}, "iterations": ITERATIONS}
    path = tmp_path / "mx3.yaml"
    path.write_text(yaml.safe_dump(scn))
    shas = {}
    options = {"mxnet-ps": "{bigarray_bound: 1000, verify: true}", "ps": "{verify: true}"}
    for scheme in ("mxnet-ps", "ps"):
        d = run(str(path), [f"scheme={scheme}", f"scheme_options={options[scheme]}"],
                tmp_path / scheme, "mx")
        summary = json.loads((d / "summary.json").read_text())
        assert summary["complete"], summary["reason"]
        m = summary["metrics"]
        assert m["iterations"] == ITERATIONS and m["within_quantization_bound"] is True
        ev = events(d)
        assert len(ev) == 6
        for e in (e for es in ev.values() for e in es if e["event"] == "iteration_end"):
            assert e["max_error"] <= e["error_bound"]
        shas[scheme] = [{e["result_sha1"] for es in ev.values() for e in es
                         if e["event"] == "iteration_end" and e["iteration"] == i}
                        for i in range(ITERATIONS)]
        assert all(len(s) == 1 for s in shas[scheme]), (scheme, shas[scheme])
        if scheme == "mxnet-ps":
            app = summary["app"]
            assert app["parts"] == [["mxh1r1w1", 0, 5461], ["mxh2r1w1", 5461, 10923],
                                    ["mxh3r1w1", 10923, 16384]]
            servers = app["servers"]
            assert sorted(servers) == ["mx0", "mx1", "mx2"]
            for name, (_, lo, hi) in zip(["mx0", "mx1", "mx2"], app["parts"]):
                assert servers[name]["iterations"] == ITERATIONS
                # 6 workers x ITERATIONS x the part's values, and at most a few headers more
                assert 0 <= servers[name]["bytes_received"] - 6 * ITERATIONS * 4 * (hi - lo) < 6 * 64 * (ITERATIONS + 2)
    assert shas["mxnet-ps"] == shas["ps"]


# ---------------------------------------------------------------- analytic bound
BOUND_B_MBPS = 1.0
BOUND_PARAMS = 16384           # S = 64 KiB per worker


def bound_scenario(path: Path, scheme: str) -> str:
    """Two datacenters of two hosts; every access link is the B Mbps bottleneck, the WAN
    and uplinks are fast and near (1 ms); zero compute time. ps runs its server on a
    dedicated host (so W = 3 workers push through that host's access link)."""
    scn = {"name": f"bound-{scheme}", "seed": 3,
           "datacenters": [{"name": "a", "region": "ibm:us-east", "racks": 1, "workers_per_rack": 2},
                           {"name": "b", "region": "ibm:eu-de", "racks": 1, "workers_per_rack": 2}],
           "wan": {"default": {"bandwidth_mbps": 100.0, "delay_ms": 1.0}},
           "intra_dc": {"access": {"bandwidth_mbps": BOUND_B_MBPS, "delay_ms": 0.05},
                        "uplink": {"bandwidth_mbps": 100.0, "delay_ms": 0.05}},
           "scheme": scheme, "workload": {"kind": "synthetic", "parameters": BOUND_PARAMS},
           "compute_time": {"model": "constant", "value_ms": 0.0}, "iterations": 4}
    if scheme == "ps":
        scn["scheme_options"] = {"dedicated_servers": True}
    else:
        scn["switch"] = {"program": "p4/aggregation.p4", "defines": {"AGG_K": 64}}
    p = path / f"bound-{scheme}.yaml"
    p.write_text(yaml.safe_dump(scn))
    return str(p)


def comm_per_iteration(run_dir: Path) -> float:
    """Mean over workers and iterations (the first, with TCP/ARP warm-up, excluded) of
    first_send -> last_result: the row's comm_time_mean_s."""
    return json.loads((run_dir / "summary.json").read_text())["metrics"]["comm_time_mean_s"]


@pytest.mark.parametrize("scheme", ["ps", "ina"])
def test_communication_time_against_the_analytic_bound(tmp_path, scheme):
    d = run(bound_scenario(tmp_path, scheme), [], tmp_path, "bb")
    summary = json.loads((d / "summary.json").read_text())
    assert summary["complete"], summary["reason"]
    workers = len(summary["workers"])
    s_bytes = 4 * BOUND_PARAMS
    w_through = workers if scheme == "ps" else 1
    bound = w_through * s_bytes * 8 / (BOUND_B_MBPS * 1e6)
    measured = comm_per_iteration(d)
    ratio = measured / bound
    print(f"\n{scheme}: W={workers} S={s_bytes} B B={BOUND_B_MBPS} Mbps: comm/iteration "
          f"{measured:.3f} s, bound {bound:.3f} s, measured/bound {ratio:.2f}")
    assert ratio >= 0.95, "faster than the bottleneck allows: the link emulation is wrong"
    assert ratio <= 2.0


# ---------------------------------------------------------------- failure path
def test_a_dead_server_ends_the_run_with_its_reason_not_a_hang(tmp_path):
    """Kill the ps server mid-run: progress() reports it at once (the workers would
    otherwise wait for their timeout), every worker stops, stop() leaves nothing behind."""
    import time

    from testbed.apps import RunContext
    from testbed.scheme_app import make_app
    from testbed.lifecycle import started_network
    from testbed.scenario import load_scenario
    scn = load_scenario(str(REPO / "scenarios" / "quickstart.yaml"),
                        ["scheme=ps", "iterations=1000", "duration_s=null"])
    app = make_app("ps", {})
    with started_network(RunOptions("<dead-server>", prefix="bk", show_progress=False), scn,
                         tmp_path) as env:
        (tmp_path / "events").mkdir()
        ctx = RunContext(net=env["net"], graph=env["graph"], scenario=scn, run_dir=tmp_path,
                         events_dir=tmp_path / "events", record=env["record"], iterations=1000,
                         duration_s=None)
        app.setup(ctx)
        try:
            app.start()
            t0 = time.monotonic()
            while not any(p.iterations >= 2 for p in app.progress()):
                assert time.monotonic() - t0 < 60, "no progress before the kill"
                time.sleep(0.1)
            server = next(p for kind, _, p in app.procs if kind == "server")
            server.kill()
            t_kill = time.monotonic()
            while not all(p.finished for p in app.progress()):
                assert time.monotonic() - t_kill < 10, "workers hang after the server died"
                time.sleep(0.1)
            errors = {p.worker: p.error for p in app.progress()}
            assert all(errors.values()), errors
            assert any("server ps0" in e or "connection closed" in e or "check its log" in e
                       for e in errors.values()), errors
        finally:
            app.stop()
        assert all(p.poll() is not None for _, _, p in app.procs)
