"""summary.json's "staleness" section and `plot`'s staleness figure (analysis/staleness.py,
analysis/report.py), from hand-made event logs."""
from __future__ import annotations

import json

import pytest

from analysis.staleness import distribution, mode_label, staleness_section
from workers.training_modes import Applied, bsp_applied


def logs(mode: str, bound, updates: list[Applied]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for a in updates:
        out.setdefault(f"w{a.worker}", []).append({"event": "iteration_end", "worker": f"w{a.worker}",
                                                   "iteration": a.iteration, "update": a.record()})
    for w, es in out.items():
        es.insert(0, {"event": "worker_start", "worker": w, "training": {"mode": mode, "staleness": bound}})
    return out


# the hand-worked trace of tests/test_training_modes.py (3 workers, s = 1)
TRACE = [Applied(0, 0, 0, 0, 0), Applied(0, 1, 1, 0, 1), Applied(1, 0, 0, 0, 2), Applied(2, 0, 0, 0, 3),
         Applied(1, 1, 3, 0, 4), Applied(0, 2, 4, 1, 5), Applied(2, 1, 4, 1, 6)]


def test_distribution_of_the_hand_worked_trace():
    sec = staleness_section(logs("ssp", 1, TRACE))
    # staleness 0,1,0,0,1,1,0; delay 0,0,2,3,1,1,2
    assert sec["mode"] == "ssp" and sec["bound"] == 1 and sec["updates"] == 7 and sec["within_bound"]
    assert sec["staleness"] == {"count": 7, "mean": pytest.approx(3 / 7), "p50": 0, "p95": 1, "max": 1,
                                "histogram": [[0, 4], [1, 3]]}
    assert sec["delay"] == {"count": 7, "mean": pytest.approx(9 / 7), "p50": 1, "p95": 3, "max": 3,
                            "histogram": [[0, 2], [1, 2], [2, 2], [3, 1]]}
    assert mode_label(sec) == "ssp s=1"
    json.dumps(sec)   # summary.json must take it as is


def test_a_bound_exceeded_is_reported_and_bsp_is_all_zero():
    sec = staleness_section(logs("ssp", 0, TRACE))
    assert sec["within_bound"] is False and sec["staleness"]["max"] == 1
    bsp = staleness_section(logs("bsp", None, [bsp_applied(w, c) for c in range(4) for w in range(3)]))
    assert bsp["bound"] == 0 and bsp["within_bound"] is True and mode_label(bsp) == "bsp"
    assert bsp["staleness"]["histogram"] == [[0, 12]] and bsp["delay"]["max"] == 0
    asp = staleness_section(logs("asp", None, TRACE))
    assert asp["within_bound"] is None and mode_label(asp) == "asp"


def test_no_update_records_no_section():
    assert staleness_section({"w0": [{"event": "iteration_end", "iteration": 0}]}) is None
    assert distribution([])["count"] == 0 and distribution([])["max"] is None


def write_run(run, events: dict[str, list[dict]]):
    """A results folder holding these workers' events (stamped 1 s apart)."""
    (run / "events").mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"complete": True}))
    (run / "scenario.yaml").write_text("scheme: ps\n")
    for w, es in events.items():
        c = 0
        lines = []
        for e in es:
            e = dict(e, t=1.0 + c)
            if e["event"] == "iteration_end":
                e.update(t_start=0.5 + c, t_end=1.0 + c, gradient_bytes=400, accuracy=0.5 + 0.01 * c)
                lines.append({"event": "iteration_start", "worker": w, "iteration": e["iteration"],
                              "t": 0.5 + c})
            lines.append(e)
            c += 1
        (run / "events" / f"{w}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def test_plot_draws_the_staleness_figure_for_runs_with_update_records(tmp_path):
    from analysis.report import make_report, run_jobs
    from analysis.rundata import RunData
    run = write_run(tmp_path / "run", logs("ssp", 1, TRACE))
    rd = RunData.load(run)
    assert rd.staleness["updates"] == 7
    jobs = {j.name: j for j in run_jobs([rd])}
    assert "staleness" in jobs and "| run | ps | ssp s=1 | 7 | 0.429 / 1 / 1 | 1.29 / 3 / 3 |" in jobs["staleness"].caption
    fig = jobs["staleness"].make()
    left, right = fig.axes[:2]
    assert [l.get_xdata()[-1] for l in left.lines if l.get_label().startswith("PS")] == [1]
    assert any(l.get_xdata()[0] == 1 for l in left.lines if l.get_linestyle() == ":")   # the bound
    md = make_report(run, ["png"])
    assert (run / "figures" / "staleness.png").stat().st_size > 1000
    assert "](figures/staleness.png)" in md.read_text()


def test_runs_of_one_scheme_in_different_modes_are_told_apart_by_their_mode(tmp_path):
    from analysis.report import run_jobs
    from analysis.rundata import RunData
    bsp = write_run(tmp_path / "a", logs("bsp", None, [bsp_applied(w, c) for c in range(2) for w in range(3)]))
    ssp = write_run(tmp_path / "b", logs("ssp", 1, TRACE))
    jobs = {j.name: j for j in run_jobs([RunData.load(bsp), RunData.load(ssp)])}
    for name in ("accuracy_vs_time", "staleness"):
        labels = [l.get_label() for l in jobs[name].make().axes[0].lines if not l.get_label().startswith("_")]
        assert labels == ["PS, bsp", "PS, ssp s=1"], name
