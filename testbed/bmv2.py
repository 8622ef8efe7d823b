"""The bmv2 backend: BMv2's simple_switch as a Mininet node and simple_switch_CLI as its
runtime client. testbed.backends chooses between this and the softswitch.

    net.addSwitch("s1", cls=Bmv2Switch, program="p4/forward.p4")
    Bmv2Client(thrift_port).execute("table_add ...")

Bmv2Switch is a softswitch.node.ProcessSwitch (one process per switch, start-up errors
with the log's tail, stop by PID); Bmv2Client a softswitch.control.client.RuntimeClient,
so the control plane drives both backends through one interface.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from softswitch.control.client import CLI_PROMPT, RuntimeClient, RuntimeConnectionError, split_cli_output
from softswitch.node import ProcessSwitch, SwitchStartError


def missing_tools(which=shutil.which) -> list[str]:
    """What the bmv2 backend needs and this machine lacks (one check for node and backend)."""
    missing = [] if which("simple_switch") else ["simple_switch"]
    if not (which("p4c") or which("p4c-bm2-ss")):
        missing.append("p4c")
    if not which("simple_switch_CLI"):
        missing.append("simple_switch_CLI")
    return missing


class Bmv2Switch(ProcessSwitch):
    """BMv2 simple_switch with the program compiled by p4c for v1model."""

    def __init__(self, name, json_path: str | None = None, **params):
        # Checked before Node.__init__ starts a shell, so a refused option leaks nothing.
        if params.get("link_emu"):
            raise SwitchStartError(
                f"{name}: simple_switch cannot apply user-space delay/jitter/loss (link_emu); "
                "use the softswitch backend, a kernel with sch_netem, or put "
                "`python3 -m softswitch.linkem` relays on the links")
        ProcessSwitch.__init__(self, name, **params)
        self.json_path = json_path

    @staticmethod
    def missing_tools() -> list[str]:
        return missing_tools()

    def compile(self) -> str:
        out_dir = os.path.join(tempfile.gettempdir(), f"{self.name}.bmv2")
        os.makedirs(out_dir, exist_ok=True)
        json_path = os.path.join(out_dir, os.path.splitext(os.path.basename(self.program))[0] + ".json")
        defines = [f"-D{k}={v}" for k, v in self.defines.items()]
        if shutil.which("p4c-bm2-ss"):
            cmd = ["p4c-bm2-ss", "--p4v", "16", *defines, "-o", json_path, self.program]
        else:
            cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", *defines, "-o", out_dir, self.program]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0 or not os.path.exists(json_path):
            raise SwitchStartError(f"{self.name}: p4c failed on {self.program} (exit {res.returncode}):\n"
                                   f"{(res.stderr or res.stdout)[-3000:]}")
        return json_path

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
        cmd += ["--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port), "--log-console"]
        if self.pcap_dir:
            cmd += ["--pcap", self.pcap_dir]
        return cmd + [self.json_path]


class Bmv2Client(RuntimeClient):
    """Runs ``simple_switch_CLI --thrift-port P`` with the commands on stdin
    and splits its output at the ``RuntimeCmd: `` prompts."""

    PROMPT = CLI_PROMPT

    def __init__(self, thrift_port: int, cli: str = "simple_switch_CLI", timeout: float = 60.0,
                 thrift_ip: str = "127.0.0.1"):
        self.port, self.cli, self.timeout, self.thrift_ip = thrift_port, cli, timeout, thrift_ip

    def _run(self, cmds):
        exe = shutil.which(self.cli)
        if exe is None:
            raise RuntimeConnectionError(f"{self.cli} is not on PATH: install BMv2 (behavioral-model) "
                                         f"or use the softswitch backend")
        try:
            proc = subprocess.run([exe, "--thrift-port", str(self.port), "--thrift-ip", self.thrift_ip],
                                  input="".join(c + "\n" for c in cmds), capture_output=True,
                                  text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeConnectionError(f"{self.cli} on port {self.port} did not finish within "
                                         f"{self.timeout}s") from None
        if "Could not connect to thrift client" in proc.stdout or proc.returncode != 0 and \
                self.PROMPT not in proc.stdout:
            raise RuntimeConnectionError(
                f"{self.cli} could not reach the switch on thrift port {self.port}: "
                f"{(proc.stdout + proc.stderr).strip()[-300:]}")
        return split_cli_output(proc.stdout, len(cmds))
