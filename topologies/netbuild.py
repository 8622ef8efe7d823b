"""Topology graph -> Mininet network.

Hosts get their IP/MAC from the graph, offloads off (the switch forwards raw frames, so a
checksum left for the NIC to fill would go out wrong) and IPv6 off (no ND/RS chatter into
P4 programs that do not parse it); the switch classes do the same on their own ports. Switches are the chosen backend's Mininet class; port N
of switch X is interface ``X-ethN`` with N taken from the graph's ``ports`` attribute,
so the control plane computed from the graph alone addresses the right interfaces.
Links are plain veth pairs (mininet.link.Link); bandwidth and impairments come from
topologies.linkemu, applied here after the interfaces exist. In relay mode a link with
delay, jitter or loss is two veth pairs with a relay process between them
(topologies/relay_plan.py), started once its interfaces are shaped.
"""
from __future__ import annotations

import os
import subprocess
import tempfile

from topologies import linkemu
from topologies.graph import hosts, switches
from topologies.interfaces import delete_interfaces, interface_exists


class NetBuildError(RuntimeError):
    pass


HOST_ROLE = "host"


def link_endpoints(graph, u, v) -> tuple[str, int, str, int]:
    """(node1, port1, node2, port2) with hosts first and port 0 for hosts."""
    ports = graph.edges[u, v]["ports"]
    if graph.nodes[v]["role"] == HOST_ROLE:
        u, v = v, u
    p1 = 0 if graph.nodes[u]["role"] == HOST_ROLE else ports[u]
    p2 = ports[v]
    return u, p1, v, p2


def host_base_commands(intf: str) -> list[str]:
    """Per-host set-up that does not depend on routing."""
    return [
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
        f"ethtool -K {intf} rx off tx off sg off tso off gso off gro off lro off >/dev/null 2>&1 || true",
    ]


def _run_root_batch(cmds: list[str]) -> None:
    """Run many tc commands in one process (`tc -batch`): ~100x faster than one fork each."""
    if not cmds:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".tc", delete=False) as f:
        f.write("\n".join(c[len("tc "):] for c in cmds) + "\n")
        path = f.name
    try:
        p = subprocess.run(["tc", "-batch", path], capture_output=True, text=True)
        if p.returncode != 0:
            raise linkemu.LinkEmuError(f"tc -batch failed applying link shaping: {p.stderr.strip()}")
    finally:
        os.unlink(path)


def _host_run(host):
    def run(cmd: str) -> str:
        out = host.cmd(f"{cmd}; echo __rc=$?")
        body, _, rc = out.rpartition("__rc=")
        if rc.strip() != "0":
            raise linkemu.LinkEmuError(f"{host.name}: `{cmd}` failed: {body.strip()}")
        return body
    return run


def check_names_free(emu: linkemu.LinkEmuPlan) -> None:
    """Refuse to start over interfaces that exist: they belong to someone else."""
    names = {s.intf for s in emu.intfs if not s.is_host}
    names.update(n for r in emu.relays for n in r.root_intfs())
    taken = sorted(n for n in names if interface_exists(n))
    if taken:
        raise NetBuildError(
            f"interface(s) {', '.join(taken[:4])} already exist: another run uses these node "
            f"names (give this one --prefix) or a killed run left them (gdml clean)")


def build_network(graph, switch_cls, switch_params: dict[str, dict], emu: linkemu.LinkEmuPlan,
                  host_commands: dict[str, list[str]], on_node=None, on_switch_started=None,
                  relay_log_dir: str | None = None, on_relay_started=None, relays=None):
    """Create, configure and start the Mininet network; returns the started ``Mininet``.

    switch_params: per switch, keyword options for ``switch_cls`` (program, defines, ...);
    the userspace link emulation is added as ``link_emu``. host_commands: per host, shell
    commands (static ARP, routes) from the control plane. ``on_node(node)`` is called as
    soon as a node's process exists, so the caller can record its PID for cleanup even if
    a later step fails; ``on_switch_started(switch)`` after each switch process is up.
    Relay mode: ``relays`` is what runs them (testbed/relay_run.py: wire, Relay,
    stop_relays; the relay is the softswitch's delay line, a room this one does not import);
    each relay's log goes to ``relay_log_dir`` (default: the temp folder) and
    ``on_relay_started(relay)`` is called once its process exists; the relays are
    ``net.relays``, stopped by stop_network.
    On any failure the partly built network is stopped and the error re-raised.
    """
    from mininet.link import Link
    from mininet.net import Mininet
    check_names_free(emu)
    if emu.relays and relays is None:
        raise ValueError("relay mode needs build_network(..., relays=<runner>) "
                         "(testbed.relay_run): pass it, or choose another link_emulation.mode")

    net = Mininet(topo=None, controller=None, link=Link, build=False,
                  autoSetMacs=False, autoStaticArp=False, waitConnected=False)
    net.relays = []          # relay processes (relay mode), stopped by stop_network
    net.relay_runner = relays
    net.relay_wiring = []    # the relayed links, whose root-namespace interfaces it deletes
    relayed = {r.edge: r for r in emu.relays}
    try:
        for h in hosts(graph):
            d = graph.nodes[h]
            node = net.addHost(h, ip=f"{d['ip']}/24", mac=d["mac"])
            if on_node:
                on_node(node)
        for s in switches(graph):
            params = dict(switch_params.get(s, {}))
            if emu.mode == "userspace":
                params["link_emu"] = dict(emu.switch_emu.get(s, {}))
            node = net.addSwitch(s, cls=switch_cls, **params)
            if on_node:
                on_node(node)
        for u, v in sorted(tuple(sorted(e)) for e in graph.edges):
            if (u, v) in relayed:
                net.relay_wiring.append(relayed[u, v])
                relays.wire(relayed[u, v], {n: net[n] for n in (u, v)})
                continue
            n1, p1, n2, p2 = link_endpoints(graph, u, v)
            net.addLink(n1, n2, port1=p1, port2=p2,
                        intfName1=f"{n1}-eth{p1}", intfName2=f"{n2}-eth{p2}")
        for sw, out, inn in emu.loops:      # a switch's timer loop: two of its own ports
            net.addLink(sw, sw, port1=out, port2=inn,
                        intfName1=f"{sw}-eth{out}", intfName2=f"{sw}-eth{inn}")
        net.build()
        # net.start() does only sw.start() for controller-less P4 switches; done here so
        # each switch's process is recorded as soon as it runs, and (launch all, configure
        # hosts and links while they load their programs, then wait for all) so start-up
        # overlaps with the rest of the bring-up
        for sw in net.switches:
            if hasattr(sw, "launch"):
                sw.launch()
            else:
                sw.start([])
            if on_switch_started:
                on_switch_started(sw)
        configure_hosts(net, graph, host_commands)
        apply_link_emulation(net, emu)
        start_relays(net, emu, relay_log_dir or tempfile.gettempdir(), on_relay_started)
        for sw in net.switches:
            if hasattr(sw, "wait_ready"):
                sw.wait_ready()
        for relay in net.relays:
            relay.wait_ready()
        return net
    except BaseException:
        stop_network(net)
        raise


def start_relays(net, emu: linkemu.LinkEmuPlan, log_dir: str, on_relay_started=None) -> None:
    """Launch every link's relay (relay mode) without waiting; appended to ``net.relays``."""
    for spec in emu.relays:
        relay = net.relay_runner.Relay(spec, os.path.join(log_dir, f"relay-{spec.name}.log"))
        net.relays.append(relay)
        relay.launch()
        if on_relay_started:
            on_relay_started(relay)


def configure_hosts(net, graph, host_commands: dict[str, list[str]]) -> None:
    """All hosts at once: each shell gets its script, then every output is collected."""
    scripts = {}
    for h in hosts(graph):
        host = net[h]
        cmds = host_base_commands(host.defaultIntf().name) + list(host_commands.get(h, []))
        scripts[h] = cmds
        host.sendCmd(" && ".join(f"( {c} )" for c in cmds) + "; echo __rc=$?")
    for h, cmds in scripts.items():
        body, _, rc = net[h].waitOutput().rpartition("__rc=")
        if rc.strip() != "0":
            raise NetBuildError(f"configuring host {h} failed: {body.strip()[-400:]} "
                                f"(commands: {cmds})")


def apply_link_emulation(net, emu: linkemu.LinkEmuPlan) -> None:
    """htb (+ netem in netem mode) on every interface end; rates are read back.

    Root-namespace ends go through one `tc -batch`; every host gets its whole script at
    once (all hosts in parallel) ending with the class readback."""
    root_cmds, root_shapes, host_shapes = [], [], []
    for s in emu.intfs:
        if s.is_host:
            host_shapes.append(s)
        else:
            root_cmds += linkemu.shape_commands(s)[1:]   # fresh veth: nothing to delete
            root_shapes.append(s)
    for s in host_shapes:
        script = " && ".join(linkemu.shape_commands(s)[1:] + [f"tc class show dev {s.intf}"])
        net[s.node].sendCmd(f"{script}; echo __rc=$?")
    failures = []
    for s in host_shapes:
        body, _, rc = net[s.node].waitOutput().rpartition("__rc=")
        if rc.strip() != "0":
            failures.append(f"{s.node}: {body.strip()[-300:]}")
        elif s.rate_mbps:
            try:
                linkemu.verify_rate(s.intf, s.rate_mbps, lambda cmd, out=body: out)
            except linkemu.LinkEmuError as e:
                failures.append(str(e))
    if failures:
        raise linkemu.LinkEmuError("shaping host links failed: " + "; ".join(failures[:3]))
    _run_root_batch(root_cmds)
    for s in root_shapes:
        if s.rate_mbps:
            linkemu.verify_rate(s.intf, s.rate_mbps, linkemu._run_root)


def relay_switch_intfs(net) -> dict[str, str]:
    """Relay mode: the relay interfaces that bear a switch's interface name (``X-ethN``,
    whose egress carries X's direction of the link and its htb) -> that switch. The
    testbed counts and reads queues on these names as on a switch's own ports."""
    out = {}
    for spec in getattr(net, "relay_wiring", []):
        for end, other in ((spec.a, spec.b), (spec.b, spec.a)):
            if not other.is_host:   # the relay interface facing `end` carries other -> end
                out[end.relay_intf] = other.node
    return out


def intf_runner(net, graph, node: str):
    """``run(cmd) -> str`` in the namespace of the node that owns an interface."""
    if graph.nodes[node]["role"] == HOST_ROLE:
        return _host_run(net[node])
    return linkemu._run_root


def stop_network(net) -> None:
    """Stop relays, switches, links and hosts; never raises (teardown must always finish)."""
    import signal
    try:
        if getattr(net, "relays", None):
            net.relay_runner.stop_relays(net.relays)
    except Exception as e:   # keep tearing down what is left
        print(f"warning: stopping link relays raised {e!r}")
    for sw in getattr(net, "switches", []):   # all at once: Mininet then stops them one by one
        proc = getattr(sw, "proc", None)
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
            except OSError:
                pass
    try:
        net.stop()
    except Exception as e:  # keep tearing down what is left
        print(f"warning: Mininet stop raised {e!r}; cleaning up interfaces by name")
    # root-namespace ends that survived stop(), relay wiring included
    delete_interfaces([i.name for sw in getattr(net, "switches", []) for i in sw.intfList() if i.name != "lo"]
                      + [n for spec in getattr(net, "relay_wiring", []) for n in spec.root_intfs()])
