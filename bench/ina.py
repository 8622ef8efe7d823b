"""INA benchmark: how fast one aggregating softswitch lets 4 workers synchronize.

    python3 run.py bench ina [--k 64] [--rates 2,5,10,...] [--seconds 1.0] [--iterations 4]

One softswitch running p4/aggregation.p4 (-DAGG_K=k) with 4 worker hosts in Mininet,
each link shaped with htb to the step's rate in both directions. At each step the 4 real
worker processes (workers/worker.py with ina's communicator, synthetic gradients sized for about --seconds of
transfer at the link's payload rate) run BSP iterations; goodput per worker is useful
gradient bytes / communication time (first send -> last result) of the slowest worker,
the first iteration left out (analysis/measure.py's row: goodput_min_mbps; the
retransmission timer learns the RTT there). It is compared with the link's
payload capacity: rate x 4k / frame bytes (frame = Ethernet + IPv4 + UDP + 16-byte header
+ 4k bytes; the same values come back down as results at the same size, so one direction
bounds it).

Printed per step: goodput, ratio, retransmissions, CPU share of the switch and of the
busiest worker (and how long each waited for a core), CPU time per packet of the switch
and of all workers together (their CPU after the start signal: the packet path, and the
gradients and quantization too), and how many of the machine's cores were busy (/proc/stat:
every process and the kernel's packet work, other users' load included, and how much of
that the hypervisor stole). The result: the
highest rate with goodput >= 0.9 x capacity, what limits it above (switch CPU, worker CPU,
the machine's cores all busy, or latency), and the switch's CPU time per aggregated packet
(packets into the switch = every worker's sends, retransmissions included). The first
line and the last say which data path the switch ran (its log line "datapath:
compiled|python"): the two are different benchmarks. Last line:
  ina: max_rate_mbps=... goodput_ratio=... cpu_us_per_pkt=... k=... datapath=...
Node names carry the prefix 'ib'.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx

from schemes.ina.plan import COMMUNICATOR
from workers.agg_packet import frame_bytes

REPO = Path(__file__).resolve().parent.parent
PREFIX = "ib"
AGG_IP = "10.9.0.254"
AGG_MAC = "02:00:0a:09:00:fe"
N_WORKERS = 4
WINDOW = 128
THRESHOLD = 0.9
DEFAULT_RATES = (2, 5, 10, 15, 20, 30, 40, 60)


# ---------------------------------------------------------------- pure helpers
def payload_capacity(rate_mbps: float, k: int) -> float:
    """Gradient bytes per second a link of rate_mbps carries in full aggregation frames."""
    return rate_mbps * 1e6 / 8 * (4 * k) / frame_bytes(k)


def parameters_for(rate_mbps: float, k: int, seconds: float) -> int:
    """Tensor size (values, a multiple of k) that takes about `seconds` at capacity."""
    n = int(payload_capacity(rate_mbps, k) * seconds / 4)
    return max(k * 64, n - n % k)


def limiter(ratio: float, switch_cpu: float, switch_wait: float, worker_cpu: float,
            worker_wait: float, machine: dict | None = None) -> str:
    """What limited a step. Shares are fractions of one core over the step: cpu = time
    running, wait = time runnable but waiting for a core (the 2 cores are shared).
    machine (optional): {"cores", "busy" (cores busy over the step, /proc/stat: every
    process and the kernel's packet work), "switch", "workers" (all of them)}: when
    the cores were nearly all busy, no single process is the limit but their sum."""
    if ratio >= THRESHOLD:
        return "link (goodput at capacity)"
    if switch_cpu >= 0.85:
        return f"switch CPU (busy {switch_cpu:.0%} of a core)"
    if worker_cpu >= 0.85:
        return f"worker CPU (busiest worker ran {worker_cpu:.0%} of a core)"
    if machine and machine["busy"] >= 0.9 * machine["cores"]:
        rest = machine["busy"] - machine["switch"] - machine["workers"] - machine.get("steal", 0.0)
        return (f"the machine's CPUs (busy {machine['busy']:.2f} of {machine['cores']} cores: "
                f"switch {machine['switch']:.2f}, workers {machine['workers']:.2f}, kernel "
                f"softirq and other processes {rest:.2f}, stolen by the hypervisor "
                f"{machine.get('steal', 0.0):.2f}; switch waited {switch_wait:.0%} and "
                f"the busiest worker {worker_wait:.0%} of the time for a core)")
    if switch_cpu + switch_wait >= 0.85:
        return (f"switch CPU (ran {switch_cpu:.0%}, waited {switch_wait:.0%} for a core: "
                "the machine's cores are shared with the workers and other load)")
    if worker_cpu + worker_wait >= 0.85:
        return f"worker CPU (busiest worker ran {worker_cpu:.0%}, waited {worker_wait:.0%} for a core)"
    return (f"latency, not CPU (switch ran {switch_cpu:.0%} and waited {switch_wait:.0%}; "
            f"busiest worker ran {worker_cpu:.0%} and waited {worker_wait:.0%}): the window of "
            f"{WINDOW} packets does not cover the round trip through the switch")


def switch_datapath(log_text: str) -> str:
    """Which data path the softswitch ran ("compiled" or "python"), from its log line
    "datapath: compiled (...)" / "datapath: python (why)"; "unknown" without one.
    Why: the compiled path carries ~10 x the packets per CPU second, so figures of
    the two are different benchmarks."""
    m = re.search(r"datapath: (compiled|python)\b", log_text)
    return m.group(1) if m else "unknown"


def busy_seconds(proc_stat: str) -> tuple[float, float]:
    """(busy, stolen) CPU seconds of all cores since boot, from /proc/stat's first line:
    busy = running anything here (user, nice, system, irq, softirq); stolen = the
    hypervisor ran something else while this machine had work for the core."""
    f = [int(x) for x in proc_stat.splitlines()[0].split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (f[0] + f[1] + f[2] + f[5] + f[6]) / hz, f[7] / hz


def best_rate(steps: list[dict]) -> dict | None:
    ok = [s for s in steps if s["ratio"] >= THRESHOLD]
    return max(ok, key=lambda s: s["rate_mbps"]) if ok else None


def bench_graph() -> nx.Graph:
    g = nx.Graph(prefix=PREFIX)
    sw = f"{PREFIX}s1"
    g.add_node(sw, role="rack_switch", mac=AGG_MAC, device_id=0)
    for i in range(1, N_WORKERS + 1):
        h = f"{PREFIX}h{i}"
        ip = f"10.9.0.{i}"
        g.add_node(h, role="host", ip=ip, mac=f"02:00:0a:09:00:{i:02x}", worker_index=i - 1)
        g.add_edge(h, sw, ports={h: 0, sw: i})
    return g


def switch_commands(g: nx.Graph, window: int) -> list[str]:
    """One flat aggregation point for the 4 workers, and unicast routes back to them."""
    hosts = sorted((n for n, a in g.nodes(data=True) if a["role"] == "host"),
                   key=lambda n: g.nodes[n]["worker_index"])
    sw = f"{PREFIX}s1"
    cmds = [f"table_add MyIngress.agg_points MyIngress.agg_point 1 {AGG_IP} => 1 0 {window} "
            f"{len(hosts)} 1 0.0.0.0 0 0", "mc_mgrp_create 1"]
    for i, h in enumerate(hosts):
        a, port = g.nodes[h], g.edges[h, sw]["ports"][sw]
        cmds += [f"table_add MyEgress.agg_children MyEgress.set_child {i + 1} => {a['ip']} {a['mac']}",
                 f"mc_node_create {i + 1} {port}", f"mc_node_associate 1 $n{i}",
                 f"table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward {a['ip']}/32 => {a['mac']} {port}"]
    return cmds


def reset_commands(window: int) -> list[str]:
    return [f"register_write MyIngress.r_gen {i} 0" for i in range(2 * window)]


# ---------------------------------------------------------------- the run
class Bench:
    def __init__(self, k: int, work_dir: Path, min_rto_ms: float = 100.0, rto_margin_ms: float = 100.0,
                 log=print, client_core: str = "auto"):
        self.k, self.dir, self.log, self.client_core = k, work_dir, log, client_core
        self.min_rto, self.rto_margin = min_rto_ms / 1000.0, rto_margin_ms / 1000.0
        self.g = bench_graph()
        self.net = None
        self.sw = None
        self.client = None

    def __enter__(self):
        from softswitch.node import SoftSwitch
        from topologies import linkemu, netbuild
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        shapes = []
        for h, sw in self.g.edges:
            if self.g.nodes[h]["role"] != "host":
                h, sw = sw, h
            port = self.g.edges[h, sw]["ports"][sw]
            shapes += [linkemu.IntfShape(h, f"{h}-eth0", None, True, 1.0, 1024, None),
                       linkemu.IntfShape(sw, f"{sw}-eth{port}", port, False, 1.0, 1024, None)]
        self.shapes = shapes
        plan = linkemu.LinkEmuPlan("userspace", shapes)
        host_cmds = {h: [f"ip neigh replace {AGG_IP} lladdr {AGG_MAC} dev {h}-eth0"]
                     for h, a in self.g.nodes(data=True) if a["role"] == "host"}
        params = {f"{PREFIX}s1": {"program": str(REPO / "p4" / "aggregation.p4"),
                                  "defines": {"AGG_K": self.k}, "device_id": 0,
                                  "log_file": str(self.dir / "logs" / "switch.log")}}
        self.net = netbuild.build_network(self.g, SoftSwitch, params, plan, host_cmds)
        self.sw = self.net[f"{PREFIX}s1"]
        from control.agg_entries import push
        from softswitch.control.client import SoftswitchClient
        self.client = SoftswitchClient(self.sw.thrift_port)
        push(self.client, switch_commands(self.g, WINDOW))
        return self

    def __exit__(self, *exc):
        from topologies import netbuild
        if self.client is not None:
            self.client.close()
        if self.net is not None:
            netbuild.stop_network(self.net)
        return False

    def datapath(self) -> str:
        log = self.dir / "logs" / "switch.log"
        return switch_datapath(log.read_text(errors="replace") if log.exists() else "")

    def set_rate(self, mbps: float) -> None:
        from topologies import linkemu, netbuild
        for s in self.shapes:
            linkemu.change_rate(s.intf, mbps, netbuild.intf_runner(self.net, self.g, s.node))

    def step(self, rate: float, seconds: float, iterations: int) -> dict:
        from testbed.counters import cpu_seconds
        from analysis.measure import run_metrics
        from workers.events import read_events
        from dataclasses import asdict

        from workers.ina_client import ClientConfig
        from workers.worker import runqueue_wait_s
        self.set_rate(rate)
        self.client.execute_many(reset_commands(WINDOW), check=True)
        n = parameters_for(rate, self.k, seconds)
        sdir = self.dir / f"rate{rate:g}"
        sdir.mkdir(exist_ok=True)
        go = sdir / "go"
        hosts = sorted((h for h, a in self.g.nodes(data=True) if a["role"] == "host"),
                       key=lambda h: self.g.nodes[h]["worker_index"])
        procs = {}
        for i, h in enumerate(hosts):
            a = self.g.nodes[h]
            client = ClientConfig(job=1, agg_ip=AGG_IP, sender=i, fan_in=len(hosts), window=WINDOW,
                                  k=self.k, initial_rto=max(0.2, self.min_rto),
                                  min_rto=self.min_rto, core=self.client_core)
            cfg = {"worker": h, "index": i, "host_id": f"h1r1w{i + 1}", "dc": "bench", "ip": a["ip"],
                   "n_workers": len(hosts), "seed": 1, "events": str(sdir / f"{h}.jsonl"),
                   "scheme": "ina", "communicator": COMMUNICATOR,
                   "comm": {"client": asdict(client), "clip": 4.0, "aggregate_timeout_s": 120.0,
                            "rto_margin_s": self.rto_margin},
                   "workload": {"kind": "synthetic", "parameters": n},
                   "compute_time": {"model": "constant", "value_ms": 0.0}, "iterations": iterations,
                   "go_file": str(go)}
            (sdir / f"{h}.json").write_text(json.dumps(cfg))
            with open(sdir / f"{h}.log", "w") as out:
                procs[h] = self.net[h].popen([sys.executable, "-m", "workers.worker",
                                              str(sdir / f"{h}.json")], stdout=out,
                                             stderr=subprocess.STDOUT, cwd=str(REPO))
        try:
            _wait(lambda: all(any(e["event"] == "worker_ready" for e in read_events(sdir / f"{h}.jsonl"))
                              or procs[h].poll() is not None for h in hosts), 120, "workers ready")
            busy0, steal0 = busy_seconds(Path("/proc/stat").read_text())
            sw0, t0 = cpu_seconds(self.sw.pid_of_switch), time.monotonic()
            wait0 = runqueue_wait_s(str(self.sw.pid_of_switch))
            go.touch()
            _wait(lambda: all(p.poll() is not None for p in procs.values()), 300, "workers finished")
            # the workers have exited (their /proc entries are gone): they log their own CPU time
            wall = time.monotonic() - t0
            sw1 = cpu_seconds(self.sw.pid_of_switch)
            wait1 = runqueue_wait_s(str(self.sw.pid_of_switch))
            busy1, steal1 = busy_seconds(Path("/proc/stat").read_text())
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.terminate()
                    p.wait(5)
        ev = {h: read_events(sdir / f"{h}.jsonl") for h in hosts}
        errs = [e["error"] for h in hosts for e in ev[h] if e["event"] == "worker_error"]
        if errs:
            raise RuntimeError(f"at {rate:g} Mbps a worker failed: {errs[0]} (logs in {sdir})")
        # the one measurement pipeline: goodput over the steady iterations (the first left out)
        m = run_metrics(ev)
        good_min, good_mean = ((m[k] or 0.0) * 1e6 / 8 for k in ("goodput_min_mbps", "goodput_mbps"))
        pkts, retx = m["packets_sent"], m["retransmissions"]
        cap = payload_capacity(rate, self.k)
        return {"rate_mbps": rate, "parameters": n, "goodput_Bps": good_min,
                "goodput_mean_Bps": good_mean, "capacity_Bps": cap,
                "ratio": good_min / cap, "packets": pkts, "retransmissions": retx,
                "switch_cpu": (sw1 - sw0) / wall, "switch_cpu_s": sw1 - sw0, "wall_s": wall,
                "cpu_us_per_pkt": 1e6 * (sw1 - sw0) / pkts if pkts else None,
                "switch_wait": (wait1 - wait0) / wall if wait0 is not None and wait1 is not None else 0.0,
                **dict(zip(("worker_cpu", "worker_wait"), _worker_cpu(sdir, hosts))),
                "worker_us_per_pkt": _worker_us_per_pkt(sdir, hosts, pkts),
                "machine": {"cores": os.cpu_count() or 1,
                            "busy": (busy1 - busy0 + steal1 - steal0) / wall,
                            "steal": (steal1 - steal0) / wall,
                            "switch": (sw1 - sw0) / wall,
                            "workers": _workers_cpu_s(sdir, hosts) / wall}}


def _worker_cpu(sdir: Path, hosts) -> tuple[float, float]:
    """Busiest worker's (CPU share, run-queue wait share) after the start signal, from
    the times each worker logs when it ends."""
    from workers.events import read_events
    best = (0.0, 0.0)
    for h in hosts:
        ev = read_events(sdir / f"{h}.jsonl")
        end = [e for e in ev if e["event"] == "worker_end"]
        start = [e for e in ev if e["event"] == "iteration_start"]
        if not (end and start) or end[0].get("cpu_s") is None:
            continue
        e, wall = end[0], end[0]["t"] - start[0]["t"]
        if wall <= 0:
            continue
        cpu = (e["cpu_s"] - e.get("cpu_s_at_go", 0.0)) / wall
        wait = ((e.get("runqueue_wait_s") or 0.0) - (e.get("runqueue_wait_s_at_go") or 0.0)) / wall
        if cpu + wait > sum(best):
            best = (cpu, wait)
    return best


def _workers_cpu_s(sdir: Path, hosts) -> float:
    """All workers' CPU seconds after the start signal (0 for a worker that logged none)."""
    from workers.events import read_events
    cpu = 0.0
    for h in hosts:
        end = [e for e in read_events(sdir / f"{h}.jsonl") if e["event"] == "worker_end"]
        if end and end[0].get("cpu_s") is not None:
            cpu += end[0]["cpu_s"] - end[0].get("cpu_s_at_go", 0.0)
    return cpu


def _worker_us_per_pkt(sdir: Path, hosts, pkts: int) -> float | None:
    """All workers' CPU time after the start signal per packet they sent (each also
    reads one result): the worker side's cost of a packet, gradients and quantization
    included."""
    return 1e6 * _workers_cpu_s(sdir, hosts) / pkts if pkts else None


def _wait(cond, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"bench ina: {what} did not happen within {timeout:.0f} s")
        time.sleep(0.05)


def _us(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="gdml bench ina")
    ap.add_argument("--k", type=int, default=64, choices=(32, 64))
    ap.add_argument("--rates", default=",".join(str(r) for r in DEFAULT_RATES),
                    help="per-worker link rates to step through (Mbps)")
    ap.add_argument("--seconds", type=float, default=1.0, help="transfer time per iteration at capacity")
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--min-rto-ms", type=float, default=100.0,
                    help="lower bound of the workers' retransmission timeout")
    ap.add_argument("--rto-margin-ms", type=float, default=100.0,
                    help="the workers' timeout is at least SRTT + this (docs/ina.md)")
    ap.add_argument("--client-core", default="auto", choices=("auto", "python", "c"),
                    help="the workers' client state machine (docs/ina.md, \"The client core\")")
    a = ap.parse_args(argv)
    if a.iterations < 2:
        raise SystemExit("error: --iterations must be >= 2 (the first one is warm-up)")
    if os.geteuid() != 0:
        raise SystemExit("error: `gdml bench ina` needs root (Mininet): run it as root")
    rates = sorted(float(r) for r in a.rates.split(","))
    cores = os.cpu_count() or 1
    steps = []
    with tempfile.TemporaryDirectory(prefix="gdml-bench-ina-") as tmp:
        with Bench(a.k, Path(tmp), a.min_rto_ms, a.rto_margin_ms, client_core=a.client_core) as b:
            print(f"bench ina: 1 softswitch (p4/aggregation.p4, k={a.k}, datapath: {b.datapath()}), "
                  f"{N_WORKERS} workers, "
                  f"window {WINDOW}, {cores} cores (load average {os.getloadavg()[0]:.1f}); stepping "
                  "the per-worker link rate", flush=True)
            below = 0
            for r in rates:
                s = b.step(r, a.seconds, a.iterations)
                steps.append(s)
                s["limit"] = limiter(s["ratio"], s["switch_cpu"], s["switch_wait"], s["worker_cpu"],
                                     s["worker_wait"], s["machine"])
                print(f"  {r:6g} Mbps: goodput {s['goodput_Bps'] * 8 / 1e6:6.2f} Mbps/worker of "
                      f"{s['capacity_Bps'] * 8 / 1e6:6.2f} capacity (ratio {s['ratio']:.2f}), "
                      f"{s['packets']} pkts in, {s['retransmissions']} retx, switch CPU "
                      f"{s['switch_cpu']:.0%} (+{s['switch_wait']:.0%} waiting), busiest worker CPU "
                      f"{s['worker_cpu']:.0%} (+{s['worker_wait']:.0%}), "
                      f"{s['cpu_us_per_pkt']:.0f} us/pkt switch, "
                      f"{_us(s['worker_us_per_pkt'])} us/pkt workers, machine busy "
                      f"{s['machine']['busy']:.2f} of {s['machine']['cores']} cores "
                      f"({s['machine']['steal']:.2f} stolen): {s['limit']}",
                      flush=True)
                below = below + 1 if s["ratio"] < THRESHOLD else 0
                if below >= 2:          # two steps in a row below: the limit is found
                    break
            datapath = b.datapath()
    best = best_rate(steps)
    above = next((s for s in steps if best is None or s["rate_mbps"] > best["rate_mbps"]), None)
    ref = best or steps[0]
    if best is None:
        print(f"no step reached {THRESHOLD:.0%} of capacity; lowest step: {steps[0]['limit']}")
    else:
        print(f"highest rate with goodput >= {THRESHOLD:.0%} of capacity: {best['rate_mbps']:g} Mbps "
              f"per worker ({best['goodput_Bps'] * 8 / 1e6:.2f} Mbps goodput, "
              f"{best['packets'] / best['wall_s']:.0f} pkt/s into the switch)")
    if above is not None and above is not best:
        print(f"above it ({above['rate_mbps']:g} Mbps): limited by {above['limit']}")
    print(f"softswitch CPU per aggregated packet: {ref['cpu_us_per_pkt']:.1f} us "
          f"(at {ref['rate_mbps']:g} Mbps)")
    print(f"ina: max_rate_mbps={best['rate_mbps'] if best else 0:g} goodput_ratio={ref['ratio']:.3f} "
          f"cpu_us_per_pkt={ref['cpu_us_per_pkt']:.1f} k={a.k} datapath={datapath}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
