"""Background traffic and failure injection in Mininet.

Two datacenters of two hosts each, an 8 Mbps WAN. The background flow runs between the
first hosts (h1r1w1 -> h2r1w1, testbed/disturbances.endpoint), the job's flow between the
second ones, so the link counters tell them apart:
- a 4 Mbps UDP background flow shares the WAN with a TCP job flow: while it is on, the
  WAN's counter is the sum of both hosts' and the link is full, the background gets its
  rate and the job's share drops; before it, the job has the link;
- a link down/up event stops all traffic on that link and it comes back, shaped as before;
- a `ps` run with background traffic, a link down/up and a kill of its server: every
  action is in run_events.jsonl and summary.json, the killed server and every iperf3
  process are gone by PID, the figures show them, and nothing is left behind.
Node names carry the prefixes 'dk' (network tests) and 'dr' (the run).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from testbed import cleanup, counters
from testbed.disturbance_driver import DisturbanceDriver, NetworkEffects
from testbed.disturbances import timeline
from testbed.lifecycle import RunOptions, run_scenario, started_network
from testbed.run_events import RunEventLog
from testbed.scenario import parse_scenario
from topologies import linkemu
from topologies.interfaces import interface_exists
from topologies.ports import interface_name

pytestmark = pytest.mark.mininet

WAN_MBPS = 8.0
BG_MBPS = 4.0
UDP_WIRE = 1442 / 1400          # Ethernet + IP + UDP headers per 1400-byte datagram
SCENARIO = {
    "name": "disturb", "seed": 2,
    "datacenters": [{"name": "a", "lat": 0, "lon": 0, "workers_per_rack": 2},
                    {"name": "b", "lat": 0, "lon": 10, "workers_per_rack": 2}],
    "wan": {"default": {"bandwidth_mbps": WAN_MBPS, "delay_ms": 5}},
    "intra_dc": {"access": {"bandwidth_mbps": 100, "delay_ms": 0},
                 "uplink": {"bandwidth_mbps": 100, "delay_ms": 0}},
    "scheme": "ps", "iterations": 1,
    "background": [{"src": "a", "dst": "b", "proto": "udp", "rate_mbps": BG_MBPS,
                    "start_s": 5, "stop_s": 10}],
    "failures": [{"at_s": 2, "link_down": ["a", "b"], "up_at_s": 4}],
}


@contextmanager
def network(tmp_path: Path):
    """The network, and after it is torn down a check that no process is left in its hosts'
    namespaces."""
    scn = parse_scenario(yaml.safe_dump(SCENARIO), "<disturb>")
    with started_network(RunOptions("<disturb>", prefix="dk"), scn, tmp_path) as env:
        namespaces = set(env["record"].data["netns"])
        env.update(scenario=scn, run_dir=tmp_path)
        yield env
    assert namespaces and cleanup.pids_in_netns(namespaces) == []


def rate_mbps(rows: list[dict], intf: str, field: str, t_a: float, t_b: float) -> float:
    """Mean rate of a counter over [t_a, t_b] (the samples nearest inside the window)."""
    pts = [(float(r["t_mono"]), int(r[field])) for r in rows if r["intf"] == intf
           and t_a <= float(r["t_mono"]) <= t_b]
    assert len(pts) >= 5, (intf, t_a, t_b, len(pts))
    (ta, a), (tb, b) = pts[0], pts[-1]
    return (b - a) * 8 / (tb - ta) / 1e6


def gone(pid: int, what: str) -> bool:
    return what not in cleanup.cmdline(pid)


def test_udp_background_shares_the_wan_bottleneck_with_the_job(tmp_path):
    with network(tmp_path) as env:
        net, g, scn = env["net"], env["graph"], env["scenario"]
        wan = interface_name(g, "dkg1", "dkg2")
        job_src, job_dst, bg_src = net["dkh1r1w2"], net["dkh2r1w2"], net["dkh1r1w1"]
        path = tmp_path / "counters.csv"
        sampler = counters.CounterSampler(path, [
            counters.Source("self", {wan: "dkg1"}),
            counters.Source(job_src.pid, {"dkh1r1w2-eth0": "dkh1r1w2"}),
            counters.Source(bg_src.pid, {"dkh1r1w1-eth0": "dkh1r1w1"})]).start()
        fx = NetworkEffects(net, g, scn, tmp_path, env["record"])
        log = RunEventLog(tmp_path / "run_events.jsonl")
        server = job_dst.popen(["iperf3", "-s", "-1", "-p", "5310"])
        try:
            fx.setup()
            time.sleep(0.3)
            client = job_src.popen(["iperf3", "-c", g.nodes["dkh2r1w2"]["ip"], "-p", "5310", "-t", "13"],
                                   stdout=subprocess.DEVNULL)
            t0 = time.monotonic()
            driver = DisturbanceDriver(timeline(scn.background, [], 1.0, 60.0), fx, log, t0=t0)
            driver.start()
            client.wait(30)
            driver.stop()
        finally:
            fx.close()
            sampler.stop()
            if server.poll() is None:
                server.kill()
            server.wait()
        recs = [json.loads(x) for x in (tmp_path / "run_events.jsonl").read_text().splitlines()]
        assert [(r["event"], r["t_s"]) for r in recs] == [("background_start", 5.0), ("background_stop", 10.0)]
        assert recs[0]["host"] == "dkh1r1w1" and recs[0]["to"] == "dkh2r1w1" and not driver.errors
        assert abs(recs[0]["t"] - (t0 + 5.0)) < 0.5
        assert gone(recs[0]["pid"], "iperf3") and gone(recs[0]["server_pid"], "iperf3"), \
            "the background client or its server outlived the stop"
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    # TCP is past slow start after 2.5 s (5 ms delay); the background runs from 5 to 10 s
    on, before = (t0 + 6.5, t0 + 9.5), (t0 + 2.5, t0 + 4.5)
    wan_on = rate_mbps(rows, wan, "tx_bytes", *on)
    job_on = rate_mbps(rows, "dkh1r1w2-eth0", "tx_bytes", *on)
    bg_on = rate_mbps(rows, "dkh1r1w1-eth0", "tx_bytes", *on)
    job_before = rate_mbps(rows, "dkh1r1w2-eth0", "tx_bytes", *before)
    bg_before = rate_mbps(rows, "dkh1r1w1-eth0", "tx_bytes", *before)
    print(f"WAN {wan_on:.2f} Mbps = job {job_on:.2f} + background {bg_on:.2f} while on; "
          f"job alone before {job_before:.2f}, background before {bg_before:.2f}")
    assert bg_before < 0.1 and job_before > 0.8 * WAN_MBPS         # the job has the link
    assert bg_on == pytest.approx(BG_MBPS * UDP_WIRE, rel=0.10)    # UDP keeps its rate
    assert wan_on == pytest.approx(job_on + bg_on, rel=0.10)        # the WAN carries both
    assert wan_on > 0.85 * WAN_MBPS                                # and is full
    assert job_on < 0.7 * job_before                               # the job's share drops


def test_link_down_stops_traffic_and_up_restores_it(tmp_path):
    with network(tmp_path) as env:
        net, g, scn = env["net"], env["graph"], env["scenario"]
        near, far = interface_name(g, "dkg1", "dkg2"), interface_name(g, "dkg2", "dkg1")
        path = tmp_path / "counters.csv"
        sampler = counters.CounterSampler(path, [counters.Source("self", {near: "dkg1", far: "dkg2"})]).start()
        fx = NetworkEffects(net, g, scn, tmp_path, env["record"])
        log = RunEventLog(tmp_path / "run_events.jsonl")
        src, dst = net["dkh1r1w2"], net["dkh2r1w2"]
        server = dst.popen(["iperf3", "-s", "-1", "-p", "5311"])
        try:
            time.sleep(0.3)
            client = src.popen(["iperf3", "-c", g.nodes["dkh2r1w2"]["ip"], "-p", "5311", "-u", "-b", "3M",
                                "-l", "1400", "-t", "7"], stdout=subprocess.DEVNULL)
            t0 = time.monotonic()
            driver = DisturbanceDriver(timeline([], scn.failures, 1.0, 60.0), fx, log, t0=t0)
            driver.start()
            time.sleep(3.0)
            during = {i: _operstate(i) for i in (near, far)}
            client.wait(30)
            driver.stop()
        finally:
            fx.close()
            sampler.stop()
            if server.poll() is None:
                server.kill()
            server.wait()
        recs = [json.loads(x) for x in (tmp_path / "run_events.jsonl").read_text().splitlines()]
        assert [(r["event"], r["t_s"], r["interfaces"]) for r in recs] == \
            [("link_down", 2.0, [near, far]), ("link_up", 4.0, [near, far])]
        assert during == {near: "DOWN", far: "DOWN"}
        assert {i: _operstate(i) for i in (near, far)} == {near: "UP", far: "UP"}
        for intf in (near, far):   # the link's shaping survived the down and up
            linkemu.verify_rate(intf, WAN_MBPS, linkemu._run_root)
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    before = rate_mbps(rows, far, "rx_bytes", t0 + 0.5, t0 + 1.8)
    down = rate_mbps(rows, far, "rx_bytes", t0 + 2.3, t0 + 3.8)
    after = rate_mbps(rows, far, "rx_bytes", t0 + 4.5, t0 + 6.5)
    print(f"far end receives {before:.2f} Mbps before, {down:.3f} while down, {after:.2f} after")
    assert before == pytest.approx(3.0 * UDP_WIRE, rel=0.15)
    assert down == 0.0
    assert after == pytest.approx(3.0 * UDP_WIRE, rel=0.15)


def _operstate(intf: str) -> str:
    return Path(f"/sys/class/net/{intf}/operstate").read_text().strip().upper()


RUN = """
name: disturb-run
seed: 1
datacenters:
  - {name: a, lat: 0, lon: 0, workers_per_rack: 2}
  - {name: b, lat: 0, lon: 10, workers_per_rack: 1}
wan: {default: {bandwidth_mbps: 10, delay_ms: 10}}
intra_dc:
  access: {bandwidth_mbps: 100, delay_ms: 0}
  uplink: {bandwidth_mbps: 100, delay_ms: 0}
scheme: ps
workload: {kind: synthetic, parameters: 65536}
compute_time: {model: constant, value_ms: 50}
duration_s: 60
background:
  - {src: b, dst: a, proto: udp, rate_mbps: 3, start_s: 3, stop_s: 9, on_s: 2, off_s: 1}
failures:
  - {at_s: 5, link_down: [a, b], up_at_s: 6}
  - {at_s: 10, kill: ps0}
"""


def test_ps_run_records_and_plots_background_and_failures(tmp_path):
    from analysis.report import make_report
    from analysis.rundata import RunData
    (tmp_path / "run.yaml").write_text(RUN)
    t_start = time.monotonic()
    (d,) = run_scenario(RunOptions(str(tmp_path / "run.yaml"), out=str(tmp_path / "out"), prefix="dr",
                                   show_progress=False, timeout_s=120), log=lambda *a, **k: None)
    summary = json.loads((d / "summary.json").read_text())
    # the server's kill ends the run (its workers lose their connection, or the app sees the
    # dead server first), incomplete, well before duration_s
    assert not summary["complete"] and summary["app"]["errors"], summary["reason"]
    assert time.monotonic() - t_start < 50
    recs = [json.loads(x) for x in (d / "run_events.jsonl").read_text().splitlines()]
    t0 = recs[0]["t"]
    assert recs[0]["event"] == "workload_start"
    kinds = [(r["event"], r.get("t_s")) for r in recs[1:]]
    assert kinds == [("background_start", 3.0), ("background_stop", 5.0), ("link_down", 5.0),
                     ("link_up", 6.0), ("background_start", 6.0), ("background_stop", 8.0),
                     ("kill", 10.0)]
    assert all("error" not in r for r in recs) and all(r["t"] - t0 >= r["t_s"] - 1e-3 for r in recs[1:])
    kill = recs[-1]
    assert kill["process"] == "server:ps0" and kill["returncode"] == -9
    assert gone(kill["pid"], "schemes.ps.server")
    for r in recs:
        if r["event"] == "background_start":
            assert r["host"] == "drh2r1w1" and r["to"] == "drh1r1w1"
            assert gone(r["pid"], "iperf3") and gone(r["server_pid"], "iperf3")
    assert summary["disturbances"] == recs[1:]
    # the figures show them: background spans, and a line per failure
    rd = RunData.load(d)
    spans, markers = rd.disturbances()
    assert len(spans) == 2 and all(s.label == "b\u2192a UDP 3 Mbps" for s in spans)
    assert [m.label for m in markers] == ["a-b down", "a-b up", "kill server:ps0"]
    make_report(d)
    assert (d / "figures" / "goodput_over_time.png").stat().st_size > 0
    assert "background traffic shaded, failures as vertical lines" in (d / "report.md").read_text()
    # nothing left: no node interface, no host shell, no iperf3 server of the run
    assert not any(interface_exists(f"dr{n}-eth1") for n in ("g1", "g2", "s1r1", "s2r1"))
    shells = [p for p in os.listdir("/proc") if p.isdigit() and "mininet:drh" in cleanup.cmdline(int(p))]
    assert shells == []
    assert not list(cleanup.STATE_DIR.glob(f"{d.name}.json"))
