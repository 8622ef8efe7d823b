"""One run of a scenario, from bring-up to teardown.

    resolve -> results folder -> bring-up (Mininet, switches, link emulation)
    -> control plane push -> health check -> [--cli] -> workload with live progress,
       link counters, live bandwidth schedule, background traffic and failures
       (testbed/disturbance_driver.py) -> collect -> teardown

Teardown runs on every exit path (normal end, exception, Ctrl-C, SIGTERM/SIGHUP): the
app's processes, every process left in the hosts' namespaces, the switches, the links and
the hosts go, and summary.json says whether the run completed. What was started is
recorded (testbed.cleanup) as it starts, so `python3 run.py clean` can finish the job
after a SIGKILL.
"""
from __future__ import annotations

import os
import signal
from contextlib import contextmanager
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed import apps, backends, cleanup, counters, health, results, scheme_app
from testbed import disturbances, relay_run
from testbed.disturbance_driver import DisturbanceDriver, NetworkEffects
from testbed.run_events import FILE as RUN_EVENTS_FILE, RunEventLog
from testbed import tcp as tcp_settings
from testbed.dilation import dilate_graph, load_factor
from testbed.scenario import dump_scenario, load_scenario
from topologies import linkemu, netbuild
from topologies.graph import build_graph
from topologies.ports import interface_name
# Random bandwidth schedules need a horizon; a run without duration_s uses this one (s).
from topologies.schedule import DEFAULT_HORIZON_S as DEFAULT_SCHEDULE_HORIZON_S


class RunInterrupted(Exception):
    """SIGINT/SIGTERM/SIGHUP during a run."""


class RunError(RuntimeError):
    pass


@dataclass
class RunOptions:
    scenario: str
    overrides: list[str] = field(default_factory=list)
    out: str | None = None
    cli: bool = False
    prefix: str = ""             # node-name prefix (parallel test runs)
    show_progress: bool = True
    timeout_s: float | None = None   # hard limit on the workload phase (emulated s)


# ---------------------------------------------------------------- pure helpers

def host_commands(graph, tcp) -> dict[str, list[str]]:
    """Static ARP and routes of every host, and the scenario's TCP sysctls (testbed/tcp.py)."""
    from control.arp import host_arp_commands, host_route_commands
    return {h: [f"ip {c}" for c in host_arp_commands(graph, h) + host_route_commands(graph, h)]
            + tcp_settings.sysctl_commands(tcp)
            for h, d in graph.nodes(data=True) if d["role"] == "host"}


def switch_params(graph, program: str, defines: dict, run_dir: Path, control: str = "cli",
                  datapath: str = "auto", pcap: list[str] = ()) -> dict[str, dict]:
    """Options per switch. Control ports are left to the switch class (a free localhost
    port), so concurrent runs on one machine never collide on 9090 + device id. datapath
    is a softswitch option, passed only when it is not the default. pcap: the switches
    (names without the graph's prefix) that write per-port pcaps into run_dir/pcap."""
    extra = {} if datapath == "auto" else {"datapath": datapath}
    prefix = graph.graph.get("prefix", "")
    switches = [n for n, d in graph.nodes(data=True) if d["role"] != "host"]
    unknown = sorted(set(pcap) - {n[len(prefix):] for n in switches})
    if unknown:
        raise RunError(f"switch.pcap names {', '.join(unknown)}, not switches of this topology "
                       f"(switches: {', '.join(sorted(n[len(prefix):] for n in switches))})")
    return {n: {"program": program, "defines": dict(defines), "device_id": graph.nodes[n]["device_id"],
                "log_file": str(run_dir / "logs" / f"{n}.switch.log"), "control": control, **extra,
                **({"pcap_dir": str(run_dir / "pcap")} if n[len(prefix):] in pcap else {})}
            for n in switches}


def wan_intfs(graph, edge, src: str | None = None) -> list[tuple[str, str]]:
    """(switch, intf) of both ends of a WAN edge; with src, only src's end: its interface
    toward the other end, whose egress (what tc shapes) is the direction leaving src."""
    u, v = edge
    ends = [(u, interface_name(graph, u, v)), (v, interface_name(graph, v, u))]
    return ends if src is None else [e for e in ends if e[0] == src]


# ---------------------------------------------------------------- schedule driver

class ScheduleDriver(threading.Thread):
    """Applies WAN bandwidth events (emulated seconds since start) with `tc class change`:
    on both ends of the edge, or on src's end only for a one-direction event. Each change
    is a record of bandwidth_events.jsonl: {t, t_s, edge "u-v", mbps} and, for one
    direction, src (the switch whose egress changed); with run_log the same record goes to
    the run's event stream as a bandwidth_change (testbed/run_events.py). t0: the origin
    of the events' times (default: when the thread starts)."""

    def __init__(self, graph, events, shaped: dict[str, dict[str, float]], log_path: Path,
                 run_log=None, t0: float | None = None):
        super().__init__(name="bandwidth-schedule", daemon=True)
        self.graph, self.events, self.shaped, self.log_path = graph, events, shaped, log_path
        self.run_log = run_log
        self.stop_event = threading.Event()
        self.applied: list[dict] = []
        self.error: str | None = None
        self.t0 = t0

    def run(self) -> None:
        import json
        if self.t0 is None:
            self.t0 = time.monotonic()
        with open(self.log_path, "a") as log:
            for ev in self.events:
                if self.stop_event.wait(max(0.0, self.t0 + ev.t_s - time.monotonic())):
                    return
                try:
                    for sw, intf in wan_intfs(self.graph, ev.edge, ev.src):
                        linkemu.change_rate(intf, ev.mbps, linkemu._run_root)
                        self.shaped.setdefault(sw, {})[intf] = ev.mbps
                except linkemu.LinkEmuError as e:
                    self.error = str(e)
                    return
                rec = {"t": time.monotonic(), "t_s": ev.t_s, "edge": "-".join(ev.edge), "mbps": ev.mbps}
                if ev.src is not None:
                    rec["src"] = ev.src
                self.applied.append(rec)
                log.write(json.dumps(rec) + "\n")
                log.flush()
                if self.run_log is not None:
                    self.run_log.write("bandwidth_change", **rec)

    def stop(self) -> None:
        self.stop_event.set()
        if self.is_alive():
            self.join(timeout=5)


# ---------------------------------------------------------------- signals

class _Signals:
    """SIGTERM/SIGHUP become RunInterrupted like Ctrl-C; all are ignored during teardown so
    a second Ctrl-C cannot leave half the network behind."""

    SIGS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __enter__(self):
        self.old = {s: signal.getsignal(s) for s in self.SIGS}
        for s in self.SIGS:
            signal.signal(s, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise RunInterrupted(signal.Signals(signum).name)

    def shield(self):
        for s in self.SIGS:
            signal.signal(s, signal.SIG_IGN)

    def __exit__(self, *exc):
        for s, h in self.old.items():
            signal.signal(s, h)
        return False


# ---------------------------------------------------------------- the run

def run_scenario(opts: RunOptions, log=print) -> list[Path]:
    """All repetitions of a scenario; returns their result folders."""
    scn = load_scenario(opts.scenario, opts.overrides)
    return [run_once(opts, scn, rep, log) for rep in range(scn.repetitions)]


def prepare(opts: RunOptions, scn):
    """Everything that can fail before anything starts (no side effects but the netem probe)."""
    app = scheme_app.make_app(scn.scheme, scn.scheme_options)
    try:
        tcp_settings.check_available(scn.tcp)
    except ValueError as e:
        raise RunError(str(e)) from None
    if scn.switch.control == "p4runtime" and scn.switch.backend == "bmv2":
        raise RunError("switch.control: p4runtime is served by the softswitch; the bmv2 backend runs "
                       "simple_switch (thrift only): set switch.control: cli, or switch.backend: softswitch")
    if scn.switch.datapath != "auto" and scn.switch.backend == "bmv2":
        raise RunError(f"switch.datapath: {scn.switch.datapath} chooses the softswitch's data path; the bmv2 "
                       "backend has its own: remove switch.datapath, or set switch.backend: softswitch")
    if scn.switch.control == "p4runtime" and scn.switch.backend == "auto":
        backend, backend_reason = "softswitch", "auto: switch.control p4runtime is served by the softswitch"
    else:
        backend, backend_reason = backends.choose_backend(scn.switch.backend)
    mode, mode_reason = linkemu.choose_mode(scn.link_emulation.mode, linkemu.kernel_has_netem(), backend)
    graph = dilate_graph(build_graph(scn, prefix=opts.prefix))
    scheme_plan = app.plan(graph, scn)   # placement, trees and entries: pure, fails early
    try:
        plan = linkemu.plan(graph, mode, seed=scn.seed, loops=getattr(scheme_plan, "timer_loops", None))
    except linkemu.LinkEmuError as e:
        raise RunError(str(e)) from None
    if backend == "bmv2" and plan.switch_emu:
        raise RunError("link_emulation.mode: the bmv2 backend cannot apply delay/jitter/loss in "
                       "user space (mode userspace) and this kernel has no netem: set "
                       "link_emulation.mode: relay (or auto), or switch.backend: softswitch")
    return app, backend, backend_reason, mode, mode_reason, graph, plan


def run_once(opts: RunOptions, scn, repetition: int = 0, log=print) -> Path:
    from topologies.schedule import bandwidth_events
    from control.routes import table_commands

    app, backend, backend_reason, mode, mode_reason, graph, plan = prepare(opts, scn)
    s = scn.time_dilation
    horizon = (scn.duration_s or DEFAULT_SCHEDULE_HORIZON_S) * s
    events = bandwidth_events(graph, horizon_s=horizon)
    actions = disturbances.timeline(scn.background, scn.failures, s, horizon)
    run_id = results.new_run_id()
    run_dir = results.create_run_dir(opts.out or scn.output.folder, scn.name, run_id)
    (run_dir / "logs").mkdir()
    (run_dir / "scenario.yaml").write_text(dump_scenario(scn))
    manifest = results.manifest(
        run_id=run_id, scenario_name=scn.name, backend=backend, backend_reason=backend_reason,
        link_emulation=mode, link_emulation_reason=mode_reason, seed=scn.seed, time_dilation=s,
        repetition=repetition, extra={"scenario_file": str(opts.scenario), "overrides": opts.overrides,
                                      "switch_control": scn.switch.control,
                                      "switch_datapath": scn.switch.datapath,
                                      "node_prefix": opts.prefix})
    results.write_json(run_dir / "manifest.json", manifest)
    log(f"run {run_id}: backend {backend} ({backend_reason}); link emulation {mode} ({mode_reason}); "
        f"time dilation {s:g}")
    plan.warnings += tcp_settings.dilation_warnings(scn, app.scheme.kernel_tcp)
    load1, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load_factor(load1, cores) > 1:
        plan.warnings.append(f"the machine is busy (load {load1:.1f} on {cores} CPUs): "
                             f"software switches will add latency and may limit rates "
                             f"(time_dilation x {load_factor(load1, cores):.1f} would make up for it)")
    for w in plan.warnings:
        log(f"warning: {w}")

    record = cleanup.RunRecord(run_id)
    record.data["run_dir"] = str(run_dir)
    record.save()
    state = {"complete": False, "reason": "not started", "health": None, "app": None,
             "warnings": list(plan.warnings), "phase": "bring-up"}
    t_start = time.monotonic()
    timings: dict[str, float] = {}
    last = [t_start]

    def mark(phase: str) -> None:
        now = time.monotonic()
        timings[phase] = round(timings.get(phase, 0.0) + now - last[0], 3)
        last[0] = now

    net = sampler = driver = dist = effects = None
    run_log = RunEventLog(run_dir / RUN_EVENTS_FILE)
    with _Signals() as sig:
        try:
            net = bring_up(graph, backend, plan, scn, run_dir, record)
            mark("bring-up")
            state["phase"] = "control plane"
            push_control_plane(net, graph, backend, table_commands(graph))
            mark("control plane")
            state["phase"] = "health check"
            state["health"] = health.health_check(net, graph)
            state["warnings"] += state["health"]["warnings"]
            _log_health(state["health"], log)
            mark("health check")
            if opts.cli:
                from mininet.cli import CLI
                log("Mininet CLI: exit it (Ctrl-D) to start the workload")
                CLI(net)
                mark("cli")
            state["phase"] = "workload"
            shaped = {sw.node: {} for sw in plan.intfs if not sw.is_host}
            for sh in plan.intfs:
                if not sh.is_host and sh.rate_mbps:
                    shaped[sh.node][sh.intf] = sh.rate_mbps
            load = counters.SwitchLoad({sw.name: sw.pid_of_switch for sw in net.switches}, shaped)
            sampler = counters.CounterSampler(run_dir / "counters.csv", counter_sources(net, graph),
                                              load=load).start()
            ctx = apps.RunContext(net=net, graph=graph, scenario=scn, run_dir=run_dir,
                                  events_dir=run_dir / "events", record=record,
                                  iterations=scn.iterations,
                                  duration_s=scn.duration_s * s if scn.duration_s else None,
                                  backend=backend, run_log=run_log)
            app.setup(ctx)
            effects = NetworkEffects(net, graph, scn, run_dir, record, app.process,
                                     app.process_names(graph))
            effects.setup()
            t0 = run_log.write("workload_start")["t"]   # the origin of every scheduled time
            driver = ScheduleDriver(graph, events, shaped, run_dir / "bandwidth_events.jsonl",
                                    run_log=run_log, t0=t0)
            dist = DisturbanceDriver(actions, effects, run_log, t0=t0)
            driver.start()
            dist.start()
            app.start()
            _wait_for_app(app, ctx, opts, log)
            mark("workload")
            state["phase"] = "collect"
            state["qdisc"] = _qdisc_stats(net, graph)
            state["app"] = app.collect()
            errors = state["app"].get("errors") or {}
            if driver.error:
                raise RunError(f"bandwidth schedule: {driver.error}")
            state["warnings"] += [f"disturbance {e}" for e in dist.errors]
            state["complete"] = not errors
            state["reason"] = "finished" if not errors else f"worker errors: {errors}"
        except RunInterrupted as e:
            state["reason"] = f"interrupted by {e} during {state['phase']}"
            log(f"{state['reason']}: tearing down")
        except BaseException as e:
            state["reason"] = f"failed during {state['phase']}: {e}"
            raise
        finally:
            sig.shield()
            mark(state["phase"])   # the phase an error or interrupt cut short
            _teardown(app, sampler, driver, dist, effects, net, record, state, log)
            mark("teardown")
            if sampler is not None:
                state["counters"] = {"samples": sampler.samples, "totals": sampler.totals()}
                state["switch_load"] = {sw: {"peak_cpu_pct": round(c, 1), "util_at_peak": round(u, 3),
                                             "limited_windows": n, "peak_cpu_wait_pct": round(want, 1)}
                                        for sw, (c, u, n, want) in sampler.load.peaks().items()}
                state["warnings"] += counters.switch_limited_warnings(sampler.load.peaks())
                state["link_emulation"] = emulated_link_counters(run_dir, graph, mode)
                state["switch_datapath"] = switch_datapaths(run_dir, graph)
                drops = _switch_drops(run_dir, graph)
                state["switch_drops"] = {sw: {"rx_frames": rx, "socket_drops": d}
                                         for sw, (rx, d) in drops.items()}
                state["warnings"] += counters.capacity_drop_warnings(drops, sampler.load.max_util())
            if driver is not None:
                state["bandwidth_changes"] = driver.applied
            state["disturbances"] = [r for r in run_log.records
                                     if r["event"] not in ("workload_start", "bandwidth_change")
                                     and not r["event"].startswith("replan")]
            summary = results.summary(
                complete=state["complete"], reason=state["reason"], started_monotonic=t_start,
                app_summary=state["app"], health=state["health"], warnings=state["warnings"],
                extra={"time_dilation": s, "counters": state.get("counters"),
                       "switch_load": state.get("switch_load"),
                       "switch_drops": state.get("switch_drops"),
                       "link_emulation": state.get("link_emulation"),
                       "switch_datapath": state.get("switch_datapath"),
                       "qdisc": state.get("qdisc"),
                       "phase_seconds": timings,
                       "bandwidth_changes": state.get("bandwidth_changes"),
                       "disturbances": state.get("disturbances")})
            try:   # the one measurement pipeline: the same row `run.py plot` and sweeps compute
                from analysis.rundata import summary_sections
                summary.update(summary_sections(run_dir, summary))
            except Exception as e:   # the summary is written whatever happens
                summary["metrics"] = None
                summary["warnings"].append(f"metrics could not be computed: {e!r}")
            try:   # the model beside the measurement (model output, testbed/fidelity.py)
                from testbed.fidelity import model_section
                summary["model"], warns = model_section(scn, summary.get("metrics"),
                                                        (summary.get("app") or {}).get("servers"))
                summary["warnings"] += warns   # the same list as state["warnings"]: logged below once
            except Exception as e:
                summary["model"] = None
                summary["warnings"].append(f"model could not be computed: {e!r}")
            results.write_json(run_dir / "summary.json", summary)
            for w in state["warnings"][len(plan.warnings):]:   # plan's were logged at start
                log(f"warning: {w}")
            log(f"results: {run_dir} ({'complete' if state['complete'] else 'INCOMPLETE: ' + state['reason']})")
    if not state["complete"] and state["reason"].startswith("interrupted"):
        raise RunInterrupted(state["reason"])
    return run_dir


def bring_up(graph, backend, plan, scn, run_dir, record):
    def on_node(node):
        record.add_process(node.pid, f"mininet shell {node.name}", save=False)
        if node.inNamespace:
            record.add_netns(node.pid, save=False)
        record.save()

    def on_switch_started(sw):
        record.add_process(sw.pid_of_switch, f"switch {sw.name}")

    def on_relay_started(relay):
        record.add_process(relay.pid, f"link relay {relay.spec.name}")

    # checked before recording: teardown deletes recorded interfaces, and these would be
    # someone else's
    netbuild.check_names_free(plan)
    record.add_interfaces([s.intf for s in plan.intfs if not s.is_host]
                          + [n for r in plan.relays for n in r.root_intfs()])
    return netbuild.build_network(
        graph, backends.switch_class(backend),
        switch_params(graph, scn.switch.program, scn.switch.defines, run_dir, scn.switch.control,
                      scn.switch.datapath if backend == "softswitch" else "auto", scn.switch.pcap), plan,
        host_commands(graph, scn.tcp), on_node=on_node, on_switch_started=on_switch_started,
        relay_log_dir=str(run_dir / "logs"), on_relay_started=on_relay_started, relays=relay_run)


def push_control_plane(net, graph, backend, commands: dict[str, list[str]]) -> None:
    from softswitch.control.client import RuntimeCommandError
    for sw, cmds in commands.items():
        node = net[sw]
        client = backends.client_for(backend, node)
        try:
            client.execute_many(cmds, check=True)
        except RuntimeCommandError as e:
            raise RunError(f"switch {sw} rejected a control-plane command: {e} "
                           f"(switch log: {node.log_file})") from None
        finally:
            client.close()


@contextmanager
def started_network(opts: RunOptions, scn, run_dir: Path):
    """Bring-up and control plane only, torn down on exit (tests, benchmarks, --cli use).

    Yields a dict with net, graph (dilated), plan, backend, record."""
    from control.routes import table_commands
    _, backend, _, mode, _, graph, plan = prepare(opts, scn)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    record = cleanup.RunRecord(results.new_run_id())
    record.save()
    net = None
    try:
        net = bring_up(graph, backend, plan, scn, run_dir, record)
        push_control_plane(net, graph, backend, table_commands(graph))
        yield {"net": net, "graph": graph, "plan": plan, "backend": backend, "mode": mode,
               "record": record}
    finally:
        if net is not None:
            netbuild.stop_network(net)
        cleanup.teardown_record(record.data)
        record.remove()


def counter_sources(net, graph) -> list[counters.Source]:
    root = {}
    srcs = []
    for n, d in graph.nodes(data=True):
        node = net[n]
        intfs = {i.name: n for i in node.intfList() if i.name != "lo"}
        if d["role"] == "host":
            srcs.append(counters.Source(node.pid, intfs))
        else:
            root.update(intfs)
    root.update(netbuild.relay_switch_intfs(net))
    return [counters.Source("self", root)] + srcs


def _wait_for_app(app, ctx, opts, log) -> None:
    from testbed.progress import ProgressView
    limit = opts.timeout_s
    if limit is None and ctx.duration_s:
        limit = ctx.duration_s * 1.5 + 60
    t0 = time.monotonic()
    view = ProgressView(f"{ctx.scenario.name} ({app.name})", ctx.duration_s) if opts.show_progress else None
    if view:
        view.__enter__()
    try:
        while True:
            prog = app.progress()
            if view:
                view.update(prog)
            if prog and all(p.finished for p in prog):
                return
            if limit is not None and time.monotonic() - t0 > limit:
                raise RunError(f"workload did not finish within {limit:.0f} s; see {ctx.run_dir}/logs")
            time.sleep(0.25)
    finally:
        if view:
            view.__exit__(None, None, None)


def _qdisc_stats(net, graph) -> dict[str, dict]:
    """Per shaped interface, its root qdisc's counters (bottleneck queue drops)."""
    import subprocess
    names = {i.name for sw in net.switches for i in sw.intfList() if i.name != "lo"}
    names.update(netbuild.relay_switch_intfs(net))
    p = subprocess.run(["tc", "-s", "-j", "qdisc", "show"], capture_output=True, text=True)
    out = counters.qdisc_root_stats(p.stdout, names) if p.returncode == 0 else {}
    for h in net.hosts:
        intf = h.defaultIntf().name
        out.update(counters.qdisc_root_stats(_host_qdisc_json(h, intf), {intf}))
    return out


def _host_qdisc_json(host, intf: str) -> str:
    """`tc -j qdisc show dev X` omits "dev"; add it so one parser serves both."""
    import json
    text = host.cmd(f"tc -s -j qdisc show dev {intf}").strip()
    try:
        qs = json.loads(text[text.index("["):])
    except ValueError:
        return "[]"
    for q in qs:
        q.setdefault("dev", intf)
    return json.dumps(qs)


def _switch_drops(run_dir: Path, graph) -> dict[str, tuple[int, int]]:
    """Per switch (frames received, socket overrun drops), from the logs the switches
    write when they stop (softswitch only; BMv2 does not report them)."""
    out = {}
    for n, d in graph.nodes(data=True):
        if d["role"] == "host":
            continue
        try:
            text = (run_dir / "logs" / f"{n}.switch.log").read_text(errors="replace")
        except OSError:
            continue
        r = counters.softswitch_rx_drops(text)
        if r is not None:
            out[n] = r
    return out


def switch_logs(run_dir: Path, graph):
    """(switch, its log's text) for every switch whose log can be read."""
    for n, d in graph.nodes(data=True):
        if d["role"] == "host":
            continue
        try:
            yield n, (run_dir / "logs" / f"{n}.switch.log").read_text(errors="replace")
        except OSError:
            continue


def switch_datapaths(run_dir: Path, graph) -> dict:
    """{switch: "compiled" | "python: <why>"} for the softswitches, from their logs."""
    found = {n: counters.softswitch_datapath(text) for n, text in switch_logs(run_dir, graph)}
    return {n: f for n, f in found.items() if f is not None}


def emulated_link_counters(run_dir: Path, graph, mode: str) -> dict | None:
    """What the user-space delay lines did, from the logs written when they stop: per line
    (softswitch egress "switch:port", or relay "u->v") submitted/sent/lost/overflow/queued
    frames, and the totals. None for netem (the kernel's qdisc counts them: summary qdisc)."""
    if mode not in ("userspace", "relay"):
        return None
    lines = {}
    logs = run_dir / "logs"
    if mode == "userspace":
        for n, text in switch_logs(run_dir, graph):
            c = counters.link_emu_counters(text)
            lines.update({f"{n}:{port}": v for port, v in (c or {}).items()})
    else:
        for path in sorted(logs.glob("relay-*.log")):
            c = counters.link_emu_counters(path.read_text(errors="replace"), relay=True) or {}
            first = path.read_text(errors="replace").split("\n", 1)[0]   # "# relay u-v: cmd"
            u, _, v = first.removeprefix("# relay ").split(":", 1)[0].partition("-")
            for port, direction in ((2, f"{u}->{v}"), (1, f"{v}->{u}")):
                if port in c:
                    lines[direction] = c[port]
    totals = {k: sum(c[k] for c in lines.values()) for k in ("submitted", "sent", "lost", "overflow")}
    return {"mode": mode, **totals, "lines": lines}


def _log_health(h: dict, log) -> None:
    r = h["reachability"]
    log(f"health: {r['pairs']} host pairs reachable")
    for w in h["wan_rtt"]:
        if w.get("skipped"):
            log(f"health: WAN {w['edge']}: {w['skipped']}")
        else:
            log(f"health: WAN {w['edge']} RTT median {w['median_ms']} ms (min {w['min_ms']}) vs configured "
                f"{w['configured_rtt_ms']:.2f} ms {'ok' if w['within_tolerance'] else 'OUT OF TOLERANCE'}")


def _teardown(app, sampler, driver, dist, effects, net, record, state, log) -> None:
    """Never raises: each step runs even if an earlier one failed."""
    def undo_disturbances():
        for problem in effects.close() if effects else []:
            state["warnings"].append(f"teardown: {problem}")

    steps = [("disturbances", lambda: dist and dist.stop()),   # no new client or failure
             ("app", lambda: app.stop()),
             ("schedule", lambda: driver and driver.stop()),
             ("background traffic", undo_disturbances),
             ("counters", lambda: sampler and sampler.stop()),
             ("host processes", lambda: cleanup.kill_pids(
                 [(p, cleanup.proc_start_time(p)) for p in cleanup.pids_in_netns(set(record.data["netns"]))
                  if p not in {h.pid for h in (net.hosts if net else [])}])),
             ("network", lambda: net and netbuild.stop_network(net)),
             ("leftovers", lambda: cleanup.teardown_record(record.data)),
             ("record", record.remove)]
    for name, fn in steps:
        try:
            fn()
        except Exception as e:
            msg = f"teardown step {name} failed: {e!r}"
            state["warnings"].append(msg)
            log(f"warning: {msg}")
