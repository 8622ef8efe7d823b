"""InArt's re-planning controller: a thread of the run (root namespace) that polls the rates
the network offers, decides with replan.replan, and hands the workers a new plan at an
iteration boundary. README.md, "Re-planning at run time"; the pure parts: switchover.py.

Every `replan_interval_s` (emulated seconds):
  - while a switch-over is pending: once every worker has the sum of the iteration before
    the new plan's (switchover.all_moved_on), retire the old plan: stop its root servers
    (their stats are kept) and remove its switch entries by handle;
  - else read the htb rate of every switch-switch interface and ask replan() whether a used
    path's bottleneck moved by more than replan_threshold since the plan was made. If so,
    and the new plan routes differently (switchover.same_plan), install it:
      1. its aggregation points as the other bank's jobs, slots, groups and ids;
      2. its /32 path routes in place of the old plan's (table_modify / add / delete);
      3. its root servers, started and listening;
      4. plan-<n>.json with the iteration it takes effect at, chosen last, two past the
         furthest worker's (switchover.switchover_iteration).
    If the run ends before that iteration could come, what was installed is taken back.
Each decision that changes something is a record of run_events.jsonl (replan, replan_kept,
replan_skipped, replan_retired, replan_error) and of summary.json's app.replan.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from control.agg_entries import removal_commands
from control.path_routes import route_updates
from schemes.base import PeriodicController, Plan, RunHooks, Server
from schemes.inart.replan import replan
from schemes.inart.split import InartPlan
from schemes.inart.switchover import (all_moved_on, next_bank, polled_interfaces, rates_from_tc,
                                      same_plan, switchover_iteration, write_plan_file)

READY_TEXT = "slots, children"   # root_server.py logs this once its socket is bound
WAITING_TEXT = "inart root: waiting for the port"   # ... and while the old root holds it
PORT_WAIT_S = 3600.0             # a successor waits for its port until the old root is retired
_ENTRY = "added with handle "


@dataclass
class Pending:
    seq: int
    iteration: int
    servers: list[Server]                 # the old plan's root servers
    removal: dict[str, list[str]]         # switch -> commands that remove the old plan's points
    successors: list[Server]              # the new plan's root servers, waiting for their ports


def make_controller(graph, scenario, o, plan: Plan, hooks: RunHooks):
    """The scheme's controller hook (schemes/base.Scheme): None unless re-planning is on."""
    if o.replan_interval_s is None:
        return None
    return ReplanController(graph, scenario, o, plan, hooks)


class ReplanController(PeriodicController):
    def __init__(self, graph, scenario, o, plan: Plan, hooks: RunHooks):
        super().__init__("inart-replan", o.replan_interval_s, hooks)
        rt = plan.runtime
        # the options as the plan resolved them (window, the bank's slots), not as given
        self.graph, self.scenario, self.o, self.hooks = graph, scenario, rt["options"], hooks
        self.current: InartPlan = rt["inart"]
        self.k, self.bank = rt["k"], rt["bank"]
        self.workers = list(plan.workers)
        self.servers = list(plan.servers)
        self.routes = {sw: list(es) for sw, es in rt["routes"].items()}
        self.folder = hooks.run_dir / "workers" / "replan"
        for w in plan.comm:              # the workers look for new plans there
            plan.comm[w]["replan_dir"] = str(self.folder)
        self.interfaces = polled_interfaces(graph)
        self.handles, self.removal = self._index_setup(hooks.pushed, rt["agg_commands"])
        self.pending: Pending | None = None
        self.seq = 0
        self.checks = 0
        self.plans: list[dict] = []
        # self.finished: no later switch-over can happen
        self._last_route_updates: dict = {}

    def _index_setup(self, pushed, agg_commands):
        """Handles of the first plan's path routes; the commands that remove its points."""
        handles, removal = {}, {}
        for sw, (cmds, replies) in pushed.items():
            # plan() pushes a switch's points first, then its routes; by position, because
            # two points may hold the same command (mc_node_create <rid> <port>)
            mine = agg_commands.get(sw, [])
            if cmds[:len(mine)] != mine:
                raise ValueError(f"switch {sw}: the commands pushed at setup do not start with "
                                 "the plan's aggregation points; push the plan's commands as given")
            if mine:
                removal[sw] = removal_commands(mine, replies[:len(mine)])
            reply_of = dict(zip(cmds[len(mine):], replies[len(mine):]))   # one per prefix
            for e in self.routes.get(sw, []):
                handles[(sw, e.prefix)] = _entry_handle(reply_of[e.command()], e.command())
        return handles, removal

    def summary(self) -> dict:
        return {"interval_s": self.o.replan_interval_s, "threshold": self.o.replan_threshold,
                "ahead": self.o.replan_ahead, "checks": self.checks, "plans": self.plans,
                "error": self.error}

    # ------------------------------------------------------------------ one poll
    def step(self) -> None:
        events = self.hooks.worker_events()
        if self.pending is not None:
            if all_moved_on(events, self.workers, self.pending.iteration):
                self._retire()
            return
        if switchover_iteration(events, self.o.replan_ahead, self.scenario_iterations) is None:
            self.finished = True          # too close to the end for any switch-over
            return
        rates = rates_from_tc({arc: self.hooks.read_tc(intf)
                               for arc, intf in self.interfaces.items()})
        self.checks += 1
        rng = np.random.default_rng([self.scenario.seed, self.seq + 1])
        decision, new = replan(self.graph, self.current, rates, self.o, rng)
        if not decision.must_replan:
            return
        base = {"decision": decision.to_json(), **_shape("old", self.current)}
        if same_plan(new.routing, self.current.routing):
            self.current = new          # the new rates become the reference
            self.hooks.record("replan_kept", **base, reason="the new plan routes every stream "
                              "as the old one and splits the model the same way")
            return
        self._install(new, base)

    @property
    def scenario_iterations(self):
        return self.scenario.iterations

    def _install(self, new: InartPlan, base: dict) -> None:
        from schemes.inart.plan import materialize   # plan imports switchover, not this
        t0 = time.monotonic()
        bank = next_bank(self.bank)
        p = materialize(self.graph, self.scenario, self.o, new, self.k, bank)
        added = {}
        for sw, cmds in p.switch_commands.items():
            added[sw] = removal_commands(cmds, self.hooks.push(sw, cmds))
        old_routes = self.routes
        self._update_routes(p.runtime["routes"])
        started, pids = [], {}
        try:
            for s in p.servers:     # one UDP port per host: it binds once the old root stops
                s = replace(s, args=s.args + ("--wait-port", str(PORT_WAIT_S)))
                pids[s.name] = self.hooks.start_server(s, WAITING_TEXT)
                started.append(s)
            i = switchover_iteration(self.hooks.worker_events(), self.o.replan_ahead,
                                     self.scenario_iterations)
        except Exception:
            self._take_back(started, added, old_routes)
            raise
        if i is None:                    # the run ends first: nothing changes
            self._take_back(started, added, old_routes)
            self.finished = True
            self.hooks.record("replan_skipped", **base, reason="the run ends before a new plan "
                              "could take effect")
            return
        self.seq += 1
        write_plan_file(self.folder, self.seq, i, p.comm, p.info["jobs"])
        rec = {"seq": self.seq, "from_iteration": i, **base, **_shape("new", new),
               "old_jobs": self._jobs(self.bank),
               "new_jobs": list(p.info["jobs"]), "bank": bank,
               "install_s": round(time.monotonic() - t0, 3),
               "route_updates": self._last_route_updates, "new_trees": p.info["trees"],
               "new_paths": p.info["paths"], "new_servers": pids, "retired": False}
        self.hooks.record("replan", **rec)
        self.plans.append(rec)
        self.pending = Pending(self.seq, i, self.servers, self.removal, started)
        self.current, self.bank, self.servers, self.removal = new, bank, list(p.servers), added

    def _jobs(self, bank: int) -> list[int]:
        return list(range(self.o.job + bank * self.k_servers, self.o.job + (bank + 1) * self.k_servers))

    @property
    def k_servers(self) -> int:
        return len(self.current.servers)

    def _update_routes(self, target: dict) -> None:
        """Make the switches' /32 path routes those of `target`, keeping the handles."""
        ups = route_updates(self.routes, target, self.handles)
        by_switch: dict[str, list] = {}
        for u in ups:
            by_switch.setdefault(u.switch, []).append(u)
        for sw, us in by_switch.items():
            replies = self.hooks.push(sw, [u.command for u in us])
            for u, reply in zip(us, replies):
                if u.kind == "add":
                    self.handles[(sw, u.prefix)] = _entry_handle(reply, u.command)
                elif u.kind == "delete":
                    del self.handles[(sw, u.prefix)]
        self.routes = {sw: list(es) for sw, es in target.items()}
        self._last_route_updates = {k: sum(1 for u in ups if u.kind == k)
                                    for k in ("add", "modify", "delete")}

    def _take_back(self, started, added, old_routes) -> None:
        for s in started:
            self.hooks.stop_server(s.name)
        for sw, cmds in added.items():
            self.hooks.push(sw, cmds)
        self._update_routes(old_routes)

    def _retire(self) -> None:
        pend, self.pending = self.pending, None
        stats = {s.name: self.hooks.stop_server(s.name) for s in pend.servers}
        for s in pend.successors:        # they take the ports over
            self.hooks.wait_server(s.name, READY_TEXT)
        for sw, cmds in pend.removal.items():
            self.hooks.push(sw, cmds)
        rec = next(r for r in self.plans if r["seq"] == pend.seq)
        rec["retired"] = True
        rec["old_server_stats"] = stats
        self.hooks.record("replan_retired", seq=pend.seq, from_iteration=pend.iteration,
                          servers_stopped=sorted(stats),
                          entries_removed=sum(len(c) for c in pend.removal.values()))


def _entry_handle(reply: str, command: str) -> int:
    at = reply.find(_ENTRY)
    if at < 0:
        raise RuntimeError(f"no entry handle in the reply to `{command}`: {reply.strip()[:200]}")
    return int(reply[at + len(_ENTRY):].split()[0])


def _shape(which: str, p: InartPlan) -> dict:
    return {f"{which}_shares": [round(a, 6) for a in p.shares],
            f"{which}_streams": p.routing.streams()}
