"""Apps of the TCP baseline schemes: `ps`, `hier-ps`, `ring` (testbed/apps.py interface).

Servers and workers are real processes in the Mininet hosts (workers/comm_ps.py,
workers/worker_main.py) talking TCP through the emulated network, so the kernel's
congestion control meets the WAN's delay and bandwidth.

scheme_options (all optional):
  ps       server_dc (datacenter name; default the first), shards (k servers, tensor split
           by range; placed round-robin on that datacenter's hosts)
  hier-ps  global_dc (where the global server runs; default the first datacenter); one
           local server per datacenter on its first host
  all      dedicated_servers (false: servers share hosts with workers, as in MXNet's
           usual deployment; true: server hosts run no worker), base_port (7100),
           timeout_s (real-world seconds of silence before a peer is declared dead, 120;
           x time dilation in the emulation; raise it for compute times near that),
           verify (each worker checks the sum against numpy every iteration; costs CPU)
Placement is pure (`plan_placement`), so it is tested without Mininet.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from testbed.apps import App, RunContext, WorkerProgress, check_option_names
from topologies.graph import hosts_by_dc
from workers.comm_hier_ps import hier_plan
from workers.comm_ring import ring_order

REPO = Path(__file__).resolve().parent.parent


@dataclass
class BaselineOptions:
    server_dc: str | None = None
    global_dc: str | None = None
    shards: int = 1
    dedicated_servers: bool = False
    base_port: int = 7100
    timeout_s: float = 120.0
    verify: bool = False

    @classmethod
    def from_options(cls, scheme: str, opts: dict) -> "BaselineOptions":
        allowed = {"ps": {"server_dc", "shards"}, "hier-ps": {"global_dc"}, "ring": set()}[scheme] | \
            {"dedicated_servers", "base_port", "timeout_s", "verify"}
        check_option_names(scheme, opts, allowed)
        o = cls(**opts)
        if not isinstance(o.shards, int) or o.shards < 1:
            raise ValueError(f"scheme_options.shards must be an integer >= 1 (got {o.shards!r})")
        if not 1024 <= o.base_port <= 65000:
            raise ValueError(f"scheme_options.base_port must be in 1024..65000 (got {o.base_port})")
        if not isinstance(o.timeout_s, (int, float)) or o.timeout_s <= 0:
            raise ValueError("scheme_options.timeout_s must be positive")
        return o


@dataclass
class Placement:
    """Who runs what: servers (name, host, port, argv extras) and per-worker comm configs."""
    workers: list[str]                                  # in rank order
    servers: list[dict] = field(default_factory=list)   # {name, host, port, children, upstream, rank}
    comm: dict[str, dict] = field(default_factory=dict)


def _dc_by_name(graph, name: str | None, what: str) -> int:
    dcs = {d["dc"]: d["dc_index"] for _, d in graph.nodes(data=True) if d["role"] == "host"}
    if name is None:
        return min(dcs.values())
    if name not in dcs:
        raise ValueError(f"scheme_options.{what}: no datacenter {name!r} (datacenters: "
                         f"{', '.join(sorted(dcs, key=dcs.get))})")
    return dcs[name]


def plan_placement(scheme: str, graph, o: BaselineOptions) -> Placement:
    by_dc = hosts_by_dc(graph)
    ip = lambda h: graph.nodes[h]["ip"]
    if scheme == "ps":
        dc = _dc_by_name(graph, o.server_dc, "server_dc")
        hosts = by_dc[dc]
        srv_hosts = [hosts[i % len(hosts)] for i in range(o.shards)]
        busy = set(srv_hosts) if o.dedicated_servers else set()
        workers = [h for hs in by_dc.values() for h in hs if h not in busy]
        _need_workers(workers, scheme)
        servers = [{"name": f"ps{i}", "host": h, "port": o.base_port + i, "children": len(workers)}
                   for i, h in enumerate(srv_hosts)]
        addrs = [[ip(s["host"]), s["port"]] for s in servers]
        comm = {w: {"servers": addrs, "child_rank": r} for r, w in enumerate(workers)}
        return Placement(workers, servers, comm)
    if scheme == "hier-ps":
        gdc = _dc_by_name(graph, o.global_dc, "global_dc")
        local_host = {dc: hs[0] for dc, hs in by_dc.items()}
        busy = set(local_host.values()) if o.dedicated_servers else set()
        workers = [h for hs in by_dc.values() for h in hs if h not in busy]
        _need_workers(workers, scheme)
        plan = hier_plan([graph.nodes[w]["dc_index"] for w in workers], gdc)
        if o.dedicated_servers and any(dc not in plan.members for dc in by_dc):
            raise ValueError("hier-ps with dedicated_servers needs at least 2 hosts per datacenter "
                             "(one server, one worker)")
        g_host = local_host[gdc]
        servers = [{"name": "global", "host": g_host, "port": o.base_port, "children": len(plan.dcs)}]
        comm = {}
        for dc in plan.dcs:
            port = o.base_port + 1 + plan.server_rank(dc)
            servers.append({"name": f"local{dc}", "host": local_host[dc], "port": port,
                            "children": len(plan.members[dc]),
                            "upstream": f"{ip(g_host)}:{o.base_port}", "rank": plan.server_rank(dc)})
            for r in plan.members[dc]:
                comm[workers[r]] = {"servers": [[ip(local_host[dc]), port]],
                                    "child_rank": plan.local_rank(r)[1]}
        return Placement(workers, servers, comm)
    if scheme == "ring":
        workers = ring_order([(graph.nodes[h]["dc_index"], graph.nodes[h]["worker_index"], h)
                              for hs in by_dc.values() for h in hs])
        n = len(workers)
        comm = {w: {"ring_rank": r, "ring_size": n, "listen": [ip(w), o.base_port],
                    "right": [ip(workers[(r + 1) % n]), o.base_port]} for r, w in enumerate(workers)}
        return Placement(workers, [], comm)
    raise ValueError(f"no baseline scheme {scheme!r} (ps, hier-ps, ring)")


def _need_workers(workers, scheme):
    if not workers:
        raise ValueError(f"{scheme}: dedicated_servers leaves no host for a worker; add hosts or "
                         f"set dedicated_servers: false")


class BaselineApp(App):
    scheme = "?"

    def __init__(self, options: dict | None = None):
        self.opts = BaselineOptions.from_options(self.scheme, dict(options or {}))
        self.name = self.scheme
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.ctx: RunContext | None = None
        self.placement: Placement | None = None

    def setup(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.placement = plan_placement(self.scheme, ctx.graph, self.opts)

    def timeout_s(self) -> float:
        """Emulated seconds of silence before a peer counts as dead (the world is s times slower)."""
        return self.opts.timeout_s * self.ctx.scenario.time_dilation

    def worker_config(self, w: str, rank: int) -> dict:
        ctx, g = self.ctx, self.ctx.graph
        scn, prefix = ctx.scenario, g.graph.get("prefix", "")
        d = g.nodes[w]
        comm = dict(self.placement.comm[w], timeout_s=self.timeout_s(), connect_timeout_s=self.timeout_s())
        return {"worker": w, "host_id": w[len(prefix):], "index": rank, "dc": d["dc"],
                "compute_index": d["worker_index"],
                "compute_speed": d.get("compute_speed", 1.0),
                "n_workers": len(self.placement.workers), "seed": scn.seed,
                "dilation": scn.time_dilation, "iterations": ctx.iterations or 10**9,
                "duration_s": ctx.duration_s, "workload": scn.workload.model_dump(),
                "compute_time": scn.compute_time.model_dump(),
                "stragglers": scn.stragglers.model_dump(), "scheme": self.scheme, "comm": comm,
                "events": str(ctx.events_dir / f"{w}.jsonl"), "verify": self.opts.verify}

    def _popen(self, host: str, args: list[str], what: str, log: Path):
        with open(log, "w") as out:
            p = self.ctx.net[host].popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=str(REPO))
        self.procs.append((what, p))
        self.ctx.record.add_process(p.pid, what)
        return p

    def start(self) -> None:
        ctx, g = self.ctx, self.ctx.graph
        logs = ctx.run_dir / "logs"
        logs.mkdir(exist_ok=True)
        for s in self.placement.servers:
            args = [sys.executable, "-m", "workers.comm_ps", "--host", g.nodes[s["host"]]["ip"],
                    "--port", str(s["port"]), "--children", str(s["children"]), "--name", s["name"],
                    "--timeout", str(self.timeout_s())]
            if s.get("upstream"):
                args += ["--upstream", s["upstream"], "--rank", str(s["rank"])]
            self._popen(s["host"], args, f"{self.scheme} server {s['name']} in {s['host']}",
                        logs / f"server-{s['name']}.log")
        for rank, w in enumerate(self.placement.workers):
            cfg_path = logs / f"{w}.config.json"
            cfg_path.write_text(json.dumps(self.worker_config(w, rank), indent=1))
            self._popen(w, [sys.executable, "-m", "workers.worker_main", str(cfg_path)],
                        f"{self.scheme} worker {w}", logs / f"{w}.worker.log")

    def _events(self) -> dict[str, list[dict]]:
        from workers.events import read_events
        return {w: read_events(self.ctx.events_dir / f"{w}.jsonl") for w in self.placement.workers}

    def progress(self) -> list[WorkerProgress]:
        out = []
        for w, ev in self._events().items():
            its = [e for e in ev if e.get("event") == "iteration_end"]
            err = next((e.get("error") for e in ev if e.get("event") == "worker_error"), None)
            fin = any(e.get("event") in ("worker_end", "worker_error") for e in ev)
            out.append(WorkerProgress(w, len(its), self.ctx.iterations,
                                      sum(e.get("gradient_bytes", 0) for e in its), fin, err))
        if not any(p.finished for p in out):
            dead = self._dead_server()
            if dead:   # a server that died leaves workers waiting until their timeout: say why now
                out = [WorkerProgress(p.worker, p.iterations, p.total, p.bytes, True, dead) for p in out]
        return out

    def _dead_server(self) -> str | None:
        for what, p in self.procs:
            if " server " in what and p.poll() not in (None, 0):
                return f"{what} exited with {p.returncode} (see logs/server-*.log)"
        return None

    def collect(self) -> dict:
        from workers.events import summarize_job
        summary = summarize_job(self._events(), self.ctx.scenario.time_dilation)
        errors = {p.worker: p.error for p in self.progress() if p.error}
        for what, p in self.procs:   # servers print their stats once the last BYE arrived
            if " server " in what:
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        servers = {}
        for s in self.placement.servers:
            try:
                lines = (self.ctx.run_dir / "logs" / f"server-{s['name']}.log").read_text().splitlines()
                servers[s["name"]] = dict(json.loads(lines[-1]), host=s["host"], port=s["port"])
            except (OSError, ValueError, IndexError):
                servers[s["name"]] = {"host": s["host"], "port": s["port"], "stats": "missing"}
        summary.update({"app": self.name, "scheme": self.scheme, "errors": errors,
                        "servers": servers, "ring_order": self.placement.workers
                        if self.scheme == "ring" else None,
                        "options": self.opts.__dict__})
        return summary

    def stop(self) -> None:
        for _, p in self.procs:
            if p.poll() is None:
                p.terminate()
        for _, p in self.procs:
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(3)


class PsApp(BaselineApp):
    scheme = "ps"


class HierPsApp(BaselineApp):
    scheme = "hier-ps"


class RingApp(BaselineApp):
    scheme = "ring"
