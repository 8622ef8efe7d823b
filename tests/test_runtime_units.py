"""Pure parts of the testbed runtime: counters, health parsing, apps, progress, results."""
import json
import os
import subprocess
import sys
import time

import pytest

from testbed import counters, health, progress, results, scheme_app
from tests.test_linkemu import two_dc_graph
from workers.events import read_events

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
g1-eth2: 1500000    1000    0    7    0     0          0         0  3000000    2000    0    3    0     0       0          0
"""


def test_parse_net_dev():
    stats = counters.parse_net_dev(NET_DEV)
    assert stats["g1-eth2"] == (1500000, 1000, 7, 3000000, 2000, 3)
    assert stats["lo"] == (0, 0, 0, 0, 0, 0)


def test_sampler_reads_root_namespace(tmp_path):
    with open("/proc/self/net/dev") as f:
        name = next(iter(counters.parse_net_dev(f.read())))
    s = counters.CounterSampler(tmp_path / "c.csv", [counters.Source("self", {name: "root"})],
                                period_s=0.02).start()
    deadline = time.monotonic() + 10   # generous: the thread may be starved on a busy machine
    while s.samples < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    s.stop()
    s.stop()   # idempotent
    rows = counters.read_csv(tmp_path / "c.csv")
    assert s.samples >= 3 and len(rows) == s.samples   # one row per sample for one interface
    assert {(r["node"], r["intf"]) for r in rows} == {("root", name)}
    ts = [float(r["t_mono"]) for r in rows]
    assert ts == sorted(ts)
    assert set(s.totals()) == {f"root:{name}"}


def test_switch_load_windows_and_warning():
    load = counters.SwitchLoad({}, {"g1": {"g1-eth2": 10.0}})
    # feed synthetic windows: 3 s at 97 % CPU while the 10 Mbps link carries 2 Mbps
    load.windows = [(t, "g1", 97.0, 0.2, 1.0) for t in range(3)] + [(3, "g1", 50.0, 0.9, 0.0)]
    peaks = load.peaks()
    assert peaks["g1"] == (97.0, 0.2, 3, 98.0)
    (w,) = counters.switch_limited_warnings(peaks)
    assert "switch g1 limited the run" in w and ">= 90% of a CPU core" in w and "time_dilation" in w
    # a busy switch whose link is saturated is link-limited: no warning
    load.windows = [(t, "g1", 99.0, 0.95, 0.0) for t in range(5)]
    assert counters.switch_limited_warnings(load.peaks()) == []
    # shared cores: 45 % running + 50 % waiting for a CPU, links idle: limited too, and
    # the warning says the cores are the cause
    load.windows = [(t, "g1", 45.0, 0.3, 50.0) for t in range(4)]
    assert load.peaks()["g1"] == (45.0, 0.3, 4, 95.0)
    (w,) = counters.switch_limited_warnings(load.peaks())
    assert "waiting for a CPU" in w and "fewer workers per core" in w
    # a switch idling (neither running nor waiting) is not limited
    load.windows = [(t, "g1", 10.0, 0.1, 5.0) for t in range(4)]
    assert counters.switch_limited_warnings(load.peaks()) == []


def test_switch_load_observes_cpu_of_real_processes():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen(["sleep", "30"])
    try:
        load = counters.SwitchLoad({"busy": busy.pid, "idle": idle.pid}, {"busy": {"i": 10.0}},
                                   window_s=0.5)
        t0 = time.monotonic()
        load.observe(t0, {("busy", "i"): (t0, 0, 0, 0, 0, 0, 0)})
        time.sleep(1.0)
        t1 = time.monotonic()
        load.observe(t1, {("busy", "i"): (t1, 0, 0, 0, 0, 0, 0)})
    finally:
        for p in (busy, idle):
            p.kill()
            p.wait()
    cpu = {sw: c for _, sw, c, _, _ in load.windows}
    waits = {sw: w for _, sw, _, _, w in load.windows}
    assert set(cpu) == {"busy", "idle"}
    # a spinning process gets CPU (how much depends on the machine's load), a sleeping one none
    assert cpu["idle"] < 2.0
    assert cpu["busy"] > max(5.0, cpu["idle"])
    # the spinning process is runnable all the time: running + waiting is most of the window
    assert cpu["busy"] + waits["busy"] > 80.0 and waits["idle"] < 2.0


def test_parse_ping():
    out = ("64 bytes from 10.2.1.1: icmp_seq=1 ttl=62 time=91.2 ms\n"
           "64 bytes from 10.2.1.1: icmp_seq=2 ttl=62 time=99.9 ms\n"
           "64 bytes from 10.2.1.1: icmp_seq=3 ttl=62 time=91.4 ms\n"
           "--- 10.2.1.1 ping statistics ---\n10 packets transmitted, 9 received, 10% packet loss, "
           "time 1808ms\nrtt min/avg/max/mdev = 91.070/91.532/92.114/0.301 ms\n")
    p = health.parse_ping(out)
    assert p["sent"] == 10 and p["received"] == 9
    assert p["avg_ms"] == 91.532 and p["min_ms"] == 91.07
    assert p["median_ms"] == 91.4
    assert health.parse_ping("connect: Network is unreachable")["avg_ms"] is None


def test_rtt_tolerance_is_5pct_or_1ms():
    assert health.within_tolerance(104.9, 100)
    assert not health.within_tolerance(105.2, 100)
    assert health.within_tolerance(10.9, 10)       # 1 ms floor
    assert not health.within_tolerance(11.1, 10)


def test_wan_probe_pairs_use_path_rtt():
    g = two_dc_graph()
    for u, v, d in g.edges(data=True):
        if d["kind"] != "wan":
            d["delay_ms"] = 0.5
    g.nodes["h1r1w1"].update(worker_index=0, ip="10.1.1.1")
    g.nodes["h2r1w1"].update(worker_index=1, ip="10.2.1.1")
    (p,) = health.wan_probe_pairs(g)
    assert p["src"] == "h1r1w1" and p["dst"] == "h2r1w1" and p["on_route"]
    # 2 x (0.5 access + 0.5 uplink + 20 wan + 0.5 + 0.5)
    assert p["configured_rtt_ms"] == pytest.approx(44.0)


def test_unknown_scheme_says_what_is_known():
    with pytest.raises(ValueError, match="unknown scheme 'no-such-scheme' \\(known: ps, mxnet-ps, hier-ps"):
        scheme_app.make_app("no-such-scheme", {})


def test_read_events_ignores_torn_last_line(tmp_path):
    p = tmp_path / "w.jsonl"
    p.write_text(json.dumps({"event": "iteration_end", "bytes": 5}) + "\n{\"event\": \"iter")
    assert read_events(p) == [{"event": "iteration_end", "bytes": 5}]
    assert read_events(tmp_path / "missing.jsonl") == []


def test_eta():
    assert progress.eta_s(5, 10, 20.0) == 20.0
    assert progress.eta_s(0, 10, 20.0) is None
    assert progress.eta_s(0, None, 4.0, duration_s=10) == 6.0
    assert progress.fmt_s(75) == "1:15"


def test_results_folder_and_manifest(tmp_path):
    rid = results.new_run_id()
    d = results.create_run_dir(tmp_path, "quick", rid)
    assert (d / "events").is_dir() and d == tmp_path / "quick" / rid
    with pytest.raises(FileExistsError):
        results.create_run_dir(tmp_path, "quick", rid)
    m = results.manifest(run_id=rid, scenario_name="quick", backend="softswitch", backend_reason="x",
                         link_emulation="userspace", link_emulation_reason="y", seed=3,
                         time_dilation=4.0)
    for key in ("git_commit", "packages", "kernel", "cpu_count", "seed", "time_dilation",
                "backend", "link_emulation"):
        assert key in m
    assert m["cpu_count"] == os.cpu_count() and m["packages"]["networkx"]
    results.write_json(d / "manifest.json", m)
    assert json.loads((d / "manifest.json").read_text())["seed"] == 3


STOP_LINE = ("20:37:14.1 INFO stopping: packets_in 37098, stats {'packets_in': 37098}, ports {1: "
             "{'rx_packets': 19940, 'tx_packets': 17158, 'rx_socket_drops': 8683, 'tx_errors': 0}, 2: "
             "{'rx_packets': 17158, 'tx_packets': 19940, 'rx_socket_drops': 0, 'tx_errors': 0}}, link-emu {}")


def test_softswitch_drops_from_its_stop_line():
    assert counters.softswitch_rx_drops("ready\n" + STOP_LINE + "\n") == (37098, 8683)
    assert counters.softswitch_rx_drops("ready: pid 1\n") is None


def test_softswitch_datapath_from_its_log():
    log = ("10:00:00.001 INFO datapath: python (the compiled path does not support extern meter at x.p4:3)\n"
           "10:00:00.002 INFO ready: pid 1\n")
    assert counters.softswitch_datapath(log) == "python: the compiled path does not support extern meter at x.p4:3"
    assert counters.softswitch_datapath("1 INFO datapath: compiled (/c/pipeline-ab.so)\n") == "compiled"
    assert counters.softswitch_datapath("1 INFO datapath: python\n") == "python: asked for"
    assert counters.softswitch_datapath("1 INFO ready: pid 1\n") is None


def test_capacity_drop_warning_only_when_links_were_not_the_limit():
    drops = {"s1": (37098, 8683), "g1": (1000, 0), "g2": (100000, 50)}
    (w,) = counters.capacity_drop_warnings(drops, {"s1": 0.14, "g1": 0.1, "g2": 0.1})
    assert w.startswith("switch s1 limited the run") and "19.0%" in w
    # the same drops on a switch whose link ran at its rate: the link was the limit
    assert counters.capacity_drop_warnings({"s1": (37098, 8683)}, {"s1": 0.95}) == []


def test_qdisc_root_stats_keeps_root_qdiscs_of_named_devices():
    text = json.dumps([
        {"kind": "htb", "handle": "5:", "dev": "g1-eth2", "root": True, "bytes": 9000, "packets": 6,
         "drops": 4, "overlimits": 30},
        {"kind": "pfifo", "handle": "10:", "dev": "g1-eth2", "parent": "5:1", "bytes": 9000,
         "packets": 6, "drops": 4},
        {"kind": "pfifo_fast", "handle": "0:", "dev": "eth0", "root": True, "drops": 0}])
    assert counters.qdisc_root_stats(text, {"g1-eth2"}) == {
        "g1-eth2": {"kind": "htb", "sent_bytes": 9000, "sent_packets": 6, "drops": 4, "overlimits": 30}}


def test_link_endpoints_put_hosts_first_on_port_0():
    from topologies import netbuild
    g = two_dc_graph()
    assert netbuild.link_endpoints(g, "s1r1", "h1r1w1") == ("h1r1w1", 0, "s1r1", 1)
    assert netbuild.link_endpoints(g, "g1", "g2") == ("g1", 2, "g2", 2)


def test_wan_edge_off_the_delay_shortest_route_is_reported_not_probed():
    g = two_dc_graph()
    for n, d in g.nodes(data=True):
        if d["role"] == "host":
            d.update(worker_index=d["dc_index"] - 1, ip=f"10.{d['dc_index']}.1.1")
    # a third datacenter: g1-g3-g2 (2 x 5 ms) is shorter than the direct 20 ms edge
    g.add_node("g3", role="gateway", dc="dc3", dc_index=3)
    g.add_node("h3r1w1", role="host", dc="dc3", dc_index=3, rack=1, worker_index=2, ip="10.3.1.1")
    g.add_edge("g3", "h3r1w1", kind="access", delay_ms=0, ports={"g3": 3})
    g.add_edge("g1", "g3", kind="wan", delay_ms=5, ports={"g1": 3, "g3": 1})
    g.add_edge("g2", "g3", kind="wan", delay_ms=5, ports={"g2": 3, "g3": 2})
    pairs = {p["edge"]: p for p in health.wan_probe_pairs(g)}
    assert pairs["g1-g2"]["on_route"] is False
    assert pairs["g1-g3"]["on_route"] and pairs["g2-g3"]["on_route"]
    assert pairs["g1-g3"]["configured_rtt_ms"] == pytest.approx(10.0)


SWITCH_STOP = ("09:10:34.3 INFO stopping: packets_in 900, stats {'packets_in': 900}, ports {}, link-emu "
               "{2: {'submitted': 500, 'sent': 470, 'lost': 25, 'overflow': 4, 'queued': 1}}, "
               "unknown egress port drops 0")
RELAY_STOP = ("2026-11-24 09:10:34,364 linkem stopping: {2: {'submitted': 10, 'sent': 9, 'lost': 1, "
              "'overflow': 0, 'queued': 0}, 1: {'submitted': 7, 'sent': 7, 'lost': 0, 'overflow': 0, 'queued': 0}}")


def test_link_emulation_counters_from_switch_and_relay_stop_lines():
    assert counters.link_emu_counters("ready\n" + SWITCH_STOP) == {
        2: {"submitted": 500, "sent": 470, "lost": 25, "overflow": 4, "queued": 1}}
    assert counters.link_emu_counters(RELAY_STOP, relay=True)[1]["submitted"] == 7
    assert counters.link_emu_counters("ready: pid 1\n") is None
    assert counters.link_emu_counters(STOP_LINE.replace("link-emu {}", "link-emu {}, unknown egress port drops 0")) == {}


def test_the_summary_totals_every_delay_line_of_the_run(tmp_path):
    from testbed.lifecycle import emulated_link_counters
    g = two_dc_graph()
    switch = next(n for n, d in g.nodes(data=True) if d["role"] != "host")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / f"{switch}.switch.log").write_text("ready\n" + SWITCH_STOP + "\n")
    got = emulated_link_counters(tmp_path, g, "userspace")
    assert got["lines"] == {f"{switch}:2": {"submitted": 500, "sent": 470, "lost": 25, "overflow": 4, "queued": 1}}
    assert (got["submitted"], got["lost"], got["overflow"]) == (500, 25, 4)
    (tmp_path / "logs" / "relay-ga-gb.log").write_text("# relay ga-gb: python3 -m softswitch.linkem ...\n"
                                                       + RELAY_STOP + "\n")
    got = emulated_link_counters(tmp_path, g, "relay")
    assert set(got["lines"]) == {"ga->gb", "gb->ga"} and got["lost"] == 1 and got["submitted"] == 17
    assert emulated_link_counters(tmp_path, g, "netem") is None


def test_a_server_name_started_again_means_the_newest_process(tmp_path):
    # inart's re-plans alternate two banks of jobs: the second re-plan starts root servers
    # named as the first plan's (ps1, ps2), whose processes have exited; waiting for the new
    # ps1 must watch the new process, not the old one ("exited with 0 while starting")
    import subprocess
    import sys
    from types import SimpleNamespace
    from schemes.base import Server
    app = scheme_app.make_app("inart", {})
    app.ctx = SimpleNamespace(run_dir=tmp_path)
    (tmp_path / "logs").mkdir()
    old = subprocess.Popen([sys.executable, "-c", "pass"])
    old.wait()
    new = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        s = Server("ps1", "h1", "schemes.inart.root_server", ())
        app.servers += [s, s]
        app.procs += [("server", "ps1", old), ("server", "ps1", new)]
        assert app.process("server", "ps1") is new
        (tmp_path / "logs" / "server-ps1.log").write_text("inart root: 2 slots, children ...\n")
        app.wait_server("ps1", "slots, children", timeout_s=5)     # the old one's exit is no error
    finally:
        new.kill()
        new.wait()


def test_servers_that_end_on_their_own_end_before_the_others_are_told(tmp_path):
    # a "primary" that needs a second after the job to end (mlfabric's flushes its last
    # updates to the replica), and a "replica" that serves until SIGTERM and notes whether
    # the primary had ended by then: told first, it ended under the primary's last updates
    done, seen = tmp_path / "primary-done", tmp_path / "replica-saw"
    primary = subprocess.Popen([sys.executable, "-c",
                                f"import time, pathlib; time.sleep(1.0); pathlib.Path({str(done)!r}).touch()"])
    replica = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys, time, pathlib\n"
        "def bye(*a):\n"
        f"    pathlib.Path({str(seen)!r}).write_text(str(pathlib.Path({str(done)!r}).exists()))\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "while True: time.sleep(0.05)\n")])
    time.sleep(0.3)      # the replica's handler is in place
    procs = [("server", "primary", primary), ("server", "replica", replica), ("worker", "w", primary)]
    scheme_app.end_servers(procs, {"replica"}, self_end_s=20.0)
    assert primary.returncode == 0 and replica.returncode == 0
    assert seen.read_text() == "True"
    # a server that never ends on its own costs self_end_s, then the others are told anyway
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    replica2 = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        t0 = time.monotonic()
        scheme_app.end_servers([("server", "stuck", stuck), ("server", "r", replica2)], {"r"},
                               self_end_s=0.5)
        assert replica2.returncode is not None and time.monotonic() - t0 < 10
    finally:
        for p in (stuck, replica2):
            p.kill()
            p.wait()
