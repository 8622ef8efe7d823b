"""Link emulation and pcap on the compiled path: the C delay line (c/ss_linkem.c) against
the Python DelayLine's rules with an explicit clock, then both inside the C packet loop
with socketpair ports (frames held for their delay, lost, counted, captured)."""
from __future__ import annotations

import math
import time

import pytest

from softswitch.control.commands import RuntimeAPI
from softswitch.dataplane.compiled_loop import CompiledSwitchLoop
from softswitch.dataplane.linkem import DelayLine as PyDelayLine, LinkEmuConfig
from softswitch.dataplane.loop import SwitchLoop, final_stats
from softswitch.dataplane.pcap import PortPcaps, pcap_paths, read_pcap
from softswitch.native.packet_loop import NativeDelayLine, _declare
from softswitch.native.switch import CompiledSwitch
from softswitch.target.switch import Switch
from softswitch.tests.test_native_loop import FORWARD, UnixPort, ipv4_frame

MS = 1_000_000   # ns


@pytest.fixture(scope="module")
def lib():
    compiled = CompiledSwitch(Switch.from_file(str(FORWARD)))
    _declare(compiled.lib)
    return compiled.lib


def frames(n):
    return [i.to_bytes(4, "big") * 16 for i in range(n)]


def test_fixed_delay_matches_the_python_line(lib):
    cfg = LinkEmuConfig(delay_ms=10)
    c, py = NativeDelayLine(lib, cfg), PyDelayLine(cfg)
    sent = frames(5)
    for i, f in enumerate(sent):
        c.submit(f, 1000 * MS + i * MS)
        py.submit(f, 1.0 + i / 1000)
    assert c.next_due() == 1010 * MS and py.next_due() == pytest.approx(1.010)
    assert c.pop_due(1010 * MS - 1) == []                      # not a nanosecond early
    assert c.pop_due(1012 * MS) == sent[:3] == py.pop_due(1.012)
    assert c.pop_due(2000 * MS) == sent[3:] == py.pop_due(2.0)
    assert c.counters() == {"submitted": 5, "sent": 5, "lost": 0, "overflow": 0, "queued": 0} == py.counters()
    c.close()


def test_fifo_under_jitter_keeps_order_and_the_delay_distribution(lib):
    line = NativeDelayLine(lib, LinkEmuConfig(delay_ms=50, jitter_ms=5, seed=3))
    sent = frames(2000)
    samples = []
    for i, f in enumerate(sent):          # spaced wider than the jitter: FIFO rarely binds
        line.submit(f, i * 100 * MS)
        due = line.next_due()
        samples.append((due - i * 100 * MS) / MS)
        assert line.pop_due(due) == [f]
    mean = sum(samples) / len(samples)
    sd = math.sqrt(sum((s - mean) ** 2 for s in samples) / (len(samples) - 1))
    assert abs(mean - 50) < 0.5 and 4.5 < sd < 5.5         # Normal(50, 5): 5 sigma of the estimates
    back_to_back = NativeDelayLine(lib, LinkEmuConfig(delay_ms=50, jitter_ms=20, seed=3))
    for f in sent:
        back_to_back.submit(f, 0)
    assert back_to_back.pop_due(10 ** 12) == sent            # never reordered without reorder=1
    line.close()
    back_to_back.close()


def test_reorder_releases_in_departure_order(lib):
    line = NativeDelayLine(lib, LinkEmuConfig(delay_ms=50, jitter_ms=20, seed=5, reorder=True))
    sent = frames(500)
    for i, f in enumerate(sent):
        line.submit(f, i * 10_000)        # 10 us apart: jitter reorders many
    out, dues = [], []
    while line.next_due() is not None:
        dues.append(line.next_due())
        out.extend(line.pop_due(dues[-1]))
    assert sorted(out) == sorted(sent) and out != sent
    assert dues == sorted(dues)
    line.close()


def test_loss_is_bernoulli_and_seeded(lib):
    def lost_pattern(seed):
        line = NativeDelayLine(lib, LinkEmuConfig(loss_pct=10, seed=seed, limit=20000))
        pattern = [line.submit(b"x", 0) for _ in range(20000)]
        counts = line.counters()
        line.close()
        return pattern, counts

    a, counts = lost_pattern(7)
    assert a == lost_pattern(7)[0] and a != lost_pattern(8)[0]
    n, p = 20000, 0.1
    assert abs(counts["lost"] - n * p) < 5 * math.sqrt(n * p * (1 - p))
    assert counts["queued"] == n - counts["lost"] and counts["submitted"] == n


def test_limit_counts_overflow(lib):
    line = NativeDelayLine(lib, LinkEmuConfig(delay_ms=1, limit=3))
    assert [line.submit(f, 0) for f in frames(5)] == [True, True, True, False, False]
    assert line.counters()["overflow"] == 2
    assert len(line.pop_due(MS)) == 3 and line.submit(b"y", MS)   # room again: the ring wraps
    line.close()


# --------------------------------------------------------------- in the packet loop
class PyUnixPort(UnixPort):
    """The same stand-in for the Python loop, which reads and sends through the object."""

    def read_batch(self, limit=256):
        out = []
        while len(out) < limit:
            try:
                out.append(self.sock.recv(70000))
            except BlockingIOError:
                break
        self.rx_packets += len(out)
        return out

    def send(self, frame):
        self.sock.send(frame)
        self.tx_packets += 1


def _bed(tmp_path, compiled_path: bool, emu: dict, pcap: bool = False):
    py = Switch.from_file(str(FORWARD))
    RuntimeAPI(py.state).execute("table_add ipv4_lpm ipv4_forward 10.0.2.0/24 => 02:00:00:00:02:02 2")
    ports = {n: (UnixPort if compiled_path else PyUnixPort)(n) for n in (1, 2)}
    names = {1: "s1-eth1", 2: "s1-eth2"}
    if compiled_path:
        paths = pcap_paths(str(tmp_path), names) if pcap else None
        loop = CompiledSwitchLoop(CompiledSwitch(py), ports, link_emu=emu, pcap_paths=paths)
    else:
        from softswitch.dataplane.linkem import LinkEmulation
        loop = SwitchLoop(py.process, ports, linkem=LinkEmulation(emu),
                          pcaps=PortPcaps(str(tmp_path), names) if pcap else None)
    return py, ports, loop


def _run_until(loop, port, n, limit_s=2.0):
    got, t0 = [], time.monotonic()
    while len(got) < n and time.monotonic() - t0 < limit_s:
        loop.run_once(0.005)
        got += [(time.monotonic(), f) for f in port.received()]
    return got


def test_the_loop_holds_frames_for_their_delay(tmp_path):
    _py, ports, loop = _bed(tmp_path, True, {2: LinkEmuConfig(delay_ms=40)})
    try:
        t0 = time.monotonic()
        for _ in range(10):
            ports[1].peer.send(ipv4_frame())
        got = _run_until(loop, ports[2], 10)
        assert len(got) == 10
        assert min(t for t, _f in got) - t0 >= 0.040              # never before its departure time
        assert final_stats(loop, loop.native.compiled)["link_emu"] == {
            2: {"submitted": 10, "sent": 10, "lost": 0, "overflow": 0, "queued": 0}}
    finally:
        loop.close()


def test_the_loop_drops_lost_frames_and_counts_them(tmp_path):
    _py, ports, loop = _bed(tmp_path, True, {2: LinkEmuConfig(loss_pct=100, seed=1)})
    try:
        for _ in range(7):
            ports[1].peer.send(ipv4_frame())
        assert _run_until(loop, ports[2], 1, limit_s=0.2) == []
        assert loop.link_emu_counters()[2]["lost"] == 7
    finally:
        loop.close()


def test_pcap_files_match_the_python_path(tmp_path):
    captured = {}
    for compiled_path in (False, True):
        folder = tmp_path / ("c" if compiled_path else "py")
        _py, ports, loop = _bed(folder, compiled_path, {2: LinkEmuConfig(delay_ms=5)}, pcap=True)
        try:
            sent = [ipv4_frame(ttl=t) for t in (64, 9, 33)] + [ipv4_frame(dst=(11, 0, 0, 1))]
            for f in sent:
                ports[1].peer.send(f)
            assert len(_run_until(loop, ports[2], 3)) == 3
        finally:
            loop.close()
        captured[compiled_path] = {name: [f for _ts, f in read_pcap(str(folder / name))]
                                   for name in ("s1-eth1_in.pcap", "s1-eth2_out.pcap", "s1-eth2_in.pcap")}
        assert captured[compiled_path]["s1-eth1_in.pcap"] == sent
        assert len(captured[compiled_path]["s1-eth2_out.pcap"]) == 3
    assert captured[True] == captured[False]
