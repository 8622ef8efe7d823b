"""mlfabric's aggregation on the wire, on loopback (no root, no Mininet): the primary PS,
aggregator processes and four worker processes running the one worker loop.

1. Groups go through idle-worker aggregators: the sums are the aggregators' own, and every
   model a worker pulled and the PS's final model are numpy's replay of the applied
   updates (a group's members summed in rank order).
2. A gateway aggregator stopped (SIGSTOP), killed once a group is waiting at it: the PS sees its
   connection break, the group falls back (its members send to the PS), the gateway is
   never chosen again; nothing is lost or applied twice and the replay still holds.
3. A gateway aggregator that is only slow (stopped past the timeout, then resumed): the
   group times out and falls back; the late sum, if it comes, is discarded."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.async_replay import sha1
from tests.test_mlfabric_local import (N, SEED, WORKLOAD, check_pulled, free_port, iteration_ends,
                                       replay, start, stats_of)
from workers.events import read_events
from workers.worker import WorkerConfig

P_IP, G_IP = "127.0.0.1", "127.0.0.3"
HOSTS = [f"w{i}" for i in range(N)]


def spec(candidates: list[dict], gw_fast: bool) -> dict:
    """Planned bandwidths: workers <-> PS slow, workers <-> workers fast; the gateway fast
    both ways when gw_fast (so it beats sending straight to the PS)."""
    nodes = [*HOSTS, "ps", "gw"]
    bw = {a: {b: 1e5 for b in nodes if b != a} for a in nodes}
    for a in HOSTS:
        for b in HOSTS:
            if a != b:
                bw[a][b] = 1e9
        if gw_fast:
            bw[a]["gw"] = bw["gw"][a] = 1e9
    if gw_fast:
        bw["gw"]["ps"] = 1e9
    return {"ps": "ps", "workers": HOSTS, "bandwidth": bw, "candidates": candidates}


def run_job(tmp: Path, iterations: int, kind: str, agg_timeout: float = 20.0, disturb=None):
    """kind: "workers" (an aggregator on every worker's host) or "gateway" (one, on G_IP).
    disturb(aggregators: dict name -> Popen) runs once two iterations are done."""
    if kind == "workers":
        cands = [{"name": f"agg-{h}", "host": h, "worker": i, "address": [P_IP, free_port(P_IP)]}
                 for i, h in enumerate(HOSTS)]
    else:
        cands = [{"name": "gw-b", "host": "gw", "worker": None, "address": [G_IP, free_port(G_IP)]}]
    pport = free_port(P_IP)
    aggs = {c["name"]: start(["-m", "schemes.mlfabric.aggregator", "--host", c["address"][0], "--port",
                              str(c["address"][1]), "--children", str(N), "--name", c["name"],
                              "--timeout", "20"], tmp / f"{c['name']}.log") for c in cands}
    primary = start(["-m", "schemes.mlfabric.server", "--host", P_IP, "--port", str(pport),
                     "--children", str(N), "--lr", repr(WORKLOAD["lr"]), "--tau-max", "20", "--agg-window", "20",
                     "--timeout", "20", "--aggregation", json.dumps(spec(cands, kind == "gateway")),
                     "--agg-timeout", str(agg_timeout)], tmp / "primary.log")
    go = tmp / "go"
    workers = []
    for i in range(N):
        cfg = WorkerConfig(worker=f"w{i}", host_id=f"h1r1w{i + 1}", index=i, n_workers=N, dc="a",
                           ip=P_IP, seed=SEED, events=str(tmp / f"w{i}.jsonl"), scheme="mlfabric",
                           communicator="schemes.mlfabric.communicator:MlfabricCommunicator",
                           comm={"primary": [P_IP, pport], "replica": None, "child_rank": i,
                                 "timeout_s": 20, "agg_timeout_s": 5,
                                 "aggregators": [[c["name"], *c["address"]] for c in cands]},
                           workload=WORKLOAD, compute_time={"model": "constant", "value_ms": 0},
                           stragglers={}, iterations=iterations, go_file=str(go),
                           training={"mode": "asp", "staleness": None})
        path = tmp / f"w{i}.json"
        path.write_text(json.dumps(asdict(cfg)))
        workers.append(start(["-m", "workers.worker", str(path)], tmp / f"w{i}.log"))
    procs = [primary, *aggs.values(), *workers]
    try:
        deadline = time.monotonic() + 60
        while not all(any(e["event"] == "worker_ready" for e in read_events(tmp / f"w{i}.jsonl"))
                      for i in range(N)):
            assert time.monotonic() < deadline, "workers not ready"
            time.sleep(0.05)
        go.touch()
        if disturb is not None:
            while min(sum(e["event"] == "iteration_end" for e in read_events(tmp / f"w{i}.jsonl"))
                      for i in range(N)) < 2:
                assert time.monotonic() < deadline, "no progress before the disturbance"
                time.sleep(0.01)
            disturb(aggs)
        rcs = [p.wait(60) for p in workers]
        primary.wait(20)
        for a in aggs.values():     # they end with the PS's connection
            a.wait(20)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert rcs == [0] * N, [(tmp / f"w{i}.log").read_text()[-2000:] for i in range(N)]
    assert primary.returncode == 0, (tmp / "primary.log").read_text()
    events = {f"w{i}": read_events(tmp / f"w{i}.jsonl") for i in range(N)}
    return events, stats_of(tmp / "primary.log"), aggs


def check_exact_once(events, ps, iterations):
    """Every update applied at most once, the rest dropped; the replay gives the PS's bits."""
    ends = iteration_ends(events)
    assert len(ends) == N * iterations
    recs = [e["update"] for e in ends if e["update"]]
    assert max(Counter((r["worker"], r["iteration"]) for r in recs).values()) == 1
    assert len(recs) + ps["dropped"] == N * iterations
    models = replay(recs)
    assert sha1(models[ps["final_version"]]) == ps["model_sha1"]
    check_pulled(events, models)
    return ends


def test_groups_through_idle_worker_aggregators_replay_exactly(tmp_path):
    events, ps, aggs = run_job(tmp_path, 10, "workers")
    ends = check_exact_once(events, ps, 10)
    a = ps["aggregation"]
    assert a["groups_applied"] == a["groups_sent"] == ps["grants"]["aggregated"] > 0
    assert not a["fell_back"] and not a["out"]
    assert a["measured_to_ps_Bps"], "direct transfers did not feed the bandwidth measurement"
    counted = {n: stats_of(tmp_path / f"{n}.log")["groups"] for n in aggs}
    assert counted == {n: a["by_aggregator"].get(n, 0) for n in aggs}
    via = [e for e in ends if e["comm_stats"]["route"] == "aggregated"]
    assert via and {e["comm_stats"]["aggregator"] for e in via} <= set(aggs)
    # a group goes as one version: its members share version_applied
    by_group = {}
    for e in via:
        by_group.setdefault(e["comm_stats"]["group"], []).append(e["update"]["version_applied"])
    assert all(len(set(v)) == 1 for v in by_group.values()) and min(map(len, by_group.values())) >= 2


def bytes_waiting_at(ip: str, port: int) -> int:
    """Bytes the kernel holds unread for the TCP sockets bound to ip:port (/proc/net/tcp's
    rx_queue): what a stopped process has been sent and not read."""
    local = "".join(f"{int(b):02X}" for b in reversed(ip.split("."))) + f":{port:04X}"
    total = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if f[1] == local:
            total += int(f[4].split(":")[1], 16)
    return total


def stop_until_a_group_waits(gw: subprocess.Popen, tmp: Path) -> None:
    """SIGSTOP the gateway, then wait until a group is held at it: the PS has routed one to
    it (bytes wait unread at its port), or it was stopped mid-group (no worker has ended an
    iteration for 2 s, where they take milliseconds, unless that group timed out already).
    Groups form only when requests queue up, so a fixed wait may see none on a loaded
    machine."""
    os.kill(gw.pid, signal.SIGSTOP)
    port = int(gw.args[gw.args.index("--port") + 1])
    deadline = time.monotonic() + 30
    ended, still_since = -1, time.monotonic()
    while bytes_waiting_at(G_IP, port) == 0:
        now = time.monotonic()
        ends = [e for i in range(N) for e in read_events(tmp / f"w{i}.jsonl") if e["event"] == "iteration_end"]
        if any(e["comm_stats"]["route"] == "aggregator fell back" for e in ends):
            return                                  # ... and it timed out already
        n = len(ends)
        if n != ended:
            ended, still_since = n, now
        elif now - still_since > 2.0:
            return
        assert now < deadline, "no group was routed to the stopped gateway in 30 s"
        time.sleep(0.01)


def test_an_aggregator_killed_mid_group_falls_back_to_the_ps(tmp_path):
    def stop_then_kill(aggs):
        stop_until_a_group_waits(aggs["gw-b"], tmp_path)
        os.kill(aggs["gw-b"].pid, signal.SIGKILL)   # ... and it dies with it
    events, ps, aggs = run_job(tmp_path, 12, "gateway", disturb=stop_then_kill)
    assert aggs["gw-b"].returncode == -signal.SIGKILL
    ends = check_exact_once(events, ps, 12)
    a = ps["aggregation"]
    assert a["fell_back"] and all("connection broke" in f["why"] for f in a["fell_back"]), a
    assert "gw-b" in a["out"] and a["groups_applied"] > 0       # it aggregated before it died
    fell = {(e["worker"], e["iteration"]) for e in ends if e["comm_stats"]["route"] == "aggregator fell back"}
    assert len(fell) == sum(len(f["members"]) for f in a["fell_back"])
    assert all(e["update"] is not None for e in ends if (e["worker"], e["iteration"]) in fell)
    last = max(e["t_end"] for e in ends if (e["worker"], e["iteration"]) in fell)
    assert not [e for e in ends if e["comm_stats"]["route"] == "aggregated" and e["t_start"] > last]


def test_a_slow_aggregator_times_out_and_its_late_sum_is_discarded(tmp_path):
    def stall(aggs):
        stop_until_a_group_waits(aggs["gw-b"], tmp_path)
        time.sleep(2.0)                              # past the timeout (0.5 s + 2 x predicted)
        os.kill(aggs["gw-b"].pid, signal.SIGCONT)
    events, ps, aggs = run_job(tmp_path, 12, "gateway", agg_timeout=0.5, disturb=stall)
    check_exact_once(events, ps, 12)
    a = ps["aggregation"]
    assert a["fell_back"] and all("timed out" in f["why"] for f in a["fell_back"]), a
    g = stats_of(tmp_path / "gw-b.log")
    # the stalled group's sum was either discarded at the PS or cancelled at the aggregator
    # (or, when the PS had ended by the time the stalled aggregator woke, never sent)
    assert a["late_sums_discarded"] + g["cancelled"] + g["sums_unsent"] >= len(a["fell_back"])
    assert g["groups"] == a["groups_applied"] + a["late_sums_discarded"]


@pytest.mark.parametrize("bad", ['{"candidates": []}', '{"ps": "ps", "workers": ["w0"], "bandwidth": {}, '
                                 '"candidates": []}'])
def test_a_malformed_aggregation_spec_is_refused_with_the_option_named(tmp_path, bad):
    r = subprocess.run([os.sys.executable, "-m", "schemes.mlfabric.server", "--host", P_IP, "--port",
                        str(free_port(P_IP)), "--children", "2", "--lr", "0.1", "--tau-max", "2",
                        "--aggregation", bad], capture_output=True, text=True, timeout=30,
                       cwd=Path(__file__).resolve().parent.parent)
    assert r.returncode == 1 and "--aggregation" in r.stderr, r.stderr
