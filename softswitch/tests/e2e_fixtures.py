"""Mininet networks of P4 switches for end-to-end tests: build a network of switches and
hosts, install /32 routes, and check that nothing of ours is left afterwards.

Names: switches `xs*`, hosts `xh*` (other engineers' tests use other prefixes on this
shared machine). Used by test_e2e_mininet.py (the softswitch) and tests/test_bmv2.py
(the testbed's BMv2 node, with `cls=` and `client_cls=`).
"""
import os

import networkx as nx
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORWARD_P4 = os.path.join(REPO, "p4", "forward.p4")


def host_ip(i):
    return f"10.0.{i}.{i}"


def host_mac(i):
    return f"00:00:00:00:0{i // 16:x}:{i % 16:02x}"


def leftovers():
    """Our interfaces, and Mininet shells of our nodes, still present."""
    intfs = [n for n in os.listdir("/sys/class/net") if n.startswith(("xs", "xh"))]
    shells = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"mininet:xs" in cmd or b"mininet:xh" in cmd:
            shells.append(f"pid {pid}: " + cmd.replace(b"\0", b" ").decode(errors="replace"))
    return intfs + shells


@pytest.fixture
def netctl():
    """Builds Mininet networks of SoftSwitches; stops them all and checks nothing is left."""
    from mininet.log import setLogLevel
    setLogLevel("error")
    assert leftovers() == [], f"interfaces left by an earlier run: {leftovers()}"
    state = {"nets": [], "procs": []}
    yield state
    try:
        for net in state["nets"]:
            net.stop()
    finally:
        for proc in state["procs"]:
            if proc.poll() is None:       # must not happen; kill so the machine stays clean
                proc.kill()
                proc.wait()
                pytest.fail(f"switch process {proc.pid} survived net.stop()")
    assert leftovers() == [], f"interfaces left behind: {leftovers()}"


def build(netctl, switches, host_at, links, program=FORWARD_P4, switch_opts=None, cls=None):
    """switches: names; host_at: {host index: switch}; links: [(sw_a, port_a, sw_b, port_b)].
    Host i hangs off port 1 of its switch. Returns (net, graph)."""
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host

    from softswitch.node import SoftSwitch, prepare_host
    net = Mininet(topo=None, controller=None, link=Link, build=False, autoSetMacs=False,
                  autoStaticArp=False, waitConnected=False)
    netctl["nets"].append(net)
    graph = nx.Graph()
    for s in switches:
        net.addSwitch(s, cls=cls or SoftSwitch, program=program, **(switch_opts or {}).get(s, {}))
    for i, s in host_at.items():
        net.addHost(f"xh{i}", cls=Host, ip=f"{host_ip(i)}/16", mac=host_mac(i))
        net.addLink(f"xh{i}", s, port2=1)
        graph.add_edge(f"xh{i}", s, ports={s: 1})
    for a, pa, b, pb in links:
        net.addLink(a, b, port1=pa, port2=pb)
        graph.add_edge(a, b, ports={a: pa, b: pb})
    net.build()
    for i in host_at:
        prepare_host(net[f"xh{i}"])
    net.staticArp()
    net.start()
    netctl["procs"] += [net[s].proc for s in switches]
    return net, graph


def install_routes(net, graph, host_at, client_cls=None):
    from softswitch.control.client import SoftswitchClient
    client_cls = client_cls or SoftswitchClient
    for s in [n for n in graph if n.startswith("xs")]:
        cmds = []
        for i in host_at:
            path = nx.shortest_path(graph, s, f"xh{i}")
            port = graph.edges[s, path[1]]["ports"][s]
            cmds.append(f"table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward {host_ip(i)}/32 => "
                        f"{host_mac(i)} {port}")
        with client_cls(net[s].thrift_port) as c:
            for reply in c.execute_many(cmds):
                assert not reply.startswith("Error"), reply
