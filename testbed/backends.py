"""Switch backend selection: which Mininet switch class runs the P4 program.

The softswitch's node and client are softswitch.node.SoftSwitch and
softswitch.control.client.SoftswitchClient; BMv2's are in testbed/bmv2.py.

`auto` picks bmv2 only when both simple_switch and p4c are on PATH (users with the P4
tutorial VM or distribution packages); otherwise the softswitch. The control plane never
asks which one was chosen: both speak the simple_switch_CLI language through
RuntimeClient.execute().
"""
from __future__ import annotations

import shutil

BACKENDS = ("softswitch", "bmv2", "auto")


class BackendError(RuntimeError):
    pass


def bmv2_missing_tools(which=shutil.which) -> list[str]:
    from testbed.bmv2 import missing_tools
    return missing_tools(which)


def choose_backend(requested: str | None, which=shutil.which) -> tuple[str, str]:
    """(backend, reason). A forced bmv2 without its tools is an error, never a fallback."""
    requested = requested or "auto"
    if requested not in BACKENDS:
        raise BackendError(f"unknown switch backend {requested!r}: use softswitch, bmv2 or auto")
    missing = bmv2_missing_tools(which)
    if requested == "auto":
        if not missing:
            return "bmv2", "auto: simple_switch and p4c are on PATH"
        return "softswitch", f"auto: {' and '.join(missing)} not on PATH"
    if requested == "bmv2" and missing:
        raise BackendError(
            f"switch backend 'bmv2' needs {', '.join(missing)} on PATH (not installable from "
            f"Debian or PyPI here: build p4lang/behavioral-model and p4c, or use "
            f"switch.backend: softswitch)")
    return requested, "forced in the scenario"


def switch_class(backend: str):
    from softswitch.node import SoftSwitch
    from testbed.bmv2 import Bmv2Switch
    return {"softswitch": SoftSwitch, "bmv2": Bmv2Switch}[backend]


def client_for(backend: str, node):
    """The runtime client of one switch node: same execute(cmd) -> str for both backends and
    both control channels (the CLI port, or P4Runtime when the switch was started with
    control "p4runtime": softswitch.p4runtime.cli_client translates the commands)."""
    if getattr(node, "control", "cli") == "p4runtime":
        from softswitch.p4runtime.cli_client import P4RuntimeClient
        return P4RuntimeClient(f"127.0.0.1:{node.grpc_port}", node.device_id)
    if backend == "bmv2":
        from testbed.bmv2 import Bmv2Client
        return Bmv2Client(node.thrift_port)
    from softswitch.control.client import SoftswitchClient
    return SoftswitchClient(node.thrift_port)
