"""Run-time part of scheme l3dml (summary.json app["l3dml"]):

  switch_repair  at the end of a run, the aggregation events of the switches that repair WAN
                 losses and of the root's switch (timers' re-sends, timers ended or given
                 up, duplicates answered), read from their agg_events counters
  replan         with `replan_interval_s`, the rate-synchronization controller: a thread of
                 the run (root namespace) that every interval (emulated s)
                   1. measures: each datacenter's slowest worker's compute time over its
                      last `replan_window` iterations (worker progress events) and every
                      WAN link's rate (its htb class: bandwidth schedules);
                   2. decides: the policy on the flow model of the measured iteration
                      (replan.py; the plan's decision is the first one in force);
                   3. if the decision differs (replan.differs: slot ranges, a cap by more
                      than `replan_threshold`, a start delay by more than that x the
                      iteration's last arrival) installs it: the old agg_path entries
                      deleted by handle and the new ones added (a frame between the two
                      follows the routes: exactly once does not depend on the path), and
                      pace-<n>.json for the workers, in force from the iteration after
                      the furthest one started (pace_file.py, communicator.py).
                 Each install is a `replan` record of run_events.jsonl (replan_error when a
                 step fails; the run then reports it).
"""
from __future__ import annotations

import time

from control.agg_entries import event_reads, parse_events, removal_commands
import schemes.l3dml.pace_file as pace_file
import schemes.l3dml.policies as policies
import schemes.l3dml.replan as replan
import schemes.l3dml.routing as routing
from schemes.base import PeriodicController
from schemes.l3dml.plan import worker_pacing
from topologies.linkemu import parse_htb_rate_bps
from topologies.ports import interface_name


class RepairCounters:
    def __init__(self, switches: list[str], push):
        self.switches, self.push = switches, push
        self.events: dict[str, dict[str, int]] = {}
        self.error: str | None = None

    def read(self) -> None:
        if self.events or self.error:
            return
        try:
            for sw in self.switches:
                self.events[sw] = parse_events(self.push(sw, event_reads()))
        except Exception as e:      # the run's results stand without these counts: say why
            self.error = f"reading the switches' agg_events failed: {e}"

    def summary(self) -> dict:
        return {"events": self.events, "error": self.error}


class RateSync(PeriodicController):
    def __init__(self, graph, scenario, plan, hooks):
        rt = plan.runtime["l3dml"]
        super().__init__("l3dml-replan", rt["options"].replan_interval_s, hooks)
        self.graph, self.o = graph, rt["options"]
        self.iterations, self.dilation = scenario.iterations, scenario.time_dilation
        self.it0, self.current, self.tree = rt["iteration"], rt["decision"], rt["tree"]
        self.loops, self.lead = rt["loops"], rt["lead_s"]
        self.policy = policies.policy(self.o.policy)
        self.k = plan.info["k"]
        self.workers = list(plan.comm)
        self.dc_of = {w: graph.nodes[w]["dc_index"] for w in self.workers}
        self.folder = hooks.run_dir / "workers" / "pace"
        for w in self.workers:
            plan.comm[w]["pace_dir"] = str(self.folder)
        self.arcs = {(u, v): interface_name(graph, u, v) for u, v in self.it0.wan.edges}
        self.paths = self._setup_paths(hooks.pushed, rt["path_commands"])
        self.seq = self.checks = 0
        self.plans: list[dict] = []

    @staticmethod
    def _setup_paths(pushed, path_commands) -> dict[str, tuple[list[str], list[str]]]:
        """switch -> (agg_path commands in force, their replies): the plan appends them to
        each switch's commands, so they are the tail of what setup pushed."""
        out = {}
        for sw, cmds in path_commands.items():
            done, replies = pushed[sw]
            if done[len(done) - len(cmds):] != cmds:
                raise ValueError(f"switch {sw}: the commands pushed at setup do not end with the "
                                 "plan's agg_path entries; push the plan's commands as given")
            out[sw] = (list(cmds), list(replies[len(replies) - len(cmds):]))
        return out

    def summary(self) -> dict:
        return {"interval_s": self.o.replan_interval_s, "window": self.o.replan_window,
                "threshold": self.o.replan_threshold, "checks": self.checks,
                "plans": self.plans, "error": self.error}

    # ------------------------------------------------------------------ one poll
    def measure(self, events) -> tuple | None:
        """(real-world iteration, measured compute) or None before every datacenter has a
        finished iteration."""
        compute = replan.measured_compute_s(events, self.dc_of, self.o.replan_window, self.dilation)
        if compute is None:
            return None
        rates = {}
        for arc, intf in self.arcs.items():
            bps = parse_htb_rate_bps(self.hooks.read_tc(intf))
            if bps is not None:
                rates[arc] = bps * self.dilation          # the emulation runs 1/s of real rates
        return replan.measured_iteration(self.it0, self.lead, compute, rates), compute

    def step(self) -> None:
        events = self.hooks.worker_events()
        start = replan.furthest_iteration(events) + 1
        if start >= self.iterations:
            self.finished = True          # no iteration left to re-pace
            return
        got = self.measure(events)
        if got is None:
            return
        it, compute = got
        self.checks += 1
        new = replan.decide(it, self.policy, self.tree.window, self.o.sync, self.o.pace)
        why = replan.differs(self.current, new, self.o.replan_threshold)
        if why:
            self.install(it, new, start, why, compute)

    def install(self, it, new: replan.Decision, start: int, why: list[str], compute: dict) -> None:
        t0 = time.monotonic()
        changed = 0
        if "paths" in why:
            changed = self._replace_paths(it, new)
        self.seq += 1
        if self.o.pace:
            pace_file.write_pace(self.folder, self.seq, start,
                                 worker_pacing(self.graph, self.workers, new, self.k, self.dilation))
        rec = {"seq": self.seq, "from_iteration": start, "why": why,
               "compute_s": {dc: round(c, 4) for dc, c in compute.items()},
               "wan_mbps": {f"{u}-{v}": round(a["rate_bps"] / 1e6, 3) for u, v, a in it.wan.edges(data=True)},
               "old": self.current.to_json(), "new": new.to_json(),
               "path_entries_changed": changed, "install_s": round(time.monotonic() - t0, 3)}
        self.hooks.record("replan", **rec)
        self.plans.append(rec)
        self.current = new

    def _replace_paths(self, it, new: replan.Decision) -> int:
        """Delete the agg_path entries in force, add the new decision's; returns how many
        commands were pushed."""
        n = 0
        for sw, (cmds, replies) in self.paths.items():
            undo = removal_commands(cmds, replies)
            self.hooks.push(sw, undo)
            n += len(undo)
        target, _ = routing.path_entries(self.graph, self.tree, it, new.allocation, self.loops)
        self.paths = {}
        for sw, cmds in target.items():
            self.paths[sw] = (list(cmds), list(self.hooks.push(sw, cmds)))
            n += len(cmds)
        return n


class L3dmlControl:
    """The run-time parts the options turn on, as one controller (schemes/base.Scheme)."""
    summary_key = "l3dml"        # where scheme_app records summary()

    def __init__(self, repair: RepairCounters | None, resync: RateSync | None):
        self.repair, self.resync = repair, resync

    def start(self) -> None:
        if self.resync is not None:
            self.resync.start()

    def stop(self) -> None:
        if self.resync is not None:
            self.resync.stop()
        if self.repair is not None:
            self.repair.read()

    def summary(self) -> dict:
        parts = {"switch_repair": self.repair.summary() if self.repair else None,
                 "replan": self.resync.summary() if self.resync else None}
        errors = [p["error"] for p in parts.values() if p and p.get("error")]
        return {**parts, "error": "; ".join(errors) or None}


def controller(graph, scenario, options, plan, hooks):
    """L3dmlControl over what the options turn on (the switches' repair counters, the
    rate-synchronization controller), or None when neither is."""
    repair = None
    if plan.timer_loops:
        repair = RepairCounters(sorted(plan.timer_loops) + [plan.info["root"]], hooks.push)
    resync = None
    if options.replan_interval_s is not None and "l3dml" in plan.runtime:
        resync = RateSync(graph, scenario, plan, hooks)
    return L3dmlControl(repair, resync) if repair or resync else None
