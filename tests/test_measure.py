"""analysis/measure.py: the one row of a run, on synthetic event logs with known answers,
and the proof that summary.json, `run.py plot`, sweep tables and speedups share it."""
import json
from pathlib import Path

import pytest

from analysis import measure
from analysis.measure import WARMUP_ITERATIONS, iteration_table, run_metrics, worker_table
from analysis.rundata import RunData
from workers.events import read_events

REPO = Path(__file__).resolve().parent.parent


def it(worker, i, ts, te, **kw):
    return [{"event": "iteration_start", "t": ts, "worker": worker, "iteration": i},
            dict({"event": "iteration_end", "t": te, "worker": worker, "iteration": i}, **kw)]


def two_workers(scale=1.0):
    """w0 and w1, 3 iterations; w1 straggles in iteration 1; w0 also finished a 4th that
    w1 did not. Every time is multiplied by `scale` (an emulated run at dilation scale)."""
    x = lambda t: t * scale
    w0 = [{"event": "worker_start", "t": x(9.0), "worker": "w0", "accuracy_initial": 0.1, "loss_initial": 2.0}]
    w0 += it("w0", 0, x(10.0), x(11.0), gradient_bytes=1000, compute_s=x(0.4), packets_sent=10,
             bytes_sent=1100, accuracy=0.3, loss=1.5)
    w0 += it("w0", 1, x(11.2), x(13.0), gradient_bytes=1000, compute_s=x(0.4), packets_sent=10,
             bytes_sent=1100, retransmissions=2, accuracy=0.5, loss=1.2)
    w0 += it("w0", 2, x(13.1), x(14.0), gradient_bytes=1000, compute_s=x(0.4), packets_sent=10,
             bytes_sent=1100, accuracy=0.7, loss=1.0)
    w0 += it("w0", 3, x(14.1), x(15.0), gradient_bytes=1000, packets_sent=10, bytes_sent=1100)
    w1 = it("w1", 0, x(10.1), x(11.2), gradient_bytes=1000, compute_s=x(0.5), packets_sent=10,
            bytes_sent=1100, retransmissions=1, accuracy=0.3, loss=1.5)
    w1 += it("w1", 1, x(11.2), x(13.1), gradient_bytes=1000, compute_s=x(1.5), packets_sent=10,
             bytes_sent=1100, accuracy=0.5, loss=1.2)
    w1 += it("w1", 2, x(13.1), x(14.1), gradient_bytes=1000, compute_s=x(0.5), packets_sent=10,
             bytes_sent=1100, accuracy=0.7, loss=1.0)
    return {"w0": w0, "w1": w1}


def test_the_warm_up_rule_is_one_constant():
    assert WARMUP_ITERATIONS == 1
    assert not measure.steady(0) and measure.steady(1)
    assert measure.__doc__.count("WARMUP_ITERATIONS") >= 1
    readme = (REPO / "README.md").read_text()
    assert "first iteration" in readme.split("## Metrics")[1].split("##")[0]


def test_row_by_hand():
    m = run_metrics(two_workers())
    assert set(m) == set(measure.COLUMNS)
    assert m["warmup_iterations"] == 1 and m["time_dilation"] == 1.0
    # complete iterations: 0, 1, 2 (iteration 3 only on w0); all of them counted
    assert m["iterations"] == 3
    # job iteration times 1.2, 1.9, 1.0: the first is warm-up
    assert m["iteration_time_mean_s"] == pytest.approx((1.9 + 1.0) / 2)
    assert m["iteration_time_p50_s"] == pytest.approx(1.45)
    assert m["iteration_time_p99_s"] == pytest.approx(1.0 + 0.99 * 0.9)
    # the pace: slowest ends of iteration 0 (warm-up) and 2: (14.1 - 11.2) / 2
    assert m["iteration_period_s"] == pytest.approx(1.45)
    # steady worker-iterations: w0 1, 2, 3 (3 has no compute_s); w1 1, 2
    assert m["compute_time_mean_s"] == pytest.approx((0.4 + 0.4 + 1.5 + 0.5) / 4)
    # no comm_s logged: iteration time - compute time (w0: 1.4, 0.5; w1: 0.4, 0.5)
    assert m["comm_time_mean_s"] == pytest.approx((1.4 + 0.5 + 0.4 + 0.5) / 4)
    g0, g1 = 8 * 2000 / 1.9 / 1e6, 8 * 2000 / 0.9 / 1e6
    assert m["goodput_mbps"] == pytest.approx((g0 + g1) / 2)
    assert m["goodput_min_mbps"] == pytest.approx(g0)
    # job goodput: steady useful bytes (w0: 3, w1: 2 iterations) over 11.2 -> 15.0
    assert m["job_goodput_mbps"] == pytest.approx(8 * 5000 / 3.8 / 1e6)
    # counts over all iterations, warm-up included
    assert m["retransmissions"] == 3 and m["packets_sent"] == 70
    assert m["retransmission_rate"] == pytest.approx(3 / 70)
    assert m["bytes_sent_per_iteration"] == pytest.approx(1100 + 1100)
    assert m["accuracy_initial"] == 0.1 and m["loss_initial"] == 2.0
    assert m["final_accuracy"] == 0.7 and m["final_loss"] == 1.0
    assert m["final_auc"] is None                        # these logs carry no auc
    assert m["time_to_accuracy_s"] is None and m["target_accuracy"] is None
    assert m["max_error"] is None and m["within_quantization_bound"] is None
    assert m["worker_errors"] == 0 and m["switch_drops"] == 0
    assert m["wan_bytes_per_iteration"] is None          # WAN interfaces unknown


def test_time_to_accuracy_counts_from_the_first_start_and_includes_warm_up():
    m = run_metrics(two_workers(), target_accuracy=0.5)
    # iteration 1 first reaches 0.5; it ends when its last worker (w1) ends: 13.1 - 10.0
    assert m["time_to_accuracy_s"] == pytest.approx(3.1) and m["target_accuracy"] == 0.5
    assert run_metrics(two_workers(), target_accuracy=0.95)["time_to_accuracy_s"] is None


def test_dilation_divides_times_and_multiplies_rates():
    real = run_metrics(two_workers(), target_accuracy=0.5)
    s = 4.0
    dilated = run_metrics(two_workers(scale=s), dilation=s, target_accuracy=0.5)
    for k in measure.COLUMNS:
        if k == "time_dilation":
            assert dilated[k] == s
        elif isinstance(real[k], float):
            assert dilated[k] == pytest.approx(real[k]), k
        else:
            assert dilated[k] == real[k], k
    # an undilated reading of the dilated logs is s times slower
    raw = run_metrics(two_workers(scale=s))
    assert raw["iteration_time_mean_s"] == pytest.approx(s * real["iteration_time_mean_s"])
    assert raw["goodput_mbps"] == pytest.approx(real["goodput_mbps"] / s)


def test_per_iteration_and_per_worker_tables_are_the_rows_parts():
    s = 2.0
    ev = two_workers(scale=s)
    its = iteration_table(ev, s)
    assert [(j["iteration"], j["warmup"]) for j in its] == [(0, True), (1, False), (2, False)]
    assert [j["time_s"] for j in its] == pytest.approx([1.2, 1.9, 1.0])
    assert its[1]["start_s"] == pytest.approx(1.2) and its[1]["end_s"] == pytest.approx(3.1)
    assert its[1]["compute_max_s"] == pytest.approx(1.5) and its[1]["comm_max_s"] == pytest.approx(1.4)
    assert [j["accuracy"] for j in its] == [0.3, 0.5, 0.7] and its[0]["retransmissions"] == 1
    m = run_metrics(ev, dilation=s)
    steady = [j["time_s"] for j in its if not j["warmup"]]
    assert m["iteration_time_mean_s"] == pytest.approx(sum(steady) / len(steady))
    ws = worker_table(ev, s)
    assert ws["w0"]["iterations"] == 4 and ws["w1"]["iterations"] == 3
    assert ws["w0"]["goodput_mbps"] == pytest.approx(8 * 2000 / 1.9 / 1e6)
    assert m["goodput_mbps"] == pytest.approx((ws["w0"]["goodput_mbps"] + ws["w1"]["goodput_mbps"]) / 2)
    assert ws["w1"]["comm_time_mean_s"] == pytest.approx((0.4 + 0.5) / 2)


def test_logged_comm_s_and_comm_stats_are_read():
    ev = {"a": it("a", 0, 1.0, 3.0, gradient_bytes=8, compute_s=0.5, comm_s=1.2,
                  comm_stats={"duplicate_results": 2}) +
               it("a", 1, 3.0, 4.0, gradient_bytes=8, compute_s=0.5, comm_s=0.4, duplicate_results=1)}
    m = run_metrics(ev)
    assert m["comm_time_mean_s"] == pytest.approx(0.4)       # logged comm_s, steady only
    assert m["duplicate_results"] == 3                       # comm_stats, or top level (older INA)
    # retransmissions under either field name
    ev = {w: it(w, 0, 0, 1, **kw) for w, kw in (("a", {"retransmissions": 3}), ("b", {"retransmits": 2}), ("c", {}))}
    assert run_metrics(ev)["retransmissions"] == 5


def test_final_auc_is_the_last_complete_iterations():
    ev = {w: it(w, 0, 0, 1, accuracy=0.6, auc=0.55) + it(w, 1, 1, 2, accuracy=0.7, auc=0.71)
          for w in ("a", "b")}
    ev["a"] += it("a", 2, 2, 3, auc=0.9)          # b never finished iteration 2
    m = run_metrics(ev)
    assert m["final_auc"] == 0.71 and m["final_accuracy"] == 0.7
    assert [j["auc"] for j in iteration_table(ev)] == [0.55, 0.71]


def test_quantization_bound_over_every_iteration():
    ok = {"a": it("a", 0, 0, 1, max_error=1e-6, error_bound=1e-5) + it("a", 1, 1, 2, max_error=2e-6, error_bound=1e-5)}
    m = run_metrics(ok)
    assert m["within_quantization_bound"] is True and m["max_error"] == 2e-6
    bad = {"a": ok["a"] + it("a", 2, 2, 3, max_error=1e-3, error_bound=1e-5)}
    assert run_metrics(bad)["within_quantization_bound"] is False


# ---------------------------------------------------------------- missing and partial data

def test_nothing_measured_gives_none_not_a_crash():
    for ev in ({}, {"a": []}, {"a": [{"event": "worker_error", "t": 1, "error": "no route"}]}):
        m = run_metrics(ev, dilation=3.0, target_accuracy=0.5)
        assert set(m) == set(measure.COLUMNS)
        assert m["iterations"] == 0
        for k in ("iteration_time_mean_s", "iteration_time_p99_s", "compute_time_mean_s", "comm_time_mean_s",
                  "goodput_mbps", "job_goodput_mbps", "bytes_sent_per_iteration", "retransmission_rate",
                  "final_accuracy", "time_to_accuracy_s"):
            assert m[k] is None, (ev, k)
        json.dumps(m, allow_nan=False)                      # summary.json stays strict JSON
    assert run_metrics({"a": [{"event": "worker_error", "t": 1, "error": "x"}]})["worker_errors"] == 1
    assert iteration_table({}) == [] and worker_table({"a": []})["a"]["goodput_mbps"] is None


def test_a_worker_without_iterations_leaves_no_complete_iteration():
    ev = two_workers()
    ev["w2"] = [{"event": "worker_start", "t": 9.0, "worker": "w2"},
                {"event": "worker_error", "t": 9.5, "worker": "w2", "error": "no route"}]
    m = run_metrics(ev)
    assert m["iterations"] == 0 and m["iteration_time_mean_s"] is None and m["worker_errors"] == 1
    # per-worker statistics still stand
    assert m["goodput_mbps"] == pytest.approx(run_metrics(two_workers())["goodput_mbps"])


def test_only_warm_up_done_gives_counts_but_no_steady_statistics():
    ev = {w: [e for e in evs if e.get("iteration", 0) == 0] for w, evs in two_workers().items()}
    m = run_metrics(ev)
    assert m["iterations"] == 1 and m["packets_sent"] == 20 and m["final_accuracy"] == 0.3
    assert m["iteration_time_mean_s"] is None and m["goodput_mbps"] is None


def test_torn_log_counts_what_it_holds(tmp_path):
    lines = [json.dumps(e) for e in two_workers()["w1"]]
    p = tmp_path / "w1.jsonl"
    p.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])    # killed mid-line
    ev = {"w0": two_workers()["w0"], "w1": read_events(p)}
    m = run_metrics(ev)
    assert m["iterations"] == 2                                      # w1's iteration 2 is lost
    assert m["iteration_time_mean_s"] == pytest.approx(1.9)


def rows(intf, samples, field="tx_bytes", node="g1"):
    base = {"rx_bytes": 0, "rx_packets": 0, "rx_dropped": 0, "tx_bytes": 0, "tx_packets": 0, "tx_dropped": 0}
    return [dict(base, t_mono=str(t), node=node, intf=intf, **{field: str(v)}) for t, v in samples]


def test_wan_bytes_per_iteration_from_counter_deltas_of_wan_interfaces_only():
    r = rows("g1-eth2", [(0.0, 100), (0.1, 600), (0.2, 1100)]) + \
        rows("g2-eth2", [(0.0, 0), (0.2, 900)], node="g2") + \
        rows("g1-eth1", [(0.0, 0), (0.2, 10**9)])     # intra-DC: not counted
    ev = two_workers()                                # 3 complete iterations
    m = run_metrics(ev, r, wan_intfs=["g1-eth2", "g2-eth2"])
    assert m["wan_bytes_per_iteration"] == pytest.approx((1000 + 900) / 3)
    assert run_metrics(ev, r, wan_intfs=[])["wan_bytes_per_iteration"] == 0     # no WAN at all
    assert run_metrics(ev, (), wan_intfs=["g1-eth2"])["wan_bytes_per_iteration"] is None   # no counters
    assert run_metrics({}, r, wan_intfs=["g1-eth2"])["wan_bytes_per_iteration"] is None     # no iteration


def test_switch_drops_socket_overruns_plus_kernel_drops_on_switch_interfaces():
    drops = {"g1": {"rx_frames": 10, "socket_drops": 4}, "g2": {"socket_drops": 1}}
    r = rows("g1-eth2", [(0, 2), (1, 5)], field="rx_dropped") + \
        rows("h1-eth0", [(0, 0), (1, 50)], field="tx_dropped", node="h1")
    assert measure.switch_drop_count(drops) == 5
    assert measure.switch_drop_count(drops, r, ["g1", "g2"]) == 5 + 3   # the host's drops are not a switch's
    assert run_metrics({}, r, switch_nodes=["g1"], switch_drops=drops)["switch_drops"] == 8


# ---------------------------------------------------------------- one path

def test_summary_plot_sweep_and_speedup_share_one_row(tmp_path):
    """A sweep through the synthetic runner: summary.json's metrics (written as
    testbed/lifecycle.py writes them), RunData.metrics (`run.py plot`), the sweep's table
    and point records, and the speedups all hold the same numbers with the same warm-up."""
    from analysis import figures as F
    from analysis.report import load_table
    from analysis.speedup import main as speedup_main, speedup_table
    from testbed import sweep as S
    from testbed.sweep_model import load_sweep
    from tests.synthetic_runs import fake_runner
    base = REPO / "tests" / "data" / "results_fixture" / "base.yaml"
    sf = tmp_path / "s.yaml"
    sf.write_text(f"name: one\nbase: {base}\naxes: {{scheme: [ps, geo-ina]}}\n")
    folder = S.run_sweep(load_sweep(sf), tmp_path / "out", runner=fake_runner, progress=False)
    table = {r["scheme"]: r for r in load_table(folder / "table.csv")}
    rows = {}
    for scheme, trow in table.items():
        run_dir = folder / trow["run_dir"]
        summary = json.loads((run_dir / "summary.json").read_text())
        rd = RunData.load(run_dir)
        row = rd.metrics()
        rows[scheme] = row
        assert summary["metrics"] == json.loads(json.dumps(row))          # summary == plot row
        point = json.loads((folder / "points" / trow["point_id"] / "point.json").read_text())
        assert point["metrics"] == summary["metrics"]                      # == the sweep's record
        for k, v in row.items():                                           # == the table (6 digits)
            if isinstance(v, float):
                assert float(trow[k]) == pytest.approx(v, rel=1e-5), k
            elif v is None:
                assert trow[k] is None, k
            else:
                assert str(trow[k]) == str(v), k
        # the warm-up is the same everywhere: the row's mean is over the non-warm-up iterations
        its = summary["per_iteration"]
        assert [j["warmup"] for j in its][:2] == [True, False]
        steady = [j["time_s"] for j in its if not j["warmup"]]
        assert row["iteration_time_mean_s"] == pytest.approx(sum(steady) / len(steady))
        assert list(rd.iteration_times_s()) == pytest.approx(steady)
        assert row["warmup_iterations"] == WARMUP_ITERATIONS
        assert "iteration_time_s" not in summary["app"] and "per_iteration" not in summary["app"]
    # speedups: from rows, from table rows (figures) and from the CLI: the same ratio
    sp = {r["scheme"]: r for r in speedup_table(rows, "ps")}
    expect = rows["ps"]["iteration_period_s"] / rows["geo-ina"]["iteration_period_s"]
    assert sp["geo-ina"]["speedup_iteration"] == pytest.approx(expect)
    assert sp["geo-ina"]["speedup_communication"] == pytest.approx(
        rows["ps"]["comm_time_mean_s"] / rows["geo-ina"]["comm_time_mean_s"])
    (fr,) = [r for r in F.speedup_rows(list(table.values()), ["scheme"], "ps") if r["scheme"] == "geo-ina"]
    assert fr["speedup"] == pytest.approx(expect, rel=1e-5)
    assert speedup_main([str(folder / table["ps"]["run_dir"]), str(folder / table["geo-ina"]["run_dir"])]) == 0


def test_no_second_definition_of_a_metric_remains():
    """The old pipelines are gone: nothing computes a summary of its own."""
    import workers.events as E
    assert not hasattr(E, "summarize_job") and not hasattr(E, "summarize_worker")
    from analysis import metrics as M
    for gone in ("iteration_times", "goodput_bps", "job_goodput_bps", "compute_comm_times",
                 "wan_bytes_per_iteration", "switch_drops", "retransmissions"):
        assert not hasattr(M, gone), gone
    for p in list((REPO / "analysis").glob("*.py")) + list((REPO / "bench").glob("*.py")) + \
            list((REPO / "testbed").glob("*.py")):
        text = p.read_text()
        assert "summarize_job" not in text and '["app"]["per_iteration"]' not in text, p


def test_the_log_names_the_worker():
    """Events keyed by log file: a line's own `worker` field (or its absence) changes nothing."""
    ev = two_workers()
    renamed = {"a": [dict(e, worker="x") for e in ev["w0"]], "b": [{k: v for k, v in e.items() if k != "worker"}
                                                                 for e in ev["w1"]]}
    assert run_metrics(renamed) == run_metrics(ev)
    assert set(worker_table(renamed)) == {"a", "b"} and worker_table(renamed)["a"]["iterations"] == 4


def test_summary_sections_of_an_interrupted_run_folder(tmp_path):
    """What testbed/lifecycle.py adds to summary.json when a run was cut short: a torn log,
    a worker with no iteration, no counters, a scenario that no longer loads."""
    from analysis.rundata import summary_sections
    d = tmp_path / "run"
    (d / "events").mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"time_dilation": 2.0}))
    lines = [json.dumps(e) for e in two_workers(scale=2.0)["w0"]]
    (d / "events" / "w0.jsonl").write_text("\n".join(lines) + "\n" + lines[-1][:10])
    (d / "events" / "w1.jsonl").write_text(json.dumps({"event": "worker_start", "t": 1.0}) + "\n")
    out = summary_sections(d, {"complete": False, "reason": "interrupted", "time_dilation": 2.0})
    m = out["metrics"]
    assert m["complete"] is False and m["time_dilation"] == 2.0 and m["iterations"] == 0
    assert m["iteration_time_mean_s"] is None and m["wan_bytes_per_iteration"] is None
    assert out["per_iteration"] == [] and out["workers"]["w0"]["iterations"] == 4
    assert out["workers"]["w0"]["goodput_mbps"] == pytest.approx(8 * 2000 / 1.9 / 1e6)
    json.dumps(out, allow_nan=False)


def test_staggered_workers_overlap_iterations_so_the_pace_is_below_the_job_time():
    """w1 gets every sum 0.4 s after w0 (farther from the server): each job iteration spans
    1.4 s from w0's start to w1's end, yet the job advances one iteration per second."""
    ev = {"w0": [], "w1": []}
    for i in range(4):
        ev["w0"] += it("w0", i, float(i), i + 1.0, gradient_bytes=8)
        ev["w1"] += it("w1", i, i + 0.4, i + 1.4, gradient_bytes=8)
    m = run_metrics(ev)
    assert m["iteration_time_mean_s"] == pytest.approx(1.4)
    assert m["iteration_period_s"] == pytest.approx(1.0)
    assert run_metrics({"w0": it("w0", 0, 0.0, 1.0)})["iteration_period_s"] is None   # warm-up only
