"""analysis/speedup.py on rows of analysis/measure.py (pure, fast) and its CLI on run folders."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.measure import run_metrics
from analysis.speedup import main, ratio, speedup, speedup_table


def row(times, comms, accs=None, dilation=1.0, target=None, t0=100.0):
    """The row of a one-worker run whose iterations take `times` (emulated s), of which
    `comms` communication, reaching accuracies `accs`."""
    ev, t = [], t0
    for i, (ti, c) in enumerate(zip(times, comms)):
        ev += [{"event": "iteration_start", "t": t, "iteration": i},
               {"event": "iteration_end", "t": t + ti, "t_start": t, "t_end": t + ti, "iteration": i,
                "compute_s": ti - c, "comm_s": c, "gradient_bytes": 800, "bytes_sent": 1000,
                "accuracy": accs[i] if accs else None}]
        t += ti
    return run_metrics({"w0": ev}, dilation=dilation, target_accuracy=target)


def test_time_per_iteration_skips_warm_up_and_undoes_dilation():
    a = row([5.0, 2.0, 4.0], [4.0, 1.0, 3.0], dilation=2.0)
    assert a["iteration_time_mean_s"] == pytest.approx(1.5)   # (2 + 4) / 2 / 2: iteration 0 left out
    assert a["comm_time_mean_s"] == pytest.approx(1.0)        # (1 + 3) / 2 / 2
    assert a["bytes_sent_per_iteration"] == 1000


def test_speedup_against_the_baseline():
    ps = row([3.0, 2.0, 2.0], [2.0, 1.5, 1.5], accs=[0.2, 0.5, 0.8], target=0.5)
    ina = row([3.0, 1.0, 1.0], [2.0, 0.5, 0.5], accs=[0.2, 0.5, 0.8], target=0.5)
    s = speedup(ps, ina)
    assert s["iteration"] == pytest.approx(2.0) and s["communication"] == pytest.approx(3.0)
    assert s["time_to_accuracy"] == pytest.approx(5.0 / 4.0)   # accuracy 0.5 after iteration 1
    never = row([3.0, 2.0, 2.0], [2.0, 1.5, 1.5], accs=[0.2, 0.5, 0.8], target=0.9)
    assert never["time_to_accuracy_s"] is None                 # never reached: no speedup
    assert speedup(never, ina)["time_to_accuracy"] is None
    # table rows (CSV strings) give the same ratio; a missing number gives None
    assert ratio({"iteration_period_s": "2.0"}, {"iteration_period_s": "0.5"}) == 4.0
    assert ratio({"iteration_period_s": None}, {"iteration_period_s": 1.0}) is None
    assert ratio({"iteration_period_s": ""}, {"iteration_period_s": 1.0}) is None


def test_table_needs_the_baseline_and_names_what_is_there():
    with pytest.raises(ValueError, match="baseline scheme 'ps' has no run here.*ring"):
        speedup_table({"ring": row([1.0, 1.0], [1.0, 1.0])})
    rows = speedup_table({"ps": row([2.0, 2.0], [1.0, 1.0]), "ring": row([1.0, 1.0], [1.0, 1.0])})
    assert [r["speedup_iteration"] for r in rows] == [pytest.approx(1.0), pytest.approx(2.0)]
    assert rows[0]["bytes_sent_per_iteration"] == 1000


def test_cli_reads_run_folders_through_the_row(tmp_path, capsys):
    """The CLI computes each folder's row (analysis/rundata.RunData.metrics) and compares."""
    from tests.synthetic_runs import write_run
    scn = str(Path(__file__).parent / "data" / "results_fixture" / "base.yaml")
    d_ps = write_run(tmp_path / "out", scn, ["scheme=ps"])
    d_ring = write_run(tmp_path / "out", scn, ["scheme=ring"])
    assert main([str(d_ps), str(d_ring), "--target-accuracy", "0.7"]) == 0
    out = capsys.readouterr().out
    assert "ring" in out and "speedup_iteration" in out
    assert main([str(tmp_path / "nothing")]) == 1
    assert "not a run's results folder" in capsys.readouterr().err
    assert main([str(d_ring)]) == 1                            # no ps run: says so
    assert "baseline scheme 'ps' has no run here" in capsys.readouterr().err
