"""The one worker loop (workers/worker.py) without Mininet.

- Stamping is the loop's, not the scheme's: two communicators that spend their time
  differently produce the same event schema and the same gaps between events (fake clock).
- Three workers on loopback addresses train the real model through the P4 aggregation
  program (in-process softswitch behind a lossy UDP bridge) with ina's communicator:
  sums against the float reference, the update, the events, clean ends, and the error
  path of an unreachable aggregation point."""
import threading

import numpy as np
import pytest

from tests.agg_switches import bridged_switch
import schemes
from workers import presets
from workers.communicator import CommunicatorBase, Counters
from analysis import measure
from workers.events import EventLog, read_events
from workers.worker import WorkerConfig, run as run_worker

AGG_IP = "127.0.44.1"
WORKERS = ["127.0.44.2", "127.0.44.3", "127.0.44.4"]
MODEL = {"kind": "model", "name": "logreg", "dataset": "synthetic", "batch_size": 32, "lr": 0.1}


@pytest.fixture
def switch():
    with bridged_switch(AGG_IP, WORKERS, 8, loss=0.05, seed=9) as sw:
        yield sw


def config(tmp_path, i, ip, client=None, **over):
    client = client or {"job": 1, "agg_ip": AGG_IP, "sender": i, "fan_in": len(WORKERS), "window": 8,
                        "initial_rto": 0.05, "min_rto": 0.02}
    c = dict(worker=f"w{i}", index=i, host_id=f"h1r1w{i + 1}", dc="a", ip=ip, n_workers=len(WORKERS),
             seed=4, events=str(tmp_path / f"w{i}.jsonl"), scheme="ina",
             communicator=schemes.get("ina").communicator,
             comm={"client": client, "clip": 4.0, "rto_margin_s": 0.03, "aggregate_timeout_s": 60},
             workload=MODEL, compute_time={"model": "normal", "mean_ms": 5.0, "std_ms": 1.0},
             stragglers={"persistent": [{"worker": 2, "factor": 3.0}]},
             iterations=6, verify=True, go_file=str(tmp_path / "go"))
    c.update(over)
    return WorkerConfig(**c)


def run(cfg, **kw):
    """What workers.worker.main does around the loop: the event log and the error record."""
    with EventLog(cfg.events, cfg.worker) as log:
        try:
            return run_worker(cfg, log, **kw)
        except Exception as e:
            log.log("worker_error", error=f"{type(e).__name__}: {e}")
            return 1


def run_all(cfgs, go):
    rcs = {}
    threads = [threading.Thread(target=lambda c=c: rcs.__setitem__(c.worker, run(c))) for c in cfgs]
    for t in threads:
        t.start()
    go.touch()
    for t in threads:
        t.join(120)
    return rcs


def test_workers_train_through_the_p4_program_within_the_quantization_bound(tmp_path, switch):
    cfgs = [config(tmp_path, i, ip) for i, ip in enumerate(WORKERS)]
    rcs = run_all(cfgs, tmp_path / "go")
    assert rcs == {"w0": 0, "w1": 0, "w2": 0}
    per = {c.worker: read_events(c.events) for c in cfgs}
    s = measure.run_metrics(per)
    its = measure.iteration_table(per)
    assert s["iterations"] == 6 and len(its) == 6
    assert s["within_quantization_bound"] is True and 0 <= s["max_error"] < 1e-5
    # the update trains: exact integer sums make the curve deterministic (measured: loss
    # 2.08 -> 1.77, accuracy 0.13 -> 0.69 from the initial model)
    assert its[-1]["loss"] == s["final_loss"] < its[0]["loss"] < s["loss_initial"]
    assert s["final_accuracy"] > s["accuracy_initial"] + 0.2
    assert s["retransmissions"] > 0                       # 5 % loss each way
    # every worker saw the same aggregated sums, so the models agree
    accs = {w: [e["accuracy"] for e in ev if e["event"] == "iteration_end"] for w, ev in per.items()}
    assert accs["w0"] == accs["w1"] == accs["w2"]
    # the timer stays at least the margin above the smoothed RTT
    for ev in per.values():
        for e in ev:
            if e["event"] == "iteration_end" and e["comm_stats"]["srtt_s"] is not None:
                assert e["comm_stats"]["rto_s"] >= e["comm_stats"]["srtt_s"] + 0.03 - 1e-9
    names = [e["event"] for e in per["w0"]]
    for ev in ("worker_start", "iteration_start", "compute_end", "first_send", "last_result",
               "iteration_end", "worker_end"):
        assert ev in names
    # the persistent straggler (factor 3) draws 3x longer compute times, and every
    # worker's compute phase lasts at least the drawn time (wall clock: only a lower bound
    # on a loaded machine)
    ce = {w: [e for e in ev if e["event"] == "compute_end"] for w, ev in per.items()}
    assert {e["straggle_factor"] for e in ce["w2"]} == {3.0} and {e["straggle_factor"] for e in ce["w0"]} == {1.0}
    assert np.mean([e["compute_ms"] for e in ce["w2"]]) > 2 * np.mean([e["compute_ms"] for e in ce["w0"]])
    for w, ev in per.items():
        ends = {e["iteration"]: e for e in ev if e["event"] == "iteration_end"}
        for e in ce[w]:
            assert ends[e["iteration"]]["compute_s"] >= e["compute_ms"] / 1000 - 1e-3


def test_unreachable_aggregation_point_is_a_logged_error(tmp_path):
    c = config(tmp_path, 0, "127.0.44.9", client={"job": 1, "agg_ip": "127.0.44.250", "sender": 0,
               "fan_in": 1, "window": 2, "initial_rto": 0.01, "min_rto": 0.01, "max_rto": 0.02,
               "max_retransmissions": 3}, go_file=None, verify=False)
    assert run(c) == 1
    err = [e for e in read_events(c.events) if e["event"] == "worker_error"]
    assert err and "AggregationFailed" in err[0]["error"] and "retransmissions" in err[0]["error"]


def test_config_with_unknown_field_is_refused(tmp_path):
    p = tmp_path / "c.json"
    p.write_text('{"worker": "w", "bogus": 1}')
    with pytest.raises(ValueError, match="bogus"):
        WorkerConfig.load(p)


# ---------------------------------------------------------------- stamping is the loop's
class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


class SlowSender(CommunicatorBase):
    """Spends its time before the sum exists (like a PS push)."""
    cost = (0.7, 0.0)

    def __init__(self, comm, me, clock):
        self.clock, self.n, self.sent = clock, me.n_workers, 0

    def allreduce(self, grad, it):
        self.clock.t += self.cost[0]
        out = np.asarray(grad, np.float64) * self.n
        self.clock.t += self.cost[1]
        self.sent += grad.size * 4
        return out

    def counters(self):
        return Counters(self.sent, self.sent, 1, 0)

    def error_bound(self, grads):
        return 1e-9


class SlowReceiver(SlowSender):
    """Spends its time after (like a ring's all-gather), with scheme-specific stats."""
    cost = (0.1, 1.3)

    def stats(self):
        return {"cwnd": 8}


def fake_run(tmp_path, comm_cls, name, workload=MODEL):
    clock = FakeClock()
    cfg = WorkerConfig(worker=name, host_id="h1r1w1", index=0, n_workers=1, dc="a", ip="127.0.0.1",
                       seed=1, events=str(tmp_path / f"{name}.jsonl"), scheme=name, communicator="x:y",
                       comm={}, workload=workload, iterations=3,
                       compute_time={"model": "constant", "value_ms": 50.0})
    with EventLog(cfg.events, name, clock=clock) as log:
        assert run_worker(cfg, log, make_comm=lambda c, me: comm_cls(c, me, clock), clock=clock,
                          sleep=clock.sleep) == 0
    return read_events(cfg.events)


def test_events_are_stamped_by_the_loop_the_same_for_every_communicator(tmp_path):
    a, b = fake_run(tmp_path, SlowSender, "a"), fake_run(tmp_path, SlowReceiver, "b")
    assert [e["event"] for e in a] == [e["event"] for e in b]          # same sequence
    for ea, eb in zip(a, b):                                           # same fields
        assert set(ea) == set(eb), ea["event"]
    for ev in (a, b):
        at = {(e["event"], e.get("iteration")): e for e in ev}
        for i in range(3):
            end, last = at["iteration_end", i], at["last_result", i]
            first, comp, start = at["first_send", i], at["compute_end", i], at["iteration_start", i]
            # the gaps that are not communication are the loop's: equal for both schemes
            assert end["t_end"] - last["t"] == 0.0 and comp["t"] - start["t"] == pytest.approx(0.05)
            assert first["t"] == comp["t"] and end["t_start"] == start["t"]
            assert end["comm_s"] == pytest.approx(last["t"] - first["t"])
            assert end["compute_s"] == pytest.approx(0.05)
    comm = lambda ev: [e["comm_s"] for e in ev if e["event"] == "iteration_end"]
    assert comm(a) == pytest.approx([0.7] * 3) and comm(b) == pytest.approx([1.4] * 3)
    assert [e["comm_stats"] for e in b if e["event"] == "iteration_end"] == [{"cwnd": 8}] * 3
    assert a[-1]["event"] == b[-1]["event"] == "worker_end" and a[-1]["reason"] == "finished"


@pytest.mark.parametrize("workload,expect", [
    ({"kind": "model", "name": "cnn", "dataset": "digits", "lr": 0.5},
     {"model": "cnn", "dataset": "digits", "preset": None, "layers": 4, "parameters": 1370}),
    ({"kind": "synthetic", "preset": "resnet50", "scale": 0.001},
     {"model": "logreg", "dataset": "synthetic", "preset": "resnet50", "layers": 161,
      "parameters": presets.size("resnet50", 0.001)}),
], ids=["digits-cnn", "resnet50-preset"])
def test_worker_start_says_what_the_gradient_is_and_the_loop_trains_it(tmp_path, workload, expect):
    ev = fake_run(tmp_path, SlowSender, "w", workload)
    start = ev[0]
    assert start["event"] == "worker_start" and {k: start[k] for k in expect} == expect
    ends = [e for e in ev if e["event"] == "iteration_end"]
    assert [e["gradient_bytes"] for e in ends] == [4 * expect["parameters"]] * 3
    assert ends[-1]["accuracy"] > start["accuracy_initial"]           # the model learns


def test_duration_stops_every_worker_after_the_same_iteration(tmp_path):
    """The time-up flag is summed with the gradient: one worker's clock is enough."""
    clock = FakeClock()
    cfg = WorkerConfig(worker="w", host_id="h1r1w1", index=0, n_workers=1, dc="a", ip="127.0.0.1",
                       seed=1, events=str(tmp_path / "w.jsonl"), scheme="x", communicator="x:y",
                       comm={}, workload=MODEL, duration_s=2.0,
                       compute_time={"model": "constant", "value_ms": 100.0})
    seen = []

    class Peer(SlowSender):
        cost = (0.4, 0.0)

        def allreduce(self, grad, it):
            seen.append(grad.size)
            return super().allreduce(grad, it)
    with EventLog(cfg.events, "w", clock=clock) as log:
        run_worker(cfg, log, make_comm=lambda c, me: Peer(c, me, clock), clock=clock, sleep=clock.sleep)
    ev = read_events(cfg.events)
    its = [e for e in ev if e["event"] == "iteration_end"]
    # 0.5 s per iteration; the flag is raised at the start of the iteration after 2.0 s
    assert len(its) == 5 and ev[-1]["reason"] == "duration reached"
    assert set(seen) == {its[0]["gradient_bytes"] // 4 + 1}            # the flag rides along


def test_ina_comm_stats_count_per_iteration():
    """comm_stats' counts are the iteration's, so the pipeline may sum them over iterations."""
    from schemes.ina.communicator import InaCommunicator
    from workers.communicator import Me
    c = InaCommunicator({"client": {"job": 1, "agg_ip": AGG_IP, "sender": 0, "fan_in": 1, "window": 4},
                         "clip": 4.0}, Me("w", 0, 1, "127.0.45.1"))
    try:
        c.client.stats.duplicate_results = 3
        assert c.stats()["duplicate_results"] == 3
        c.client.stats.duplicate_results = 5
        assert c.stats()["duplicate_results"] == 2 and c.stats()["duplicate_results"] == 0
    finally:
        c.close()


@pytest.mark.parametrize("n", [0, 1, 7, 1 << 20, (1 << 20) + 5])
def test_result_hash_is_the_float32_sha1_of_the_whole_sum(n):
    import hashlib
    from workers.worker import float32_sha1
    x = np.random.default_rng(n).standard_normal(n)
    want = hashlib.sha1(np.ascontiguousarray(x, np.float32)).hexdigest()
    assert float32_sha1(x) == want and float32_sha1(x.astype(np.float32)) == want
