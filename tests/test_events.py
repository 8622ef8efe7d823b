"""Event logs: JSON lines with monotonic timestamps, torn lines; what they measure against
hand sums (analysis/measure.py, the one pipeline)."""
import json

import numpy as np
import pytest

from analysis.measure import run_metrics, worker_table
from workers.events import EventLog, read_events


def it_end(i, t0, compute, comm, grad=4000, retx=0, acc=None, err=None, bound=None, sent=10):
    return {"event": "iteration_end", "iteration": i, "t_start": t0, "t_end": t0 + compute + comm,
            "compute_s": compute, "comm_s": comm, "gradient_bytes": grad, "bytes_sent": sent * 100,
            "bytes_received": sent * 100, "packets_sent": sent, "retransmissions": retx,
            "duplicate_results": 0, "loss": 1.0, "accuracy": acc, "max_error": err, "error_bound": bound}


def test_log_writes_json_lines_with_monotonic_time(tmp_path):
    clock = iter([1.0, 2.5]).__next__
    with EventLog(tmp_path / "w.jsonl", "h1", clock=clock) as log:
        log.log("iteration_start", iteration=0, arr=np.arange(2), x=np.float32(0.5))
        log.log("worker_end", iterations=1)
    lines = (tmp_path / "w.jsonl").read_text().splitlines()
    assert [json.loads(l) for l in lines] == [
        {"event": "iteration_start", "t": 1.0, "worker": "h1", "iteration": 0, "arr": [0, 1], "x": 0.5},
        {"event": "worker_end", "t": 2.5, "worker": "h1", "iterations": 1}]


def test_real_clock_is_monotonic(tmp_path):
    with EventLog(tmp_path / "w.jsonl", "h1") as log:
        for i in range(50):
            log.log("tick", i=i)
    ts = [e["t"] for e in read_events(tmp_path / "w.jsonl")]
    assert ts == sorted(ts)


def test_torn_last_line_and_missing_file_are_tolerated(tmp_path):
    p = tmp_path / "w.jsonl"
    p.write_text('{"event": "a", "t": 1}\n{"event": "b", "t"')
    assert [e["event"] for e in read_events(p)] == ["a"]
    assert read_events(tmp_path / "missing.jsonl") == []


# iterations from 1: iteration 0 is warm-up, left out of steady-state statistics

def test_worker_goodput_and_bounds():
    ev = [it_end(1, 0.0, 0.1, 0.4, retx=2, acc=0.2, err=1e-6, bound=1e-5),
          it_end(2, 1.0, 0.1, 0.6, retx=1, acc=0.5, err=2e-6, bound=1e-5)]
    w = worker_table({"a": ev})["a"]
    assert w["iterations"] == 2
    assert w["goodput_mbps"] == pytest.approx(8 * 8000 / 1.0 / 1e6)
    assert w["iteration_time_mean_s"] == pytest.approx(0.6)
    assert w["retransmissions"] == 3
    m = run_metrics({"a": ev})
    assert m["retransmissions"] == 3 and m["final_accuracy"] == 0.5 and m["max_error"] == 2e-6
    assert m["within_quantization_bound"] is True
    # job goodput: useful bytes over the steady span, gaps included (0.0 -> 1.7)
    assert m["job_goodput_mbps"] == pytest.approx(8 * 8000 / 1.7 / 1e6)
    bad = run_metrics({"a": [it_end(1, 0, 0.1, 0.1, err=1e-3, bound=1e-5)]})
    assert bad["within_quantization_bound"] is False


def test_worker_without_iterations_reports_its_error():
    w = worker_table({"a": [{"event": "worker_error", "t": 1, "error": "no route"}]})["a"]
    assert w["iterations"] == 0 and w["error"] == "no route"


def test_job_uses_the_slowest_worker_and_converts_to_real_time():
    per = {"a": [{"event": "worker_start", "t": 0, "accuracy_initial": 0.1, "loss_initial": 2.0},
                 it_end(1, 0.0, 0.1, 0.3, acc=0.3), it_end(2, 0.5, 0.1, 0.3, acc=0.6)],
           "b": [it_end(1, 0.1, 0.2, 0.3, acc=0.3)]}          # b did not finish iteration 2
    s = run_metrics(per, dilation=4.0)
    assert s["iterations"] == 1
    assert s["iteration_time_mean_s"] == pytest.approx(0.6 / 4)   # 0.0 -> 0.6 (b's end), real
    assert s["final_accuracy"] == 0.3 and s["accuracy_initial"] == 0.1
    g = 4000 / 0.3   # both workers: 4000 bytes per 0.3 s of communication (a: 8000 / 0.6)
    assert s["goodput_mbps"] == pytest.approx(g * 8 * 4 / 1e6)
    assert s["retransmission_rate"] == 0.0
