"""p4/aggregation.p4 in real BMv2, fed from pcap files (simple_switch --use-files), so no
network namespace is needed: compile with p4c, program through the thrift CLI, send a list
of (ingress port, frame), read back what left each port and the agg_events counters.
The tests that use it skip where simple_switch, simple_switch_CLI or p4c are not on PATH."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from softswitch.control.client import parse_counter, parse_node_handle
from testbed.bmv2 import Bmv2Client, missing_tools
from tests.agg_switches import PROGRAM

WAIT_S = 10                  # simple_switch waits this long before reading its input files


def skip_without_bmv2():
    missing = missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH (BMv2 and p4c are not installable from this "
                    "machine's registries)")


def compile_program(tmp_path, k: int = 32) -> str:
    """p4c's BMv2 JSON of the program (as testbed/bmv2.py compiles it); no warnings allowed."""
    json_path = str(tmp_path / "aggregation.json")
    if shutil.which("p4c-bm2-ss"):
        cmd = ["p4c-bm2-ss", "--p4v", "16", f"-DAGG_K={k}", "-o", json_path, str(PROGRAM)]
    else:
        cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", f"-DAGG_K={k}", "-o", str(tmp_path),
               str(PROGRAM)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and os.path.exists(json_path), res.stderr[-3000:]
    assert "warning" not in (res.stderr + res.stdout).lower(), res.stderr
    return json_path


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


def run_files(tmp_path, json_path: str, ports, commands, frames, expect: int, events: int = 16):
    """Run `frames` [(port, frame)] through simple_switch programmed with `commands`; wait
    for `expect` output frames. Returns ({port: [frames out]}, [agg_events 0..events-1], log)."""
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap, wrpcap
    for port in ports:
        pkts = []
        for i, (p, f) in enumerate(frames):
            if p == port:
                e = Ether(f)
                e.time = 1_000_000 + i               # the reader merges the files by time
                pkts.append(e)
        wrpcap(str(tmp_path / f"p{port}_in.pcap"), pkts, linktype=1)
    thrift = _free_port()
    log_path = tmp_path / "switch.log"
    log = open(log_path, "w")
    sw = subprocess.Popen(["simple_switch", *[a for p in ports for a in ("-i", f"{p}@p{p}")],
                           "--use-files", str(WAIT_S), "--thrift-port", str(thrift), json_path],
                          cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        client = Bmv2Client(thrift, timeout=60)
        for _ in range(50):                          # until its thrift server listens
            try:
                client.execute("help")
                break
            except Exception:
                time.sleep(0.2)
        _program(client, commands)
        assert time.monotonic() - started < WAIT_S, \
            "programming BMv2 took longer than it waits before reading packets: raise WAIT_S"
        got = {}
        deadline = time.monotonic() + WAIT_S + 30
        while time.monotonic() < deadline:
            got = {p: [bytes(x) for x in rdpcap(str(tmp_path / f"p{p}_out.pcap"))]
                   if (tmp_path / f"p{p}_out.pcap").exists()
                   and os.path.getsize(tmp_path / f"p{p}_out.pcap") > 24 else [] for p in ports}
            if sum(map(len, got.values())) >= expect:
                break
            time.sleep(0.5)
        counts = [parse_counter(client.execute(f"counter_read MyIngress.agg_events {i}")).packets
                  for i in range(events)]
    finally:
        sw.send_signal(signal.SIGTERM)
        try:
            sw.wait(10)
        except subprocess.TimeoutExpired:
            sw.kill()
            sw.wait()
        log.close()
    return got, counts, log_path.read_text()[-2000:]
