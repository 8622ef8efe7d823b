"""inart's re-planning at run time without Mininet: job banks, the commands that add a second
plan beside the first and take the first away, the /32 route diff, the switch-over
iteration, the workers' plan follower, and the controller driven by a sequence of polled
rates through fake hooks (switch replies, servers, worker events, run events)."""
import json

import numpy as np
import pytest

import schemes
from control.agg_entries import removal_commands, switch_commands
from control.path_routes import route_updates
from control.routes import RouteEntry
from schemes.base import RunHooks
from schemes.inart.controller import ReplanController, make_controller
from schemes.inart.switchover import (PlanFollower, all_moved_on, bank_layout, check_banks,
                                      next_bank, polled_interfaces, rates_from_tc,
                                      switchover_iteration, write_plan_file)
from testbed.dilation import dilate_graph
from testbed.scenario import parse_scenario
from topologies.graph import build_graph

SCENARIO = """
name: inart-switchover
seed: 2
datacenters:
  - {name: a, lat: 0, lon: 0, racks: 2, workers_per_rack: 2}
  - {name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 2}
wan:
  default: {bandwidth_mbps: 20, delay_ms: 10}
intra_dc:
  access: {bandwidth_mbps: 50, delay_ms: 0}
  uplink: {bandwidth_mbps: 100, delay_ms: 0}
scheme: inart
scheme_options: {num_servers: 2, fan_in: 2, replan_interval_s: 0.5}
workload: {kind: synthetic, parameters: 4096}
iterations: 20
"""


def setup(extra_options: str = ""):
    text = SCENARIO.replace("replan_interval_s: 0.5", "replan_interval_s: 0.5" + extra_options)
    scn = parse_scenario(text, "<inart-switchover>")
    g = dilate_graph(build_graph(scn))
    scheme = schemes.get("inart")
    o = scheme.parse_options(scn.scheme_options)
    return scn, g, o, scheme.plan(g, scn, o)


# ---------------------------------------------------------------- banks

def test_banks_alternate_jobs_and_split_every_switch_in_halves():
    b0, b1 = bank_layout(1, 2, 2048, 0), bank_layout(1, 2, 2048, 1)
    assert (b0.jobs, b0.slot_base, b0.slots) == ((1, 2), 0, 1024)
    assert (b1.jobs, b1.slot_base, b1.slots) == ((3, 4), 1024, 1024)
    assert b1.first_group > b0.first_group and b1.first_rid > b0.first_rid
    assert [next_bank(0), next_bank(1)] == [1, 0]
    check_banks(252, 2)                       # jobs 252..255
    with pytest.raises(ValueError, match="scheme_options.job: re-planning needs 2 banks"):
        check_banks(253, 2)
    with pytest.raises(ValueError, match="bank must be"):
        bank_layout(1, 2, 2048, 2)


def test_a_plan_with_replanning_reserves_half_the_slots_and_both_banks_fit_side_by_side():
    scn, g, o, p = setup()
    ip, k = p.runtime["inart"], p.runtime["k"]
    assert p.runtime["options"].slots == 1024 and p.info["jobs"] == [1, 2]
    from schemes.inart.plan import materialize
    q = materialize(g, scn, p.runtime["options"], ip, k, bank=1)
    assert q.info["jobs"] == [3, 4]
    for sw in set(p.runtime["agg_commands"]) | set(q.switch_commands):
        both = p.runtime["agg_commands"].get(sw, []) + q.switch_commands.get(sw, [])
        points = [c.split() for c in both if c.startswith("table_add MyIngress.agg_points")]
        keys = [(w[3], w[4]) for w in points]
        assert len(set(keys)) == len(keys), sw
        ranges = sorted((int(w[7]), int(w[7]) + int(w[8])) for w in points)
        assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), (sw, ranges)
        groups = [c for c in both if c.startswith("mc_mgrp_create")]
        assert len(set(groups)) == len(groups), sw
        rids = [c.split()[3] for c in both if c.startswith("table_add MyEgress.agg_children")]
        assert len(set(rids)) == len(rids), sw
    # the server processes of the new bank are new ones (their own names and jobs)
    assert {s.name for s in q.servers}.isdisjoint({s.name for s in p.servers})


def test_switch_commands_refuse_a_bank_too_small_for_its_points():
    scn, g, o, p = setup()
    from schemes.inart.plan import server_trees
    trees = server_trees(g, p.runtime["inart"], p.runtime["options"], (3, 4), slots=10**6)   # whole points
    with pytest.raises(ValueError, match="aggregation slots for these trees"):
        switch_commands(g, trees, slots=trees[0].window - 1, slot_base=1024)


# ---------------------------------------------------------------- removing a plan's entries

def fake_replies(cmds, counter=[100]):
    out = []
    for c in cmds:
        counter[0] += 1
        if c.startswith("table_add"):
            out.append(f"Adding entry\nEntry has been added with handle {counter[0]}")
        elif c.startswith("mc_node_create"):
            out.append(f"Creating node\nnode was created with handle {counter[0]}")
        else:
            out.append("")
    return out


def test_removal_commands_undo_entries_nodes_and_groups_by_handle():
    cmds = ["table_add MyIngress.agg_points MyIngress.agg_point 3 10.1.1.254 => 0 1024 64 2 257 "
            "10.0.1.1 1 3", "mc_mgrp_create 257",
            "table_add MyEgress.agg_children MyEgress.set_child 513 => 10.1.1.1 00:00:00:00:00:01",
            "mc_node_create 513 1", "mc_node_associate 257 $n0", "register_write MyIngress.r_gen 2048 0"]
    replies = ["Entry has been added with handle 7", "", "Entry has been added with handle 9",
               "node was created with handle 4", "", ""]
    assert removal_commands(cmds, replies) == [
        "mc_node_dissociate 257 4", "mc_node_destroy 4", "mc_mgrp_destroy 257",
        "table_delete MyIngress.agg_points 7", "table_delete MyEgress.agg_children 9"]
    with pytest.raises(ValueError, match="6 commands but 5 replies"):
        removal_commands(cmds, replies[:5])
    with pytest.raises(ValueError, match="no entry handle in the reply"):
        removal_commands(cmds[:1], ["Error: table full"])


def test_route_updates_modify_add_and_delete_by_handle():
    e = lambda sw, pfx, nh, port: RouteEntry(sw, pfx, nh, f"00:00:00:00:00:0{port}", port)
    old = {"g1": [e("g1", "10.2.1.2/32", "g2", 3), e("g1", "10.1.0.254/32", "s1r1", 1)],
           "s1r1": [e("s1r1", "10.2.1.2/32", "g1", 2)]}
    new = {"g1": [e("g1", "10.2.1.2/32", "s1r2", 4), e("g1", "10.2.0.254/32", "g2", 3)],
           "s1r1": [e("s1r1", "10.2.1.2/32", "g1", 2)]}
    handles = {("g1", "10.2.1.2/32"): 11, ("g1", "10.1.0.254/32"): 12, ("s1r1", "10.2.1.2/32"): 13}
    ups = route_updates(old, new, handles)
    assert [(u.switch, u.prefix, u.kind) for u in ups] == [
        ("g1", "10.2.1.2/32", "modify"), ("g1", "10.2.0.254/32", "add"), ("g1", "10.1.0.254/32", "delete")]
    assert ups[0].command == "table_modify MyIngress.ipv4_lpm MyIngress.ipv4_forward 11 00:00:00:00:00:04 4"
    assert ups[1].command.startswith("table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.2.0.254/32 =>")
    assert ups[2].command == "table_delete MyIngress.ipv4_lpm 12"
    assert route_updates(old, old, handles) == []
    with pytest.raises(ValueError, match="switch g1: no table handle recorded for the route to 10.2.1.2/32"):
        route_updates(old, new, {})


# ---------------------------------------------------------------- when, and the workers' side

def ev(kind, it):
    return {"event": kind, "iteration": it}


def test_switchover_iteration_is_ahead_of_every_worker_and_inside_the_run():
    events = {"w1": [ev("iteration_start", 0), ev("iteration_start", 1)], "w2": [ev("iteration_start", 0)]}
    assert switchover_iteration(events, 2, 10) == 3
    assert switchover_iteration({}, 2, 10) == 2           # before iteration 0 starts
    assert switchover_iteration(events, 2, 3) is None     # iteration 3 does not exist
    assert switchover_iteration(events, 2, None) == 3     # duration-limited run
    with pytest.raises(ValueError, match="at least 2"):
        switchover_iteration(events, 1, 10)


def test_all_moved_on_needs_every_worker_past_the_old_plans_last_iteration():
    events = {"w1": [ev("last_result", 4)], "w2": [ev("last_result", 3)]}
    assert not all_moved_on(events, ["w1", "w2"], 5)
    events["w2"].append(ev("last_result", 4))
    assert all_moved_on(events, ["w1", "w2"], 5)
    assert not all_moved_on(events, ["w1", "w2", "w3"], 5)   # w3 silent
    assert all_moved_on({**events, "w3": [{"event": "worker_end"}]}, ["w1", "w2", "w3"], 5)


def test_plan_follower_switches_at_exactly_the_announced_iteration(tmp_path):
    f = PlanFollower(tmp_path, "w1")
    assert f.at(0) is None and f.at(1) is None
    write_plan_file(tmp_path, 1, 3, {"w1": {"x": 1}, "w2": {"x": 2}}, [3, 4])
    assert f.at(2) is None and f.seq == 0
    assert f.at(3) == {"x": 1} and f.seq == 1
    assert f.at(4) is None
    write_plan_file(tmp_path, 2, 5, {"w1": {"x": 3}}, [1, 2])
    assert f.at(5) == {"x": 3} and f.seq == 2
    late = PlanFollower(tmp_path, "w1")
    late.seq = 1
    with pytest.raises(RuntimeError, match="already at 6; raise scheme_options.replan_ahead"):
        late.at(6)
    other = PlanFollower(tmp_path, "w9")
    with pytest.raises(RuntimeError, match="no configuration for worker w9"):
        other.at(0)
    assert not list(tmp_path.glob("*.tmp"))


# ---------------------------------------------------------------- the controller

def tc_text(mbps):
    return f"class htb 5:1 root leaf 10: prio 0 rate {mbps:g}Mbit ceil {mbps:g}Mbit burst 1600b cburst 1600b\n"


class Fakes:
    """The run as the controller sees it: switches answering with handles, servers, events."""

    def __init__(self, tmp_path, g, plan):
        self.rates = {arc: g.edges[arc]["bandwidth_mbps"] for arc in polled_interfaces(g)}
        self.intf = {intf: arc for arc, intf in polled_interfaces(g).items()}
        self.pushes: list[tuple[str, list[str]]] = []
        self.started, self.stopped, self.records, self.bound = [], [], [], []
        self.events: dict[str, list[dict]] = {w: [] for w in plan.workers}
        pushed = {sw: (cmds, fake_replies(cmds)) for sw, cmds in plan.switch_commands.items()}
        self.hooks = RunHooks(run_dir=tmp_path, pushed=pushed, push=self.push,
                              start_server=lambda s, text: self.started.append(s.name) or 4242,
                              wait_server=lambda name, text: self.bound.append(name),
                              stop_server=lambda name: self.stopped.append(name) or {"stats": 1},
                              worker_events=lambda: self.events,
                              record=lambda event, **f: self.records.append({"event": event, **f}),
                              read_tc=lambda intf: tc_text(self.rates[self.intf[intf]]))

    def push(self, sw, cmds):
        self.pushes.append((sw, list(cmds)))
        return fake_replies(cmds)

    def at_iteration(self, it):
        for es in self.events.values():
            es += [ev("iteration_start", it), ev("last_result", it)]


def controller(tmp_path, extra=""):
    scn, g, o, plan = setup(extra)
    fakes = Fakes(tmp_path, g, plan)
    c = make_controller(g, scn, o, plan, fakes.hooks)
    return c, fakes, g, plan


def test_no_controller_without_replan_interval(tmp_path):
    scn, g, o, plan = setup()
    o = o.model_copy(update={"replan_interval_s": None})
    assert make_controller(g, scn, o, plan, None) is None


def test_controller_decides_from_polled_rates_and_hands_over_at_an_iteration(tmp_path):
    c, fakes, g, plan = controller(tmp_path)
    assert isinstance(c, ReplanController)
    assert all(plan.comm[w]["replan_dir"] == str(tmp_path / "workers" / "replan") for w in plan.workers)
    fakes.at_iteration(0)
    c.step()                                  # rates as planned
    assert (c.checks, fakes.pushes, c.plans) == (1, [], [])
    wan = [arc for arc in fakes.rates if g.edges[arc]["kind"] == "wan"]
    for arc in wan:
        fakes.rates[arc] = 18.0               # 10 % drift: under the 20 % threshold
    c.step()
    assert (c.checks, fakes.pushes, c.plans) == (2, [], [])
    fakes.rates[("g1", "s1r1")] = 1.0         # down into rack 1: no planned stream goes there
    c.step()
    assert (c.checks, fakes.pushes, c.plans) == (3, [], [])
    for arc in wan:
        fakes.rates[arc] = 5.0                # the WAN every PS's remote streams cross
    fakes.at_iteration(1)
    c.step()
    assert c.checks == 4 and len(c.plans) == 1
    rec = c.plans[0]
    assert rec["from_iteration"] == 3 and rec["old_jobs"] == [1, 2] and rec["new_jobs"] == [3, 4]
    assert rec["decision"]["must_replan"] and rec["decision"]["moved"]
    assert all(m["now_mbps"] == 5.0 for m in rec["decision"]["moved"] if "g1" in m["path"] and "g2" in m["path"])
    assert sorted(fakes.started) == ["ps3", "ps4"] and fakes.stopped == []
    assert rec["new_servers"] == {"ps3": 4242, "ps4": 4242}
    # the new bank's points went in, and /32 routes were replaced rather than added beside
    pushed = [cmd for _, cmds in fakes.pushes for cmd in cmds]
    assert any(cmd.startswith("table_add MyIngress.agg_points MyIngress.agg_point 3 ") for cmd in pushed)
    assert not any(cmd.startswith("table_add MyIngress.agg_points MyIngress.agg_point 1 ") for cmd in pushed)
    lpm = [(sw, cmd) for sw, cmds in fakes.pushes for cmd in cmds if "MyIngress.ipv4_lpm" in cmd]
    assert len(lpm) == sum(rec["route_updates"].values()) > 0
    before = {(sw, e.prefix) for sw, es in plan.runtime["routes"].items() for e in es}
    assert all((sw, cmd.split()[3]) not in before for sw, cmd in lpm if cmd.startswith("table_add"))
    assert c.routes != plan.runtime["routes"]
    # every worker gets its configuration for the new trees, from iteration 3
    data = json.loads((tmp_path / "workers" / "replan" / "plan-1.json").read_text())
    assert data["from_iteration"] == 3 and set(data["comm"]) == set(plan.workers)
    assert {cl["job"] for w in plan.workers for cl in data["comm"][w]["clients"]} == {3, 4}
    assert [r["event"] for r in fakes.records] == ["replan"]
    # the old plan stays until every worker has iteration 2's sum
    n = len(fakes.pushes)
    fakes.at_iteration(2)
    fakes.events[plan.workers[0]].pop()       # one worker still waits for iteration 2's sum
    c.step()
    assert fakes.stopped == [] and len(fakes.pushes) == n and c.pending is not None
    fakes.events[plan.workers[0]].append(ev("last_result", 2))
    c.step()
    assert sorted(fakes.stopped) == ["ps1", "ps2"] and c.pending is None and rec["retired"]
    assert sorted(fakes.bound) == ["ps3", "ps4"]       # the successors took the ports over
    removed = [cmd for _, cmds in fakes.pushes[n:] for cmd in cmds]
    assert any(cmd.startswith("table_delete MyIngress.agg_points") for cmd in removed)
    assert any(cmd.startswith("mc_mgrp_destroy") for cmd in removed)
    assert fakes.records[-1]["event"] == "replan_retired"
    # a later change goes back to bank 0's jobs (the old bank was removed)
    for arc in wan:
        fakes.rates[arc] = 20.0
    fakes.at_iteration(3)
    c.step()
    assert len(c.plans) == 2 and c.plans[1]["new_jobs"] == [1, 2] and c.plans[1]["old_jobs"] == [3, 4]


def test_controller_takes_back_a_plan_the_run_ends_before(tmp_path):
    c, fakes, g, plan = controller(tmp_path)
    for arc in fakes.rates:
        if g.edges[arc]["kind"] == "wan":
            fakes.rates[arc] = 5.0
    fakes.at_iteration(16)
    # the furthest worker reaches iteration 18 while the new plan is being installed
    start = fakes.hooks.start_server
    fakes.hooks.start_server = lambda s, t: (start(s, t), fakes.at_iteration(18))
    c.hooks = fakes.hooks
    c.step()
    assert c.plans == [] and c.finished
    assert sorted(fakes.stopped) == sorted(fakes.started) == ["ps3", "ps4"]
    assert fakes.records[-1]["event"] == "replan_skipped"
    assert not (tmp_path / "workers" / "replan" / "plan-1.json").exists()
    # every route is back as the first plan had it
    assert c.routes == {sw: list(es) for sw, es in plan.runtime["routes"].items()}


def test_controller_stops_when_no_switch_over_fits_and_reports_errors(tmp_path):
    c, fakes, g, plan = controller(tmp_path)
    fakes.at_iteration(18)
    c.step()
    assert c.finished and c.checks == 0
    c2, fakes2, _, _ = controller(tmp_path / "b")
    fakes2.hooks.read_tc = lambda intf: (_ for _ in ()).throw(OSError("tc: not found"))
    c2.hooks = fakes2.hooks
    c2.o = c2.o.model_copy(update={"replan_interval_s": 0.01})
    c2.start()
    c2.join(5)
    assert c2.error == "OSError: tc: not found"
    assert fakes2.records[-1] == {"event": "replan_error", "error": "OSError: tc: not found"}
    assert c2.summary()["error"] == c2.error


def test_rates_from_tc_reads_htb_classes_and_skips_unreadable_ones():
    assert rates_from_tc({("a", "b"): tc_text(12.5), ("b", "a"): ""}) == {("a", "b"): 12.5}
    assert np.isclose(rates_from_tc({("a", "b"): tc_text(2500)})[("a", "b")], 2500)


def test_controller_removes_each_node_of_the_first_plan_once_even_with_equal_commands(tmp_path):
    c, fakes, g, plan = controller(tmp_path)
    for sw, cmds in c.removal.items():
        destroyed = [x for x in cmds if x.startswith("mc_node_destroy")]
        assert len(destroyed) == len(set(destroyed)) == \
            sum(1 for x in plan.runtime["agg_commands"][sw] if x.startswith("mc_node_create")), sw
