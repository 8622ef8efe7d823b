"""Carries out a scenario's background traffic and failures while the job runs.

DisturbanceDriver is a thread like the bandwidth ScheduleDriver (testbed/lifecycle.py):
it waits for each Action of testbed/disturbances.timeline and hands it to NetworkEffects,
which does it in the emulated network, and writes what happened (or the error) to the
run's event stream (testbed/run_events.py). NetworkEffects owns every process it starts
(iperf3 servers and clients, recorded in the run's cleanup record as they start) and
every link it took down: close() ends the processes by PID and sets the links up again,
and the run's teardown calls it on every exit path.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from testbed import disturbances as D
from topologies.ports import interface_name

SERVER_READY_TIMEOUT_S = 5.0
STOP_GRACE_S = 3.0


def _end(p: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> int | None:
    """SIGTERM, then SIGKILL after grace_s; the exit status (None if it would not die)."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(grace_s)
        except subprocess.TimeoutExpired:
            p.kill()
            try:
                p.wait(grace_s)
            except subprocess.TimeoutExpired:
                return None
    return p.returncode


class NetworkEffects:
    """The side effects of the actions. `process(kind, name)` looks up a process of the
    scheme's app (testbed/scheme_app.SchemeApp.process) for kills; `names` maps what a
    scenario may name to (kind, name) (disturbances.process_names)."""

    def __init__(self, net, graph, scenario, run_dir: Path, record,
                 process=lambda kind, name: None, names: dict | None = None):
        self.net, self.graph, self.scn = net, graph, scenario
        self.logs = Path(run_dir) / "logs"
        self.record = record
        self.process, self.names = process, names or {}
        self.servers: dict[int, subprocess.Popen] = {}
        self.clients: dict[int, subprocess.Popen] = {}
        self.down: dict[int, list[str]] = {}   # failure index -> interfaces it set down
        self._lock = threading.Lock()

    # ------------------------------------------------------------ set-up
    def setup(self) -> None:
        """Before the run: every background flow's hosts exist (fails early otherwise)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        for f in self.scn.background:
            for dc in (f.src, f.dst):
                D.endpoint(self.graph, dc)

    def _start_server(self, k: int, host: str) -> subprocess.Popen:
        """A one-test iperf3 server for one on-period, listening when this returns. One per
        period, because a server whose client vanished (killed while its link was down)
        stays busy with that test and refuses the next client."""
        p = self._popen(host, D.iperf_server_args(k), self.logs / f"background-{k}-server.log",
                        f"background flow {k} iperf3 server in {host}")
        port = D.BACKGROUND_BASE_PORT + k
        deadline = time.monotonic() + SERVER_READY_TIMEOUT_S
        while not self._listening(host, port):
            if p.poll() is not None or time.monotonic() > deadline:
                _end(p)
                raise RuntimeError(f"iperf3 server on {host} port {port} did not start "
                                   f"(log: {self.logs}/background-{k}-server.log)")
            time.sleep(0.02)
        return p

    def _listening(self, host: str, port: int) -> bool:
        # a process in the host's namespace, not its shell: the shell is not thread-safe
        q = self.net[host].popen(["ss", "-ltnH", f"sport = :{port}"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        out, _ = q.communicate(timeout=5)
        return f":{port}" in out

    def _popen(self, host: str, args: list[str], log: Path, what: str) -> subprocess.Popen:
        with open(log, "a") as out:
            p = self.net[host].popen(args, stdout=out, stderr=subprocess.STDOUT)
        self.record.add_process(p.pid, what)
        return p

    # ------------------------------------------------------------ actions
    def apply(self, a: D.Action) -> dict:
        """Do one action; the fields of its event record. Raises on failure."""
        with self._lock:
            return getattr(self, "_" + a.kind)(a)

    def _background_start(self, a: D.Action) -> dict:
        f = self.scn.background[a.index]
        self._stop_flow(a.index)   # never two clients of one flow at once
        src, dst = D.endpoint(self.graph, f.src), D.endpoint(self.graph, f.dst)
        self.servers[a.index] = self._start_server(a.index, dst)
        args = D.iperf_client_args(f, a.index, self.graph.nodes[dst]["ip"], a.duration_s,
                                   self.scn.time_dilation, self.scn.tcp.congestion_control)
        p = self._popen(src, args, self.logs / f"background-{a.index}-client.log",
                        f"background flow {a.index} iperf3 client in {src}")
        self.clients[a.index] = p
        return {"t": time.monotonic(), "flow": a.index, "src": f.src, "dst": f.dst,
                "proto": f.proto, "rate_mbps": f.rate_mbps, "flows": f.flows,
                "duration_s": a.duration_s, "host": src, "to": dst, "pid": p.pid,
                "server_pid": self.servers[a.index].pid}

    def _stop_flow(self, k: int) -> tuple[subprocess.Popen | None, int | None, int | None]:
        """End flow k's client, then its server: (client, its status before, after)."""
        p = self.clients.pop(k, None)
        early = None if p is None else p.poll()
        rc = None if p is None else _end(p)
        server = self.servers.pop(k, None)
        if server is not None:
            _end(server)
        return p, early, rc

    def _background_stop(self, a: D.Action) -> dict:
        p, early, rc = self._stop_flow(a.index)
        if p is None:
            return {"flow": a.index, "pid": None}
        rec = {"flow": a.index, "pid": p.pid, "returncode": rc}   # early: ended before its stop
        if early not in (None, 0):
            rec["error"] = (f"iperf3 client exited with {early} before its stop "
                            f"(log: {self.logs}/background-{a.index}-client.log)")
        return rec

    def _kill(self, a: D.Action) -> dict:
        target = self.scn.failures[a.index].kill
        kind, name = D.resolve_target(target, self.names)
        p = self.process(kind, name)
        if p is None:
            raise RuntimeError(f"{kind} {name} is not running (not started yet?)")
        if p.poll() is not None:
            raise RuntimeError(f"{kind} {name} (PID {p.pid}) had already exited with {p.returncode}")
        os.kill(p.pid, signal.SIGKILL)
        try:
            rc = p.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{kind} {name} (PID {p.pid}) still alive {STOP_GRACE_S:g} s "
                               f"after SIGKILL") from None
        return {"failure": a.index, "target": target, "process": f"{kind}:{name}",
                "pid": p.pid, "returncode": rc}

    def _link_intfs(self, index: int) -> tuple[tuple[str, str], list[str]]:
        a, b = self.scn.failures[index].link_down
        u, v = D.wan_link(self.graph, a, b)
        return (u, v), [interface_name(self.graph, u, v), interface_name(self.graph, v, u)]

    def _link_down(self, a: D.Action) -> dict:
        (u, v), intfs = self._link_intfs(a.index)
        for intf in intfs:
            _ip_link(intf, "down")
            self.down.setdefault(a.index, []).append(intf)
        return {"failure": a.index, "link": f"{u}-{v}",
                "datacenters": list(self.scn.failures[a.index].link_down), "interfaces": intfs}

    def _link_up(self, a: D.Action) -> dict:
        (u, v), intfs = self._link_intfs(a.index)
        for intf in intfs:
            _ip_link(intf, "up")
        self.down.pop(a.index, None)
        return {"failure": a.index, "link": f"{u}-{v}",
                "datacenters": list(self.scn.failures[a.index].link_down), "interfaces": intfs}

    # ------------------------------------------------------------ teardown
    def close(self) -> list[str]:
        """End every process started here (clients first) by PID and set every link this
        took down up again. Idempotent; returns what could not be undone."""
        problems = []
        with self._lock:
            for what, procs in (("client", self.clients), ("server", self.servers)):
                for k, p in list(procs.items()):
                    if _end(p) is None:
                        problems.append(f"background flow {k} iperf3 {what} (PID {p.pid}) would not end")
                    procs.pop(k)
            for k, intfs in list(self.down.items()):
                for intf in intfs:
                    try:
                        _ip_link(intf, "up")
                    except RuntimeError as e:
                        problems.append(str(e))
                self.down.pop(k)
        return problems


def _ip_link(intf: str, state: str) -> None:
    p = subprocess.run(["ip", "link", "set", "dev", intf, state], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"ip link set dev {intf} {state} failed: {p.stderr.strip()}")


class DisturbanceDriver(threading.Thread):
    """Carries out the actions at their times (emulated s after t0, default: when the
    thread starts); each becomes a record of the run's event stream, with `error` when it
    failed (the error is kept in `errors` too, and the driver goes on)."""

    def __init__(self, actions: list[D.Action], effects, log, t0: float | None = None):
        super().__init__(name="disturbances", daemon=True)
        self.actions, self.effects, self.log, self.t0 = actions, effects, log, t0
        self.stop_event = threading.Event()
        self.errors: list[str] = []
        self.done: list[dict] = []

    def run(self) -> None:
        if self.t0 is None:
            self.t0 = time.monotonic()
        for a in self.actions:
            if self.stop_event.wait(max(0.0, self.t0 + a.t_s - time.monotonic())):
                return
            t = time.monotonic()
            try:
                fields = self.effects.apply(a)
            except Exception as e:
                fields = {"error": str(e)}
            t = fields.pop("t", t)   # when it took effect, if later than its start
            if fields.get("error"):
                self.errors.append(f"{a.kind} at {a.t_s:g} s (emulated): {fields['error']}")
            self.done.append(self.log.write(a.kind, t=t, t_s=a.t_s, **fields))

    def stop(self) -> None:
        self.stop_event.set()
        if self.is_alive():
            self.join(timeout=10)
