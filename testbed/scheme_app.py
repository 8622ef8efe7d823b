"""The App of every scheme: plan, program the switches, start servers and workers, watch.

    plan(graph, scenario)  the scheme's pure plan (schemes/<name>/plan.py); called before
                           the network starts, so an impossible placement fails early
    setup(ctx)             switch entries pushed through each switch's runtime client (either
                           backend); one JSON config per worker (workers/worker.py)
    start()                the scheme's servers, then a worker process per planned worker;
                           once every worker reports ready the app creates the start file,
                           so iteration 0 starts everywhere together
    progress()             iterations done, from the workers' event logs; a server that
                           died ends the run with its name instead of a wait for timeouts
    collect()              the plan's facts, the servers' stats, errors (the metrics come
                           from the one measurement pipeline, not from here)
    controller             the scheme's run-time controller (Scheme.controller, e.g. inart's
                           re-planning), built in setup with RunHooks, started with the
                           workers, stopped first in collect and stop
    process(kind, name)    a started process by kind ("server", "worker") and name, for
                           failure injection (testbed/disturbance_driver.py); what a
                           scenario may name: process_names()
    stop()                 SIGTERM to every process (workers log worker_end), then kill
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import schemes
from schemes.base import Plan, RunHooks, Server
from testbed.apps import App, RunContext, WorkerProgress
from testbed.tcp import process_env
from topologies.graph import host_id
from workers.events import read_events

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 300.0


def worker_configs(graph, scenario, scheme, opts, plan: Plan, events_dir: Path, go_file: Path,
                   iterations, duration_s) -> dict[str, dict]:
    """One workers.worker.WorkerConfig (as a dict) per planned worker, in rank order (pure)."""
    out = {}
    for rank, w in enumerate(plan.workers):
        a = graph.nodes[w]
        out[w] = {"worker": w, "host_id": host_id(a["dc_index"], a["rack"], a["worker"]),
                  "index": rank, "n_workers": len(plan.workers), "dc": a["dc"], "ip": a["ip"],
                  "seed": scenario.seed, "events": str(events_dir / f"{w}.jsonl"),
                  "scheme": scheme.name, "communicator": plan.communicator or scheme.communicator,
                  "comm": plan.comm[w], "workload": scenario.workload.model_dump(),
                  "compute_index": a["worker_index"],
                  "compute_time": scenario.compute_time.model_dump(),
                  "stragglers": scenario.stragglers.model_dump(),
                  "compute_speed": a.get("compute_speed", 1.0),
                  "dilation": scenario.time_dilation, "iterations": iterations,
                  "duration_s": duration_s, "verify": opts.verify, "go_file": str(go_file),
                  "training": scenario.training.model_dump()}
    return out


class SchemeApp(App):
    def __init__(self, scheme: str, options: dict | None = None):
        self.scheme = schemes.get(scheme)
        self.name = scheme
        self.opts = self.scheme.parse_options(options)
        self.plan_: Plan | None = None
        self.ctx: RunContext | None = None
        self.configs: dict[str, dict] = {}
        self.procs: list[tuple[str, str, subprocess.Popen]] = []   # (kind, name, process)
        self.go_file: Path | None = None
        self.servers: list[Server] = []       # every server started: the plan's and later ones
        self.pushed: dict[str, tuple[list[str], list[str]]] = {}   # setup's commands, replies
        self.controller = None

    # ------------------------------------------------------------------ before the run
    def plan(self, graph, scenario) -> Plan:
        self.plan_ = self.scheme.plan(graph, scenario, self.opts)
        return self.plan_

    def setup(self, ctx: RunContext) -> None:
        self.ctx = ctx
        plan = self.plan_ or self.plan(ctx.graph, ctx.scenario)
        for sw, cmds in plan.switch_commands.items():
            self.pushed[sw] = (list(cmds), self.push_commands(sw, cmds))
        ctx.events_dir.mkdir(parents=True, exist_ok=True)
        cfg_dir = ctx.run_dir / "workers"
        cfg_dir.mkdir(exist_ok=True)
        self.go_file = cfg_dir / "start"
        if self.scheme.controller is not None:   # may add to the workers' comm: before configs
            self.controller = self.scheme.controller(ctx.graph, ctx.scenario, self.opts, plan,
                                                     self.hooks())
        self.configs = worker_configs(ctx.graph, ctx.scenario, self.scheme, self.opts, plan,
                                      ctx.events_dir, self.go_file, ctx.iterations, ctx.duration_s)
        for w, c in self.configs.items():
            (cfg_dir / f"{w}.json").write_text(json.dumps(c, indent=1))

    def push_commands(self, sw: str, cmds: list[str]) -> list[str]:
        """Run commands on one switch (agg_entries.push: node handles substituted)."""
        from control.agg_entries import push
        client = self.ctx.client(sw)
        try:
            return push(client, cmds)
        except RuntimeError as e:
            raise RuntimeError(f"switch {sw}: {e} (switch log: "
                               f"{getattr(self.ctx.net[sw], 'log_file', '?')})") from None
        finally:
            client.close()

    def hooks(self) -> RunHooks:
        return RunHooks(run_dir=self.ctx.run_dir, pushed=self.pushed, push=self.push_commands,
                        start_server=self.start_server, wait_server=self.wait_server,
                        stop_server=self.stop_server,
                        worker_events=lambda: {w: self._events(w) for w in self.configs},
                        record=self._record, read_tc=_read_tc)

    def _record(self, event: str, **fields) -> dict:
        log = self.ctx.run_log
        return log.write(event, **fields) if log is not None else {"event": event, **fields}

    # ------------------------------------------------------------------ the run
    def _popen(self, kind: str, name: str, host: str, args: list[str], log: Path):
        with open(log, "w") as out:
            p = self.ctx.net[host].popen([sys.executable, *args], stdout=out,
                                         stderr=subprocess.STDOUT, cwd=str(REPO),
                                         env={**os.environ, **process_env(self.ctx.scenario.tcp)})
        self.procs.append((kind, name, p))
        self.ctx.record.add_process(p.pid, f"{self.name} {kind} {name} in {host}")
        return p

    def start(self) -> None:
        logs = self.ctx.run_dir / "logs"
        logs.mkdir(exist_ok=True)
        for s in self.plan_.servers:
            self._start_server_process(s)
        for w in self.configs:
            self._popen("worker", w, w, ["-m", "workers.worker", str(self.go_file.parent / f"{w}.json")],
                        logs / f"{w}.worker.log")
        self._wait_ready()
        self.go_file.touch()
        if self.controller is not None:
            self.controller.start()

    def _start_server_process(self, s: Server):
        self.servers.append(s)
        return self._popen("server", s.name, s.host, ["-m", s.module, *s.args],
                           self.ctx.run_dir / "logs" / f"server-{s.name}.log")

    def start_server(self, s: Server, ready_text: str, timeout_s: float = 30.0) -> int:
        """Start a server while the job runs, wait until its log shows ready_text; its pid."""
        p = self._start_server_process(s)
        self.wait_server(s.name, ready_text, timeout_s)
        return p.pid

    def wait_server(self, name: str, ready_text: str, timeout_s: float = 30.0) -> None:
        """Wait until a started server's log shows ready_text (it died or timed out: raise)."""
        p, s = self.process("server", name), self._server(name)
        log = self.ctx.run_dir / "logs" / f"server-{s.name}.log"
        t0 = time.monotonic()
        while ready_text not in (log.read_text(errors="replace") if log.exists() else ""):
            if p.poll() is not None:
                raise RuntimeError(f"server {s.name} exited with {p.returncode} while starting "
                                   f"(see logs/server-{s.name}.log)")
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError(f"server {s.name} not ready after {timeout_s:.0f} s "
                                   f"(see logs/server-{s.name}.log)")
            time.sleep(0.02)

    def stop_server(self, name: str) -> dict:
        """SIGTERM one server, wait for it, and return its stats line."""
        p = self.process("server", name)
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(3)
        return self._server_stat(self._server(name))

    def _wait_ready(self) -> None:
        t0 = time.monotonic()
        waiting = set(self.configs)
        workers = {name: p for kind, name, p in self.procs if kind == "worker"}
        while waiting:
            for w in sorted(waiting):
                ev = self._events(w)
                if any(e.get("event") == "worker_ready" for e in ev):
                    waiting.discard(w)
                    continue
                err = next((e["error"] for e in ev if e.get("event") == "worker_error"), None)
                if err or workers[w].poll() is not None:
                    raise RuntimeError(f"worker {w} failed to start: {err or 'it exited'} "
                                       f"(log: {self.ctx.run_dir}/logs/{w}.worker.log)")
            dead = self._dead_server()
            if dead:
                raise RuntimeError(dead)
            if waiting and time.monotonic() - t0 > READY_TIMEOUT_S:
                raise RuntimeError(f"workers {sorted(waiting)} not ready after {READY_TIMEOUT_S:.0f} s; "
                                   f"see {self.ctx.run_dir}/logs")
            time.sleep(0.05)

    def _events(self, w: str) -> list[dict]:
        return read_events(self.ctx.events_dir / f"{w}.jsonl")

    def _dead_server(self) -> str | None:
        replaced = {s.name for s in self.plan_.servers if s.replaced_on_death}
        for kind, name, p in list(self.procs):
            if kind == "server" and name not in replaced and p.poll() not in (None, 0):
                return f"{self.name} server {name} exited with {p.returncode} (see logs/server-{name}.log)"
        return None

    def progress(self) -> list[WorkerProgress]:
        out = []
        status = {name: p.poll() for kind, name, p in self.procs if kind == "worker"}
        for w in self.configs:
            ev = self._events(w)
            its = [e for e in ev if e.get("event") == "iteration_end"]
            end = [e for e in ev if e.get("event") in ("worker_end", "worker_error")]
            err = next((e.get("error") for e in end if e.get("event") == "worker_error"), None)
            if err is None and not end and status.get(w) not in (None, 0):
                err = f"worker exited with status {status[w]} (see logs/{w}.worker.log)"
            out.append(WorkerProgress(w, len(its), self.ctx.iterations,
                                      sum(e.get("gradient_bytes", 0) for e in its),
                                      bool(end) or err is not None, err))
        dead = None if all(p.finished for p in out) else self._dead_server()
        if dead:   # its workers would wait until their timeout: say why now
            out = [WorkerProgress(p.worker, p.iterations, p.total, p.bytes, True, p.error or dead)
                   for p in out]
        return out

    def collect(self) -> dict:
        extra = {}
        key = getattr(self.controller, "summary_key", "replan")
        if self.controller is not None:    # no switch-over may start while servers stop
            self.controller.stop()
            extra[key] = self.controller.summary()
        errors = {p.worker: p.error for p in self.progress() if p.error}
        if extra.get(key, {}).get("error"):
            errors[f"{key} controller"] = extra[key]["error"]
        # after a failed job the last BYE may never come: no long wait then
        end_servers(self.procs, {s.name for s in self.servers if s.ends_by_signal},
                    SELF_END_S if not errors else 5.0)
        return {"app": self.name, "scheme": self.name, "options": self.opts.model_dump(),
                "ranks": list(self.configs), **self.plan_.info,
                "servers": self._server_stats(), "errors": errors, **extra}

    def _server_stats(self) -> dict:
        return {s.name: self._server_stat(s) for s in self.servers}

    def _server_stat(self, s: Server) -> dict:
        try:
            lines = (self.ctx.run_dir / "logs" / f"server-{s.name}.log").read_text().splitlines()
            return dict(json.loads(lines[-1]), host=s.host)
        except (OSError, ValueError, IndexError):
            return {"host": s.host, "stats": "missing"}

    def process(self, kind: str, name: str) -> subprocess.Popen | None:
        """The process started last as (kind, name), None before it is started. A name can
        come back: inart's re-plans alternate two banks of jobs, so a second re-plan starts
        root servers named as the first plan's, which have exited (the first of them was
        taken for the new one, "exited with 0 while starting")."""
        return next((p for k, n, p in reversed(self.procs) if (k, n) == (kind, name)), None)

    def _server(self, name: str) -> Server:
        """The server started last under this name (process())."""
        return next(s for s in reversed(self.servers) if s.name == name)

    def process_names(self, graph) -> dict[str, tuple[str, str]]:
        """What a failure's `kill` may name -> (kind, name) (testbed/disturbances.py)."""
        from testbed.disturbances import process_names
        return process_names(self.plan_, graph)

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
        for _, _, p in self.procs:
            if p.poll() is None:
                p.terminate()
        for _, _, p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(3)


# how long the servers that end on their own (after the last worker's BYE) may take before
# the others are told to end: mlfabric's primary first flushes up to d_rep updates to its
# replica (4 x 4 MB over the WAN is ~26 s of wall time at 50 Mbps and s = 10)
SELF_END_S = 120.0


def end_servers(procs, signalled: set, self_end_s: float = SELF_END_S, clock=time.monotonic) -> None:
    """The end of a finished job's servers, in order: those that end on their own (they print
    their stats once the last BYE arrived) first, up to self_end_s; then SIGTERM to those
    that serve until told (`signalled`: a replica, aggregators, UDP roots), 5 s each. Told
    first, mlfabric's replica ended while its primary still replicated its last updates,
    and the primary ended on "the replica is gone" without its stats (every run at
    `bench schemes`' point)."""
    servers = [(name, p) for kind, name, p in procs if kind == "server"]
    deadline = clock() + self_end_s
    for name, p in servers:
        if name not in signalled:
            try:
                p.wait(max(0.1, deadline - clock()))
            except subprocess.TimeoutExpired:
                pass
    for name, p in servers:
        if name in signalled and p.poll() is None:
            p.terminate()
    for name, p in servers:
        if name in signalled:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass


def _read_tc(intf: str) -> str:
    """`tc class show dev X` of a switch interface (switches live in the root namespace)."""
    p = subprocess.run(["tc", "class", "show", "dev", intf], capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else ""


def make_app(scheme: str, options: dict | None = None) -> SchemeApp:
    """The App of a registered scheme (unknown names: ValueError naming the known ones)."""
    return SchemeApp(scheme, options)
