"""In-process packet rate of the softswitch pipeline (no sockets).

    python3 -m softswitch.bench_inproc [--seconds S] [--profile]

prints packets/s for p4/forward.p4 and for softswitch/tests/programs/agg_bench.p4
(per slot a bitmap and counter register, K int32 registers read-add-written per
packet) at K=32 and K=64. `--profile` adds a cProfile of each workload.

Rates are per CPU-second of the pipeline (one dedicated core); the wall-clock rate
is printed too and is lower when other processes share the machine.

`measure_inproc(program, defines, packets, seconds, commands) -> kpps` measures one
program; called without a program it measures the three standard workloads and
returns {'fwd': kpps, 'agg32': kpps, 'agg64': kpps} (what softswitch.bench uses).
"""
from __future__ import annotations

import argparse
import os
import struct
import sys
import time

from softswitch.bench.frames import udp_frame
from softswitch.target.switch import Switch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORWARD_P4 = os.path.join(REPO_ROOT, "p4", "forward.p4")
AGG_BENCH_P4 = os.path.join(REPO_ROOT, "softswitch", "tests", "programs", "agg_bench.p4")
AGG_UDP_PORT = 48879
FANIN = 32   # 31 of 32 packets per slot take the read-add-write path
SLOTS = 16


def forward_packets():
    frame = udp_frame(bytes([10, 0, 2, 2]), bytes([10, 0, 1, 1]), 5000, bytes(range(64)))
    return [(1, frame)]


FORWARD_COMMANDS = ["table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.2.0/24 => 02:00:00:00:02:02 2"]


def agg_packets(k: int):
    """FANIN workers x SLOTS slots: every FANIN-th packet completes a slot and leaves."""
    pkts = []
    for slot in range(SLOTS):
        for w in range(FANIN):
            vals = [((slot * 7 + w * 13 + i) % 2001) - 1000 for i in range(k)]
            payload = struct.pack("!HBBI", slot, w, FANIN, 0) + struct.pack(f"!{k}i", *vals)
            pkts.append((1, udp_frame(bytes([10, 0, 9, 9]), bytes([10, 0, 1, 1 + w]), AGG_UDP_PORT, payload)))
    return pkts


def _switch(program, defines, commands):
    sw = Switch.from_file(program, defines)
    if commands:
        from softswitch.control.commands import RuntimeAPI
        api = RuntimeAPI(sw.state)
        for c in commands:
            reply = api.execute(c)
            if reply.startswith("Error"):
                raise RuntimeError(f"{program}: command {c!r} refused: {reply}")
    return sw


def run_for(sw, packets, seconds: float):
    """Feed packets round-robin for `seconds` of wall time.
    -> (packets, wall seconds, CPU seconds of this process)."""
    process = sw.process
    n = 0
    batch = packets * max(1, 256 // len(packets))
    t0, c0 = time.perf_counter(), time.process_time()
    deadline = t0 + seconds
    now = 0
    while True:
        for port, data in batch:
            now += 1
            process(port, data, now)
        n += len(batch)
        t = time.perf_counter()
        if t >= deadline:
            return n, t - t0, time.process_time() - c0


def measure_inproc(program=None, defines=None, packets=None, seconds: float = 1.0, commands=(),
                   clock: str = "cpu"):
    """Thousands of packets per second of one program. clock='cpu' (default) divides by
    the CPU time the pipeline used, i.e. the rate of one dedicated core, which stays
    meaningful when other processes share this 2-core machine; clock='wall' divides
    by elapsed time."""
    if program is None:
        return measure_all(seconds)
    sw = _switch(program, defines, commands)
    run_for(sw, packets, min(0.2, seconds))   # warm-up (caches, first-call costs)
    n, wall, cpu = run_for(sw, packets, seconds)
    return n / (cpu if clock == "cpu" and cpu > 0 else wall) / 1000.0


def measure_compiled_fwd(seconds: float = 1.0) -> float:
    """kpps per CPU-second of forward.p4 on the compiled data path (softswitch.native): the
    frames are fed round after round by C (ss_process_rounds), outputs built and discarded,
    so this is the pipeline's own rate, as the Python figures are."""
    from softswitch.native.switch import CompiledSwitch
    csw = CompiledSwitch(_switch(FORWARD_P4, None, FORWARD_COMMANDS))
    batch = forward_packets() * 256
    csw.process_rounds(batch, 100)      # warm-up
    rounds, n, c0, t0 = 1000, 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        csw.process_rounds(batch, rounds)
        n += rounds * len(batch)
    cpu = time.process_time() - c0
    return n / cpu / 1000.0


def measure_aggregation_both(seconds: float = 1.0, ks=(32, 64), report=print) -> dict:
    """p4/aggregation.p4 itself (the veth bench's workload: fan-in 1, every frame completes
    its slot and is multicast) at each k on both data paths, side by side: {'aggK_p4':
    kpps, 'aggK_p4_compiled': kpps} per CPU-second."""
    from softswitch.bench.workloads import aggregation_workload, measure_workload_cpu
    out = {}
    for k in ks:
        r = measure_workload_cpu(aggregation_workload(k), seconds)
        out[f"agg{k}_p4"], out[f"agg{k}_p4_compiled"] = r["python"] / 1000.0, r["compiled"] / 1000.0
        report(f"agg{k}_p4: p4/aggregation.p4 k={k}: python {r['python'] / 1000:.1f} kpps, compiled "
               f"{r['compiled'] / 1000:.1f} kpps per CPU-second ({1e6 / r['compiled']:.2f} us CPU/packet, "
               f"{r['compiled'] / r['python']:.0f}x)")
    return out


def workloads():
    return [("fwd", FORWARD_P4, None, forward_packets(), FORWARD_COMMANDS),
            ("agg32", AGG_BENCH_P4, {"K": "32"}, agg_packets(32), ()),
            ("agg64", AGG_BENCH_P4, {"K": "64"}, agg_packets(64), ())]


def measure_all(seconds: float = 1.0) -> dict:
    return {name: measure_inproc(prog, d, pk, seconds, cmds) for name, prog, d, pk, cmds in workloads()}


def profile(name, program, defines, packets, commands, seconds, top=14):
    import cProfile
    import pstats
    sw = _switch(program, defines, commands)
    pr = cProfile.Profile()
    pr.enable()
    run_for(sw, packets, seconds)
    pr.disable()
    print(f"--- profile {name} (cProfile inflates call overhead; read the shares, not the totals)")
    pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(top)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m softswitch.bench_inproc")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args(argv)
    res = {}
    for name, prog, d, pk, cmds in workloads():
        sw = _switch(prog, d, cmds)
        run_for(sw, pk, 0.2)
        n, wall, cpu = run_for(sw, pk, a.seconds)
        res[name] = n / cpu / 1000.0
        print(f"{name}: {res[name]:.1f} kpps per CPU-second ({1e6 * cpu / n:.1f} us CPU/packet); "
              f"wall clock {n / wall / 1000.0:.1f} kpps ({100.0 * cpu / wall:.0f}% of a core)")
        if a.profile:
            profile(name, prog, d, pk, cmds, a.seconds)
    res["fwd_compiled"] = measure_compiled_fwd(a.seconds)
    print(f"fwd_compiled: {res['fwd_compiled']:.1f} kpps per CPU-second "
          f"({1e3 / res['fwd_compiled']:.3f} us CPU/packet; the compiled data path, "
          f"{res['fwd_compiled'] / res['fwd']:.0f}x the Python path)")
    res.update(measure_aggregation_both(a.seconds))
    print(" ".join(f"{k}_inproc_kpps={v:.1f}" for k, v in res.items()))


if __name__ == "__main__":
    main()
