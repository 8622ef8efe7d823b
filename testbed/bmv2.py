"""The bmv2 backend: BMv2's simple_switch as a Mininet node and simple_switch_CLI as its
runtime client. testbed.backends chooses between this and the softswitch.

    net.addSwitch("s1", cls=Bmv2Switch, program="p4/forward.p4")
    with Bmv2Client(thrift_port) as c: c.execute_many(["table_add ...", ...], check=True)

Bmv2Switch is a softswitch.node.ProcessSwitch (one process per switch, start-up errors
with the log's tail, stop by PID); Bmv2Client a softswitch.control.client.RuntimeClient,
so the control plane drives both backends through one interface.
"""
from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time

from softswitch.control.client import CLI_PROMPT, RuntimeClient, RuntimeConnectionError
from softswitch.node import ProcessSwitch, SwitchStartError


def missing_tools(which=shutil.which) -> list[str]:
    """What the bmv2 backend needs and this machine lacks (one check for node and backend)."""
    missing = [] if which("simple_switch") else ["simple_switch"]
    if not (which("p4c") or which("p4c-bm2-ss")):
        missing.append("p4c")
    if not which("simple_switch_CLI"):
        missing.append("simple_switch_CLI")
    return missing


def compile_program(program: str, defines: dict, out_dir: str, who: str = "bmv2") -> str:
    """p4c for BMv2 v1model (p4c-bm2-ss, else the p4c driver): the JSON's path in out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, os.path.splitext(os.path.basename(program))[0] + ".json")
    d = [f"-D{k}={v}" for k, v in defines.items()]
    if shutil.which("p4c-bm2-ss"):
        cmd = ["p4c-bm2-ss", "--p4v", "16", *d, "-o", json_path, program]
    else:
        cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", *d, "-o", out_dir, program]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 or not os.path.exists(json_path):
        raise SwitchStartError(f"{who}: p4c failed on {program} (exit {res.returncode}):\n"
                               f"{(res.stderr or res.stdout)[-3000:]}")
    return json_path


class Bmv2Switch(ProcessSwitch):
    """BMv2 simple_switch with the program compiled by p4c for v1model."""

    def __init__(self, name, json_path: str | None = None, **params):
        # Checked before Node.__init__ starts a shell, so a refused option leaks nothing.
        if params.get("link_emu"):
            raise SwitchStartError(
                f"{name}: simple_switch cannot apply user-space delay/jitter/loss (link_emu); "
                "set link_emulation.mode: relay (or auto), use the softswitch backend, or a "
                "kernel with sch_netem")
        ProcessSwitch.__init__(self, name, **params)
        self.json_path = json_path

    @staticmethod
    def missing_tools() -> list[str]:
        return missing_tools()

    def compile(self) -> str:
        out_dir = os.path.join(tempfile.gettempdir(), f"{self.name}.bmv2")
        return compile_program(self.program, self.defines, out_dir, who=self.name)

    def launch(self) -> None:
        missing = self.missing_tools()
        if missing:
            raise SwitchStartError(f"{self.name}: the bmv2 backend needs {' and '.join(missing)} on PATH "
                                   "(BMv2/p4c are not in Debian's or PyPI's registries: install them from "
                                   "p4lang sources or the P4 tutorial VM, or use the softswitch backend)")
        if self.json_path is None:
            self.json_path = self.compile()
        ProcessSwitch.launch(self)

    def command(self) -> list[str]:
        cmd = ["simple_switch"]
        for number, ifname in sorted(self.port_map().items()):
            cmd += ["-i", f"{number}@{ifname}"]
        # --log-console with stdout going to our log file, as p4lang/tutorials do: one file
        # holds both start-up errors and the switch's log.
        cmd += ["--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port), "--log-console",
                # BMv2's default socket is per device id (ipc:///tmp/bmv2-<id>-...), so two
                # runs at once (other node prefixes) would collide: one per switch name instead
                "--notifications-addr", f"ipc://{tempfile.gettempdir()}/gdml-bmv2-{self.name}-notifications.ipc"]
        if self.pcap_dir:
            cmd += ["--pcap", self.pcap_dir]
        return cmd + [self.json_path]


class Bmv2Client(RuntimeClient):
    """One ``simple_switch_CLI --thrift-port P`` session per client, kept open until close():
    commands go down its stdin and the reply to a command is what it prints before its next
    ``RuntimeCmd: `` prompt (cmd.Cmd writes and flushes a prompt before reading each line).
    One process per switch, not one per command: entry pushes run thousands of register
    writes, and each simple_switch_CLI start costs a Python start-up plus a JSON download."""

    PROMPT = CLI_PROMPT
    # commands written ahead of reading their replies: kept below a pipe's capacity (64 KiB),
    # so a write never waits on a CLI that is itself waiting for us to read its output
    WINDOW_BYTES = 32768

    def __init__(self, thrift_port: int, cli: str = "simple_switch_CLI", timeout: float = 60.0,
                 thrift_ip: str = "127.0.0.1"):
        self.port, self.cli, self.timeout, self.thrift_ip = thrift_port, cli, timeout, thrift_ip
        self.proc: subprocess.Popen | None = None
        self._buf = bytearray()

    # ------------------------------------------------------------------ session
    def _start(self) -> None:
        exe = shutil.which(self.cli)
        if exe is None:
            raise RuntimeConnectionError(f"{self.cli} is not on PATH: install BMv2 (behavioral-model) "
                                         f"or use the softswitch backend")
        self.proc = subprocess.Popen([exe, "--thrift-port", str(self.port), "--thrift-ip", self.thrift_ip],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self._buf.clear()
        banner = self._read_reply(time.monotonic() + self.timeout)   # intro, up to the first prompt
        if "Could not connect to thrift" in banner:
            self._fail(f"{self.cli} could not reach the switch on thrift port {self.port}: "
                       f"{banner.strip()[-300:]}")

    def _fail(self, message: str):
        self.close()
        raise RuntimeConnectionError(message)

    def _read_reply(self, deadline: float) -> str:
        """The output up to the next prompt (the prompt consumed)."""
        fd = self.proc.stdout.fileno()
        prompt = self.PROMPT.encode()
        while True:
            at = self._buf.find(prompt)
            if at >= 0:
                out = bytes(self._buf[:at]).decode("utf-8", "replace")
                del self._buf[:at + len(prompt)]
                return out[:-1] if out.endswith("\n") else out
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f"{self.cli} on thrift port {self.port} gave no reply within {self.timeout}s "
                           f"(is the switch overloaded or stopped? see its log); output so far: "
                           f"{bytes(self._buf).decode(errors='replace')[-300:]!r}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            data = os.read(fd, 65536)
            if not data:            # the CLI exited: it could not connect, or crashed
                out = bytes(self._buf).decode(errors="replace").strip()
                if "Could not connect to thrift" in out:
                    self._fail(f"{self.cli} could not reach the switch on thrift port {self.port}: "
                               f"{out[-300:]}")
                self._fail(f"{self.cli} on thrift port {self.port} exited before replying: {out[-500:]}")
            self._buf += data

    def _run(self, cmds):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        replies: list[str] = []
        i = 0
        while i < len(cmds):
            chunk, size = [], 0
            while i < len(cmds) and (not chunk or size + len(cmds[i]) + 1 <= self.WINDOW_BYTES):
                chunk.append(cmds[i])
                size += len(cmds[i]) + 1
                i += 1
            try:
                self.proc.stdin.write("".join(c + "\n" for c in chunk).encode())
                self.proc.stdin.flush()
            except OSError as e:
                self._fail(f"{self.cli} on thrift port {self.port} stopped reading commands ({e}); "
                           "see the switch's log")
            deadline = time.monotonic() + self.timeout
            replies += [self._read_reply(deadline) for _ in chunk]
        return replies

    def close(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()          # EOF: the CLI leaves its loop and exits
        except OSError:
            pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
