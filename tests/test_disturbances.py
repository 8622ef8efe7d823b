"""Background traffic and failure injection, without a network: the scenario fields and
their checks (every error names its field), the timeline of actions, the iperf3 command
lines, the kill targets, the driver's records, and how a run's events become spans and
markers on the time-series figures."""
from __future__ import annotations

import json
import threading

import pytest

from analysis.disturbance_marks import Marker, Span, disturbance_marks
from testbed.disturbance_driver import DisturbanceDriver
from testbed.disturbances import (BACKGROUND_BASE_PORT, Action, endpoint, iperf_client_args,
                                  process_names, resolve_target, timeline, wan_link)
from testbed.run_events import RunEventLog
from testbed.scenario import ScenarioError, parse_scenario
from topologies.graph import build_graph

BASE = """
name: dist
datacenters:
  - {name: a, lat: 0, lon: 0, workers_per_rack: 2}
  - {name: b, lat: 0, lon: 10}
  - {name: c, lat: 0, lon: 20}
wan: {topology: edges, edges: [{a: a, b: b}, {a: b, b: c}]}
scheme: ps
iterations: 3
"""


def scn(extra: str = "", overrides=()):
    return parse_scenario(BASE + extra, "d.yaml", overrides)


def problems(extra: str) -> list[str]:
    with pytest.raises(ScenarioError) as ei:
        scn(extra)
    return [str(p) for p in ei.value.problems]


# ---------------------------------------------------------------- the scenario fields
def test_good_fields_load_with_defaults():
    s = scn("""
background:
  - {src: a, dst: b, proto: udp, rate_mbps: 4, start_s: 2, stop_s: 10, on_s: 1, off_s: 0.5}
  - {src: c, dst: a}
failures:
  - {at_s: 5, link_down: [b, a], up_at_s: 7}
  - {at_s: 6, kill: ps0}
  - {at_s: 7, kill: "worker:h3r1w1"}
""")
    f0, f1 = s.background
    assert (f0.proto, f0.rate_mbps, f0.flows, f0.on_s, f0.off_s) == ("udp", 4.0, 1, 1.0, 0.5)
    assert (f1.proto, f1.rate_mbps, f1.start_s, f1.stop_s, f1.on_s) == ("tcp", None, 0.0, None, None)
    assert s.failures[0].link_down == ["b", "a"] and s.failures[0].up_at_s == 7.0
    assert s.failures[1].kill == "ps0" and s.failures[1].link_down is None
    # and they can be set from the command line like any field
    s2 = scn("background: [{src: a, dst: b}]\n", ["background.0.rate_mbps=3"])
    assert s2.background[0].rate_mbps == 3.0


def test_schema_problems_name_the_field():
    assert problems("""
background:
  - {src: a, dst: b, proto: udp}
  - {src: a, dst: b, start_s: 5, stop_s: 2, on_s: 1}
  - {src: a, dst: b, proto: quic, rate_mbps: 1}
  - {src: a, dst: b, rate_mbps: 0}
  - {src: a, dst: b, rate: 5}
failures:
  - {at_s: 3}
  - {at_s: 3, kill: ps0, link_down: [a, b]}
  - {at_s: 3, kill: ps0, up_at_s: 5}
  - {at_s: 3, link_down: [a, b], up_at_s: 2}
  - {at_s: 3, link_down: [a]}
""") == [
        "background.0: a udp flow needs rate_mbps (iperf3 sends UDP at a set rate)",
        "background.1: stop_s (2) must be after start_s (5); an on/off pattern needs both on_s and off_s",
        "background.2.proto: unknown proto 'quic' (known: tcp, udp)",
        "background.3.rate_mbps: must be > 0 (got 0)",
        "background.4.rate: unknown field 'rate' in background.4; did you mean 'rate_mbps'? (units are "
        "part of field names) (fields: src, dst, proto, rate_mbps, flows, start_s, stop_s, on_s, off_s)",
        "failures.0: give exactly one of kill or link_down",
        "failures.1: give exactly one of kill or link_down",
        "failures.2: up_at_s only applies to link_down",
        "failures.3: up_at_s (2) must be after at_s (3)",
        "failures.4.link_down: list should have at least 2 items after validation, not 1 (got ['a'])",
    ]


def test_whole_scenario_checks_list_what_exists():
    assert problems("""
background:
  - {src: a, dst: zz, proto: udp, rate_mbps: 3}
  - {src: b, dst: b, rate_mbps: 5}
failures:
  - {at_s: 5, link_down: [a, b], up_at_s: 9}
  - {at_s: 8, link_down: [b, a], up_at_s: 10}
  - {at_s: 20, link_down: [a, b]}
  - {at_s: 30, link_down: [a, b]}
  - {at_s: 1, link_down: [a, c]}
  - {at_s: 1, link_down: [q, a]}
  - {at_s: 2, kill: ps9}
  - {at_s: 2, kill: "worker:h1r1w2"}
  - {at_s: 3, kill: h1r1w2}
""") == [
        "background.0.dst: unknown datacenter 'zz' (datacenters: a, b, c)",
        "background.1: src and dst are the same datacenter ('b'); background traffic crosses the WAN",
        "failures.1.link_down: link b-a is already down then (failures.0: from 5 s to 9 s); down "
        "windows of one link must not overlap",
        "failures.3.link_down: link a-b is already down then (failures.2: from 20 s to the end); "
        "down windows of one link must not overlap",
        "failures.4.link_down: no WAN link between a and c in the edges topology",
        "failures.5.link_down.0: unknown datacenter 'q' (datacenters: a, b, c)",
        "failures.6.kill: scheme ps runs no process 'ps9' (processes: server:ps0, worker:h1r1w1, "
        "worker:h1r1w2, worker:h2r1w1, worker:h3r1w1)",
        "failures.8.kill: 'h1r1w2' is already killed by failures.7",
    ]


def test_a_kill_is_judged_against_the_scheme_in_use():
    # ring runs no server: the same file with scheme ring names what ring runs
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(BASE.replace("scheme: ps", "scheme: ring") + "failures: [{at_s: 1, kill: ps0}]\n", "d.yaml")
    assert [str(p) for p in ei.value.problems] == [
        "failures.0.kill: scheme ring runs no process 'ps0' (processes: worker:h1r1w1, worker:h1r1w2, "
        "worker:h2r1w1, worker:h3r1w1)"]


# ---------------------------------------------------------------- the timeline
def test_timeline_on_off_dilated_with_failures_in_order():
    s = scn("""
time_dilation: 2
background:
  - {src: a, dst: b, proto: udp, rate_mbps: 4, start_s: 1, stop_s: 4.5, on_s: 1, off_s: 0.5}
failures:
  - {at_s: 2.5, link_down: [a, b], up_at_s: 4}
  - {at_s: 4, kill: ps0}
""")
    got = [(a.t_s, a.kind, a.index, a.duration_s) for a in timeline(s.background, s.failures, 2.0, 100.0)]
    # on 1 s, off 0.5 s from 1 s, cut at 4.5 s; times x 2. At one instant: stops and link
    # ups, then kills and link downs, then starts
    assert got == [
        (2.0, "background_start", 0, 2.0),
        (4.0, "background_stop", 0, None),
        (5.0, "link_down", 0, None),
        (5.0, "background_start", 0, 2.0),
        (7.0, "background_stop", 0, None),
        (8.0, "link_up", 0, None),
        (8.0, "kill", 1, None),
        (8.0, "background_start", 0, 1.0),   # the last on-period is cut short by stop_s
        (9.0, "background_stop", 0, None),
    ]


def test_timeline_open_ended_flows_and_horizon():
    s = scn("""
background:
  - {src: a, dst: b}
  - {src: b, dst: c, start_s: 1, on_s: 2, off_s: 2}
failures:
  - {at_s: 3, link_down: [a, b]}
  - {at_s: 50, kill: ps0}
""")
    got = [(a.t_s, a.kind, a.index, a.duration_s) for a in timeline(s.background, s.failures, 1.0, 10.0)]
    # no stop: the continuous flow runs until teardown (no stop action, open duration);
    # the on/off one repeats up to the horizon; nothing at or after the horizon
    assert got == [(0.0, "background_start", 0, None),
                   (1.0, "background_start", 1, 2.0), (3.0, "background_stop", 1, None),
                   (3.0, "link_down", 0, None),
                   (5.0, "background_start", 1, 2.0), (7.0, "background_stop", 1, None),
                   (9.0, "background_start", 1, 1.0), (10.0, "background_stop", 1, None)]


def test_endpoints_links_and_iperf_commands():
    s = scn("""
time_dilation: 2
tcp: {congestion_control: reno}
background:
  - {src: a, dst: c, proto: udp, rate_mbps: 8, flows: 2}
  - {src: c, dst: a, rate_mbps: 3}
  - {src: c, dst: a}
""")
    g = build_graph(s, prefix="x")
    assert endpoint(g, "a") == "xh1r1w1" and endpoint(g, "c") == "xh3r1w1"
    with pytest.raises(ValueError, match="no datacenter 'zz'"):
        endpoint(g, "zz")
    assert wan_link(g, "b", "a") == ("xg1", "xg2")
    with pytest.raises(ValueError, match="no WAN link between a and c"):
        wan_link(g, "a", "c")
    udp = iperf_client_args(s.background[0], 0, "10.3.1.1", 2.5, 2.0, "reno")
    # 8 Mbps real over 2 streams at dilation 2: 2 emulated Mbps per stream; -t whole seconds
    assert udp == ["iperf3", "-c", "10.3.1.1", "-p", str(BACKGROUND_BASE_PORT), "-t", "4", "-P", "2",
                   "-i", "1", "--forceflush", "-u", "-l", "1400", "-b", "2000000"]
    tcp = iperf_client_args(s.background[1], 1, "10.1.1.1", None, 2.0, "reno")
    assert tcp[tcp.index("-p") + 1] == str(BACKGROUND_BASE_PORT + 1)
    assert tcp[tcp.index("-t") + 1] == "86400" and tcp[-4:] == ["-C", "reno", "-b", "1500000"]
    assert "-b" not in iperf_client_args(s.background[2], 2, "10.1.1.1", None, 2.0)


def test_kill_targets_resolve_by_kind_or_unique_bare_name():
    s = scn()
    g = build_graph(s, prefix="p")
    from schemes import get
    sch = get("ps")
    names = process_names(sch.plan(g, s, sch.parse_options({})), g)
    assert names["server:ps0"] == ("server", "ps0")
    assert names["worker:h2r1w1"] == ("worker", "ph2r1w1")   # the node carries the prefix
    assert resolve_target("ps0", names) == ("server", "ps0")
    assert resolve_target("worker:h1r1w2", names) == ("worker", "ph1r1w2")
    clash = {"server:x": ("server", "x"), "worker:x": ("worker", "x")}
    with pytest.raises(ValueError, match=r"'x' names 2 processes of the scheme \(server:x, worker:x\): "
                                         r"write one of them with its kind"):
        resolve_target("x", clash)
    with pytest.raises(ValueError, match=r"runs no process 'h9r1w1' \(processes: server:ps0, "):
        resolve_target("h9r1w1", names)


# ---------------------------------------------------------------- the driver
class FakeEffects:
    def __init__(self, fail_kind=None):
        self.fail_kind, self.seen = fail_kind, []

    def apply(self, a):
        self.seen.append(a.kind)
        if a.kind == self.fail_kind:
            raise RuntimeError("ps0 is not running")
        return {"pid": 123} if a.kind.startswith("background") else {}


def test_driver_records_every_action_and_goes_on_after_an_error(tmp_path):
    log = RunEventLog(tmp_path / "run_events.jsonl")
    actions = [Action(0.0, "background_start", 0, 0.05), Action(0.05, "background_stop", 0),
               Action(0.06, "kill", 0), Action(0.08, "link_down", 1)]
    d = DisturbanceDriver(actions, FakeEffects("kill"), log)
    d.start()
    d.join(5)
    recs = [json.loads(x) for x in (tmp_path / "run_events.jsonl").read_text().splitlines()]
    assert [(r["event"], r["t_s"]) for r in recs] == [("background_start", 0.0), ("background_stop", 0.05),
                                                      ("kill", 0.06), ("link_down", 0.08)]
    assert recs[2]["error"] == "ps0 is not running" and "error" not in recs[3]
    assert d.errors == ["kill at 0.06 s (emulated): ps0 is not running"]
    # each action at its time after t0 (never early)
    assert all(r["t"] - d.t0 >= r["t_s"] - 1e-3 for r in recs)


def test_driver_stop_ends_before_later_actions(tmp_path):
    log = RunEventLog(tmp_path / "e.jsonl")
    fx = FakeEffects()
    d = DisturbanceDriver([Action(0.0, "link_down", 0), Action(30.0, "link_up", 0)], fx, log)
    d.start()
    threading.Event().wait(0.2)
    d.stop()
    assert not d.is_alive() and fx.seen == ["link_down"]


def test_schedule_driver_writes_the_same_change_to_the_run_event_stream(tmp_path, monkeypatch):
    from testbed import lifecycle
    from testbed.dilation import dilate_graph
    from topologies import linkemu
    from topologies.schedule import BandwidthEvent
    monkeypatch.setattr(linkemu, "change_rate", lambda intf, mbps, run: None)
    g = dilate_graph(build_graph(scn()), 1)
    log = RunEventLog(tmp_path / "run_events.jsonl")
    d = lifecycle.ScheduleDriver(g, [BandwidthEvent(0.0, ("g1", "g2"), 5.0)], {}, tmp_path / "bw.jsonl",
                                 run_log=log)
    d.run()
    bw = json.loads((tmp_path / "bw.jsonl").read_text())
    (ev,) = [json.loads(x) for x in (tmp_path / "run_events.jsonl").read_text().splitlines()]
    assert ev == dict(bw, event="bandwidth_change")


# ---------------------------------------------------------------- figures
def test_marks_pair_starts_and_stops_and_skip_what_failed():
    t0 = 100.0
    recs = [
        {"event": "workload_start", "t": 98.0},
        {"event": "background_start", "t": 102.0, "flow": 0, "src": "a", "dst": "b", "proto": "udp",
         "rate_mbps": 4.0},
        {"event": "background_start", "t": 103.0, "flow": 1, "src": "b", "dst": "a", "proto": "tcp",
         "rate_mbps": None},
        {"event": "link_down", "t": 104.0, "datacenters": ["a", "b"]},
        {"event": "background_stop", "t": 106.0, "flow": 0},
        {"event": "link_up", "t": 107.0, "datacenters": ["a", "b"]},
        {"event": "kill", "t": 108.0, "process": "server:ps0"},
        {"event": "kill", "t": 109.0, "target": "h1r1w1", "error": "not running"},
        {"event": "background_start", "t": 110.0, "flow": 0, "error": "no such host"},
    ]
    spans, markers = disturbance_marks(recs, t0, 2.0, end_s=9.0)
    # real s since the job's start: (t - t0) / 2; flow 1 never stopped: it runs to end_s
    assert spans == [Span(1.0, 3.0, "a\u2192b UDP 4 Mbps"), Span(1.5, 9.0, "b\u2192a TCP")]
    assert markers == [Marker(2.0, "a-b down", "link_down"), Marker(3.5, "a-b up", "link_up"),
                       Marker(4.0, "kill server:ps0", "kill")]


def test_goodput_and_accuracy_figures_draw_spans_and_markers():
    import numpy as np
    from analysis import figures as F
    marks = ([Span(1.0, 3.0, "x"), Span(4.0, 5.0, "x")], [Marker(2.0, "a-b down", "link_down"),
                                                          Marker(4.5, "kill server:ps0", "kill")])
    t = np.linspace(0, 6, 7)
    for fig in (F.fig_goodput_time([("ps", t, t)], disturbances=marks),
                F.fig_accuracy_time([("ps", t, t / 6)], disturbances=marks)):
        ax = fig.axes[0]
        texts = [x.get_text().strip() for x in ax.texts]
        assert "a-b down" in texts and "kill server:ps0" in texts
        labels = ax.get_legend_handles_labels()[1]
        assert labels.count("background traffic") == 1 and labels.count("failure") == 1
        vlines = [ln for ln in ax.lines if list(ln.get_xdata()) in ([2.0, 2.0], [4.5, 4.5])]
        assert len(vlines) == 2
    plain = F.fig_goodput_time([("ps", t, t)])
    assert not plain.axes[0].texts and "failure" not in plain.axes[0].get_legend_handles_labels()[1]
