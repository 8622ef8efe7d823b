"""Mininet node classes for P4 switches run as a process: the shared ProcessSwitch and the
softswitch's SoftSwitch (BMv2's simple_switch node, built on ProcessSwitch, is the testbed's:
testbed/bmv2.py).

    net.addSwitch("s1", cls=SoftSwitch, program="p4/forward.p4", link_emu={2: {"delay_ms": 10}})

Each runs one process per switch in the root namespace, attached to the switch's veths by
name with `-i PORT@IFNAME` (port numbers are Mininet's), and controlled on a localhost TCP
port. start() waits until the process serves its control port and, if it dies or never
gets there, raises SwitchStartError with the tail of its log: the most common complaint
about P4 Mininet tools is a switch that "did not start" without saying why.
stop() sends SIGTERM to that PID only, then SIGKILL after a timeout.
"""
from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from mininet.node import Switch

from softswitch.dataplane.linkem import LinkEmuConfig, format_link_emu_spec

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG_TAIL_LINES = 25


class SwitchStartError(RuntimeError):
    """A switch process failed to start; the message carries the tail of its log."""


def log_tail(path: str, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]).rstrip()
    except OSError:
        return f"(no log at {path})"


def free_tcp_port() -> int:
    """A localhost port nobody listens on now (the kernel's choice), so that several
    engineers' networks on one machine never fight over 9090 + device id."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_accepts(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def prepare_host(host) -> None:
    """Offloads and IPv6 off in a Mininet host, as P4 testbeds need: the switch reads frames
    with AF_PACKET, so checksum offload would leave it unfinished checksums and TSO/GRO would
    hand it 64 KB super-frames; IPv6 would add router solicitations to every capture."""
    for intf in host.intfList():
        if intf.name == "lo":
            continue
        host.cmd(f"ethtool -K {intf.name} rx off tx off sg off tso off gso off gro off >/dev/null 2>&1")
    for key in ("all", "default", "lo"):
        host.cmd(f"sysctl -qw net.ipv6.conf.{key}.disable_ipv6=1")


def prepare_switch_intf(name: str) -> None:
    subprocess.run(["ethtool", "-K", name, "rx", "off", "tx", "off", "sg", "off", "tso", "off",
                    "gso", "off", "gro", "off"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6", "w") as f:
            f.write("1")
    except OSError:
        pass


def die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the process that started it dies, so a
    crashed or SIGKILLed test runner or testbed leaves no switch behind (the switch exits
    cleanly on SIGTERM). Only the start-up thread's death counts (Linux semantics), which
    is the main thread in Mininet scripts."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class ProcessSwitch(Switch):
    """A Mininet switch backed by one external process with a localhost control port."""

    _device_ids = itertools.count(0)
    start_timeout = 30.0
    stop_timeout = 5.0

    def __init__(self, name, program: str = os.path.join(REPO_ROOT, "p4", "forward.p4"), device_id: int | None = None,
                 thrift_port: int | None = None, log_file: str | None = None, pcap_dir: str | None = None,
                 defines: dict | None = None, link_emu: dict | None = None, control: str = "cli", **params):
        params.setdefault("inNamespace", False)
        Switch.__init__(self, name, **params)
        self.program = os.path.abspath(program)
        self.device_id = next(self._device_ids) if device_id is None else device_id
        self.thrift_port = thrift_port
        self._chosen_port = thrift_port is None   # ours to change if someone takes it first
        # The PID in the default name keeps two networks with an "s1" on one machine apart.
        self.log_file = log_file or os.path.join(tempfile.gettempdir(), f"{name}.{os.getpid()}.switch.log")
        self.pcap_dir = pcap_dir
        self.defines = dict(defines or {})
        self.link_emu = {int(p): (c if isinstance(c, LinkEmuConfig) else LinkEmuConfig(**c))
                         for p, c in (link_emu or {}).items()}
        self.proc: subprocess.Popen | None = None
        if control not in ("cli", "p4runtime"):
            raise ValueError(f"{name}: control {control!r} is not cli or p4runtime")
        self.control = control     # "p4runtime": also serve P4Runtime on grpc_port (chosen at launch)
        self.grpc_port: int | None = None

    # subclasses say how to run themselves
    def command(self) -> list[str]:
        raise NotImplementedError

    def is_ready(self) -> bool:
        return port_accepts(self.thrift_port)

    def port_map(self) -> dict[int, str]:
        return {self.ports[i]: i.name for i in self.intfList() if i.name != "lo" and i in self.ports}

    def start(self, controllers=None) -> None:
        """Launches the process and waits until it serves its control port."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Starts the process without waiting: launch() every switch, then wait_ready() each,
        and the programs load in parallel (bring-up time on a multi-core machine)."""
        if self.thrift_port is None:
            self.thrift_port = free_tcp_port()
        if self.control == "p4runtime" and (self.grpc_port is None or self._chosen_port):
            self.grpc_port = free_tcp_port()
        unknown = sorted(set(self.link_emu) - set(self.port_map()))
        if unknown:
            raise SwitchStartError(f"{self.name}: link_emu names port(s) {unknown} that have no interface; "
                                   f"ports are {sorted(self.port_map())}")
        for name in self.port_map().values():
            prepare_switch_intf(name)
        cmd = self.command()
        os.makedirs(os.path.dirname(os.path.abspath(self.log_file)), exist_ok=True)
        with open(self.log_file, "w") as log:
            log.write(f"# {self.name}: {' '.join(cmd)}\n")
            log.flush()
            env = dict(os.environ)
            env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
            # Own session: a Ctrl-C in the terminal reaches the test runner, which then stops
            # the switch by PID in order, instead of every switch dying mid-teardown.
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, cwd=REPO_ROOT, start_new_session=True,
                                         preexec_fn=die_with_parent)

    PORT_RETRIES = 3

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        retries = 0
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if self._chosen_port and retries < self.PORT_RETRIES and \
                        "Address already in use" in log_tail(self.log_file):
                    # free_tcp_port's port was free when chosen, but another process (a
                    # switch starting beside this one, a client's ephemeral port) took it
                    # before the switch bound it: choose again
                    retries += 1
                    self.thrift_port = free_tcp_port()
                    self.launch()
                    continue
                raise SwitchStartError(
                    f"{self.name}: switch process exited with code {self.proc.returncode} before serving "
                    f"its control port {self.thrift_port}. Log {self.log_file} ends with:\n{log_tail(self.log_file)}")
            if self.is_ready():
                return
            time.sleep(0.05)
        self._terminate()
        raise SwitchStartError(
            f"{self.name}: switch did not serve control port {self.thrift_port} within {self.start_timeout:g} s "
            f"(stopped it). Log {self.log_file} ends with:\n{log_tail(self.log_file)}")

    def healthy(self) -> bool:
        """The process is alive and answers on its control port."""
        return self.proc is not None and self.proc.poll() is None and port_accepts(self.thrift_port)

    def _terminate(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(self.stop_timeout)

    def stop(self, deleteIntfs=True) -> None:
        self._terminate()
        Switch.stop(self, deleteIntfs)

    @property
    def pid_of_switch(self) -> int | None:
        return self.proc.pid if self.proc else None


class SoftSwitch(ProcessSwitch):
    """The softswitch (python3 -m softswitch) as a Mininet switch.

    Options: program (.p4 path), defines {NAME: VALUE}, include_dirs, device_id, thrift_port
    (default: a free localhost port; read it back from .thrift_port), log_file, pcap_dir,
    link_emu {port: {delay_ms, jitter_ms, loss_pct, seed, reorder, limit} or LinkEmuConfig}, trace,
    stats_file (default: next to the log file; read_stats() after stop()), datapath
    (auto | compiled | python: the process's --datapath).
    """

    def __init__(self, name, include_dirs=(), trace: bool = False, stats_file: str | None = None,
                 datapath: str = "auto", **params):
        ProcessSwitch.__init__(self, name, **params)
        if datapath not in ("auto", "compiled", "python"):
            raise ValueError(f"{name}: datapath {datapath!r} is not auto, compiled or python")
        self.include_dirs = tuple(include_dirs)
        self.trace = trace
        self.datapath = datapath
        # Written by the process when it stops: pipeline, port and link-emulation counters.
        self.stats_file = stats_file or os.path.splitext(self.log_file)[0] + ".stats.json"

    def launch(self) -> None:
        try:
            os.unlink(self.stats_file)   # a previous run's counters must not pass for this one's
        except FileNotFoundError:
            pass
        ProcessSwitch.launch(self)

    def read_stats(self) -> dict | None:
        """The counters the stopped switch wrote (None before it has stopped cleanly)."""
        import json
        try:
            with open(self.stats_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "softswitch", self.program]
        for number, ifname in sorted(self.port_map().items()):
            cmd += ["-i", f"{number}@{ifname}"]
        cmd += ["--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port),
                "--log-file", self.log_file, "--stats-file", self.stats_file]
        if self.pcap_dir:
            cmd += ["--pcap", self.pcap_dir]
        for name, value in self.defines.items():
            cmd += ["-D", f"{name}={value}"]
        for d in self.include_dirs:
            cmd += ["-I", d]
        for number, cfg in sorted(self.link_emu.items()):
            cmd += ["--link-emu", format_link_emu_spec(number, cfg)]
        if self.trace:
            cmd.append("--trace")
        if self.datapath != "auto":
            cmd += ["--datapath", self.datapath]
        if self.control == "p4runtime":
            cmd += ["--grpc-server-addr", f"127.0.0.1:{self.grpc_port}"]
        return cmd

    def is_ready(self) -> bool:
        # The "ready" line carries our PID: a port answered by someone else's process
        # must not count as our switch being up.
        try:
            with open(self.log_file, errors="replace") as f:
                if f"ready: pid {self.proc.pid} " not in f.read():
                    return False
        except OSError:
            return False
        return port_accepts(self.thrift_port)
