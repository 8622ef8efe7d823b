"""Workload applications: what runs in the hosts during a run.

An App is driven by testbed.lifecycle in this order:
    setup(ctx) -> start() -> progress() ... until done() -> collect() ; stop() always
Schemes (ps, ring, ina, ...) implement the same interface later. Each worker writes its
own event log ctx.events_dir/<worker>.jsonl (JSON lines, CLOCK_MONOTONIC timestamps,
i.e. Python's time.monotonic(), shared by all network namespaces).

The `iperf` demo app: every iteration, each worker sends to its peer in the next
datacenter (ring order) with iperf3, TCP or UDP, a fixed number of bytes, and logs what
iperf3 measured. Worker drivers are testbed.iperf_worker processes inside the hosts.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from topologies.graph import hosts, hosts_by_dc
from workers.events import read_events

IPERF_PORT = 5201


@dataclass
class RunContext:
    net: object                 # mininet.net.Mininet
    graph: object               # dilated topology graph
    scenario: object            # testbed.schema_models.Scenario
    run_dir: Path
    events_dir: Path
    record: object              # testbed.cleanup.RunRecord: register every process started
    iterations: int | None
    duration_s: float | None
    backend: str = "softswitch"  # for runtime clients only; apps never branch on it

    def client(self, switch: str):
        """The runtime client of one switch (simple_switch_CLI language, either backend)."""
        from testbed.backends import client_for
        return client_for(self.backend, self.net[switch].thrift_port)


@dataclass
class WorkerProgress:
    worker: str
    iterations: int
    total: int | None
    bytes: int = 0
    finished: bool = False
    error: str | None = None


class App(ABC):
    name = "app"

    @abstractmethod
    def setup(self, ctx: RunContext) -> None: ...

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def progress(self) -> list[WorkerProgress]: ...

    def done(self) -> bool:
        return all(p.finished for p in self.progress())

    @abstractmethod
    def collect(self) -> dict: ...

    @abstractmethod
    def stop(self) -> None:
        """Kill every process the app started (idempotent; called on every exit path)."""


def ring_peers(graph) -> dict[str, str]:
    """Each host's peer: the host with the same rank in the next datacenter."""
    by_dc = hosts_by_dc(graph)
    dcs = list(by_dc)
    peers = {}
    for i, d in enumerate(dcs):
        nxt = by_dc[dcs[(i + 1) % len(dcs)]]
        for k, h in enumerate(by_dc[d]):
            peers[h] = nxt[k % len(nxt)]
    return peers


def check_option_names(scheme: str, opts: dict, known) -> None:
    """Reject scheme_options keys that the scheme does not know (a typo is an error)."""
    unknown = set(opts) - set(known)
    if unknown:
        raise ValueError(f"scheme_options: unknown option(s) {sorted(unknown)} for scheme {scheme} "
                         f"(known: {', '.join(sorted(known))})")


@dataclass
class IperfOptions:
    protocol: str = "tcp"          # tcp | udp
    bytes_per_iteration: int = 1_000_000
    udp_rate_mbps: float | None = None   # udp only; default: the WAN rate (dilated)
    udp_length: int = 1400
    timeout_s: float = 120.0

    @classmethod
    def from_options(cls, opts: dict) -> "IperfOptions":
        check_option_names("iperf", opts, cls.__dataclass_fields__)
        o = cls(**opts)
        if o.protocol not in ("tcp", "udp"):
            raise ValueError(f"scheme_options.protocol: {o.protocol!r} is not tcp or udp")
        if o.bytes_per_iteration <= 0:
            raise ValueError("scheme_options.bytes_per_iteration must be positive")
        return o


class IperfApp(App):
    name = "iperf"

    def __init__(self, options: dict | None = None):
        self.opts = IperfOptions.from_options(dict(options or {}))
        self.procs: list[subprocess.Popen] = []
        self.ctx: RunContext | None = None
        self.workers: list[str] = []
        self.peers: dict[str, str] = {}

    def setup(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.peers = ring_peers(ctx.graph)
        self.workers = hosts(ctx.graph)
        if self.opts.protocol == "udp" and self.opts.udp_rate_mbps is None:
            wan = [d["bandwidth_mbps"] for _, _, d in ctx.graph.edges(data=True) if d["kind"] == "wan"]
            self.opts.udp_rate_mbps = min(wan) if wan else 10.0

    def _popen(self, host, args: list[str], what: str, log: Path):
        out = open(log, "w")
        p = host.popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=str(Path(__file__).parent.parent))
        out.close()
        self.procs.append(p)
        self.ctx.record.add_process(p.pid, what)
        return p

    def start(self) -> None:
        ctx = self.ctx
        logs = ctx.run_dir / "logs"
        logs.mkdir(exist_ok=True)
        servers = sorted(set(self.peers.values()))
        for s in servers:
            self._popen(ctx.net[s], ["iperf3", "-s", "-p", str(IPERF_PORT)],
                        f"iperf3 server in {s}", logs / f"{s}.iperf3-server.log")
        iterations = ctx.iterations or 10**9
        for w in self.workers:
            peer_ip = ctx.graph.nodes[self.peers[w]]["ip"]
            args = [sys.executable, "-m", "testbed.iperf_worker", "--worker", w,
                    "--index", str(ctx.graph.nodes[w]["worker_index"]),
                    "--peer", peer_ip, "--port", str(IPERF_PORT),
                    "--protocol", self.opts.protocol, "--bytes", str(self.opts.bytes_per_iteration),
                    "--iterations", str(iterations), "--events", str(ctx.events_dir / f"{w}.jsonl"),
                    "--timeout", str(self.opts.timeout_s), "--udp-length", str(self.opts.udp_length)]
            if ctx.duration_s:
                args += ["--duration", str(ctx.duration_s)]
            if self.opts.protocol == "udp":
                args += ["--udp-rate-mbps", str(self.opts.udp_rate_mbps)]
            self._popen(ctx.net[w], args, f"iperf worker {w}", logs / f"{w}.worker.log")

    def progress(self) -> list[WorkerProgress]:
        out = []
        total = self.ctx.iterations
        for w in self.workers:
            ev = read_events(self.ctx.events_dir / f"{w}.jsonl")
            its = [e for e in ev if e.get("event") == "iteration_end"]
            fin = [e for e in ev if e.get("event") in ("worker_end", "worker_error")]
            err = next((e.get("error") for e in ev if e.get("event") == "worker_error"), None)
            out.append(WorkerProgress(w, len(its), total, sum(e.get("bytes", 0) for e in its),
                                      bool(fin), err))
        return out

    def collect(self) -> dict:
        from testbed.dilation import to_real_rate, to_real_seconds
        dil = self.ctx.scenario.time_dilation
        per = {}
        for w in self.workers:
            ev = [e for e in read_events(self.ctx.events_dir / f"{w}.jsonl")
                  if e.get("event") == "iteration_end"]
            if not ev:
                per[w] = {"iterations": 0}
                continue
            mbps = [e["bits_per_second"] / 1e6 for e in ev]
            mean_it = sum(e["t_end"] - e["t_start"] for e in ev) / len(ev)
            per[w] = {"iterations": len(ev), "peer": self.peers[w],
                      "mean_mbps": sum(mbps) / len(mbps), "min_mbps": min(mbps),
                      "max_mbps": max(mbps),
                      "mean_iteration_s": mean_it,
                      # back in real-world units (time dilation s: rates x s, times / s)
                      "real_mean_mbps": to_real_rate(sum(mbps) / len(mbps), dil),
                      "real_mean_iteration_s": to_real_seconds(mean_it, dil),
                      "bytes": sum(e["bytes"] for e in ev),
                      "retransmits": sum(e.get("retransmits") or 0 for e in ev),
                      "lost_percent_mean": (sum(e.get("lost_percent") or 0 for e in ev) / len(ev))
                      if self.opts.protocol == "udp" else None}
        errors = {p.worker: p.error for p in self.progress() if p.error}
        return {"app": self.name, "protocol": self.opts.protocol, "time_dilation": dil,
                "workers": per, "errors": errors}

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(3)


def _lazy(module: str, cls: str, **kwargs):
    """A factory that imports the app's module on first use (those modules import this one)."""
    def make(options):
        return getattr(importlib.import_module(module), cls)(options, **kwargs)
    return make


# scheme name -> App class or factory(options) -> App: one line per scheme.
APPS: dict = {
    "iperf": IperfApp,
    "ina": _lazy("testbed.app_ina", "InaApp", scheme="ina"),
    "geo-ina": _lazy("testbed.app_ina", "InaApp", scheme="geo-ina"),
    "ps": _lazy("testbed.app_baselines", "PsApp"),
    "hier-ps": _lazy("testbed.app_baselines", "HierPsApp"),
    "ring": _lazy("testbed.app_baselines", "RingApp"),
}


def make_app(scheme: str, options: dict) -> App:
    make = APPS.get(scheme)
    if make is None:
        raise ValueError(f"scheme {scheme!r} has no application (available: {', '.join(sorted(APPS))})")
    return make(options)
