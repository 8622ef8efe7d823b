"""Schemes `ina` (one aggregating switch, SwitchML-like) and `geo-ina` (hierarchical by
location, L3DML-like): the App that trains through the switches.

    setup(ctx)  aggregation tree of the job (control/agg_tree.py) -> switch entries
                (control/agg_entries.py) pushed through each switch's runtime client;
                one JSON config per worker (workers/ina_worker.py)
    start()     a worker process per host; once every worker reports ready the app
                creates the start file, so iteration 0 starts everywhere together
    progress()  iterations done, from the workers' event logs
    collect()   workers/events.summarize_job: iteration times, goodput, retransmissions,
                loss and accuracy per iteration, the quantization check when enabled
    stop()      SIGTERM to every worker (they log worker_end), then kill if needed

Switch program: these schemes need p4/aggregation.p4. The scenario schema picks it
when the scenario does not name switch.program (testbed/schema_models.py,
Scenario._aggregation_program); a scenario that names p4/forward.p4 is refused here
with what to change.

scheme_options (all optional):
  root     datacenter name or index of the global aggregation point (default: best total RTT)
  window   slots per aggregation point = most packets in flight per worker: an integer,
           or "auto" (default): the bandwidth-delay product of the slowest WAN link and the
           longest worker-to-root round trip, in packets, rounded up to a power of two,
           kept in 64..1024 and within the switch's slots (AGG_SLOTS / points on one
           switch). The congestion window (congestion_control) decides how much of it
           is used.
  k        values per packet, 32 or 64 (default: the switch's AGG_K define, else 32)
  job      job id 0..255 (default 1)
  timeout_ms  initial retransmission timeout before RTT samples exist, real-world ms
              (default 1000; x time dilation)
  min_rto_ms  lower bound of the retransmission timeout, emulated ms (default 100: on a
              shared 2-core machine processes stall for tens of ms, and a lower bound
              turns each stall into a burst of spurious retransmissions; bench/ina.py
              measured 0 against 5894 retransmissions per 15k packets at 5 ms)
  rto_margin_ms  the timeout is at least SRTT + this, emulated ms; "auto" (default): half
              the longest worker-root round trip, at least 100 ms. Result times of a steady
              stream vary so little that RFC 6298's 4 x RTTVAR decays to ~0 and the timer
              hugs SRTT; then a little queueing in a busy software switch times out a whole
              window. geo-3dc without stragglers, 3 iterations: 46 % of packets were
              retransmissions with the estimator's 1 ms, 24 % with 100 ms, 0 with 300 ms
              (iterations 20.3 -> 13.0 s emulated)
              The timeout is also never below the longest worker-root round trip + the
              margin: a worker that completes its slots sees LAN-short result times.
  max_retransmissions  per chunk before the worker gives up (default 50)
  congestion_control  true (default): AIMD congestion window below the slots
              (workers/congestion.py); false: every worker keeps `window` chunks in flight.
              A fixed window bursts window x fan-in packets into a shaped WAN queue
              (docs/ina.md, "Congestion control")
  clip     elementwise gradient clipping bound shared by all workers (default 4.0)
  check    compare every aggregated sum with the float reference (default false: it
           costs each worker n gradient computations per iteration)
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from testbed.apps import App, RunContext, WorkerProgress, check_option_names
from topologies.graph import host_id

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 120.0


@dataclass
class InaOptions:
    root: str | int | None = None
    window: int | str = "auto"
    k: int | None = None
    job: int = 1
    timeout_ms: float = 1000.0
    min_rto_ms: float = 100.0
    rto_margin_ms: float | str = "auto"
    max_retransmissions: int = 50
    congestion_control: bool = True
    clip: float = 4.0
    check: bool = False

    @classmethod
    def from_options(cls, scheme: str, opts: dict) -> "InaOptions":
        check_option_names(scheme, opts, cls.__dataclass_fields__)
        o = cls(**opts)
        if o.window != "auto" and (not isinstance(o.window, int) or not 1 <= o.window < 2**15):
            raise ValueError(f"scheme_options.window must be \"auto\" or an integer in 1..32767 "
                             f"(got {o.window!r})")
        if o.k is not None and o.k not in (32, 64):
            raise ValueError(f"scheme_options.k must be 32 or 64 (got {o.k!r})")
        if not isinstance(o.job, int) or not 0 <= o.job <= 255:
            raise ValueError(f"scheme_options.job must be an integer in 0..255 (got {o.job!r})")
        if o.rto_margin_ms != "auto" and not (isinstance(o.rto_margin_ms, (int, float)) and o.rto_margin_ms > 0):
            raise ValueError(f"scheme_options.rto_margin_ms must be \"auto\" or a number > 0 "
                             f"(got {o.rto_margin_ms!r})")
        if not o.timeout_ms > 0 or not o.min_rto_ms > 0 or not o.clip > 0 \
                or o.max_retransmissions < 1:
            raise ValueError("scheme_options: timeout_ms, min_rto_ms and clip must be > 0, "
                             "max_retransmissions >= 1")
        if not isinstance(o.congestion_control, bool):
            raise ValueError("scheme_options.congestion_control must be true or false "
                             f"(got {o.congestion_control!r})")
        if not isinstance(o.check, bool):
            raise ValueError(f"scheme_options.check must be true or false (got {o.check!r})")
        return o


AUTO_WINDOW_MIN, AUTO_WINDOW_MAX = 64, 1024


def auto_window(graph, tree, k: int, slots: int | None = None) -> int:
    """Packets per worker in flight that fill the slowest WAN link over the longest
    worker -> root -> worker round trip (dilated graph), as a power of two in 64..1024,
    and no more than a switch's slots allow for the points it hosts (`slots`: the
    program's AGG_SLOTS). The congestion window (workers/congestion.py) keeps a large
    window from bursting into the WAN queues; without it 512 was the safe cap."""
    import math
    from collections import Counter
    from control.agg_entries import DEFAULT_SLOTS
    from workers.agg_packet import frame_bytes
    rtt_s = longest_rtt_ms(graph, tree) / 1000.0
    wan = [a["bandwidth_mbps"] for _, _, a in graph.edges(data=True) if a["kind"] == "wan"]
    rate = min(wan) if wan else min(a["bandwidth_mbps"] for _, _, a in graph.edges(data=True))
    bdp = rate * 1e6 / 8 * rtt_s / frame_bytes(k)
    w = 2 ** math.ceil(math.log2(max(bdp, 1.0)))
    per_switch = max(Counter(p.switch for p in tree.points.values()).values())
    fit = 2 ** int(math.log2((slots or DEFAULT_SLOTS) // per_switch))
    return int(min(AUTO_WINDOW_MAX, fit, max(AUTO_WINDOW_MIN, w)))


def longest_rtt_ms(graph, tree) -> float:
    """Longest worker -> root -> worker path delay (dilated graph, ms)."""
    import networkx as nx
    root_sw = tree.points[tree.root].switch
    return max(2 * nx.shortest_path_length(graph, w, root_sw, weight="delay_ms") for w in tree.workers)


def rto_floor_ms(opts: "InaOptions", graph, tree) -> float:
    """No timeout below the tree's longest round trip + the margin (dilated ms).

    A worker whose chunk is the last of its slot gets the result within its own LAN
    round trip, so a lagging worker's SRTT (measured: 7 ms in a 1.65 s tree) says nothing
    about when its next chunk, sent earlier than someone else's, can complete. Without
    the floor such a worker times out early, cuts its congestion window, lags more, and
    the whole job waits for it (geo-ina bench at 50 Mbps: 4.4 s instead of 1.6 s)."""
    return longest_rtt_ms(graph, tree) + rto_margin_ms(opts, graph, tree)


def rto_margin_ms(opts: "InaOptions", graph, tree) -> float:
    if opts.rto_margin_ms != "auto":
        return float(opts.rto_margin_ms)
    return max(100.0, 0.5 * longest_rtt_ms(graph, tree))


def program_k(scenario) -> int:
    """k the switches are compiled with (their AGG_K define, default 32)."""
    return int(scenario.switch.defines.get("AGG_K", 32))


def check_program(scenario) -> None:
    prog = Path(scenario.switch.program).name
    if prog == "forward.p4":
        raise ValueError(f"scheme {scenario.scheme} aggregates in the switches but switch.program is "
                         f"{scenario.switch.program}: remove switch.program from the scenario (then "
                         "p4/aggregation.p4 is chosen) or set it to p4/aggregation.p4")


def worker_configs(graph, scenario, tree, opts: InaOptions, k: int, events_dir: Path,
                   go_file: Path, iterations, duration_s) -> dict[str, dict]:
    """One worker config (workers.ina_worker.WorkerConfig fields) per worker (pure)."""
    from workers.ina_client import ClientConfig
    s = scenario.time_dilation
    out = {}
    for h in sorted(tree.workers, key=lambda n: graph.nodes[n]["worker_index"]):
        a = graph.nodes[h]
        floor_s = rto_floor_ms(opts, graph, tree) / 1000.0
        client = ClientConfig.for_worker(tree, h, k=k,
                                         initial_rto=max(opts.timeout_ms * s / 1000.0, floor_s),
                                         min_rto=max(min(opts.min_rto_ms, opts.timeout_ms * s) / 1000.0,
                                                     floor_s),
                                         max_retransmissions=opts.max_retransmissions,
                                         congestion_control=opts.congestion_control)
        out[h] = {"worker": h, "index": a["worker_index"], "host_id": host_id(a["dc_index"], a["rack"], a["worker"]),
                  "dc": a["dc"], "ip": a["ip"], "n_workers": len(tree.workers), "seed": scenario.seed,
                  "events": str(events_dir / f"{h}.jsonl"), "client": asdict(client),
                  "workload": scenario.workload.model_dump(),
                  "compute_time": scenario.compute_time.model_dump(),
                  "stragglers": scenario.stragglers.model_dump(),
                  "compute_speed": a.get("compute_speed", 1.0), "dilation": s,
                  "iterations": iterations, "duration_s": duration_s, "clip": opts.clip,
                  "check": opts.check, "go_file": str(go_file),
                  "rto_margin_s": rto_margin_ms(opts, graph, tree) / 1000.0}
    return out


class InaApp(App):
    name = "ina"

    def __init__(self, options: dict | None = None, scheme: str = "ina"):
        self.scheme = scheme
        self.name = scheme
        self.opts = InaOptions.from_options(scheme, dict(options or {}))
        self.ctx: RunContext | None = None
        self.tree = None
        self.configs: dict[str, dict] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        self.go_file: Path | None = None
        self.k = 32
        self.window: int | None = None

    # ------------------------------------------------------------------ setup
    def setup(self, ctx: RunContext) -> None:
        from control.agg_entries import push, switch_commands
        from control.agg_tree import build_tree
        self.ctx = ctx
        scn = ctx.scenario
        check_program(scn)
        self.k = program_k(scn)
        if self.opts.k is not None and self.opts.k != self.k:
            raise ValueError(f"scheme_options.k is {self.opts.k} but the switches are compiled with "
                             f"AGG_K={self.k}: set switch.defines.AGG_K: {self.opts.k} or drop one")
        self.tree = build_tree(ctx.graph, job=self.opts.job, scheme=self.scheme, root=self.opts.root,
                               window=64 if self.opts.window == "auto" else self.opts.window)
        if self.opts.window == "auto":
            self.tree.window = auto_window(ctx.graph, self.tree, self.k)
        self.window = self.tree.window
        for sw, cmds in switch_commands(ctx.graph, [self.tree]).items():
            client = ctx.client(sw)
            try:
                push(client, cmds)
            except RuntimeError as e:
                raise RuntimeError(f"switch {sw}: {e} (switch log: {getattr(ctx.net[sw], 'log_file', '?')})") from None
            finally:
                client.close()
        ctx.events_dir.mkdir(parents=True, exist_ok=True)
        cfg_dir = ctx.run_dir / "workers"
        cfg_dir.mkdir(exist_ok=True)
        self.go_file = ctx.run_dir / "workers" / "start"
        self.configs = worker_configs(ctx.graph, scn, self.tree, self.opts, self.k, ctx.events_dir,
                                      self.go_file, ctx.iterations, ctx.duration_s)
        for h, c in self.configs.items():
            (cfg_dir / f"{h}.json").write_text(json.dumps(c, indent=1))

    # ------------------------------------------------------------------ run
    def start(self) -> None:
        ctx = self.ctx
        logs = ctx.run_dir / "logs"
        logs.mkdir(exist_ok=True)
        for h in self.configs:
            with open(logs / f"{h}.worker.log", "w") as out:
                p = ctx.net[h].popen([sys.executable, "-m", "workers.ina_worker", "--config",
                                      str(ctx.run_dir / "workers" / f"{h}.json")],
                                     stdout=out, stderr=subprocess.STDOUT, cwd=str(REPO))
            self.procs[h] = p
            ctx.record.add_process(p.pid, f"ina worker {h}")
        self._wait_ready()
        self.go_file.touch()

    def _wait_ready(self) -> None:
        t0 = time.monotonic()
        waiting = set(self.configs)
        while waiting:
            for h in sorted(waiting):
                ev = self._events(h)
                if any(e.get("event") == "worker_ready" for e in ev):
                    waiting.discard(h)
                    continue
                err = next((e["error"] for e in ev if e.get("event") == "worker_error"), None)
                if err or self.procs[h].poll() is not None:
                    raise RuntimeError(f"worker {h} failed to start: {err or 'it exited'} "
                                       f"(log: {self.ctx.run_dir}/logs/{h}.worker.log)")
            if waiting and time.monotonic() - t0 > READY_TIMEOUT_S:
                raise RuntimeError(f"workers {sorted(waiting)} not ready after {READY_TIMEOUT_S:.0f} s; "
                                   f"see {self.ctx.run_dir}/logs")
            time.sleep(0.05)

    def _events(self, h: str) -> list[dict]:
        from workers.events import read_events
        return read_events(self.ctx.events_dir / f"{h}.jsonl")

    def progress(self) -> list[WorkerProgress]:
        out = []
        for h in self.configs:
            ev = self._events(h)
            its = [e for e in ev if e.get("event") == "iteration_end"]
            end = [e for e in ev if e.get("event") in ("worker_end", "worker_error")]
            err = next((e.get("error") for e in end if e.get("event") == "worker_error"), None)
            if err is None and not end and h in self.procs and self.procs[h].poll() not in (None, 0):
                err = f"worker exited with status {self.procs[h].returncode} (see logs/{h}.worker.log)"
            out.append(WorkerProgress(h, len(its), self.ctx.iterations,
                                      sum(e.get("bytes_sent", 0) for e in its), bool(end) or err is not None, err))
        # BSP with a time limit: once one worker stops on its duration, the others cannot
        # finish another iteration without it, so the job is done.
        if any(e.get("reason") == "duration reached" for h in self.configs for e in self._events(h)
               if e.get("event") == "worker_end"):
            for p in out:
                p.finished = True
        return out

    def collect(self) -> dict:
        from workers.events import summarize_job
        per = {h: self._events(h) for h in self.configs}
        s = summarize_job(per, self.ctx.scenario.time_dilation)
        errors = {h: w["error"] for h, w in s["workers"].items() if w.get("error")}
        root = self.tree.points[self.tree.root]
        return {"app": self.name, "scheme": self.scheme, "k": self.k, "window": self.window,
                "job": self.opts.job, "root": root.switch, "aggregation_points": len(self.tree.points),
                "levels": self.tree.depth(), "parameters": _parameters(per),
                "metrics": "iteration time: slowest worker's end - earliest start of an iteration; "
                           "goodput: 4 bytes per gradient value / (first send -> last result)",
                **s, "errors": errors}

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(3)


def _parameters(per: dict[str, list[dict]]):
    for ev in per.values():
        for e in ev:
            if e.get("event") == "worker_start":
                return e.get("parameters")
    return None
