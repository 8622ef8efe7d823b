"""The worker loop without Mininet: three workers on loopback addresses train the real
model through the P4 aggregation program (in-process softswitch behind a lossy UDP
bridge). Checks the sums against the float reference, the update, the events, SIGTERM-
free clean ends and the error path of an unreachable aggregation point."""
import socket
import threading

import numpy as np
import pytest

from control.agg_entries import push
from tests.agg_switches import factory, flat_point_commands, udp_bridge
from workers import agg_packet as ap
from workers.events import read_events, summarize_job
from workers.ina_worker import WorkerConfig, run

AGG_IP = "127.0.44.1"
WORKERS = ["127.0.44.2", "127.0.44.3", "127.0.44.4"]
MODEL = {"kind": "model", "name": "logreg", "dataset": "synthetic", "batch_size": 32, "lr": 0.1}


@pytest.fixture
def switch():
    sw = factory("softswitch")()
    push(sw, flat_point_commands(AGG_IP, WORKERS, 8))
    agg = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    agg.bind((AGG_IP, ap.AGG_UDP_PORT))
    agg.settimeout(0.05)
    stop = threading.Event()
    t = threading.Thread(target=udp_bridge, args=(sw, agg, stop, 0.05, np.random.default_rng(9)), daemon=True)
    t.start()
    yield sw
    stop.set()
    t.join(2)
    agg.close()


def config(tmp_path, i, ip, **over):
    c = dict(worker=f"w{i}", index=i, host_id=f"h1r1w{i + 1}", dc="a", ip=ip, n_workers=len(WORKERS),
             seed=4, events=str(tmp_path / f"w{i}.jsonl"),
             client={"job": 1, "agg_ip": AGG_IP, "sender": i, "fan_in": len(WORKERS), "window": 8,
                     "initial_rto": 0.05, "min_rto": 0.02},
             workload=MODEL, compute_time={"model": "normal", "mean_ms": 5.0, "std_ms": 1.0},
             stragglers={"persistent": [{"worker": 2, "factor": 3.0}]},
             iterations=6, check=True, go_file=str(tmp_path / "go"), aggregate_timeout_s=60,
             rto_margin_s=0.03)
    c.update(over)
    return WorkerConfig(**c)


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
    s = summarize_job(per)
    assert s["iterations_completed"] == 6
    assert s["within_quantization_bound"] is True and 0 <= s["max_error"] < 1e-5
    # the update trains: exact integer sums make the curve deterministic (measured: loss
    # 2.08 -> 1.77, accuracy 0.13 -> 0.69 from the initial model)
    assert s["loss"][-1] < s["loss"][0] < s["loss_initial"]
    assert s["accuracy"][-1] > s["accuracy_initial"] + 0.2
    assert s["retransmissions"] > 0                       # 5 % loss each way
    # every worker saw the same aggregated sums, so the models agree
    accs = {w: [e["accuracy"] for e in ev if e["event"] == "iteration_end"] for w, ev in per.items()}
    assert accs["w0"] == accs["w1"] == accs["w2"]
    # the timer stays at least the margin above the smoothed RTT
    for ev in per.values():
        for e in ev:
            if e["event"] == "iteration_end" and e["srtt_s"] is not None:
                assert e["rto_s"] >= e["srtt_s"] + 0.03 - 1e-9
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
               "max_retransmissions": 3}, go_file=None, check=False)
    assert run(c) == 1
    err = [e for e in read_events(c.events) if e["event"] == "worker_error"]
    assert err and "AggregationFailed" in err[0]["error"] and "retransmissions" in err[0]["error"]


def test_config_with_unknown_field_is_refused(tmp_path):
    p = tmp_path / "c.json"
    p.write_text('{"worker": "w", "bogus": 1}')
    with pytest.raises(ValueError, match="bogus"):
        WorkerConfig.load(p)
