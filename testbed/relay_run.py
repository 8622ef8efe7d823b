"""Relay link emulation, the side effects: wire a relayed link's veths and run its relay.

The plan (which links, which names, which delay lines) is topologies/relay_plan.py. Here:
- ``wire(spec, nodes)``: the two veth pairs of a relayed link, offloads and IPv6 off on the
  root-namespace ends (the relay reads raw frames, as a switch does), and the nodes' ends
  attached to their Mininet nodes as ports (a host's moved into its namespace);
- ``Relay``: one ``python3 -m softswitch.linkem`` process per link, started in its own
  session, SIGTERMed if the testbed dies (PR_SET_PDEATHSIG), ready when it logs ``ready``,
  stopped by its PID.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from softswitch.dataplane.linkem import LinkEmuConfig, format_link_emu_spec
from softswitch.node import REPO_ROOT, die_with_parent, log_tail, prepare_switch_intf
from topologies.interfaces import delete_interfaces
from topologies.relay_plan import RelaySpec


class RelayError(RuntimeError):
    """A relay could not be wired or started."""


def delay_line_arg(options: dict) -> str:
    """A direction's delay line as the relay's --a-to-b/--b-to-a value."""
    return format_link_emu_spec(0, LinkEmuConfig(**options)).partition(":")[2]


def relay_command(spec: RelaySpec) -> list[str]:
    """Interface A faces node a (the relay reads a's frames there), B faces node b."""
    return [sys.executable, "-m", "softswitch.linkem", spec.a.relay_intf, spec.b.relay_intf,
            "--a-to-b", delay_line_arg(spec.a_to_b), "--b-to-a", delay_line_arg(spec.b_to_a)]


def _ip(*args: str) -> None:
    p = subprocess.run(["ip", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RelayError(f"`ip {' '.join(args)}` failed: {p.stderr.strip()} "
                         f"(a killed run may have left it: gdml clean)")


def wire(spec: RelaySpec, nodes: dict) -> None:
    """Create the link's veth pairs and attach the nodes' ends; ``nodes`` maps node names to
    Mininet nodes. On failure the interfaces created so far are deleted."""
    from mininet.link import Intf
    made = []
    try:
        for end in (spec.a, spec.b):
            _ip("link", "add", end.node_intf, "type", "veth", "peer", "name", end.relay_intf)
            made.append(end.relay_intf)
            for name in (end.relay_intf,) if end.is_host else (end.relay_intf, end.node_intf):
                prepare_switch_intf(name)
            _ip("link", "set", end.relay_intf, "up")
            # Mininet brings the node's end up (in the host's namespace for a host)
            Intf(end.node_intf, node=nodes[end.node], port=end.port)
    except BaseException:
        delete_interfaces(made)
        raise


class Relay:
    """The relay process of one link."""

    start_timeout = 15.0
    stop_timeout = 5.0

    def __init__(self, spec: RelaySpec, log_file: str):
        self.spec, self.log_file = spec, log_file
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def launch(self) -> None:
        cmd = relay_command(self.spec)
        os.makedirs(os.path.dirname(os.path.abspath(self.log_file)), exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        with open(self.log_file, "w") as log:
            log.write(f"# relay {self.spec.name}: {' '.join(cmd)}\n")
            log.flush()
            # own session: a Ctrl-C reaches the testbed, which stops relays by PID in order
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, cwd=REPO_ROOT, start_new_session=True,
                                         preexec_fn=die_with_parent)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RelayError(f"relay {self.spec.name}: exited with code {self.proc.returncode} "
                                 f"before it was ready. Log {self.log_file} ends with:\n{log_tail(self.log_file)}")
            with open(self.log_file, errors="replace") as f:
                if " ready: " in f.read():
                    return
            time.sleep(0.05)
        self.stop()
        raise RelayError(f"relay {self.spec.name}: not ready within {self.start_timeout:g} s (stopped it; "
                         f"the machine may be overloaded). Log {self.log_file} ends with:\n{log_tail(self.log_file)}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after stop_timeout; never raises."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(self.stop_timeout)
        except OSError:
            pass


def stop_relays(relays: list[Relay]) -> None:
    """SIGTERM every relay first, then wait for each: the waits overlap."""
    for r in relays:
        if r.proc is not None and r.proc.poll() is None:
            try:
                r.proc.send_signal(signal.SIGTERM)
            except OSError:
                pass
    for r in relays:
        r.stop()
