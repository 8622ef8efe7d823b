"""NetStorm's real processes on loopback (no root, no Mininet): a scheduler and one server
per datacenter as subprocesses on 127.0.0.x, workers as ps communicators in threads.
Sums against numpy in every iteration while the scheduler re-plans from measured
transfers; every iteration under one policy; a killed server or scheduler ends the run
with a message naming it."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from schemes.netstorm.options import NetstormOptions
from schemes.ps.communicator import PSCommunicator
from workers import framing as fr
from workers.communicator import Me

REPO = Path(__file__).resolve().parent.parent
ADJ = {0: [1, 2], 1: [0, 2, 3], 2: [0, 1, 3], 3: [1, 2]}   # a square with one diagonal


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ip(i: int) -> str:
    return f"127.0.0.{i + 2}"


def configs(port: int, workers: dict, total: int, timeout: float, **opts):
    o = NetstormOptions(**opts).model_dump()
    rates = [(i, j, 100.0) for i, ns in ADJ.items() for j in ns]
    sched = {"ip": ip(9), "port": port + 1, "total": total, "adj": {str(k): v for k, v in ADJ.items()},
             "configured_mbps": rates, "timeout_s": timeout, "time_dilation": 1.0, "options": o}
    servers = {i: {"dc": i, "ip": ip(i), "port": port, "workers": workers[i],
                   "neighbors": {str(j): [ip(j), port] for j in ADJ[i]}, "scheduler": [ip(9), port + 1],
                   "total": total, "chunk_values": 1024, "timeout_s": timeout, "time_dilation": 1.0,
                   "options": o} for i in ADJ}
    return sched, servers


def start(module: str, cfg: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, "--config", json.dumps(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Job:
    """A scheduler, four servers and their workers; `run` drives the workers' iterations."""

    def __init__(self, workers: dict, total: int, timeout: float = 20.0, **opts):
        self.port = free_port()
        self.total, self.workers = total, workers
        sched, servers = configs(self.port, workers, total, timeout, **opts)
        self.procs = {"scheduler": start("schemes.netstorm.scheduler", sched)}
        for i, c in servers.items():
            self.procs[f"dc{i}"] = start("schemes.netstorm.server", c)
        self.timeout = timeout
        self.running = threading.Event()   # set once a worker has a sum: the job is up
        self.killed_at: float | None = None

    def grads(self, t: int) -> dict:
        return {(d, r): np.random.default_rng([d, r, t]).standard_normal(self.total).astype(np.float32)
                for d, k in self.workers.items() for r in range(k)}

    def run(self, iterations: int, die=None) -> dict:
        """Every worker's result per iteration; die(t) is called before iteration t."""
        results, errors = {}, {}

        def worker(d, r):
            try:
                c = PSCommunicator({"servers": [[ip(d), self.port]], "child_rank": r,
                                    "timeout_s": self.timeout}, Me(f"w{d}.{r}", d * 10 + r, 99, "127.0.0.1"), 1024)
                for t in range(iterations):
                    results[(d, r, t)] = c.allreduce(self.grads(t)[(d, r)], t)
                    self.running.set()
                c.close()
            except BaseException as e:
                errors[(d, r)] = e

        threads = [threading.Thread(target=worker, args=(d, r), daemon=True)
                   for d, k in self.workers.items() for r in range(k)]
        for th in threads:
            th.start()
        if die:
            die(self)
        for th in threads:
            th.join(3 * self.timeout)
        assert not any(th.is_alive() for th in threads), "a worker hung"
        self.errors = errors
        return results

    def finish(self) -> dict:
        out = {}
        for name, p in self.procs.items():
            try:
                o, e = p.communicate(timeout=3 * self.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                o, e = p.communicate()
            out[name] = (p.returncode, o, e)
        return out

    def kill_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture
def job_factory():
    jobs = []

    def make(*a, **k):
        jobs.append(Job(*a, **k))
        return jobs[-1]
    yield make
    for j in jobs:
        j.kill_all()


def test_sums_match_numpy_while_the_scheduler_replans(job_factory):
    # small report threshold and check period: speeds are reported and trees re-planned
    # within a few iterations on loopback; small blocks: every root gets some
    job = job_factory({0: 1, 1: 2, 2: 1, 3: 2}, total=40_000, block_values=3000,
                      report_bytes=2000, report_messages=2, check_period_s=0.05)
    its = 8
    res = job.run(its)
    out = job.finish()
    assert not job.errors, job.errors
    for name, (rc, o, e) in out.items():
        assert rc == 0, f"{name}: {e}"
    for t in range(its):
        exact = sum(g.astype(np.float64) for g in job.grads(t).values())
        first = res[(0, 0, t)]
        for (d, r, tt), got in res.items():
            if tt == t:
                np.testing.assert_allclose(got, exact, rtol=1e-4, atol=1e-4)
                assert got.tobytes() == first.tobytes(), "every worker gets the same bits"
    sched = json.loads(out["scheduler"][1].splitlines()[-1])
    assert sched["speed_reports"] > 0 and sched["replans"] >= 1, sched
    versions = sched["policy_by_iteration"]
    assert len(set(versions.values())) >= 2, "a re-plan reached the trees at a barrier"
    for i in ADJ:
        st = json.loads(out[f"dc{i}"][1].splitlines()[-1])
        assert st["iterations"] == its
        # every server used, in every iteration, the version the scheduler released for it
        assert st["policy_versions"] == versions, (i, st["policy_versions"], versions)


def test_a_killed_server_ends_the_run_naming_it(job_factory):
    job = job_factory({0: 1, 1: 1, 2: 1, 3: 1}, total=20_000, timeout=10.0, block_values=5000)

    def die(j):
        assert j.running.wait(60), "the job never started"
        j.killed_at = time.monotonic()
        j.procs["dc2"].kill()

    job.run(10_000, die=die)
    took = time.monotonic() - job.killed_at
    out = job.finish()
    # noticed through closed connections, well before any peer timeout (10 s)
    assert job.errors and took < job.timeout, (took, job.errors, out)
    rc, _, err = out["scheduler"]
    assert rc != 0 and "datacenter 2's server vanished" in err.split("(then")[0], err
    failed = [n for n, (rc, _, _) in out.items() if n != "dc2" and rc != 0]
    assert failed, "the other servers noticed"


def test_a_killed_scheduler_ends_the_run_naming_it(job_factory):
    job = job_factory({0: 1, 1: 1, 2: 1, 3: 1}, total=20_000, timeout=10.0, block_values=5000)

    def die(j):
        assert j.running.wait(60), "the job never started"
        j.procs["scheduler"].kill()

    job.run(10_000, die=die)
    assert job.errors
    out = job.finish()
    assert all(out[f"dc{i}"][0] != 0 for i in ADJ)
    # the first to notice names the scheduler; the others may see that server close first
    assert any("the scheduler" in out[f"dc{i}"][2] for i in ADJ), [out[f"dc{i}"][2] for i in ADJ]
