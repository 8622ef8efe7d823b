"""l3dml's rate-synchronization controller without Mininet: what it measures (compute per
datacenter from worker events, WAN rates from htb classes), when a new decision replaces the
one in force, the workers' pace files, and the controller driven through fake hooks
(switches answering with handles, worker events, tc classes, run events)."""
import json

import pytest

from schemes.base import RunHooks
from schemes.l3dml.controller import L3dmlControl, RateSync, controller
from schemes.l3dml.options import L3dmlOptions
from schemes.l3dml.pace_file import PaceFollower, write_pace
from schemes.l3dml.plan import plan, worker_pacing
import schemes.l3dml.flowmodel as flowmodel
import schemes.l3dml.policies as policies
import schemes.l3dml.replan as replan
from testbed.dilation import dilate_graph
from testbed.scenario import parse_scenario
from tests.test_inart_switchover import fake_replies, tc_text
from tests.test_l3dml_plan import MESH3
from topologies.graph import build_graph
from topologies.ports import interface_name


def ev(it, compute_s):
    return {"event": "iteration_end", "iteration": it, "compute_s": compute_s}


def mesh(options: str = "{root: a, policy: rule, window: 512, replan_interval_s: 1}"):
    text = MESH3.replace("scheme_options: {root: a, policy: rule, window: 512}",
                         f"scheme_options: {options}").replace("iterations: 3", "iterations: 8")
    scn = parse_scenario(text, "<mesh3>")
    g = dilate_graph(build_graph(scn))
    o = L3dmlOptions.model_validate(scn.scheme_options)
    return scn, g, o, plan(g, scn, o)


# ---------------------------------------------------------------- measuring

def test_measured_compute_is_each_datacenters_slowest_worker_over_the_last_iterations():
    dc_of = {"a1": 1, "a2": 1, "b1": 2}
    events = {"a1": [ev(0, 0.4), ev(1, 0.4), ev(2, 0.8)], "a2": [ev(0, 1.2), ev(1, 0.2)],
              "b1": [{"event": "iteration_start", "iteration": 0}]}
    assert replan.measured_compute_s(events, dc_of, 2, 2.0) is None     # b has not finished one
    events["b1"] += [ev(0, 2.0), ev(1, 4.0), ev(2, 6.0)]
    got = replan.measured_compute_s(events, dc_of, 2, 2.0)
    # dc 1: iteration 2 is not finished by a2; iterations 0, 1: max 1.2, 0.4 -> mean 0.8 / 2
    assert got == {1: pytest.approx(0.4), 2: pytest.approx(2.5)}
    assert replan.measured_compute_s(events, dc_of, 1, 1.0) == {1: pytest.approx(0.4), 2: 6.0}
    assert replan.furthest_iteration(events) == 2 and replan.furthest_iteration({}) == -1
    with pytest.raises(ValueError, match="window"):
        replan.measured_compute_s(events, dc_of, 0, 1.0)


def test_the_measured_iteration_takes_the_measured_starts_and_rates():
    scn, g, o, p = mesh()
    rt = p.runtime["l3dml"]
    it = rt["iteration"]
    m = replan.measured_iteration(it, rt["lead_s"], {2: 0.1}, {("g2", "g1"): 5e6, ("x", "y"): 1.0})
    b = next(s for s in m.streams if s.dc == 2)
    assert b.start_s == pytest.approx(0.1 + rt["lead_s"][2])
    assert m.wan.edges["g2", "g1"]["rate_bps"] == 5e6 and it.wan.edges["g2", "g1"]["rate_bps"] == 20e6
    assert [s.start_s for s in m.streams if s.dc != 2] == [s.start_s for s in it.streams if s.dc != 2]


def test_the_plans_decision_is_the_policys_on_the_scenarios_iteration():
    scn, g, o, p = mesh()
    rt = p.runtime["l3dml"]
    d = replan.decide(rt["iteration"], policies.rule, rt["tree"].window, "chunk")
    assert d == rt["decision"]
    assert not replan.differs(d, d, 0.1)
    for h, pace in worker_pacing(g, p.comm, d, p.info["k"], scn.time_dilation).items():
        assert p.comm[h]["client"]["max_rate_pps"] == pace["max_rate_pps"]
        assert p.comm[h]["start_delay_s"] == pace["start_delay_s"]


def test_a_decision_differs_by_its_paths_its_caps_or_its_delays_beyond_the_threshold():
    scn, g, o, p = mesh()
    d = p.runtime["l3dml"]["decision"]
    caps = {dc: c * 1.05 for dc, c in d.caps_bps.items()}
    assert replan.differs(d, replan.Decision(d.allocation, d.ranges, d.delays_s, caps, d.last_arrival_s, d.completion_s), 0.1) == []
    caps = {dc: c * 1.2 for dc, c in d.caps_bps.items()}
    assert replan.differs(d, replan.Decision(d.allocation, d.ranges, d.delays_s, caps, d.last_arrival_s, d.completion_s), 0.1) == ["rates"]
    delays = {dc: x + 0.5 * d.last_arrival_s for dc, x in d.delays_s.items()}
    assert replan.differs(d, replan.Decision(d.allocation, d.ranges, delays, d.caps_bps, d.last_arrival_s, d.completion_s), 0.1) == ["delays"]
    ranges = {dc: ((0, 511, 0),) for dc in d.ranges}
    assert replan.differs(d, replan.Decision(d.allocation, ranges, d.delays_s, d.caps_bps, d.last_arrival_s, d.completion_s), 0.1) == ["paths"]


# ---------------------------------------------------------------- the workers' pace files

def test_a_worker_takes_the_newest_pacing_in_force_once(tmp_path):
    f = PaceFollower(tmp_path / "pace", "w1")
    assert f.at(0) is None                                  # no folder yet
    write_pace(tmp_path / "pace", 1, 3, {"w1": {"max_rate_pps": 10.0, "start_delay_s": 0.0}})
    assert f.at(2) is None                                  # not in force before iteration 3
    write_pace(tmp_path / "pace", 2, 4, {"w1": {"max_rate_pps": 20.0, "start_delay_s": 0.5}})
    assert f.at(5) == {"max_rate_pps": 20.0, "start_delay_s": 0.5}   # a late worker: the newest
    assert f.seq == 2 and f.at(6) is None                   # applied once
    write_pace(tmp_path / "pace", 3, 6, {"w2": {"max_rate_pps": 1.0, "start_delay_s": 0.0}})
    with pytest.raises(RuntimeError, match="no pacing for worker w1"):
        f.at(6)
    assert not list((tmp_path / "pace").glob("*.tmp"))


# ---------------------------------------------------------------- the controller

class FakeRun:
    """The run as the controller sees it: switches answering with handles, worker events,
    every WAN direction's htb class."""

    def __init__(self, tmp_path, g, p, scn):
        self.pushes: list[tuple[str, list[str]]] = []
        self.records: list[dict] = []
        self.events = {w: [] for w in p.comm}
        self.mbps = {(u, v): g.edges[u, v]["bandwidth_mbps"] for u, v in
                     p.runtime["l3dml"]["iteration"].wan.edges}
        self.intf = {interface_name(g, u, v): (u, v) for u, v in self.mbps}
        pushed = {sw: (cmds, fake_replies(cmds)) for sw, cmds in p.switch_commands.items()}
        self.hooks = RunHooks(run_dir=tmp_path, pushed=pushed, push=self.push,
                              start_server=None, wait_server=None, stop_server=None,
                              worker_events=lambda: self.events,
                              record=lambda event, **f: self.records.append({"event": event, **f}),
                              read_tc=lambda i: tc_text(self.mbps[self.intf[i]]))
        self.g, self.dilation = g, scn.time_dilation

    def push(self, sw, cmds):
        self.pushes.append((sw, list(cmds)))
        return fake_replies(cmds)

    def finish(self, it, real_compute_s: dict):
        """Every worker finishes iteration `it` with its datacenter's compute time."""
        for w, es in self.events.items():
            es.append(ev(it, real_compute_s[self.g.nodes[w]["dc_index"]] * self.dilation))


def test_no_rate_sync_without_replan_interval(tmp_path):
    scn, g, o, p = mesh("{root: a, policy: rule, window: 512}")
    c = controller(g, scn, o, p, FakeRun(tmp_path, g, p, scn).hooks)
    assert isinstance(c, L3dmlControl) and c.resync is None and c.repair is not None


def test_the_controller_re_decides_on_what_it_measures_and_installs_what_differs(tmp_path):
    scn, g, o, p = mesh()
    run = FakeRun(tmp_path, g, p, scn)
    c = controller(g, scn, o, p, run.hooks)
    rs = c.resync
    assert isinstance(rs, RateSync)
    assert all(p.comm[w]["pace_dir"] == str(tmp_path / "workers" / "pace") for w in p.comm)
    rs.step()                                  # nothing finished yet: nothing measured
    assert (rs.checks, run.pushes, rs.plans) == (0, [], [])
    # the scenario's compute (b 4 x 100 ms): the plan's decision stands
    run.finish(0, {1: 0.1, 2: 0.4, 3: 0.1})
    rs.step()
    assert (rs.checks, run.pushes, rs.plans) == (1, [], [])
    # b's direct link to the root drops to 4 Mbps: more of b over c
    run.mbps[("g2", "g1")] = 4.0 / scn.time_dilation
    run.finish(1, {1: 0.1, 2: 0.4, 3: 0.1})
    old = dict(rs.paths)
    rs.step()
    assert rs.checks == 2 and len(rs.plans) == 1
    rec = rs.plans[0]
    assert "paths" in rec["why"] and rec["from_iteration"] == 2
    assert rec["wan_mbps"]["g2-g1"] == pytest.approx(4.0)
    b_old, b_new = rec["old"]["split"][2], rec["new"]["split"][2]
    assert b_new[0] < b_old[0]                 # less of b on its direct link
    deleted = [cmd for _, cmds in run.pushes for cmd in cmds if cmd.startswith("table_delete")]
    assert len(deleted) == sum(len(cmds) for cmds, _ in old.values())
    assert all("MyIngress.agg_path" in cmd for cmd in deleted)
    added = [cmd for _, cmds in run.pushes for cmd in cmds if cmd.startswith("table_add")]
    assert added and all("MyIngress.agg_path" in cmd for cmd in added)
    assert rec["path_entries_changed"] == len(deleted) + len(added)
    # the workers' pacing, from the iteration after the furthest one
    data = json.loads((tmp_path / "workers" / "pace" / "pace-1.json").read_text())
    assert data["from_iteration"] == 2 and set(data["workers"]) == set(p.comm)
    assert data["workers"] == worker_pacing(g, list(p.comm), rs.current, p.info["k"], scn.time_dilation)
    assert [r["event"] for r in run.records] == ["replan"]
    # the same measurements again: nothing more to install
    run.finish(2, {1: 0.1, 2: 0.4, 3: 0.1})
    n = len(run.pushes)
    rs.step()
    assert len(rs.plans) == 1 and len(run.pushes) == n
    # b recovers and c slows down: the decision follows (c's delay, the caps)
    run.mbps[("g2", "g1")] = 20.0 / scn.time_dilation
    for it in (3, 4):
        run.finish(it, {1: 0.1, 2: 0.1, 3: 0.4})
    rs.step()
    assert len(rs.plans) == 2 and rs.plans[1]["seq"] == 2 and rs.plans[1]["compute_s"][3] == pytest.approx(0.4)
    assert (tmp_path / "workers" / "pace" / "pace-2.json").exists()
    # past the last iteration's start: the controller is done
    run.finish(scn.iterations - 1, {1: 0.1, 2: 0.1, 3: 0.4})
    rs.step()
    assert rs.finished
    s = c.summary()
    assert s["replan"]["checks"] == rs.checks and len(s["replan"]["plans"]) == 2 and s["error"] is None


def test_a_failing_step_is_reported_and_ends_the_controller(tmp_path):
    scn, g, o, p = mesh("{root: a, policy: rule, window: 512, replan_interval_s: 0.01, repair: false}")
    run = FakeRun(tmp_path, g, p, scn)
    run.finish(0, {1: 0.1, 2: 0.4, 3: 0.1})
    run.hooks.read_tc = lambda intf: (_ for _ in ()).throw(OSError("tc: not found"))
    c = controller(g, scn, o, p, run.hooks)
    assert c.repair is None
    c.start()
    c.resync.join(timeout=10)
    c.stop()
    assert "tc: not found" in c.summary()["error"]
    assert run.records[-1]["event"] == "replan_error"


def test_setup_must_have_pushed_the_plans_path_entries(tmp_path):
    scn, g, o, p = mesh()
    run = FakeRun(tmp_path, g, p, scn)
    sw = next(iter(p.runtime["l3dml"]["path_commands"]))
    cmds, replies = run.hooks.pushed[sw]
    run.hooks.pushed[sw] = (cmds[:-1], replies[:-1])
    with pytest.raises(ValueError, match="agg_path entries"):
        controller(g, scn, o, p, run.hooks)


def test_the_workers_communicator_applies_the_newest_pacing_before_it_aggregates(tmp_path, monkeypatch):
    """L3dmlCommunicator: before an aggregation it takes the pace file in force (rate cap
    on its client, start delay slept), then aggregates as ina's does (the UDP exchange is
    replaced here by the sum of one worker: no switch to talk to)."""
    import numpy as np
    import schemes.ina.communicator as ina_comm
    from schemes.l3dml.communicator import L3dmlCommunicator
    from workers.communicator import Me
    scn, g, o, p = mesh()
    w = next(iter(p.comm))
    comm = {**p.comm[w], "pace_dir": str(tmp_path / "pace")}
    comm["client"] = {**comm["client"], "core": "python"}
    seen = []

    def fake_aggregate(sock, client, q, **kw):
        seen.append((client.pacer.max_rate, c.start_delay_s))
        return q
    monkeypatch.setattr(ina_comm.ina_udp, "aggregate", fake_aggregate)
    monkeypatch.setattr(ina_comm.time, "sleep", lambda s: seen.append(("slept", s)))
    c = L3dmlCommunicator(comm, Me(w, 0, 1, "127.0.0.1", scn.time_dilation))
    first = (comm["client"]["max_rate_pps"], comm["start_delay_s"])
    grad = np.linspace(-1, 1, 64)
    c.allreduce(grad, 0)
    write_pace(tmp_path / "pace", 1, 1, {w: {"max_rate_pps": 123.0, "start_delay_s": 0.25}})
    out = c.allreduce(grad, 1)
    np.testing.assert_allclose(out, grad, atol=c.bound)
    got = [x for x in seen if x[0] != "slept"]
    assert got[0] == first and got[1] == (123.0, 0.25)
    assert ("slept", 0.25) in seen and c.stats()["pace_seq"] == 1
    c.close()
