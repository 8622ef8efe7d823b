"""p4/aggregation.p4's fallback to the parameter server in real BMv2: p4c compiles the program
for v1model, simple_switch takes the control plane's agg_point_bypass entry, and the frames it
sends for a sequence of aggregated, bypassed, answered and malformed packets are the
in-process softswitch's, byte for byte and port by port, with the same agg_events counts.
BMv2 reads and writes packets from pcap files (--use-files), so no network namespace is
needed. Skips where simple_switch, simple_switch_CLI or p4c are not on PATH."""
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from control import routes
from control.agg_entries import push, switch_commands
from softswitch.control.client import parse_counter, parse_node_handle
from testbed.bmv2 import Bmv2Client, missing_tools
from tests.agg_switches import PROGRAM, factory
from tests.test_agg_bypass import DIRECT, SERVER, W1, W2, chunk, g, ip, tree, vec
from workers import agg_packet as ap

pytestmark = pytest.mark.bmv2
PORTS = (1, 2, 3)            # s1r1: W1, W2, uplink toward g1 (and the server)
WAIT_S = 10                  # simple_switch waits this long before reading its input files


def _frames():
    """(ingress port, frame) in order: aggregated slot 0, bypassed slots 2 and 3, the server's
    results (the point's, by multicast; a bypassed slot's, routed), a bypassed retransmission,
    a malformed bypass (sender beyond the fan-in) and a duplicate answered by the switch."""
    def worker(host, payload):
        a = g().nodes[host]
        return ({W1: 1, W2: 2}[host],
                ap.udp_frame(a["mac"], g().nodes["s1r1"]["mac"], a["ip"], "10.1.1.254", payload))

    def server(dst, payload):
        return 3, ap.udp_frame(g().nodes["g1"]["mac"], g().nodes["s1r1"]["mac"], ip(SERVER), dst, payload)
    total0 = chunk(0, 0, [a + b + c for a, b, c in zip(vec(0), vec(1), vec(9))], flags=ap.RESULT, fan_in=2)
    total2 = chunk(2, 2, vec(5), flags=ap.RESULT, fan_in=3)
    return [worker(W1, chunk(0, 0, vec(0))), worker(W2, chunk(0, 1, vec(1))),
            worker(W1, chunk(2, 0, vec(2))), worker(W2, chunk(2, 1, vec(3))),
            worker(W1, chunk(3, 0, vec(4))), worker(W2, chunk(3, 1, vec(6))),
            server("10.1.1.254", total0), server(ip(W1), total2),
            worker(W2, chunk(3, 1, vec(6), flags=ap.DATA | ap.RETX)),
            worker(W1, chunk(2, 2, vec(7))),
            worker(W1, chunk(0, 0, vec(0), flags=ap.DATA | ap.RETX))]


def _commands():
    t = tree({"s1r1": 2})
    assert DIRECT in t.workers
    return routes.table_commands(g())["s1r1"] + switch_commands(g(), [t])["s1r1"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _program(client, cmds):
    """All commands in one CLI session: a fresh switch numbers multicast nodes 0, 1, ..., so
    `$n<i>` is i (checked against the replies)."""
    lines = [re.sub(r"\$n(\d+)", r"\1", c) for c in cmds]
    replies = client.execute_many(lines, check=True)
    nodes = [parse_node_handle(r) for c, r in zip(lines, replies) if c.startswith("mc_node_create")]
    assert nodes == list(range(len(nodes)))


def test_bmv2_compiles_the_program_and_bypasses_as_the_softswitch(tmp_path):
    missing = missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH (BMv2 and p4c are not installable from this "
                    "machine's registries)")
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap, wrpcap

    json_path = str(tmp_path / "aggregation.json")
    if shutil.which("p4c-bm2-ss"):                   # as testbed/bmv2.py compiles it
        cmd = ["p4c-bm2-ss", "--p4v", "16", "-DAGG_K=32", "-o", json_path, str(PROGRAM)]
    else:
        cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", "-DAGG_K=32", "-o", str(tmp_path),
               str(PROGRAM)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and os.path.exists(json_path), res.stderr[-3000:]
    assert "warning" not in (res.stderr + res.stdout).lower(), res.stderr

    frames = _frames()
    for port in PORTS:
        pkts = []
        for i, (p, f) in enumerate(frames):
            if p == port:
                e = Ether(f)
                e.time = 1_000_000 + i               # the reader merges the files by time
                pkts.append(e)
        wrpcap(str(tmp_path / f"p{port}_in.pcap"), pkts, linktype=1)
    thrift = _free_port()
    log = open(tmp_path / "switch.log", "w")
    sw = subprocess.Popen(["simple_switch", *[a for p in PORTS for a in ("-i", f"{p}@p{p}")],
                           "--use-files", str(WAIT_S), "--thrift-port", str(thrift), json_path],
                          cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    soft = factory("softswitch")()
    push(soft, _commands())
    want = {p: [] for p in PORTS}
    for p, f in frames:
        for out_port, out in soft.process(p, f):
            want[out_port].append(out)
    try:
        started = time.monotonic()
        client = Bmv2Client(thrift, timeout=60)
        for _ in range(50):                          # until its thrift server listens
            try:
                client.execute("help")
                break
            except Exception:
                time.sleep(0.2)
        _program(client, _commands())
        assert time.monotonic() - started < WAIT_S, \
            "programming BMv2 took longer than it waits before reading packets: raise WAIT_S"
        got = {}
        deadline = time.monotonic() + WAIT_S + 30
        while time.monotonic() < deadline:
            got = {p: [bytes(x) for x in rdpcap(str(tmp_path / f"p{p}_out.pcap"))]
                   if (tmp_path / f"p{p}_out.pcap").exists()
                   and os.path.getsize(tmp_path / f"p{p}_out.pcap") > 24 else [] for p in PORTS}
            if sum(map(len, got.values())) >= sum(map(len, want.values())):
                break
            time.sleep(0.5)
        events = [parse_counter(client.execute(f"counter_read MyIngress.agg_events {i}")).packets
                  for i in range(13)]
    finally:
        sw.send_signal(signal.SIGTERM)
        try:
            sw.wait(10)
        except subprocess.TimeoutExpired:
            sw.kill()
            sw.wait()
        log.close()
    assert got == want, (tmp_path / "switch.log").read_text()[-2000:]
    assert events == soft.events[:13]
    assert events[12] == 5 and events[11] == 1 and events[5] == 1     # bypass, bad, dup answer
