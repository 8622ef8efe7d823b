"""mlfabric on loopback (no root, no Mininet): the primary and the replica as processes on
127.0.0.1 and 127.0.0.2, four worker processes running the one worker loop, one of them a
straggler. The model every worker pulled and both servers' final models are numpy's
replay of the applied updates in their applied order (groups summed in rank order);
tau_max holds (drop) or late updates share a fresher one's version (aggregate); killing
the primary mid-run moves every worker to the replica, which loses at most d_rep
versions and carries the training to the end."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from schemes.mlfabric import wire as W
from schemes.mlfabric.replica import ReplicaServer
from schemes.mlfabric.server import FabricServer
from tests.async_replay import sha1
from workers import framing as fr
from workers.events import read_events
from workers.worker import WorkerConfig
from workers.workload import Workload, WorkloadSpec

REPO = Path(__file__).resolve().parent.parent
P_IP, R_IP = "127.0.0.1", "127.0.0.2"
N, SEED = 4, 7
WORKLOAD = {"kind": "model", "name": "logreg", "dataset": "synthetic", "batch_size": 16, "lr": 0.2}


def free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def start(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, *args], stdout=out, stderr=subprocess.STDOUT, cwd=REPO)


def stats_of(log: Path) -> dict:
    return json.loads(log.read_text().splitlines()[-1])


def run_job(tmp: Path, iterations: int, tau_max: int, on_late: str, d_rep: int = 2,
            kill_primary_after: int | None = None, compute_ms: float = 20.0, workload: dict = WORKLOAD):
    pport, rport = free_port(P_IP), free_port(R_IP)
    common = ["--children", str(N), "--lr", repr(WORKLOAD["lr"]), "--tau-max", str(tau_max),
              "--on-late", on_late, "--d-rep", str(d_rep), "--timeout", "20"]
    replica = start(["-m", "schemes.mlfabric.replica", "--host", R_IP, "--port", str(rport), *common],
                    tmp / "replica.log")
    primary = start(["-m", "schemes.mlfabric.server", "--host", P_IP, "--port", str(pport), *common,
                     "--replica", f"{R_IP}:{rport}"], tmp / "primary.log")
    go = tmp / "go"
    workers = []
    for i in range(N):
        cfg = WorkerConfig(worker=f"w{i}", host_id=f"h1r1w{i + 1}", index=i, n_workers=N, dc="a",
                           ip=P_IP, seed=SEED, events=str(tmp / f"w{i}.jsonl"), scheme="mlfabric",
                           communicator="schemes.mlfabric.communicator:MlfabricCommunicator",
                           comm={"primary": [P_IP, pport], "replica": [R_IP, rport], "child_rank": i,
                                 "timeout_s": 20},
                           workload=workload, compute_time={"model": "constant", "value_ms": compute_ms},
                           stragglers={"persistent": [{"worker": 3, "factor": 4.0}]},
                           iterations=iterations, go_file=str(go), training={"mode": "asp", "staleness": None})
        path = tmp / f"w{i}.json"
        path.write_text(json.dumps(asdict(cfg)))
        workers.append(start(["-m", "workers.worker", str(path)], tmp / f"w{i}.log"))
    procs = [primary, replica, *workers]
    try:
        deadline = time.monotonic() + 60
        while not all(any(e["event"] == "worker_ready" for e in read_events(tmp / f"w{i}.jsonl"))
                      for i in range(N)):
            assert time.monotonic() < deadline, "workers not ready"
            time.sleep(0.05)
        go.touch()
        if kill_primary_after is not None:
            while max(sum(e["event"] == "iteration_end" for e in read_events(tmp / f"w{i}.jsonl"))
                      for i in range(N)) < kill_primary_after:
                assert time.monotonic() < deadline, "no progress before the kill"
                time.sleep(0.01)
            os.kill(primary.pid, signal.SIGKILL)
        rcs = [p.wait(60) for p in workers]
        try:
            replica.wait(5)   # it ends once every worker still training said BYE ...
        except subprocess.TimeoutExpired:
            pass
        # (a SIGTERM while it exits would find Python's finalization, which restores the
        # default action, and end it with -15: so it is signalled only when it did not end)
        if replica.poll() is None:
            replica.send_signal(signal.SIGTERM)   # ... or when told (a worker missed it)
        replica.wait(20)
        primary.wait(20)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert rcs == [0] * N, [(tmp / f"w{i}.log").read_text()[-2000:] for i in range(N)]
    events = {f"w{i}": read_events(tmp / f"w{i}.jsonl") for i in range(N)}
    return events, primary, replica


def iteration_ends(events):
    return [e for es in events.values() for e in es if e["event"] == "iteration_end"]


def replay(records: list[dict], start: np.ndarray | None = None, base: int = 0) -> dict[int, np.ndarray]:
    return replay_records(records, WORKLOAD, SEED, N, start, base)


def replay_records(records: list[dict], workload: dict, seed: int, n: int = N,
                   start: np.ndarray | None = None, base: int = 0) -> dict[int, np.ndarray]:
    """The models of every version from `base` (model `start`; None: the seeded version 0):
    the records of one version are one group, summed in rank order, as the server does."""
    work = Workload(WorkloadSpec.from_scenario(workload), seed, n)
    models = {base: work.model_vector() if start is None else start}
    step = np.float32(work.spec.lr / n)
    by_version: dict[int, list[dict]] = {}
    for r in records:
        by_version.setdefault(r["version_applied"], []).append(r)
    assert sorted(by_version) == list(range(base, base + len(by_version))), "versions have gaps"
    for v in sorted(by_version):
        grads = []
        for r in sorted(by_version[v], key=lambda r: r["worker"]):
            assert r["version_read"] <= v
            work.load_model(models[r["version_read"]])
            grads.append(work.gradient(r["worker"], r["iteration"])[0].astype(np.float32))
        models[v + 1] = models[v] - step * fr.sum_in_order(grads)
    return models


def check_pulled(events, models, server=None):
    for e in iteration_ends(events):
        if server is None or e["comm_stats"].get("server") == server:
            if e["model_version"] in models:
                assert e["result_sha1"] == sha1(models[e["model_version"]]), (e["worker"], e["iteration"])


@pytest.mark.parametrize("on_late", ["drop", "aggregate"])
def test_models_are_numpys_replay_in_applied_order_and_the_replica_follows(tmp_path, on_late):
    events, primary, replica = run_job(tmp_path, 8, tau_max=3, on_late=on_late)
    assert primary.returncode == 0 and replica.returncode == 0, \
        [(tmp_path / f"{s}.log").read_text()[-3000:] for s in ("primary", "replica")]
    ps, rs = stats_of(tmp_path / "primary.log"), stats_of(tmp_path / "replica.log")
    recs = [e["update"] for e in iteration_ends(events) if e["update"]]
    models = replay(recs)
    assert sha1(models[ps["final_version"]]) == ps["model_sha1"] == rs["model_sha1"]
    assert rs["followed_versions"] == ps["final_version"] and rs["failover"] is None
    check_pulled(events, models)
    unapplied = [e for e in iteration_ends(events) if e["update"] is None]
    assert len(recs) + len(unapplied) == N * 8
    straggler = [e for e in iteration_ends(events) if e["worker"] == "w3"]
    if on_late == "drop":
        assert max(r["delay"] for r in recs) <= 3             # tau_max holds for every update
        assert ps["dropped"] == len(unapplied) > 0             # the straggler's late updates
        assert all(e["comm_stats"]["route"] == "dropped" for e in unapplied)
        assert any(e["update"] is None for e in straggler)
    else:
        assert not unapplied and ps["dropped"] == 0
        late = [r for r in recs if r["delay"] > 3]
        merged = 0
        for r in late:     # each shares the version of one fresh update (several late ones
            # may be held for the same one: the scheduler grants late + fresh[:1]) ...
            partners = [q for q in recs if q["version_applied"] == r["version_applied"] and q is not r]
            fresh = [q for q in partners if 3 >= r["version_applied"] - q["version_read"]]
            if fresh:
                merged += 1
                assert len(fresh) == 1
            else:          # ... or went alone (or with other late ones) once nobody could
                # bring a fresher one: every other worker's update was applied before
                assert all(q["version_applied"] < r["version_applied"] for q in recs
                           if q["worker"] != r["worker"] and q not in partners)
        assert late and ps["late_merged"] == merged > 0
    # serialized: at most one update (group) in flight, so versions were applied one by one
    assert ps["grants"]["direct"] + ps["grants"]["grouped"] == ps["final_version"]


def test_killing_the_primary_moves_training_to_the_replica_within_d_rep(tmp_path):
    events, primary, replica = run_job(tmp_path, 10, tau_max=20, on_late="drop", d_rep=2,
                                       kill_primary_after=3, compute_ms=30.0)
    assert primary.returncode == -signal.SIGKILL
    assert replica.returncode == 0, (tmp_path / "replica.log").read_text()
    rs = stats_of(tmp_path / "replica.log")
    f = rs["failover"]
    assert f is not None and 0 <= f["lost_updates"] <= 2 == f["d_rep"]
    assert f["lost_updates"] == f["primary_version"] - f["replica_version"]
    ends = iteration_ends(events)
    assert all(sum(e["worker"] == f"w{i}" for e in ends) == 10 for i in range(N))   # all finished
    routes = {e["worker"]: e["comm_stats"].get("route") for e in ends
              if e["comm_stats"].get("route") in ("lost in failover", "applied before failover")}
    assert set(routes) == {f"w{i}" for i in range(N)} - {f"w{i}" for i in f["workers_ended_before"]}
    # before the death: the primary's versions; the replica holds the first replica_version
    # of them, then applies its own from there. An update the primary applied and replicated
    # just before dying, its reply lost, is reported on the replica's side (survived)
    v0 = f["replica_version"]
    before = [e["update"] for e in ends if e["update"] and e["update"]["version_applied"] < v0]
    survived = [e["update"] for e in ends if e["comm_stats"].get("route") == "applied before failover"]
    assert sorted([int(r["worker"][1:]), r["iteration"], r["version_applied"]] for r in survived) \
        == sorted(f.get("survived", []))
    missing = set(range(v0)) - {r["version_applied"] for r in before}
    assert not missing, (missing, f, sorted((e["worker"], e["iteration"], e["comm_stats"].get("route"),
                                             e["update"] and e["update"]["version_applied"]) for e in ends))
    models = replay(before)
    on_primary = [e["update"] for e in ends if e["update"] and e["comm_stats"].get("server") == "primary"]
    assert f["primary_version"] >= max(r["version_applied"] for r in on_primary) + 1
    after = [e["update"] for e in ends if e["update"] and e["comm_stats"].get("server") == "replica"
             and e["update"]["version_applied"] >= v0]
    assert after, "nothing was applied on the replica"
    models_after = replay(after, models[v0], v0)
    assert sha1(models_after[rs["final_version"]]) == rs["model_sha1"]
    check_pulled(events, models_after, server="replica")


def test_a_worker_whose_reply_died_with_the_primary_learns_that_its_update_survived():
    """The primary applied w0's update of iteration 4 (version 1 -> 2) and w1's (2 -> 3),
    replicated up to version 2 and died before replying: on failover the replica tells w0
    that its update was applied (at version 1) and w1 that its own is lost; neither is
    asked to re-send, so nothing is applied twice."""
    replica = ReplicaServer(R_IP, 0, 2, 0.1, 3, timeout_s=10, name="replica")
    replica.core.d_rep = 2
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(stats=replica.serve()), daemon=True)
    t.start()
    data = fr.connect(*replica.address, "replica", 10, 10)
    data.send(fr.HELLO, W.DATA_CHANNEL)
    heads = fr.connect(*replica.address, "replica", 10, 10)
    heads.send(fr.HELLO, W.HEADS_CHANNEL)
    data.send(fr.MODEL_INIT, 0, np.zeros(8, np.float32))
    for v, (rank, it) in enumerate([(1, 3), (0, 4), (1, 4)], start=1):
        heads.send(W.HEAD, v, np.array([rank, it], np.int64))
    for v in (1, 2):
        data.send(W.REPL, v, np.full(8, v, np.float32))
        assert data.recv(W.REPL_ACK, what="ack")[1] == v
    data.close()                                   # the primary dies
    heads.close()
    heads_of = {}
    for rank in (0, 1):
        w = fr.connect(*replica.address, "replica", 10, 10)
        w.send(fr.HELLO, rank)
        w.send(W.FAILOVER, 5)
        it, version, _clock, applied_at = w.recv(fr.MODEL_VERSION, 5, what="release")[2].tolist()
        heads_of[rank] = [it, version, applied_at]
        assert np.array_equal(w.recv(fr.MODEL, 5, what="model")[2], np.full(8, -0.05 * 3, np.float32))
        w.send(fr.BYE, 0)
        w.close()
    t.join(10)
    assert not t.is_alive()
    assert heads_of == {0: [5, 2, 1], 1: [5, 2, W.NOT_APPLIED]}
    f = out["stats"]["failover"]
    assert (f["primary_version"], f["replica_version"], f["lost_updates"]) == (3, 2, 1)
    assert f["survived"] == [[0, 4, 1]] and out["stats"]["final_version"] == 2


def test_the_primary_ends_replication_gracefully_so_the_last_ack_is_not_reset():
    """At a normal end the primary says BYE, closes the heads channel, and waits for the
    replica to close the data channel: were the data channel closed first, the replica's
    last REPL_ACK would meet a reset and the replica would take the primary for dead."""
    rsock = fr.listen(R_IP, 0)
    primary = FabricServer(P_IP, 0, 1, 0.1, 3, replica=rsock.getsockname(), d_rep=2, timeout_s=10)
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(stats=primary.serve()), daemon=True)
    t.start()
    worker = fr.connect(*primary.address, "primary", 10, 10)
    worker.send(fr.HELLO, 0)
    worker.send(fr.MODEL_INIT, 0, np.zeros(8, np.float32))
    chans = {}
    for _ in range(2):
        ch = fr.accept(rsock, 10, "the primary", 10)
        chans[ch.recv(fr.HELLO, what="HELLO")[1]] = ch
    data, heads = chans[W.DATA_CHANNEL], chans[W.HEADS_CHANNEL]
    assert data.recv(fr.MODEL_INIT, what="model")[2].size == 8
    worker.send(fr.BYE, 0)
    assert data.recv(what="BYE")[0] == fr.BYE
    with pytest.raises(fr.PeerError):   # the primary closes the heads channel ...
        while True:
            heads.recv(what="heads")
    time.sleep(0.3)
    # ... but not the data channel: nothing to read, no EOF, and the ack gets through
    data.sock.settimeout(0)
    with pytest.raises(BlockingIOError):
        data.sock.recv(1, socket.MSG_PEEK)
    data.sock.settimeout(10)
    data.send(W.REPL_ACK, 0)
    data.close()
    t.join(10)
    assert not t.is_alive() and out["stats"]["final_version"] == 0
    heads.close()
    worker.close()
    rsock.close()


def test_a_model_larger_than_the_socket_buffers_reaches_the_replica(tmp_path):
    # 8 MB of model: far more than loopback's socket buffers hold, so the primary's
    # MODEL_INIT completes only while the replica reads it. The primary had sent it before
    # opening the replica's second channel, which the replica waits to accept first: both
    # waited until the timeout (mlfabric at 1 MB hung `bench schemes`' point)
    big = {"kind": "synthetic", "parameters": 2_000_000}
    events, primary, replica = run_job(tmp_path, 2, tau_max=8, on_late="drop", compute_ms=0.0,
                                       workload=big)
    assert primary.returncode == 0 and replica.returncode == 0, \
        [(tmp_path / f"{s}.log").read_text()[-3000:] for s in ("primary", "replica")]
    ps, rs = stats_of(tmp_path / "primary.log"), stats_of(tmp_path / "replica.log")
    assert len(iteration_ends(events)) == 2 * N
    assert ps["final_version"] >= 1 and rs["failover"] is None
    assert rs["followed_versions"] == ps["final_version"] and rs["model_sha1"] == ps["model_sha1"]
