"""ps in ssp and asp on 127.0.0.1 (no root, fast): the real worker loop in threads, the real
asynchronous server, a straggler. The models are numpy's replay of the logged updates bit
for bit, ssp stays within its bound while asp runs past it, and a worker that dies ends
the server with its name instead of a hang."""
from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from schemes.ps.async_communicator import AsyncPSCommunicator
from schemes.ps.async_server import AsyncServer
from tests.async_replay import replay, sha1, update_records
from workers import framing as fr
from workers.communicator import Me
from workers.events import EventLog, read_events
from workers.worker import WorkerConfig, run as run_worker

LO = "127.0.0.1"
N, ITERATIONS, SEED = 3, 8, 5
WORKLOAD = {"kind": "model", "name": "logreg", "dataset": "synthetic", "batch_size": 16, "lr": 0.2}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LO, 0))
        return s.getsockname()[1]


def run_job(tmp_path, mode: str, staleness: int | None, workload=WORKLOAD):
    port = free_port()
    server = AsyncServer(LO, port, N, workload["lr"], staleness if mode == "ssp" else None, timeout_s=20)
    stats: dict = {}
    st = threading.Thread(target=lambda: stats.update(server.serve()), daemon=True)
    st.start()
    go = tmp_path / "go"
    cfgs = [WorkerConfig(worker=f"w{i}", host_id=f"h1r1w{i + 1}", index=i, n_workers=N, dc="a", ip=LO,
                         seed=SEED, events=str(tmp_path / f"w{i}.jsonl"), scheme="ps",
                         communicator="schemes.ps.async_communicator:AsyncPSCommunicator",
                         comm={"servers": [[LO, port]], "child_rank": i, "timeout_s": 20, "mode": mode},
                         workload=workload, compute_time={"model": "constant", "value_ms": 10.0},
                         stragglers={"persistent": [{"worker": 2, "factor": 5.0}]},
                         iterations=ITERATIONS, go_file=str(go),
                         training={"mode": mode, "staleness": staleness})
            for i in range(N)]
    rcs = {}

    def work(c):
        with EventLog(c.events, c.worker) as log:
            rcs[c.worker] = run_worker(c, log)
    threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in cfgs]
    for t in threads:
        t.start()
    go.touch()
    for t in threads + [st]:
        t.join(60)
    assert not any(t.is_alive() for t in threads + [st]), "a worker or the server hung"
    assert rcs == {c.worker: 0 for c in cfgs}
    return {c.worker: read_events(c.events) for c in cfgs}, stats


@pytest.mark.parametrize("mode,staleness", [("ssp", 1), ("ssp", 0), ("asp", None)])
def test_async_ps_models_are_numpys_replay_and_ssp_keeps_its_bound(tmp_path, mode, staleness):
    events, stats = run_job(tmp_path, mode, staleness)
    recs = update_records(events)
    assert len(recs) == N * ITERATIONS and stats["final_version"] == N * ITERATIONS
    assert sorted(r["version_applied"] for r in recs) == list(range(N * ITERATIONS))
    for r in recs:
        assert r["staleness"] == r["iteration"] - r["clock_read"] and r["delay"] == \
            r["version_applied"] - r["version_read"]
    models = replay(WORKLOAD, SEED, N, recs)
    assert sha1(models[-1]) == stats["model_sha1"]          # the server's final model
    for es in events.values():                               # every model a worker pulled
        for e in es:
            if e["event"] == "iteration_end":
                assert e["result_sha1"] == sha1(models[e["model_version"]]), e["iteration"]
    worst = max(r["staleness"] for r in recs)
    if mode == "ssp":
        # the straggler is 5x slower: the fast workers run into the bound, never past it
        assert worst == staleness
        assert stats["mode"] == "ssp" and stats["staleness_bound"] == staleness
    else:
        assert worst >= 3 and stats["staleness_bound"] is None
    ends = [e for es in events.values() for e in es if e["event"] == "iteration_end"]
    assert ends[-1]["accuracy"] is not None
    starts = [es[0] for es in events.values()]
    assert all(s["training"] == {"mode": mode, "staleness": staleness} for s in starts)


def test_ssp_zero_trains_the_model_bsp_does_to_float_rounding(tmp_path):
    """SSP(0) reads what BSP reads; only the arithmetic differs (N float32 steps of lr/N
    against one float64 step with the mean): the test losses agree to float32 precision."""
    events, _ = run_job(tmp_path, "ssp", 0)
    recs = update_records(events)
    assert all(r["staleness"] == 0 and r["version_read"] == N * r["iteration"] for r in recs)
    from workers.workload import Workload, WorkloadSpec
    work = Workload(WorkloadSpec.from_scenario(WORKLOAD), SEED, N)
    for c in range(ITERATIONS):
        work.apply(work.reference_sum(c))
    final = [e for es in events.values() for e in es if e["event"] == "iteration_end"
             and e["model_version"] == N * ITERATIONS]
    assert final and final[0]["loss"] == pytest.approx(work.test_metrics()["loss"], rel=1e-5)


def test_a_worker_that_dies_ends_the_server_with_its_name(tmp_path):
    port = free_port()
    server = AsyncServer(LO, port, 2, 0.1, 0, timeout_s=20)
    out: dict = {}

    def serve():
        try:
            server.serve()
        except fr.PeerError as e:
            out["error"] = str(e)
    st = threading.Thread(target=serve, daemon=True)
    st.start()
    comms = [AsyncPSCommunicator({"servers": [[LO, port]], "child_rank": r, "timeout_s": 20, "mode": "ssp"},
                                 Me(f"w{r}", r, 2, LO)) for r in range(2)]
    model = np.zeros(10, dtype=np.float32)
    for c in comms:
        c.init_model(model)
    pulled, seen = [], []

    def push():
        try:
            pulled.append(comms[0].push_pull(np.ones(10), 0))
        except fr.PeerError as e:
            seen.append(str(e))
    t = threading.Thread(target=push, daemon=True)
    t.start()
    time.sleep(0.3)
    assert not pulled                           # held at the gate: worker 1 has not pushed
    comms[1].chan.close()                       # worker 1 dies without BYE
    t0 = time.monotonic()
    st.join(10)
    assert not st.is_alive() and time.monotonic() - t0 < 5
    assert "worker 1" in out["error"] and "connection closed" in out["error"]
    t.join(10)
    assert not t.is_alive() and not pulled      # worker 0 saw the close, no model
    assert "connection closed while waiting for the model to start iteration 1" in seen[0]
    comms[0].close()


def test_workers_with_different_initial_models_are_refused(tmp_path):
    port = free_port()
    server = AsyncServer(LO, port, 2, 0.1, None, timeout_s=20)
    out: dict = {}

    def serve():
        try:
            server.serve()
        except fr.PeerError as e:
            out["error"] = str(e)
    st = threading.Thread(target=serve, daemon=True)
    st.start()
    comms = [AsyncPSCommunicator({"servers": [[LO, port]], "child_rank": r, "timeout_s": 20, "mode": "asp"},
                                 Me(f"w{r}", r, 2, LO)) for r in range(2)]
    comms[0].init_model(np.zeros(10, dtype=np.float32))
    comms[1].init_model(np.ones(10, dtype=np.float32))
    st.join(10)
    assert "differs from worker 0's" in out["error"] and "worker 1" in out["error"]
    for c in comms:
        c.close()
    with pytest.raises(RuntimeError, match="before init_model"):
        AsyncPSCommunicator.push_pull(type("C", (), {"size": None})(), np.ones(3), 0)
