"""The C packet loop (CompiledSwitchLoop) with socketpair-backed ports: frames in, frames
out, counters, control changes applied between batches, and the process's --datapath
choice. The C loop's recvmmsg/sendmmsg work on AF_UNIX datagram sockets as on AF_PACKET
ones; the outgoing-frame filter is the kernel's there (ignore_outgoing)."""
from __future__ import annotations

import logging
import socket
import struct
from pathlib import Path

import pytest

from softswitch.control.commands import RuntimeAPI
from softswitch.dataplane.compiled_loop import CompiledSwitchLoop
from softswitch.dataplane.loop import final_stats
from softswitch.dataplane.process import _choose_datapath, parse_args
from softswitch.native.switch import CompiledSwitch
from softswitch.target.switch import Switch

ROOT = Path(__file__).resolve().parent.parent.parent
FORWARD = ROOT / "p4" / "forward.p4"


class UnixPort:
    """A stand-in Port: an AF_UNIX datagram socketpair, `.peer` is the wire's far end."""

    def __init__(self, number, max_frame=1518):
        self.number = number
        self.max_frame = max_frame
        self.kernel_ignores_outgoing = True
        self.sock, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.peer.setblocking(False)
        self.rx_packets = self.rx_oversized = self.tx_packets = self.tx_bytes = self.tx_errors = 0

    def fileno(self):
        return self.sock.fileno()

    def send(self, frame):          # the Python loop's path; the C loop writes the fd itself
        raise AssertionError("the compiled loop must not send through the Python port")

    def read_batch(self, limit=256):
        raise AssertionError("the compiled loop must not read through the Python port")

    def counters(self):
        return {"rx_packets": self.rx_packets, "rx_oversized": self.rx_oversized, "tx_packets": self.tx_packets,
                "tx_bytes": self.tx_bytes, "tx_errors": self.tx_errors}

    def received(self):
        out = []
        while True:
            try:
                out.append(self.peer.recv(70000))
            except BlockingIOError:
                return out

    def close(self):
        self.sock.close()
        self.peer.close()


def ipv4_frame(dst=(10, 0, 2, 2), ttl=64) -> bytes:
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 7, 0, ttl, 17, 0, bytes([10, 0, 1, 1]), bytes(dst)))
    s = sum(struct.unpack("!10H", bytes(h)))
    s = (s & 0xFFFF) + (s >> 16)
    h[10:12] = struct.pack("!H", ~s & 0xFFFF)
    return bytes(6) + bytes.fromhex("000000000001") + b"\x08\x00" + bytes(h) + b"\x00\x01\x00\x02\x00\x08\x00\x00"


@pytest.fixture
def bed():
    py = Switch.from_file(str(FORWARD))
    compiled = CompiledSwitch(py)
    ports = {n: UnixPort(n) for n in (1, 2, 3)}
    loop = CompiledSwitchLoop(compiled, ports)
    yield py, compiled, ports, loop
    loop.close()


def test_loop_forwards_in_batches_and_counts(bed):
    py, compiled, ports, loop = bed
    api = RuntimeAPI(py.state)
    api.execute("table_add ipv4_lpm ipv4_forward 10.0.2.0/24 => 02:00:00:00:02:02 2")
    frames = [ipv4_frame() for _ in range(150)] + [ipv4_frame(dst=(11, 0, 0, 1))] + [bytes(2000)]
    for f in frames:
        ports[1].peer.send(f)
    for _ in range(5):
        loop.run_once(0.02)
    got = ports[2].received()
    want = py.process(1, ipv4_frame(), 0)   # reference: same program on the Python path
    assert len(got) == 150 and all(g == want[0][1] for g in got)
    stats = final_stats(loop, compiled)
    assert stats["packets_in"] == 151
    assert stats["ports"][1]["rx_packets"] == 151 and stats["ports"][1]["rx_oversized"] == 1
    assert stats["ports"][2]["tx_packets"] == 150 and stats["ports"][2]["tx_bytes"] == 150 * len(want[0][1])
    assert stats["pipeline"]["packets_in"] == 151 and stats["pipeline"]["dropped"] == 1


def test_a_control_change_applies_to_the_next_batch(bed):
    py, compiled, ports, loop = bed
    a, b = socket.socketpair()
    loop.selector.register(a, 1, lambda _m: (a.recv(16), RuntimeAPI(py.state).execute(
        "table_add ipv4_lpm ipv4_forward 10.0.2.0/24 => 02:00:00:00:02:02 3")))
    try:
        ports[1].peer.send(ipv4_frame())
        loop.run_once(0.02)
        assert ports[3].received() == []            # no route yet: dropped
        b.send(b"x")                                # the "control connection" writes a route
        loop.run_once(0.5)                          # returns as soon as the wake fd is readable
        ports[1].peer.send(ipv4_frame())
        loop.run_once(0.02)
        assert len(ports[3].received()) == 1
    finally:
        loop.selector.unregister(a)
        a.close()
        b.close()


def test_outputs_to_a_port_without_interface_are_counted(bed):
    py, compiled, ports, loop = bed
    RuntimeAPI(py.state).execute("table_add ipv4_lpm ipv4_forward 10.0.2.0/24 => 02:00:00:00:02:02 9")
    ports[1].peer.send(ipv4_frame())
    loop.run_once(0.02)
    assert loop.tx_unknown_port == 1


def test_datapath_choice(caplog):
    log = logging.getLogger("softswitch")
    sw = Switch.from_file(str(FORWARD))
    with caplog.at_level(logging.INFO, logger="softswitch"):
        c, err = _choose_datapath(parse_args([str(FORWARD)]), sw)
        assert isinstance(c, CompiledSwitch) and err is None
        c, err = _choose_datapath(parse_args([str(FORWARD), "--pcap", "/tmp", "--link-emu", "1:delay_ms=5"]), sw)
        assert isinstance(c, CompiledSwitch) and err is None      # both run in C
        c, err = _choose_datapath(parse_args([str(FORWARD), "--trace"]), sw)
        assert c is None and err is None
        assert caplog.records[-1].getMessage() == "datapath: python (--trace needs the Python packet loop)"
        c, err = _choose_datapath(parse_args([str(FORWARD), "--trace", "--datapath", "compiled"]), sw)
        assert c is None and "--trace needs the Python packet loop" in err
        c, err = _choose_datapath(parse_args([str(FORWARD), "--datapath", "python"]), sw)
        assert c is None and err is None
    reg = Switch.from_file(str(ROOT / "softswitch/tests/programs/misc.p4"), log=log)
    c, err = _choose_datapath(parse_args(["x.p4", "--datapath", "compiled"]), reg)
    assert c is None and "header stack" in err and "--datapath auto" in err
