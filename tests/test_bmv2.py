"""The bmv2 backend (testbed/bmv2.py): its runtime client against a stand-in
simple_switch_CLI (the softswitch's CLI, which prints the same prompts) and, where
simple_switch and p4c are installed, against the real one; its Mininet node's refusals and,
with BMv2 present, a line of three switches. Moved here from softswitch/tests when the
BMv2 classes left the softswitch package."""
import os
import shutil
import socket
import sys

import pytest

from softswitch.control.client import RuntimeCommandError, RuntimeConnectionError, parse_handle
from softswitch.node import SwitchStartError
from softswitch.tests.e2e_fixtures import FORWARD_P4, build, install_routes, leftovers, netctl  # noqa: F401
from softswitch.tests.runtime_fixtures import server  # noqa: F401 (fixture)
from testbed.bmv2 import Bmv2Client, Bmv2Switch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bmv2_client_protocol_against_a_stand_in_cli(server, tmp_path):
    """Bmv2Client's pipe-and-split logic, driven through a stand-in
    'simple_switch_CLI' (our CLI, which prints the same prompts)."""
    fake = tmp_path / "fake_simple_switch_CLI"
    fake.write_text(f"#!/bin/sh\ncd {REPO} && exec {sys.executable} -m softswitch.cli \"$@\"\n")
    fake.chmod(0o755)
    c = Bmv2Client(server.port, cli=str(fake))
    replies = c.execute_many(["table_add dmac set_port 1 => 1", "register_write agg 0 3",
                              "register_read agg 0"])
    assert parse_handle(replies[0]) == 0 and replies[1] == "" and replies[2] == "agg[0]= 3"
    with pytest.raises(RuntimeCommandError, match="DUPLICATE_ENTRY"):
        c.execute("table_add dmac set_port 1 => 1", check=True)
    with pytest.raises(RuntimeConnectionError, match="not on PATH"):
        Bmv2Client(server.port, cli="no_such_simple_switch_CLI_here").execute("help")


@pytest.mark.bmv2
def test_bmv2_client_with_real_simple_switch_cli():
    if shutil.which("simple_switch_CLI") is None or shutil.which("simple_switch") is None:
        pytest.skip("simple_switch_CLI / simple_switch are not on PATH (BMv2 is not installable from "
                    "this machine's package registries)")
    # with BMv2 present: no switch listens on this port, so the client must say so
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RuntimeConnectionError):
        Bmv2Client(port, timeout=30).execute("help")


@pytest.mark.mininet
def test_bmv2_switch_refuses_link_emulation_before_starting_anything():
    with pytest.raises(SwitchStartError, match="cannot apply user-space delay"):
        Bmv2Switch("xs8", program=FORWARD_P4, link_emu={1: {"delay_ms": 5}})
    assert leftovers() == []


@pytest.mark.mininet
def test_bmv2_switch_without_tools_says_what_is_missing(netctl):
    if not Bmv2Switch.missing_tools():
        pytest.skip("simple_switch and p4c are installed: the missing-tools error cannot be provoked")
    from mininet.net import Mininet
    net = Mininet(topo=None, controller=None, build=False, waitConnected=False)
    netctl["nets"].append(net)
    sw = net.addSwitch("xs8", cls=Bmv2Switch, program=FORWARD_P4)
    with pytest.raises(SwitchStartError, match="needs simple_switch"):
        sw.start([])
    assert sw.proc is None


@pytest.mark.mininet
@pytest.mark.bmv2
def test_bmv2_line_of_three_pings(netctl):
    missing = Bmv2Switch.missing_tools()
    if missing:
        pytest.skip(f"bmv2 backend test skipped: {' and '.join(missing)} not on PATH "
                    "(not installable from this machine's registries)")
    host_at = {1: "xs1", 2: "xs2", 3: "xs3"}
    net, graph = build(netctl, ["xs1", "xs2", "xs3"], host_at,
                       [("xs1", 2, "xs2", 2), ("xs2", 3, "xs3", 2)], cls=Bmv2Switch)
    install_routes(net, graph, host_at, client_cls=Bmv2Client)
    assert net.pingAll(timeout="1") == 0.0
