"""analysis/speedup.py on hand-made summaries (pure, fast)."""
from __future__ import annotations

import json

import pytest

from analysis.speedup import (comm_time_per_iteration, main, speedup, speedup_table,
                              time_per_iteration, time_to_accuracy)
from workers.events import summarize_job


def app(times, comms, accs=None, dilation=1.0, t0=100.0):
    its, t = [], t0
    for i, (ti, c) in enumerate(zip(times, comms)):
        t += ti
        its.append({"iteration": i, "time_s": ti, "max_comm_s": c, "max_compute_s": ti - c,
                    "accuracy": accs[i] if accs else None, "t_end": t})
    return {"per_iteration": its, "time_dilation": dilation,
            "workers": {"w0": {"iterations": len(times), "bytes_sent": 1000 * len(times)}}}


def test_time_per_iteration_skips_warm_up_and_undoes_dilation():
    a = app([5.0, 2.0, 4.0], [4.0, 1.0, 3.0], dilation=2.0)
    assert time_per_iteration(a) == pytest.approx(1.5)        # (2 + 4) / 2 / 2
    assert time_per_iteration(a, skip=0) == pytest.approx(11 / 3 / 2)
    assert comm_time_per_iteration(a) == pytest.approx(1.0)   # (1 + 3) / 2 / 2


def test_speedup_against_the_baseline():
    ps = app([3.0, 2.0, 2.0], [2.0, 1.5, 1.5], accs=[0.2, 0.5, 0.8])
    ina = app([3.0, 1.0, 1.0], [2.0, 0.5, 0.5], accs=[0.2, 0.5, 0.8])
    s = speedup(ps, ina, target_accuracy=0.5)
    assert s["iteration"] == pytest.approx(2.0) and s["communication"] == pytest.approx(3.0)
    assert s["time_to_accuracy"] == pytest.approx(5.0 / 4.0)   # accuracy 0.5 after iteration 1
    assert time_to_accuracy(ps, 0.9) is None                   # never reached: no speedup
    assert speedup(ps, ina, target_accuracy=0.9)["time_to_accuracy"] is None


def test_table_needs_the_baseline_and_names_what_is_there():
    with pytest.raises(ValueError, match="baseline scheme 'ps' has no run here.*ring"):
        speedup_table({"ring": app([1.0, 1.0], [1.0, 1.0])})
    rows = speedup_table({"ps": app([2.0, 2.0], [1.0, 1.0]), "ring": app([1.0, 1.0], [1.0, 1.0])})
    assert [r["speedup_iteration"] for r in rows] == [pytest.approx(1.0), pytest.approx(2.0)]
    assert rows[0]["bytes_per_iteration"] == 1000


def test_reads_what_summarize_job_writes(tmp_path, capsys):
    """The contract: summary.json's app section as workers/events.summarize_job makes it."""
    def worker(offset):
        ev = []
        for i in range(3):
            t0 = 10.0 + 3 * i + offset
            ev.append({"event": "iteration_end", "worker": "w", "iteration": i, "t_start": t0,
                       "t_end": t0 + 2.0, "compute_s": 0.5, "comm_s": 1.5, "gradient_bytes": 400,
                       "bytes_sent": 424, "bytes_received": 424, "packets_sent": 3,
                       "retransmissions": 0, "loss": 1.0, "accuracy": 0.1 * i})
        return ev
    job = summarize_job({"a": worker(0.0), "b": worker(0.25)}, dilation=2.0)
    assert time_per_iteration(job) == pytest.approx(2.25 / 2)
    assert comm_time_per_iteration(job) == pytest.approx(1.5 / 2)
    for name, scheme in (("r1", "ps"), ("r2", "ring")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"app": dict(job, scheme=scheme)}))
    assert main([str(tmp_path / "r1"), str(tmp_path / "r2"), "--target-accuracy", "0.15"]) == 0
    assert "ring" in capsys.readouterr().out
    assert main([str(tmp_path / "nothing")]) == 1
