"""Fidelity of relay link emulation (link_emulation.mode: relay): the checks of
tests/test_fidelity.py on the same two-datacenter network, with delay, jitter and loss
applied by one relay process per link (softswitch.linkem) instead of by the switches.
- RTT within 5 % (or 1 ms) of the configured path RTT, never below it;
- UDP goodput across the WAN within 10 % of its rate times the payload share of a frame;
- UDP loss inside a 99.9 % binomial bound of the configured loss;
- the relays are up during the run, named in the run's record, and gone (processes and
  interfaces) after teardown.
Node names carry the prefix 'y' ('yl' for the lossy network)."""
from __future__ import annotations

import os
import subprocess

import pytest

from testbed import health
from testbed.lifecycle import RunOptions, started_network
from tests.test_fidelity import (LOSS_PCT, UDP_PAYLOAD_SHARE, WAN_DELAY_MS, WAN_MBPS, best_rate,
                                 binomial_two_sided_bound, iperf, scenario, steady_rate_mbps)

pytestmark = pytest.mark.mininet


def _relay_pids() -> dict[int, str]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if b"softswitch.linkem" in cmd:
                out[int(entry)] = b" ".join(cmd).decode(errors="replace")
    return out


def _interfaces(prefix: str) -> list[str]:
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return [n for n in (line.split(":")[1].strip().split("@")[0] for line in links.splitlines())
            if n.startswith(prefix)]


@pytest.fixture(scope="module")
def wan(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("relay-fidelity")
    with started_network(RunOptions("<fidelity>", prefix="y"), scenario(link_mode="relay"), run_dir) as env:
        env["run_dir"] = run_dir
        env["relay_pids"] = [r.pid for r in env["net"].relays]
        yield env
    assert env["relay_pids"] and not set(env["relay_pids"]) & set(_relay_pids()), \
        "a relay outlived the network"
    assert _interfaces("y") == []


def test_relays_run_one_per_impaired_link(wan):
    net, plan = wan["net"], wan["plan"]
    assert wan["mode"] == "relay"
    # the WAN only: the scenario's access and uplink delays are 0
    assert [r.edge for r in plan.relays] == [("yg1", "yg2")]
    (relay,) = net.relays
    assert relay.proc.poll() is None
    assert relay.pid in {p["pid"] for p in wan["record"].data["processes"]}
    assert relay.pid in _relay_pids()
    # the switches' own WAN ports are -sw, the shaped names belong to the relay
    assert {i.name for i in net["yg1"].intfList()} >= {"yg1-sw2"}
    assert "yg1-eth2" in _interfaces("yg1") and "yg1-eth2" not in {i.name for i in net["yg1"].intfList()}


def test_rtt_matches_configuration(wan):
    (r,) = health.measure_wan_rtts(wan["net"], wan["graph"], count=20, interval_s=0.1)
    assert r["configured_rtt_ms"] == pytest.approx(2 * WAN_DELAY_MS)
    assert r["received"] == 20
    print(f"RTT measured median {r['median_ms']} ms min {r['min_ms']} vs configured {r['configured_rtt_ms']}")
    assert r["min_ms"] >= r["configured_rtt_ms"] - 0.5
    assert health.within_tolerance(r["min_ms"], r["configured_rtt_ms"]), r
    assert health.within_tolerance(r["median_ms"], r["configured_rtt_ms"]), r


def test_udp_goodput_is_the_bottleneck_rate(wan):
    def measure():
        _, server = iperf(wan, "-u -b 12M -l 1400 -t 6", 5311)
        return steady_rate_mbps(server)

    expected = WAN_MBPS * UDP_PAYLOAD_SHARE
    assert best_rate(measure, expected) == pytest.approx(expected, rel=0.10)


def test_udp_loss_matches_configuration(tmp_path):
    with started_network(RunOptions("<fidelity>", prefix="yl"),
                         scenario(LOSS_PCT, link_mode="relay"), tmp_path) as env:
        env["run_dir"] = tmp_path
        pids = [r.pid for r in env["net"].relays]
        n = 3000
        doc, _ = iperf(env, f"-u -b 4M -l 1000 -k {n}", 5314)
    s = doc["end"]["sum"]
    lo, hi = binomial_two_sided_bound(s["packets"], LOSS_PCT / 100)
    print(f"UDP loss: {s['lost_packets']} of {s['packets']}, configured {LOSS_PCT} %, bound [{lo}, {hi}]")
    assert s["packets"] == n
    assert lo <= s["lost_packets"] <= hi
    assert pids and not set(pids) & set(_relay_pids())
    assert _interfaces("yl") == []


def test_a_relay_that_cannot_start_fails_bring_up_and_leaves_nothing(tmp_path, monkeypatch):
    from testbed import relay_run
    real = relay_run.relay_command

    def broken_wan_relay(spec):   # the WAN relay gets an interface that does not exist
        cmd = real(spec)
        return cmd[:4] + ["yfnone0"] + cmd[5:] if spec.edge == ("yfg1", "yfg2") else cmd

    monkeypatch.setattr(relay_run, "relay_command", broken_wan_relay)
    scn = scenario(link_mode="relay")
    scn.intra_dc.access.delay_ms = 0.05   # access relays too: started before the WAN's fails
    started = {}
    real_start = relay_run.Relay.launch

    def launch(self):
        real_start(self)
        started[self.spec.name] = self.pid

    monkeypatch.setattr(relay_run.Relay, "launch", launch)
    with pytest.raises(relay_run.RelayError, match=r"(?s)relay yfg1-yfg2: exited with code 1 .*No such device"):
        with started_network(RunOptions("<fidelity>", prefix="yf"), scn, tmp_path):
            pass
    assert len(started) == 3, started
    assert not set(started.values()) & set(_relay_pids())
    assert _interfaces("yf") == []


def test_schedule_and_counters_address_the_relay_side_names(wan):
    from testbed.lifecycle import ScheduleDriver, counter_sources
    from topologies import linkemu
    from topologies.schedule import BandwidthEvent
    g = wan["graph"]
    # the link counters read the shaped WAN names, owned by the switch whose direction they carry
    root = next(s for s in counter_sources(wan["net"], g) if s.pid == "self")
    assert root.intfs["yg1-eth2"] == "yg1" and root.intfs["yg2-eth2"] == "yg2"
    driver = ScheduleDriver(g, [BandwidthEvent(0.0, ("yg1", "yg2"), 3.0)], {}, wan["run_dir"] / "bw.jsonl")
    driver.start()
    driver.join(5)
    try:
        assert driver.error is None and driver.applied
        for intf in ("yg1-eth2", "yg2-eth2"):
            assert linkemu.parse_htb_rate_bps(linkemu._run_root(f"tc class show dev {intf}")) == 3e6
    finally:
        restore = ScheduleDriver(g, [BandwidthEvent(0.0, ("yg1", "yg2"), WAN_MBPS)], {}, wan["run_dir"] / "bw.jsonl")
        restore.start()
        restore.join(5)
