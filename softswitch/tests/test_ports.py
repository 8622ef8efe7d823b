"""Packet I/O: interface specs, pcap files, the switch loop, and (as root) AF_PACKET ports on veths.

The loop tests use socketpair-backed stand-in ports and a tiny stand-in pipeline with the
Switch.process signature, so they check the I/O layer alone, without root.
"""
import os
import signal
import socket
import struct
import subprocess
import time

import pytest

from softswitch.dataplane.loop import SwitchLoop, install_signal_wakeup
from softswitch.dataplane.linkem import LinkEmulation, LinkEmuConfig
from softswitch.dataplane.pcap import PcapWriter, PortPcaps, read_pcap
from softswitch.dataplane.ports import Port, parse_interface_spec


class SockPort:
    """A port whose 'wire' is an AF_UNIX datagram socketpair: `.peer` is the far end."""

    def __init__(self, number):
        self.number = number
        self.sock, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.peer.settimeout(1.0)

    def fileno(self):
        return self.sock.fileno()

    def read_batch(self, limit=256):
        frames = []
        for _ in range(limit):
            try:
                frames.append(self.sock.recv(65536))
            except BlockingIOError:
                break
        return frames

    def send(self, frame):
        self.sock.send(frame)
        return True

    def close(self):
        self.sock.close()
        self.peer.close()

    def received(self):
        out = []
        self.peer.setblocking(False)
        while True:
            try:
                out.append(self.peer.recv(65536))
            except BlockingIOError:
                return out


def cross_connect(port, frame, now_us=None):
    """Stand-in pipeline: port 1 <-> port 2, frames starting with 0xff go to every other port
    (a tiny multicast), frames starting with 0x00 are dropped, port 9 does not exist."""
    if frame[:1] == b"\x00":
        return []
    if frame[:1] == b"\xff":
        return [(p, frame) for p in (1, 2, 3) if p != port]
    if frame[:1] == b"\x09":
        return [(9, frame)]
    return [(2 if port == 1 else 1, frame)]


@pytest.fixture
def ports():
    ps = {n: SockPort(n) for n in (1, 2, 3)}
    yield ps
    for p in ps.values():
        try:
            p.close()
        except OSError:
            pass


def test_parse_interface_spec():
    assert parse_interface_spec("1@s1-eth1") == (1, "s1-eth1")
    assert parse_interface_spec("510@x") == (510, "x")
    for bad in ("s1-eth1", "1@", "a@s1-eth1", "-1@x"):
        with pytest.raises(ValueError, match="expected PORT@IFNAME"):
            parse_interface_spec(bad)
    with pytest.raises(ValueError, match="511 is v1model's drop port"):
        parse_interface_spec("511@x")


def test_pcap_round_trip_and_header(tmp_path):
    path = tmp_path / "p.pcap"
    w = PcapWriter(str(path))
    w.write(b"\x01" * 60, ts=1000.25)
    w.write(b"\x02" * 1514, ts=1001.5)
    w.close()
    raw = path.read_bytes()
    magic, vmaj, vmin, _tz, _sig, snap, link = struct.unpack_from("<IHHiIII", raw)
    assert (magic, vmaj, vmin, snap, link) == (0xA1B2C3D4, 2, 4, 65535, 1)
    assert len(raw) == 24 + 16 + 60 + 16 + 1514
    frames = read_pcap(str(path))
    assert frames == [(pytest.approx(1000.25), b"\x01" * 60), (pytest.approx(1001.5), b"\x02" * 1514)]


def test_pcap_rejects_non_pcap(tmp_path):
    p = tmp_path / "x.pcap"
    p.write_bytes(b"not a pcap at all, definitely longer than 24 bytes")
    with pytest.raises(ValueError, match="unsupported pcap magic"):
        read_pcap(str(p))


def test_pcap_is_readable_by_tcpdump(tmp_path):
    tcpdump = "/usr/bin/tcpdump"
    if not os.path.exists(tcpdump):
        pytest.skip("tcpdump not installed")
    frame = bytes.fromhex("ffffffffffff020000000001" "0806") + bytes(46)
    w = PcapWriter(str(tmp_path / "a.pcap"))
    w.write(frame)
    w.close()
    out = subprocess.run([tcpdump, "-nr", str(tmp_path / "a.pcap")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ARP" in out.stdout


def test_loop_forwards_drops_and_multicasts(ports):
    loop = SwitchLoop(cross_connect, ports)
    ports[1].peer.send(b"\x01hello")
    ports[2].peer.send(b"\x02back")
    ports[1].peer.send(b"\x00drop me")
    ports[3].peer.send(b"\xffall")
    ports[1].peer.send(b"\x09nowhere")
    for _ in range(5):
        loop.run_once(0.01)
    assert ports[2].received() == [b"\x01hello", b"\xffall"]
    assert ports[1].received() == [b"\x02back", b"\xffall"]
    assert ports[3].received() == []
    assert loop.packets_in == 5
    assert loop.tx_unknown_port == 1
    loop.close()


def test_loop_writes_pcaps_per_port_and_direction(ports, tmp_path):
    pcaps = PortPcaps(str(tmp_path), {1: "xs1-eth1", 2: "xs1-eth2", 3: "xs1-eth3"})
    loop = SwitchLoop(cross_connect, ports, pcaps=pcaps)
    ports[1].peer.send(b"\x01abc")
    ports[1].peer.send(b"\x00dropped")
    loop.run_once(0.05)
    loop.close()   # flushes the pcaps
    assert [f for _, f in read_pcap(str(tmp_path / "xs1-eth1_in.pcap"))] == [b"\x01abc", b"\x00dropped"]
    assert [f for _, f in read_pcap(str(tmp_path / "xs1-eth2_out.pcap"))] == [b"\x01abc"]
    assert read_pcap(str(tmp_path / "xs1-eth1_out.pcap")) == []
    assert read_pcap(str(tmp_path / "xs1-eth2_in.pcap")) == []


def test_loop_delays_egress_with_link_emulation(ports):
    emu = LinkEmulation({2: LinkEmuConfig(delay_ms=30)})
    loop = SwitchLoop(cross_connect, ports, linkem=emu)
    assert loop.timer is not None, "timerfd should exist on Linux"
    t0 = time.monotonic()
    ports[1].peer.send(b"\x01late")
    ports[2].peer.send(b"\x02prompt")        # port 1 has no emulation: immediate
    loop.run_once(0.005)
    assert ports[1].received() == [b"\x02prompt"]
    assert ports[2].received() == []
    while time.monotonic() - t0 < 1.0 and not emu.lines[2].sent:
        loop.run_once(0.2)
    elapsed = time.monotonic() - t0
    assert ports[2].received() == [b"\x01late"]
    assert elapsed >= 0.030  # never early; how late depends on machine load (see bench)
    assert emu.lines[2].counters()["sent"] == 1
    loop.close()


def test_loop_link_emulation_loss_drops_on_that_port_only(ports):
    emu = LinkEmulation({2: LinkEmuConfig(loss_pct=100)})
    loop = SwitchLoop(cross_connect, ports, linkem=emu)
    ports[1].peer.send(b"\x01gone")
    ports[2].peer.send(b"\x02kept")
    for _ in range(3):
        loop.run_once(0.01)
    assert ports[2].received() == []
    assert ports[1].received() == [b"\x02kept"]
    assert emu.lines[2].lost == 1
    loop.close()


def test_sigterm_stops_the_loop(ports):
    loop = SwitchLoop(cross_connect, ports)
    old_term, old_int = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    old_fd = signal.set_wakeup_fd(-1)
    try:
        install_signal_wakeup(loop)
        os.kill(os.getpid(), signal.SIGTERM)
        t0 = time.monotonic()
        loop.run()                    # returns only because the signal stopped it
        assert time.monotonic() - t0 < 1.0
        assert loop.stopping
    finally:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)
        loop.close()


# --- real AF_PACKET ports on a veth pair (root) ------------------------------------------------

VETH_A, VETH_B = "xp-veth-a", "xp-veth-b"


@pytest.fixture
def veth():
    subprocess.run(["ip", "link", "add", VETH_A, "type", "veth", "peer", "name", VETH_B], check=True)
    try:
        for name in (VETH_A, VETH_B):
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
            with open(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6", "w") as f:
                f.write("1")   # no IPv6 router/neighbour chatter in the captures
        yield VETH_A, VETH_B
    finally:
        subprocess.run(["ip", "link", "del", VETH_A], check=False)
    assert not os.path.exists(f"/sys/class/net/{VETH_A}")


def _raw(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((ifname, 3))
    s.settimeout(1.0)
    return s


def _frame(tag: int, size=64):
    return bytes.fromhex("020000000002" "020000000001" "88b5") + bytes([tag]) * (size - 14)


def _read_until(port, n, timeout=1.0):
    got, t0 = [], time.monotonic()
    while len(got) < n and time.monotonic() - t0 < timeout:
        got += port.read_batch()
        time.sleep(0.001)
    return got


@pytest.mark.mininet
def test_port_receives_sends_and_ignores_own_frames(veth):
    a, b = veth
    port = Port(1, a)
    peer = _raw(b)
    try:
        assert port.kernel_ignores_outgoing       # Linux >= 4.20
        peer.send(_frame(1))
        peer.send(_frame(2))
        got = _read_until(port, 2)
        assert [f for f in got if f[12:14] == b"\x88\xb5"] == [_frame(1), _frame(2)]
        assert port.send(_frame(3))
        assert peer.recv(2048) == _frame(3)
        time.sleep(0.05)
        assert [f for f in port.read_batch() if f[12:14] == b"\x88\xb5"] == []   # not its own tx
        assert port.tx_packets == 1
    finally:
        port.close()
        peer.close()


@pytest.mark.mininet
def test_port_filters_outgoing_by_pkttype_without_kernel_option(veth):
    a, b = veth
    port = Port(1, a)
    peer = _raw(b)
    try:
        port.sock.setsockopt(263, 23, 0)           # switch PACKET_IGNORE_OUTGOING off again
        port.kernel_ignores_outgoing = False       # and use the sll_pkttype check
        port.send(_frame(7))
        peer.send(_frame(8))
        got = [f for f in _read_until(port, 1) if f[12:14] == b"\x88\xb5"]
        time.sleep(0.05)
        got += [f for f in port.read_batch() if f[12:14] == b"\x88\xb5"]
        assert got == [_frame(8)]
    finally:
        port.close()
        peer.close()


@pytest.mark.mininet
def test_port_counts_and_drops_oversized_frames(veth):
    a, b = veth
    port = Port(1, a, max_frame=200)
    peer = _raw(b)
    try:
        peer.send(_frame(1, size=500))
        peer.send(_frame(2, size=200))
        got = [f for f in _read_until(port, 1) if f[12:14] == b"\x88\xb5"]
        assert got == [_frame(2, size=200)]
        assert port.rx_oversized == 1
    finally:
        port.close()
        peer.close()


@pytest.mark.mininet
def test_port_open_errors_name_the_interface():
    from softswitch.dataplane.ports import PortError
    with pytest.raises(PortError, match="xp-does-not-exist.*ip link show"):
        Port(1, "xp-does-not-exist")


# --- the process: start-up, errors, signals (no interfaces needed, so no root) -----------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(*args):
    import sys
    return subprocess.Popen([sys.executable, "-m", "softswitch", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_ready(proc, timeout=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        line = proc.stderr.readline()
        if not line:
            break
        if "ready:" in line:
            return line
    raise AssertionError(f"switch never logged ready (exit {proc.poll()})")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_process_serves_control_port_and_exits_cleanly_on_signal(sig):
    from softswitch.control.client import SoftswitchClient
    port = _free_port()
    stats_file = f"/tmp/xp-stats-{os.getpid()}-{sig}.json"
    proc = _start(os.path.join(REPO, "p4", "forward.p4"), "--thrift-port", str(port), "--device-id", "7",
                  "--stats-file", stats_file)
    try:
        ready = _wait_ready(proc)
        assert f"control port 127.0.0.1:{port}" in ready and "device 7" in ready
        with SoftswitchClient(port) as c:
            assert "ipv4_lpm" in c.execute("show_tables")
            assert c.execute("table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.1/32 => "
                             "00:00:00:00:00:01 1").startswith("Adding entry")
            assert c.execute("no_such_command").startswith("Error")   # bad command: switch keeps running
        proc.send_signal(sig)
        assert proc.wait(10) == 0
        rest = proc.stderr.read()
        assert "stopping" in rest and "Traceback" not in rest
        import json
        with open(stats_file) as f:
            stats = json.load(f)
        assert stats["packets_in"] == 0 and stats["ports"] == {} and "pipeline" in stats
        os.unlink(stats_file)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_process_reports_front_end_errors_without_traceback(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\nheader h_t { bit<8> f }\n")
    proc = _start(str(bad), "--thrift-port", str(_free_port()))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert f"{bad}:2:" in err and "^" in err
    assert "Traceback" not in err


def test_process_reports_a_busy_control_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = _start(os.path.join(REPO, "p4", "forward.p4"), "--thrift-port", str(port))
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert f"127.0.0.1:{port}" in err and "--thrift-port" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("args,needle", [
    (["-i", "eth0"], "expected PORT@IFNAME"),
    (["--link-emu", "3:delay_ms=5"], "no -i interface"),
    (["--link-emu", "1:delay=5", "-i", "1@lo"], "unknown setting"),
])
def test_process_rejects_bad_arguments(args, needle):
    proc = _start(os.path.join(REPO, "p4", "forward.p4"), *args)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert needle in err and "Traceback" not in err


@pytest.mark.mininet
def test_process_names_a_missing_interface():
    proc = _start(os.path.join(REPO, "p4", "forward.p4"), "-i", "1@xp-nonexistent", "--thrift-port",
                  str(_free_port()))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "xp-nonexistent" in err and "Traceback" not in err


@pytest.mark.mininet
def test_loop_survives_its_interface_disappearing(veth):
    a, b = veth
    ports = {1: Port(1, a)}
    loop = SwitchLoop(lambda p, f, t: [(1, f)], ports)
    try:
        subprocess.run(["ip", "link", "del", a], check=True)    # teardown under a running switch
        t0 = time.monotonic()
        for _ in range(10):
            loop.run_once(0.05)        # must neither raise nor spin on a stale error
        assert time.monotonic() - t0 >= 0.4
    finally:
        loop.close()


def test_trace_logs_each_frame_in_and_out(ports, caplog):
    import logging
    loop = SwitchLoop(cross_connect, ports, trace=True)
    with caplog.at_level(logging.INFO, logger="softswitch"):
        ports[1].peer.send(b"\x01traced")
        loop.run_once(0.05)
    lines = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("in  port 1 len 7 01") for m in lines), lines
    assert any(m.startswith("out port 2 len 7 01") for m in lines), lines
    loop.close()


@pytest.mark.mininet
def test_port_counts_kernel_drops_when_it_falls_behind(veth):
    a, b = veth
    port = Port(1, a)
    peer = _raw(b)
    try:
        port.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # tiny buffer: overflow fast
        for i in range(2000):
            peer.send(_frame(i % 256))
        time.sleep(0.05)
        got = 0
        while True:
            batch = port.read_batch()
            if not batch:
                break
            got += len(batch)
        drops = port.counters()["rx_socket_drops"]
        assert drops > 0
        assert got + drops >= 2000          # every frame either read or counted as dropped
    finally:
        port.close()
        peer.close()
