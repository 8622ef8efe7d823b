"""Fidelity of the emulated WAN: what is configured is what is measured.

Two datacenters, one worker each, the default backend and link-emulation mode of this
machine (userspace without netem). Measured with ping, iperf3 and the link counters:
- RTT within 5 % (or 1 ms) of the configured path RTT: the fastest of 20 echoes always,
  their median when the machine is not oversubscribed by other work (load <= 2 x CPUs);
- UDP and TCP goodput across the WAN bottleneck within 10 % of its configured rate times
  the payload share of a frame (the best of up to 3 tries: a capacity);
- UDP loss inside a 99.9 % binomial bound of the configured loss;
- a bandwidth change mid-run (the schedule driver's `tc class change`) visible in the
  link counters.
Node names carry the prefix 't' ('tl' for the lossy network).
"""
from __future__ import annotations

import json
import math
import os
import time
import warnings
from pathlib import Path

import pytest

from testbed import counters, health
from testbed.lifecycle import RunOptions, ScheduleDriver, started_network
from testbed.scenario import parse_scenario
from topologies.schedule import BandwidthEvent

pytestmark = pytest.mark.mininet

WAN_MBPS = 8.0
WAN_DELAY_MS = 75.0
LOSS_PCT = 5.0


def scenario(loss_pct: float = 0.0, link_mode: str = "auto"):
    return parse_scenario(f"""
name: fidelity
seed: 3
datacenters:
  - {{name: a, lat: 0, lon: 0, racks: 1, workers_per_rack: 1}}
  - {{name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 1}}
wan:
  default: {{bandwidth_mbps: {WAN_MBPS}, delay_ms: {WAN_DELAY_MS}, loss_pct: {loss_pct}}}
intra_dc:
  access: {{bandwidth_mbps: 100, delay_ms: 0}}
  uplink: {{bandwidth_mbps: 100, delay_ms: 0}}
scheme: ps
iterations: 1
link_emulation: {{mode: {link_mode}}}
""", "<fidelity>")


@pytest.fixture(scope="module")
def wan(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("fidelity")
    with started_network(RunOptions("<fidelity>", prefix="t"), scenario(), run_dir) as env:
        env["run_dir"] = run_dir
        yield env


def _hosts(env):
    net, g = env["net"], env["graph"]
    src, dst = net.hosts[0], net.hosts[-1]   # one worker in each datacenter
    assert g.nodes[src.name]["dc_index"] == 1 and g.nodes[dst.name]["dc_index"] == 2
    return src, dst, g.nodes[dst.name]["ip"]


# iperf3 opens a UDP stream with one datagram each way and no retransmission; when either is
# lost (the lossy test drops 5 % per direction) the client fails with this error
# (esnet/iperf#862). Such a try measured nothing, so it is repeated.
UDP_SETUP_LOST = "unable to read from stream socket"
SETUP_TRIES = 5


def iperf(env, args: str, port: int) -> tuple[dict, dict]:
    """Client and server JSON reports of one iperf3 test from datacenter 1 to 2."""
    for attempt in range(SETUP_TRIES):
        doc, server_doc = _iperf_once(env, args, port, attempt)
        if UDP_SETUP_LOST not in doc.get("error", "") or attempt == SETUP_TRIES - 1:
            break
    assert "error" not in doc, doc["error"]
    return doc, server_doc


def _iperf_once(env, args: str, port: int, attempt: int) -> tuple[dict, dict]:
    src, dst, dst_ip = _hosts(env)
    log = Path(env["run_dir"]) / f"iperf3-server-{port}-{attempt}.json"
    server = dst.popen(["iperf3", "-s", "-1", "-J", "--logfile", str(log), "-p", str(port)])
    try:
        time.sleep(0.3)
        out = src.cmd(f"iperf3 -c {dst_ip} -p {port} -J {args}")
        doc = json.loads(out[out.index("{"):])
        if "error" in doc:
            return doc, {}
        server.wait(10)
        return doc, json.loads(log.read_text())
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


# A capacity is what the emulator can carry: a neighbour's burst of CPU on this shared
# two-core machine can only lower one measurement (the Python switches wait for a core),
# never raise it, so a rate check keeps the best of a few tries, stopping at the first
# within tolerance (like the RTT test's fastest echo). Every try is printed.
RATE_TRIES = 3


def best_rate(measure, expected: float, rel: float = 0.10) -> float:
    best = 0.0
    for attempt in range(RATE_TRIES):
        got = measure()
        print(f"try {attempt + 1}: {got:.2f} Mbps (expected {expected:.2f} +- {rel:.0%})")
        best = max(best, got)
        if got == pytest.approx(expected, rel=rel):
            break
    return best


def steady_rate_mbps(server_doc: dict, skip: int = 1) -> float:
    """Receiver-side payload rate over the whole-second intervals, without the first `skip`
    ones (queue filling, slow start, loss recovery) and the last, partial one."""
    ivs = [iv["sum"] for iv in server_doc["intervals"]]
    mid = [s for s in ivs[skip:] if s["seconds"] > 0.9]
    assert len(mid) >= 3, ivs
    return sum(s["bytes"] for s in mid) * 8 / sum(s["seconds"] for s in mid) / 1e6


def test_rtt_matches_configuration(wan):
    (r,) = health.measure_wan_rtts(wan["net"], wan["graph"], count=20, interval_s=0.1)
    assert r["configured_rtt_ms"] == pytest.approx(2 * WAN_DELAY_MS)
    assert r["received"] == 20
    print(f"RTT measured median {r['median_ms']} ms avg {r['avg_ms']} min {r['min_ms']} "
          f"vs configured {r['configured_rtt_ms']}")
    # propagation: the fastest echo carries no queueing or scheduling delay
    assert health.within_tolerance(r["min_ms"], r["configured_rtt_ms"]), r
    assert r["min_ms"] >= r["configured_rtt_ms"] - 0.5   # never faster than configured
    # typical echo: only meaningful when other work does not oversubscribe the CPUs, since
    # the Python switches then wait for a core on every hop (CI runs the suite alone)
    load1 = os.getloadavg()[0]
    if load1 <= 2 * os.cpu_count():
        assert health.within_tolerance(r["median_ms"], r["configured_rtt_ms"]), r
    else:
        warnings.warn(f"machine load {load1:.1f} on {os.cpu_count()} CPUs: median RTT "
                      f"{r['median_ms']} ms not checked against {r['configured_rtt_ms']} ms")


# Payload per wire byte (htb counts the Ethernet header): UDP 1400 of 1442 bytes (8 UDP, 20
# IP, 14 Ethernet), TCP 1448 of 1514 (MSS with timestamps). A saturated 8 Mbps link carries
# 7.77 Mbps of such UDP payload and 7.65 Mbps of TCP payload.
UDP_PAYLOAD_SHARE = 1400 / 1442
TCP_PAYLOAD_SHARE = 1448 / 1514


def test_udp_goodput_is_the_bottleneck_rate(wan):
    def measure():
        _, server = iperf(wan, "-u -b 12M -l 1400 -t 6", 5301)
        got = steady_rate_mbps(server)
        print(f"UDP: offered 12 Mbps, received {got:.2f} Mbps payload over a {WAN_MBPS} Mbps WAN")
        return got

    expected = WAN_MBPS * UDP_PAYLOAD_SHARE
    assert best_rate(measure, expected) == pytest.approx(expected, rel=0.10)


def test_tcp_goodput_is_the_bottleneck_rate(wan):
    def measure():
        doc, server = iperf(wan, "-t 10", 5302)
        # slow start overshoots the queue and drops ~200 segments; at a 150 ms RTT the
        # recovery and the receiver's catch-up burst span seconds 2-3, so they are skipped
        got = steady_rate_mbps(server, skip=3)
        print(f"TCP: {got:.2f} Mbps over a {WAN_MBPS} Mbps WAN (whole test incl. slow start "
              f"{doc['end']['sum_received']['bits_per_second'] / 1e6:.2f}), retransmits "
              f"{doc['end']['sum_sent'].get('retransmits')}, per second "
              f"{[round(iv['sum']['bits_per_second'] / 1e6, 2) for iv in server['intervals']]}")
        return got

    expected = WAN_MBPS * TCP_PAYLOAD_SHARE
    assert best_rate(measure, expected) == pytest.approx(expected, rel=0.10)


def test_bandwidth_change_mid_run_shows_in_link_counters(wan):
    g = wan["graph"]
    edge = ("tg1", "tg2")
    intf = f"tg1-eth{g.edges[edge]['ports']['tg1']}"
    path = wan["run_dir"] / "counters.csv"
    sampler = counters.CounterSampler(path, [counters.Source("self", {intf: "tg1"})]).start()
    driver = ScheduleDriver(g, [BandwidthEvent(3.0, edge, 3.0)], {}, wan["run_dir"] / "bw.jsonl")
    try:
        src, dst, dst_ip = _hosts(wan)
        server = dst.popen(["iperf3", "-s", "-1", "-p", "5303"])
        time.sleep(0.3)
        driver.start()
        t0 = time.monotonic()
        src.cmd(f"iperf3 -c {dst_ip} -p 5303 -u -b 12M -l 1400 -t 6")
        server.kill()
        server.wait()
    finally:
        driver.stop()
        sampler.stop()
        driver2 = ScheduleDriver(g, [BandwidthEvent(0.0, edge, WAN_MBPS)], {}, wan["run_dir"] / "bw.jsonl")
        driver2.start()
        driver2.join(5)
    assert driver.applied and driver.error is None
    rows = counters.read_csv(path)
    pts = [(float(r["t_mono"]), int(r["tx_bytes"])) for r in rows]

    def mbps_between(a, b):
        (ta, ba) = min(pts, key=lambda p: abs(p[0] - (t0 + a)))
        (tb, bb) = min(pts, key=lambda p: abs(p[0] - (t0 + b)))
        return 8 * (bb - ba) / (tb - ta) / 1e6

    before, after = mbps_between(1.0, 2.8), mbps_between(4.0, 5.8)
    print(f"WAN egress (L2 bytes): {before:.2f} Mbps before, {after:.2f} Mbps after the change to 3 Mbps")
    assert before == pytest.approx(WAN_MBPS, rel=0.10)
    assert after == pytest.approx(3.0, rel=0.10)


def binomial_two_sided_bound(n: int, p: float, conf: float = 0.999) -> tuple[int, int]:
    """Smallest [lo, hi] with P(lo <= X <= hi) >= conf for X ~ Binomial(n, p), equal tails."""
    def log_pmf(k):
        return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                + k * math.log(p) + (n - k) * math.log1p(-p))
    pmf = [math.exp(log_pmf(k)) for k in range(n + 1)]
    tail = (1 - conf) / 2
    acc, lo = 0.0, 0
    while acc + pmf[lo] <= tail:
        acc += pmf[lo]
        lo += 1
    acc, hi = 0.0, n
    while acc + pmf[hi] <= tail:
        acc += pmf[hi]
        hi -= 1
    return lo, hi


def test_binomial_bound_helper():
    lo, hi = binomial_two_sided_bound(3000, 0.05)
    # normal approximation: 150 +- 3.29 * sqrt(3000 * 0.05 * 0.95) = 150 +- 39
    assert 108 <= lo <= 113 and 187 <= hi <= 192


def test_udp_loss_matches_configuration(tmp_path):
    # own prefix: the module's loss-free network is still up
    with started_network(RunOptions("<fidelity>", prefix="tl"), scenario(LOSS_PCT), tmp_path) as env:
        env["run_dir"] = tmp_path
        n = 3000
        doc, _ = iperf(env, f"-u -b 4M -l 1000 -k {n}", 5304)
    s = doc["end"]["sum"]
    lo, hi = binomial_two_sided_bound(s["packets"], LOSS_PCT / 100)
    print(f"UDP loss: {s['lost_packets']} of {s['packets']} ({s['lost_percent']:.2f} %), "
          f"configured {LOSS_PCT} %, 99.9 % bound [{lo}, {hi}]")
    assert s["packets"] == n
    assert lo <= s["lost_packets"] <= hi
