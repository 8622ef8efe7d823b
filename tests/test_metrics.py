"""analysis/metrics.py (the pipeline's building blocks) and analysis/rundata.py on synthetic
event logs with known answers; the row itself: tests/test_measure.py."""
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from analysis import metrics as M
from analysis.rundata import RunData

FIXTURE = Path(__file__).parent / "data" / "results_fixture"


def it(worker, i, ts, te, **kw):
    return [{"event": "iteration_start", "t": ts, "worker": worker, "iteration": i},
            dict({"event": "iteration_end", "t": te, "worker": worker, "iteration": i}, **kw)]


def two_workers():
    """w0 and w1, 3 iterations; w1 straggles in iteration 1; w0 also logged a 4th start."""
    ev = []
    ev += it("w0", 0, 10.0, 11.0, gradient_bytes=1000, compute_s=0.4)
    ev += it("w1", 0, 10.1, 11.2, gradient_bytes=1000, compute_s=0.5)
    ev += it("w0", 1, 11.2, 13.0, gradient_bytes=1000, compute_s=0.4)
    ev += it("w1", 1, 11.2, 13.1, gradient_bytes=1000, compute_s=1.5)
    ev += it("w0", 2, 13.1, 14.0, gradient_bytes=1000, compute_s=0.4)
    ev += it("w1", 2, 13.1, 14.1, gradient_bytes=1000, compute_s=0.5)
    ev += [{"event": "iteration_start", "t": 14.1, "worker": "w0", "iteration": 3},
           {"event": "iteration_end", "t": 15.0, "worker": "w0", "iteration": 3, "gradient_bytes": 1000}]
    return ev


def test_job_iteration_is_slowest_end_and_earliest_start_of_complete_iterations():
    recs = M.iteration_records(two_workers())
    assert len(recs) == 7
    # iteration 3 only finished on w0: not a job iteration
    its = M.job_iterations(recs)
    assert [i for i, _, _ in its] == [0, 1, 2]
    np.testing.assert_allclose([e - s for _, s, e in its], [1.2, 1.9, 1.0])
    # a named worker without records leaves no complete iteration
    assert M.job_iterations(recs, ["w0", "w1", "w2"]) == []


def test_compute_and_comm_times_from_fields_and_from_compute_end_events():
    recs = [r for r in M.iteration_records(two_workers()) if r.iteration < 3]
    assert sorted(r.compute_s for r in recs) == pytest.approx(sorted([0.4, 0.5, 0.4, 1.5, 0.4, 0.5]))
    r = next(r for r in recs if r.worker == "w1" and r.iteration == 1)
    assert r.comm_s == pytest.approx(1.9 - 1.5)
    # compute time from a compute_end event when the iteration_end does not carry it
    ev = it("a", 0, 1.0, 3.0, gradient_bytes=8) + [{"event": "compute_end", "t": 1.25, "worker": "a", "iteration": 0}]
    (rec,) = M.iteration_records(ev)
    assert rec.compute_s == pytest.approx(0.25) and rec.comm_s == pytest.approx(1.75)
    # a logged comm_s wins over the difference
    (rec,) = M.iteration_records(it("a", 0, 1.0, 3.0, compute_s=0.5, comm_s=1.2))
    assert rec.comm_s == pytest.approx(1.2)
    # no start time: skipped, not guessed
    assert M.iteration_records([{"event": "iteration_end", "t": 2.0, "worker": "a", "iteration": 0}]) == []


def test_records_carry_counts_and_comm_stats_of_either_schema():
    (a, b, c) = M.iteration_records(
        it("a", 0, 0, 1, retransmissions=3, bytes_sent=10, packets_sent=2, comm_stats={"duplicate_results": 4},
           loss=0.5, accuracy=0.25, max_error=1e-6, error_bound=1e-5)
        + it("b", 0, 0, 1, retransmits=2, duplicate_results=1) + it("c", 0, 0, 1))
    assert (a.retransmissions, b.retransmissions, c.retransmissions) == (3, 2, 0)
    assert (a.duplicate_results, b.duplicate_results, c.duplicate_results) == (4, 1, 0)
    assert (a.bytes_sent, a.packets_sent, a.loss, a.accuracy, a.max_error, a.error_bound) == \
        (10, 2, 0.5, 0.25, 1e-6, 1e-5)
    assert c.loss is None and c.accuracy is None and c.max_error is None


def test_goodput_over_time_spreads_bytes_over_the_iteration_and_keeps_the_total():
    recs = M.iteration_records(it("a", 0, 100.0, 102.0, gradient_bytes=1000)
                               + it("a", 1, 102.0, 102.5, gradient_bytes=1000))
    t, bps = M.goodput_over_time(recs, window_s=1.0)
    # [100,101): 500 B; [101,102): 500 B; [102,102.5]: 1000 B over the half second covered
    np.testing.assert_allclose(t, [0.5, 1.5, 2.25])
    np.testing.assert_allclose(bps, [4000.0, 4000.0, 16000.0])
    widths = np.array([1.0, 1.0, 0.5])
    assert float(np.sum(bps * widths) / 8) == pytest.approx(2000.0)
    with pytest.raises(ValueError, match="window"):
        M.goodput_over_time(recs, 0)


def test_speedup_is_baseline_over_scheme():
    assert M.speedup(2.0, 0.5) == 4.0
    assert M.speedup(1.0, 2.0) == 0.5
    assert math.isnan(M.speedup(1.0, 0.0)) and math.isnan(M.speedup(float("nan"), 1.0))


def test_time_to_accuracy_first_report_at_or_above_target():
    ev = [{"event": "iteration_end", "t": 11.0, "t_start": 10.0, "worker": "a", "iteration": 0, "accuracy": 0.5},
          {"event": "iteration_end", "t": 11.1, "t_start": 10.0, "worker": "b", "iteration": 0, "accuracy": 0.5},
          {"event": "iteration_end", "t": 12.0, "t_start": 11.0, "worker": "a", "iteration": 1, "accuracy": 0.79},
          {"event": "eval", "t": 12.5, "accuracy": 0.81},
          {"event": "iteration_end", "t": 13.0, "t_start": 12.0, "worker": "a", "iteration": 2, "accuracy": 0.9}]
    series = M.accuracy_series(ev)
    # iteration 0 ends when its last worker (b) ends; one point per iteration
    assert series == [(11.1, 0.5), (12.0, 0.79), (12.5, 0.81), (13.0, 0.9)]
    assert M.time_to_accuracy(series, 0.8, t0=10.0) == pytest.approx(2.5)
    assert M.time_to_accuracy(series, 0.9, t0=10.0) == pytest.approx(3.0)
    assert M.time_to_accuracy(series, 0.95, t0=10.0) is None


def test_cdf_points_match_the_definition_and_numpy():
    x, f = M.cdf_points([3.0, 1.0, 2.0, 2.0])
    np.testing.assert_allclose(x, [1, 2, 2, 3])
    np.testing.assert_allclose(f, [0.25, 0.5, 0.75, 1.0])
    rng = np.random.default_rng(0)
    v = rng.exponential(size=200)
    x, f = M.cdf_points(v)
    # F(x_k) is the fraction of values <= x_k (no ties in continuous draws)
    np.testing.assert_allclose(f, [(v <= xk).mean() for xk in x])
    x, f = M.cdf_points([])
    assert len(x) == 0 and len(f) == 0


def rows(intf, samples, field="tx_bytes", node="g1"):
    base = {"rx_bytes": 0, "rx_packets": 0, "rx_dropped": 0, "tx_bytes": 0, "tx_packets": 0, "tx_dropped": 0}
    return [dict(base, t_mono=str(t), node=node, intf=intf, **{field: str(v)}) for t, v in samples]


def test_wan_bytes_from_counter_deltas_of_wan_interfaces_only():
    r = rows("g1-eth2", [(0.0, 100), (0.1, 600), (0.2, 1100)]) + \
        rows("g2-eth2", [(0.0, 0), (0.2, 900)], node="g2") + \
        rows("g1-eth1", [(0.0, 0), (0.2, 10**9)])     # intra-DC: not counted
    assert M.wan_bytes(r, ["g1-eth2", "g2-eth2"]) == 1000 + 900
    assert M.counter_delta(r, "g2-eth2") == 900 and M.counter_delta(r[:1], "g1-eth2") == 0


def test_link_utilization_uses_the_rate_in_force_at_each_sample():
    # 1 Mbit per 0.1 s = 10 Mbps throughout; capacity 20 Mbps, then 10 Mbps from t = 0.25
    r = rows("g1-eth2", [(0.0, 0), (0.1, 125_000), (0.2, 250_000), (0.3, 375_000)])
    t, u = M.link_utilization(r, "g1-eth2", 20.0, [(0.25, 10.0)])
    np.testing.assert_allclose(t, [0.1, 0.2, 0.3])
    np.testing.assert_allclose(u, [0.5, 0.5, 1.0])
    assert M.capacity_at(0.0, 5.0, [(1.0, 7.0)]) == 5.0 and M.capacity_at(1.0, 5.0, [(1.0, 7.0)]) == 7.0


def test_mean_ci_is_the_student_t_95_interval():
    v = [1.0, 2.0, 4.0]
    m, h = M.mean_ci(v)
    assert m == pytest.approx(np.mean(v))
    assert h == pytest.approx(4.303 * np.std(v, ddof=1) / np.sqrt(3))    # t(0.975, 2 df)
    # the interval covers the true mean about 95% of the time, even with 3 values
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        m, h = M.mean_ci(rng.normal(5.0, 2.0, 3))
        hits += abs(m - 5.0) <= h
    assert 0.93 < hits / 2000 < 0.97
    assert M.t975(1) == 12.706 and M.t975(100) == 1.96
    assert M.mean_ci([5.0]) == (5.0, 0.0)
    assert all(math.isnan(x) for x in M.mean_ci([]))


def fixture_run(sweep="sweep-bw", point="p0000-r0") -> Path:
    (run,) = [p.parent for p in (FIXTURE / sweep / "points" / point).glob("*/*/summary.json")]
    return run


def test_run_metrics_are_in_real_world_units():
    """The fixture ran with time dilation 2: every duration halves, every rate doubles."""
    run = RunData.load(fixture_run())
    assert run.dilation == 2.0 and run.scheme == "ps" and run.n_workers == 4
    emulated = np.array([e - s for i, s, e in M.job_iterations(run.records) if i >= 1])   # warm-up out
    m = run.metrics(target_accuracy=0.8)
    assert m["iteration_time_mean_s"] == pytest.approx(emulated.mean() / 2)
    per_worker = []
    for w in run.events:
        rs = [r for r in run.records if r.worker == w and r.iteration >= 1]
        per_worker.append(8 * sum(r.bytes for r in rs) / sum(r.comm_s for r in rs))
    assert m["goodput_mbps"] == pytest.approx(np.mean(per_worker) * 2 / 1e6)
    assert m["iterations"] == 8 and m["retransmissions"] == 1
    # the synthetic ps model: 2 workers' gradients (4 x 65536 B) cross the WAN each way
    assert m["wan_bytes_per_iteration"] == pytest.approx(2 * 2 * 4 * 65536, abs=4)
    # comm time of the model: 2 x 262144 B x 8 / 20 Mbps + RTT 91 ms (+ stagger of the waiting)
    assert m["iteration_time_mean_s"] - m["compute_time_mean_s"] == pytest.approx(2 * 262144 * 8 / 20e6 + 0.091, abs=0.01)
    # accuracy 0.9 - 0.5 exp(-i/4) first reaches 0.8 at iteration 7
    t_acc, acc = run.accuracy_series()
    assert m["time_to_accuracy_s"] == pytest.approx(t_acc[7]) and acc[6] < 0.8 <= acc[7]
    assert m["complete"] is True


def test_bandwidth_series_follows_the_schedule_in_real_units():
    run = RunData.load(fixture_run("sweep-strag"))
    (edge, (t, mbps)), = run.bandwidth_series().items()
    assert edge == "g1-g2"
    # schedule: 50 Mbps from 0, 20 Mbps from 1.5 s (real); the file holds emulated t and Mbps
    assert list(mbps[:2]) == [50.0, 20.0] and t[1] == pytest.approx(1.5, abs=1e-6)


def test_run_without_counters_or_graph_reports_none_not_zero(tmp_path):
    src = fixture_run()
    dst = tmp_path / "run"
    shutil.copytree(src, dst)
    (dst / "counters.csv").unlink()
    m = RunData.load(dst).metrics()
    assert m["wan_bytes_per_iteration"] is None and m["iteration_time_mean_s"] > 0
    (dst / "scenario.yaml").write_text("not: a scenario\n")       # no graph: WAN unknown
    shutil.copy(src / "counters.csv", dst / "counters.csv")
    assert RunData.load(dst).metrics()["wan_bytes_per_iteration"] is None
    with pytest.raises(FileNotFoundError, match="not a run's results folder"):
        RunData.load(tmp_path)


def test_the_fixture_summary_holds_the_row_of_its_folder():
    """summary.json's metrics (written by the one pipeline) equal a fresh reading."""
    import json
    run = RunData.load(fixture_run())
    assert run.summary["metrics"] == json.loads(json.dumps(run.metrics()))


# ---------------------------------------------------------------- goodput under a schedule
# (analysis/schedule_tracking.py)

T = 100.0


def scheduled_run(comm_before=0.4, comm_after=0.8, change_at=5.05, n=10):
    """Two workers, iteration i from T + i to T + i + 0.1 + comm (emulated s), 1 MB each;
    iterations starting after the change take comm_after. The change: both WAN edges to
    10 Mbps emulated at T + change_at (two records of one scheduled time)."""
    ev = {"w0": [], "w1": []}
    for i in range(n):
        comm = comm_before if T + i < T + change_at else comm_after
        for w in ev:
            ev[w] += it(w, i, T + i, T + i + 0.1 + comm, gradient_bytes=1_000_000, compute_s=0.1,
                        comm_s=comm)
    changes = [{"t": T + change_at, "t_s": 3.0, "edge": "g1-g2", "mbps": 10.0},
               {"t": T + change_at + 0.01, "t_s": 3.0, "edge": "g1-g3", "mbps": 10.0}]
    return ev, changes


def model_quarter(rates):
    """A model whose goodput is a quarter of the bottleneck (and the job's twice that)."""
    b = min(rates.values())
    return b / 4, b / 2


def test_goodput_tracks_the_model_step_by_step_after_settling():
    from analysis.schedule_tracking import goodput_tracking
    ev, ch = scheduled_run()
    tr = goodput_tracking(ev, ch, {"g1-g2": 40.0, "g1-g3": 40.0}, dilation=2.0, model=model_quarter)
    a, b = tr["steps"]
    # step 0: iterations 1-4 (0 is the warm-up); iteration 5 straddles the change, 6 settles
    assert a["iterations"] == [1, 2, 3, 4] and b["iterations"] == [7, 8, 9]
    assert a["t_start_s"] is None and a["t_end_s"] == pytest.approx(5.05 / 2)
    assert b["t_start_s"] == pytest.approx(5.06 / 2) and b["t_end_s"] is None
    assert b["rates_mbps"] == {"g1-g2": 20.0, "g1-g3": 20.0}           # 10 emulated x s
    # 8 x 1 MB / 0.4 s emulated = 20 Mbps emulated = 40 real; after: 20 real
    assert a["measured_goodput_mbps"] == pytest.approx(40.0) and b["measured_goodput_mbps"] == pytest.approx(20.0)
    assert a["model_goodput_mbps"] == 10.0 and b["model_goodput_mbps"] == 5.0
    assert a["measured_over_model"] == pytest.approx(4.0) == b["measured_over_model"]
    # job goodput: 2 workers x 4 MB / (T+1 .. T+4.5) = 2 x 8 x 4 / 3.5 emulated Mbps, x 2
    assert a["measured_job_goodput_mbps"] == pytest.approx(2 * 8 * 4 / 3.5 * 2)
    assert tr["tracks"] is True and tr["median_ratio"] == pytest.approx(4.0)


def test_goodput_that_does_not_follow_the_rate_does_not_track():
    from analysis.schedule_tracking import goodput_tracking
    ev, ch = scheduled_run(comm_after=0.5)              # the rate halved, goodput only -20%
    tr = goodput_tracking(ev, ch, {"g1-g2": 40.0, "g1-g3": 40.0}, 2.0, model_quarter)
    assert tr["tracks"] is False and "outside 15%" in tr["reason"]
    assert [round(x["relative"], 3) for x in tr["steps"]] == [round(4 / 5.2, 3), round(6.4 / 5.2, 3)]
    assert [x["within"] for x in tr["steps"]] == [False, False]
    # a tolerance that the 23% gap fits in
    assert goodput_tracking(ev, ch, {"g1-g2": 40.0, "g1-g3": 40.0}, 2.0, model_quarter, 0.25)["tracks"]


def test_goodput_tracking_failure_paths():
    from analysis.schedule_tracking import goodput_tracking
    ev, ch = scheduled_run()
    rates = {"g1-g2": 40.0, "g1-g3": 40.0}
    none = goodput_tracking(ev, [], rates, 2.0, model_quarter)              # no schedule
    assert none["steps"] == [] and none["tracks"] is None and "no bandwidth schedule" in none["reason"]
    assert goodput_tracking({"w0": []}, ch, rates, 2.0, model_quarter)["tracks"] is None
    # a change late in the run: iteration 8 straddles it, 9 settles: no settled iteration left
    ev, ch = scheduled_run(change_at=8.05)
    late = goodput_tracking(ev, ch, rates, 2.0, model_quarter)
    assert late["steps"][1]["iterations"] == [] and late["steps"][1]["measured_goodput_mbps"] is None
    assert late["tracks"] is None and "1 step(s)" in late["reason"]
    nomodel = goodput_tracking(*scheduled_run(), rates, 2.0, None)
    assert nomodel["tracks"] is None and nomodel["steps"][0]["model_goodput_mbps"] is None


def test_a_change_before_the_job_starts_needs_no_settling():
    from analysis.schedule_tracking import applied_steps, goodput_tracking
    ev, _ = scheduled_run(comm_after=0.4)
    ch = [{"t": T - 1.0, "t_s": 0.0, "edge": "g1-g2", "mbps": 10.0},
          {"t": T + 5.05, "t_s": 2.0, "edge": "g1-g2", "mbps": 20.0}]
    assert [s["rates_mbps"]["g1-g2"] for s in applied_steps(ch, {"g1-g2": 40.0}, 2.0)] == [40.0, 20.0, 40.0]
    tr = goodput_tracking(ev, ch, {"g1-g2": 40.0}, 2.0, model_quarter)
    # the configured rate's step ended before the job: left out; the next starts with it
    assert [x["iterations"] for x in tr["steps"]] == [[1, 2, 3, 4], [7, 8, 9]]
    assert tr["steps"][0]["bottleneck_mbps"] == 20.0 and tr["steps"][0]["t_start_s"] is None


def test_fixture_run_under_a_schedule_tracks_and_has_a_model_series():
    run = RunData.load(fixture_run("sweep-strag", "p0001-r0"))
    tr = run.goodput_tracking
    assert len(tr["steps"]) >= 2 and tr["tracks"] is True   # steps at 0.98 and 1.02 of the median
    assert all(x["model_goodput_mbps"] > 0 for x in tr["steps"])
    t, m = run.model_goodput_series()
    assert t[0] == 0.0 and len(t) == len(m) and len(set(m)) == 2    # the schedule's two rates


def test_per_direction_changes_split_a_link_into_its_directions(tmp_path):
    """Records with `src` (a per-direction schedule) change one direction: the steps carry
    both directions of that link and the bandwidth series gives one line per direction."""
    import json
    from analysis.schedule_tracking import applied_steps
    ch = [{"t": T, "t_s": 0.0, "edge": "g1-g2", "mbps": 10.0, "src": "g1"},
          {"t": T, "t_s": 0.0, "edge": "g1-g2", "mbps": 15.0, "src": "g2"},
          {"t": T + 3, "t_s": 3.0, "edge": "g1-g2", "mbps": 5.0, "src": "g2"}]
    steps = applied_steps(ch, {"g1-g2": 50.0, "g1-g3": 40.0}, 2.0)
    assert [s["rates_mbps"] for s in steps] == [
        {"g1-g2": 50.0, "g1-g3": 40.0},
        {"g1-g3": 40.0, "g1>g2": 20.0, "g2>g1": 30.0},
        {"g1-g3": 40.0, "g1>g2": 20.0, "g2>g1": 10.0}]
    dst = tmp_path / "run"
    shutil.copytree(fixture_run("sweep-strag"), dst)
    t0 = RunData.load(dst).t0
    (dst / "bandwidth_events.jsonl").write_text("".join(json.dumps(dict(c, t=t0 + c["t_s"])) + "\n"
                                                        for c in ch))
    series = RunData.load(dst).bandwidth_series(end_s=3.0)
    assert sorted(series) == ["g1>g2", "g2>g1"]
    t, m = series["g1>g2"]
    assert list(t) == [0.0, 3.0] and list(m) == [20.0, 20.0]
    t, m = series["g2>g1"]
    assert list(t) == pytest.approx([0.0, 1.5, 3.0]) and list(m) == [30.0, 10.0, 10.0]
