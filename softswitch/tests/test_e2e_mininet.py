"""End-to-end: softswitch processes in Mininet carrying real traffic between hosts.

Names: switches `xs*`, hosts `xh*` (other engineers' tests use other prefixes on this
shared machine). Every test tears its network down in a finally block and then asserts that
no `xs`/`xh` interface and no switch process is left.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from e2e_fixtures import FORWARD_P4, REPO, build, host_ip, host_mac, install_routes, netctl  # noqa: F401 (netctl: a fixture)

pytestmark = pytest.mark.mininet

PY = sys.executable


def ping(src, dst_ip, count=3):
    out = src.cmd(f"ping -c {count} -i 0.2 -W 1 {dst_ip}")
    received = int(out.split(" received")[0].rsplit(",", 1)[1]) if " received" in out else 0
    # The fastest echo: the emulated delay plus the path's base latency. The average also
    # carries scheduling delay when the 2-core machine is busy, which is not what we test.
    fastest = float(out.split("=")[-1].split("/")[0]) if received else None
    return received, fastest, out


CAPTURE = textwrap.dedent("""
    import socket, sys, time
    ifname, tag, secs = sys.argv[1], bytes.fromhex(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((ifname, 3)); s.settimeout(0.05)
    print("ready", flush=True)
    end = time.time() + secs       # a safety net: the test normally stops it with SIGTERM
    while time.time() < end:
        try:
            data, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] != 4 and tag in data:     # 4 = PACKET_OUTGOING: not what this host sent
            print(data.hex(), flush=True)
""")

SEND = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((sys.argv[1], 0))
    for _ in range(int(sys.argv[3])):
        s.send(bytes.fromhex(sys.argv[2]))
""")


def start_capture(host, tag: bytes, seconds=30.0):
    proc = host.popen([PY, "-c", CAPTURE, host.defaultIntf().name, tag.hex(), str(seconds)],
                      stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def collect(captures: dict, settle=1.0) -> dict:
    """Stops the capture processes after `settle` seconds; frames each one saw (printed and
    flushed as they arrived, so nothing is lost to the SIGTERM)."""
    time.sleep(settle)
    for proc in captures.values():
        proc.terminate()
    return {k: [bytes.fromhex(line) for line in proc.communicate(timeout=10)[0].split()]
            for k, proc in captures.items()}


def send_frame(host, frame: bytes, count=1):
    host.cmd(f"{PY} -c '{SEND}' {host.defaultIntf().name} {frame.hex()} {count}")


def udp_frame(src_i, dst_mac, dst_ip, tag: bytes):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    return bytes(Ether(src=host_mac(src_i), dst=dst_mac) / IP(src=host_ip(src_i), dst=dst_ip, ttl=16)
                 / UDP(sport=4000, dport=4001) / tag)


def test_line_of_three_ping_iperf_link_emulation_pcap_and_clean_sigterm(netctl, tmp_path):
    host_at = {1: "xs1", 2: "xs2", 3: "xs3"}
    emu = {"xs2": {"link_emu": {3: {"delay_ms": 10}}},             # xs2 -> xs3
           "xs3": {"link_emu": {2: {"delay_ms": 10}}},             # xs3 -> xs2
           "xs1": {"pcap_dir": str(tmp_path / "pcap")}}
    net, graph = build(netctl, ["xs1", "xs2", "xs3"], host_at,
                       [("xs1", 2, "xs2", 2), ("xs2", 3, "xs3", 2)], switch_opts=emu)
    assert all(net[s].healthy() for s in ("xs1", "xs2", "xs3"))
    install_routes(net, graph, host_at)
    h1, h2, h3 = net["xh1"], net["xh2"], net["xh3"]
    for src, dst in ((h1, 2), (h1, 3), (h2, 3), (h3, 1)):
        received, _, out = ping(src, host_ip(dst))
        assert received == 3, out
    # The emulated 10 ms each way on xs2-xs3 is what h1 <-> h3 measures.
    _, rtt_13, _ = ping(h1, host_ip(3), count=10)
    _, rtt_12, _ = ping(h1, host_ip(2), count=10)
    assert 20.0 <= rtt_13 < 20.0 + rtt_12 + 3.0, (rtt_13, rtt_12)
    assert rtt_12 < 5.0
    # iperf3 TCP across all three switches.
    server = h3.popen(["iperf3", "-s", "-1", "-p", "5301"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        out = h1.cmd("iperf3 -c 10.0.3.3 -p 5301 -t 2 -J")
        import json
        result = json.loads(out[out.index("{"):])
        assert "error" not in result, result.get("error")
        received = result["end"]["sum_received"]["bytes"]
        assert received > 100_000, received
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait()
    procs = [net[s].proc for s in ("xs1", "xs2", "xs3")]
    logs = [net[s].log_file for s in ("xs1", "xs2", "xs3")]
    net.stop()
    netctl["nets"].remove(net)
    for proc, log in zip(procs, logs):
        assert proc.returncode == 0, f"switch exited with {proc.returncode}; see {log}"  # SIGTERM, clean exit
        with pytest.raises(ProcessLookupError):
            os.kill(proc.pid, 0)
        assert "stopping" in open(log).read()
    # Counters written on exit: what went through, and what the emulated link carried.
    stats1, stats2 = net["xs1"].read_stats(), net["xs2"].read_stats()
    assert stats1["ports"]["1"]["rx_packets"] >= 26 and stats1["ports"]["2"]["tx_packets"] >= 26
    assert stats2["link_emu"]["3"]["sent"] >= 13 and stats2["link_emu"]["3"]["lost"] == 0
    assert stats1["pipeline"]["packets_in"] == stats1["packets_in"]
    # pcaps were flushed on SIGTERM: xs1 saw the ICMP requests from xh1 on port 1.
    from softswitch.dataplane.pcap import read_pcap
    frames_in = [f for _, f in read_pcap(str(tmp_path / "pcap" / "xs1-eth1_in.pcap"))]
    frames_out = [f for _, f in read_pcap(str(tmp_path / "pcap" / "xs1-eth2_out.pcap"))]
    icmp = [f for f in frames_in if f[12:14] == b"\x08\x00" and f[23] == 1]
    assert len(icmp) >= 6
    assert len(frames_out) >= 6


def test_triangle_every_host_reaches_every_other(netctl):
    host_at = {1: "xs1", 2: "xs2", 3: "xs3"}
    net, graph = build(netctl, ["xs1", "xs2", "xs3"], host_at,
                       [("xs1", 2, "xs2", 3), ("xs2", 2, "xs3", 3), ("xs3", 2, "xs1", 3)])
    install_routes(net, graph, host_at)
    loss = net.pingAll(timeout="1")
    assert loss == 0.0
    server = net["xh2"].popen(["iperf3", "-s", "-1", "-p", "5302"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        out = net["xh3"].cmd("iperf3 -c 10.0.2.2 -p 5302 -t 1 -J")
        import json
        result = json.loads(out[out.index("{"):])
        assert "error" not in result, result.get("error")
        assert result["end"]["sum_received"]["bytes"] > 100_000
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait()


def test_multicast_replicates_to_every_group_member(netctl):
    host_at = {1: "xs1", 2: "xs1", 3: "xs1", 4: "xs1"}
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host

    from softswitch.control.client import SoftswitchClient
    from softswitch.node import SoftSwitch, prepare_host
    net = Mininet(topo=None, controller=None, link=Link, build=False, autoSetMacs=False,
                  autoStaticArp=False, waitConnected=False)
    netctl["nets"].append(net)
    net.addSwitch("xs1", cls=SoftSwitch, program=FORWARD_P4)
    for i in host_at:
        net.addHost(f"xh{i}", cls=Host, ip=f"{host_ip(i)}/16", mac=host_mac(i))
        net.addLink(f"xh{i}", "xs1", port2=i)
    net.build()
    for i in host_at:
        prepare_host(net[f"xh{i}"])
    net.start()
    netctl["procs"].append(net["xs1"].proc)
    with SoftswitchClient(net["xs1"].thrift_port) as c:
        for cmd in ("table_add MyIngress.ipv4_lpm MyIngress.multicast 239.1.1.1/32 => 1",
                    "mc_mgrp_create 1", "mc_node_create 0 2 3 4", "mc_node_associate 1 0"):
            reply = c.execute(cmd)
            assert not reply.startswith("Error"), (cmd, reply)
    tag = b"xs-mcast-" + os.urandom(4).hex().encode()
    caps = {i: start_capture(net[f"xh{i}"], tag) for i in (1, 2, 3, 4)}
    send_frame(net["xh1"], udp_frame(1, "01:00:5e:01:01:01", "239.1.1.1", tag), count=3)
    got = collect(caps)
    assert len(got[1]) == 0                       # the sender's port is not a member
    for i in (2, 3, 4):
        assert len(got[i]) == 3, (i, got)         # one copy per member per packet
        assert got[i][0][22] == 15                # TTL decremented once by the pipeline


CLONE_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action to_port(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table fwd {
        key = { sm.ingress_port: exact; }
        actions = { to_port; drop; }
        default_action = drop();
    }
    apply {
        fwd.apply();
        clone(CloneType.I2E, 5);
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        // Mark the mirrored copy so the test can tell it from the original.
        if (sm.instance_type == 1) { hdr.ethernet.etherType = 0x88b6; }
    }
}
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_clone_mirrors_to_the_session_port(netctl, tmp_path):
    program = tmp_path / "clone_mirror.p4"
    program.write_text(CLONE_P4)
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host

    from softswitch.control.client import SoftswitchClient
    from softswitch.node import SoftSwitch, prepare_host
    net = Mininet(topo=None, controller=None, link=Link, build=False, autoSetMacs=False,
                  autoStaticArp=False, waitConnected=False)
    netctl["nets"].append(net)
    net.addSwitch("xs1", cls=SoftSwitch, program=str(program))
    for i in (1, 2, 3):
        net.addHost(f"xh{i}", cls=Host, ip=f"{host_ip(i)}/16", mac=host_mac(i))
        net.addLink(f"xh{i}", "xs1", port2=i)
    net.build()
    for i in (1, 2, 3):
        prepare_host(net[f"xh{i}"])
    net.start()
    netctl["procs"].append(net["xs1"].proc)
    with SoftswitchClient(net["xs1"].thrift_port) as c:
        for cmd in ("table_add fwd to_port 1 => 2", "mirroring_add 5 3"):
            reply = c.execute(cmd)
            assert not reply.startswith("Error"), (cmd, reply)
    tag = b"xs-clone-" + os.urandom(4).hex().encode()
    frame = bytes.fromhex("020000000002" "020000000001" "88b5") + tag + bytes(30)
    caps = {i: start_capture(net[f"xh{i}"], tag) for i in (1, 2, 3)}
    send_frame(net["xh1"], frame, count=2)
    got = collect(caps)
    assert got[2] == [frame, frame]                                  # the original, unchanged
    mirrored = frame[:12] + b"\x88\xb6" + frame[14:]
    assert got[3] == [mirrored, mirrored]                            # the I2E clone on port 3
    assert got[1] == []


def test_bad_program_fails_start_with_the_log_tail(netctl, tmp_path):
    bad = tmp_path / "broken.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\nheader h_t { bit<8> f }\n")
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host

    from softswitch.node import SoftSwitch, SwitchStartError
    net = Mininet(topo=None, controller=None, link=Link, build=False, autoSetMacs=False,
                  autoStaticArp=False, waitConnected=False)
    netctl["nets"].append(net)
    net.addSwitch("xs9", cls=SoftSwitch, program=str(bad))
    net.addHost("xh9", cls=Host)
    net.addLink("xh9", "xs9", port2=1)
    net.build()
    with pytest.raises(SwitchStartError) as exc:
        net.start()
    message = str(exc.value)
    assert "exited with code 1" in message
    assert f"{bad}:3:" in message                # the front end's file:line:col, from the log tail
    assert "Traceback" not in message
    assert net["xs9"].proc.poll() == 1


def test_a_control_port_taken_before_the_switch_binds_it_is_chosen_again(netctl, monkeypatch):
    """free_tcp_port's choice can be taken by another process before the switch binds it
    (seen in a 9-datacenter sweep): the switch starts on a new port instead of failing."""
    import socket

    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host

    from softswitch import node as sn
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(1)
    taken = squatter.getsockname()[1]
    real, calls = sn.free_tcp_port, []

    def first_taken():
        calls.append(1)
        return taken if len(calls) == 1 else real()
    monkeypatch.setattr(sn, "free_tcp_port", first_taken)
    net = Mininet(topo=None, controller=None, link=Link, build=False, autoSetMacs=False,
                  autoStaticArp=False, waitConnected=False)
    netctl["nets"].append(net)
    net.addSwitch("xs8", cls=sn.SoftSwitch)
    net.addHost("xh8", cls=Host)
    net.addLink("xh8", "xs8", port2=1)
    net.build()
    try:
        net.start()
        assert len(calls) == 2 and net["xs8"].thrift_port != taken and net["xs8"].healthy()
    finally:
        squatter.close()


def test_switch_dies_with_the_process_that_started_it(tmp_path):
    """A SIGKILLed Mininet script must not leave its switch processes running."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {REPO!r})
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from softswitch.node import SoftSwitch
        setLogLevel("error")
        net = Mininet(topo=None, controller=None, build=False, waitConnected=False)
        sw = net.addSwitch("xs7", cls=SoftSwitch, program={FORWARD_P4!r})
        h = net.addHost("xh7")
        net.addLink(h, sw, port2=1)
        net.build()
        sw.start([])
        print(sw.proc.pid, flush=True)
        time.sleep(60)
    """))
    runner = subprocess.Popen([PY, str(script)], stdout=subprocess.PIPE, text=True)
    switch_pid = None
    try:
        switch_pid = int(runner.stdout.readline())
        os.kill(switch_pid, 0)                       # running
        runner.kill()
        runner.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{switch_pid}/stat") as f:
                    if f.read().split(") ")[1].startswith("Z"):
                        break                        # exited; only its zombie entry is left
            except FileNotFoundError:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"switch {switch_pid} still running 10 s after its parent was killed")
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        if switch_pid:
            try:
                os.kill(switch_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # The killed script could not delete its interfaces or shells: do it here.
        subprocess.run(["ip", "link", "del", "xs7-eth1"], stderr=subprocess.DEVNULL)
        for line in subprocess.run(["pgrep", "-f", "mininet:x[sh]7"], capture_output=True,
                                   text=True).stdout.split():
            os.kill(int(line), signal.SIGKILL)
