"""Topology benchmark: bring-up and teardown time, memory, processes, idle switch CPU.

    python3 run.py bench topology [--idle-s 5] [--sizes 9x1,12x1]

Brings up 3 x 4 and 8 x 4 (datacenters x workers, one rack per datacenter) with the
default backend and link emulation, including the control-plane push, then tears them
down. Bring-up is timed until every route is installed (hosts reachable is the health
check's job, not timed here). Idle CPU is the mean share of one core used by each switch
process of the 8 x 4 network over --idle-s seconds with no traffic. Last line:
topology: up_3x4_s=... down_3x4_s=... up_8x4_s=... idle_switch_cpu_pct=...

--sizes DxW,... measures those networks instead (D datacenters of W workers, full mesh).
Each size also reports memory: the machine's MemAvailable drop from before bring-up to
after it (machine-wide: run it on an idle machine), the resident memory of the switch
processes, and the processes the machine gained (switch processes and Mininet's shells).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from testbed import counters
from testbed.lifecycle import RunOptions, started_network
from testbed.scenario import parse_scenario

PREFIX = "bt"


def scenario_text(dcs: int, workers: int) -> str:
    names = [f"dc{i}" for i in range(1, dcs + 1)]
    dcs_yaml = "\n".join(f"  - {{name: {n}, lat: {5 * i}, lon: {15 * i}, racks: 1, "
                         f"workers_per_rack: {workers}}}" for i, n in enumerate(names))
    return (f"name: bench-{dcs}x{workers}\nseed: 1\ndatacenters:\n{dcs_yaml}\n"
            f"wan: {{topology: full-mesh, default: {{bandwidth_mbps: 20, delay_ms: 10}}}}\n"
            f"scheme: ps\niterations: 1\n")


def mem_available_mib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def rss_mib(pid: int | None) -> float:
    """Resident memory of a process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, TypeError):
        pass
    return 0.0


def process_count() -> int:
    return sum(1 for p in Path("/proc").iterdir() if p.name.isdigit())


def measure(dcs: int, workers: int, idle_s: float = 0.0, log=print) -> dict:
    scn = parse_scenario(scenario_text(dcs, workers), f"<bench {dcs}x{workers}>")
    out = {}
    with tempfile.TemporaryDirectory(prefix="gdml-bench-") as tmp:
        mem0, procs0 = mem_available_mib(), process_count()
        t0 = time.monotonic()
        cm = started_network(RunOptions("<bench>", prefix=PREFIX, show_progress=False), scn, Path(tmp))
        env = cm.__enter__()
        try:
            out["up_s"] = time.monotonic() - t0
            out["switches"] = len(env["net"].switches)
            out["hosts"] = len(env["net"].hosts)
            out["mem_used_mib"] = mem0 - mem_available_mib()
            out["switch_rss_mib"] = sum(rss_mib(sw.pid_of_switch) for sw in env["net"].switches)
            out["processes_added"] = process_count() - procs0
            if idle_s:
                pids = {sw.name: sw.pid_of_switch for sw in env["net"].switches}
                c0 = {n: counters.cpu_seconds(p) for n, p in pids.items()}
                time.sleep(idle_s)
                c1 = {n: counters.cpu_seconds(p) for n, p in pids.items()}
                shares = [100 * (c1[n] - c0[n]) / idle_s for n in pids
                          if c0[n] is not None and c1[n] is not None]
                out["idle_switch_cpu_pct"] = sum(shares) / len(shares)
                out["idle_switch_cpu_pct_max"] = max(shares)
        finally:
            t1 = time.monotonic()
            cm.__exit__(None, None, None)
            out["down_s"] = time.monotonic() - t1
            out["processes_left"] = process_count() - procs0
    log(f"{dcs}x{workers}: {out['switches']} switches, {out['hosts']} hosts, up {out['up_s']:.2f} s, "
        f"down {out['down_s']:.2f} s, memory {out['mem_used_mib']:.0f} MiB (switches "
        f"{out['switch_rss_mib']:.0f} MiB resident), +{out['processes_added']} processes "
        f"({out['processes_left']:+d} after teardown)" + (f", idle switch CPU {out['idle_switch_cpu_pct']:.2f}% mean, "
                                         f"{out['idle_switch_cpu_pct_max']:.2f}% max"
                                         if idle_s else ""))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="gdml bench topology")
    ap.add_argument("--idle-s", type=float, default=5.0)
    ap.add_argument("--sizes", default=None, help="DxW,... (datacenters x workers each), e.g. 9x1,12x1")
    a = ap.parse_args(argv)
    if a.sizes:
        for size in a.sizes.split(","):
            d, _, w = size.strip().partition("x")
            measure(int(d), int(w or 1), idle_s=a.idle_s)
        return 0
    small = measure(3, 4)
    big = measure(8, 4, idle_s=a.idle_s)
    print(f"topology: up_3x4_s={small['up_s']:.2f} down_3x4_s={small['down_s']:.2f} "
          f"up_8x4_s={big['up_s']:.2f} idle_switch_cpu_pct={big['idle_switch_cpu_pct']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
