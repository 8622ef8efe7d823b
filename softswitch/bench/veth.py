"""Switch benchmark: `python3 -m softswitch.bench` (run.py bench switch calls it).

Measures, in one run on this machine:
1. packets/s in-process (no sockets) for forward.p4 and the aggregation program at k=32
   and k=64 (softswitch.bench.inproc.measure_inproc);
2. packets/s through veth pairs between namespaces: a generator in namespace <p>g blasts
   prebuilt frames with AF_PACKET into the switch's port 1, the switch (root namespace)
   forwards them out of port 2 into namespace <p>k, where the sink interface's receive
   counter counts them (no process there, so the sink costs no CPU on this 2-core machine); the generator
   runs on CPU 0 and the switch (or relay) on CPU 1;
3. on the same veths, the relay rate of a do-nothing Python AF_PACKET forwarder, the I/O
   limit for any Python switch, and of a do-nothing C forwarder (c_relay.c: the compiled
   loop's recvmmsg/sendmmsg pattern, no pipeline), the limit for the compiled path; the
   ratios switch/relay say what the pipeline costs.

Rates through veths are measured under overload (the generator sends as fast as it can;
the socket buffer drops what the switch cannot take), over a fixed window after a warm-up.
Progress goes to stderr; the last line on stdout is
`switch: fwd_veth_kpps=... fwd_veth_kpps_compiled=... ... agg64_veth_kpps=... agg64_veth_kpps_compiled=...`
(every workload, p4/forward.p4 and p4/aggregation.p4 at k=32 and 64, runs through the veths on
both data paths, Python and compiled, in the same round; the `agg64_p4_inproc_kpps` pair is
the same program in-process on both paths),
followed, when `run.py bench switch` finds BMv2 (bench/bmv2_switch.py), by
`bmv2_fwd_veth_kpps=... bmv2_agg32_veth_kpps=...` (and `bmv2nolog_...` for a logging-free
build on PATH as simple_switch_nolog): the same veths, programs, entries and frames.
All interfaces and namespaces are named with the prefix `xb<pid>` and removed at the end.
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from softswitch.bench import perf_profile
from softswitch.bench.workloads import (Workload, agg_frame_source, aggregation_workload, forward_workload,
                                        measure_workload_inproc)
from softswitch.dataplane.ports import ETH_P_ALL, PACKET_IGNORE_OUTGOING, SO_RCVBUFFORCE, SO_SNDBUFFORCE, SOL_PACKET

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The generator and the element under test each get a CPU of their own: left to the
# scheduler, they migrate and share cores with each other's softirq work, and the measured
# rate of the same switch varied 2x from run to run on this 2-core machine.
GEN_CPU, DUT_CPU = (0, 1) if (os.cpu_count() or 1) >= 2 else (None, None)


def pin(pid: int, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(pid, {cpu})


def progress(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- helper processes (run as `python3 -m softswitch.bench --role ...`) ------------------------

def _raw_socket(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    return s


def run_generator(ifname: str, frames_path: str, seconds: float, agg: bool = False) -> None:
    """Blasts the frames (cycled) for `seconds`; prints how many it sent."""
    with open(frames_path, "rb") as f:
        frames = _read_frames(f.read())
    if agg:
        _blast(ifname, seconds, agg_frame_source(frames))
    else:
        _blast(ifname, seconds, None, frames)


def _blast(ifname: str, seconds: float, next_frame, frames=None) -> None:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    sock.bind((ifname, 0))
    sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 4 << 20)
    send = sock.send
    sent = errors = 0
    n = len(frames) if frames else 1
    end = time.monotonic() + seconds
    i = 0
    while True:
        for _ in range(256):
            try:
                send(frames[i] if next_frame is None else next_frame())
                sent += 1
            except OSError:
                errors += 1
            i = i + 1 if i + 1 < n else 0
        if time.monotonic() >= end:
            break
    print(f"sent={sent} errors={errors}", flush=True)


def run_relay(in_if: str, out_if: str) -> None:
    """The do-nothing forwarder: what a Python switch costs with no pipeline at all.
    Same I/O pattern as the softswitch (epoll, drain the socket in a batch, send each)."""
    rx, tx = _raw_socket(in_if), _raw_socket(out_if)
    for s in (rx, tx):
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    rx.setblocking(False)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    ep = select.epoll()
    ep.register(rx.fileno(), select.EPOLLIN)
    recv, send = rx.recv, tx.send
    print("relay ready", flush=True)
    while not stop:
        if not ep.poll(0.2):
            continue
        for _ in range(256):
            try:
                frame = recv(2048)
            except BlockingIOError:
                break
            try:
                send(frame)
            except OSError:
                pass


def _write_frames(frames: list[bytes]) -> bytes:
    return b"".join(len(f).to_bytes(2, "big") + f for f in frames)


def _read_frames(blob: bytes) -> list[bytes]:
    out, off = [], 0
    while off < len(blob):
        n = int.from_bytes(blob[off:off + 2], "big")
        out.append(blob[off + 2:off + 2 + n])
        off += 2 + n
    return out


# --- the veth harness ---------------------------------------------------------------------------

def sh(*cmd: str, check: bool = True) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise RuntimeError(f"command failed: {' '.join(cmd)}: {res.stderr.strip()}")
    return res.stdout


@dataclass
class VethBed:
    """gen namespace --[g0 | s1]-- root (switch) --[s2 | k0]-- sink namespace."""
    prefix: str
    made: list = field(default_factory=list)

    def __post_init__(self):
        p = self.prefix
        self.ns_gen, self.ns_sink = f"{p}g", f"{p}k"
        self.gen_if, self.sw_in, self.sw_out, self.sink_if = f"{p}-g0", f"{p}-s1", f"{p}-s2", f"{p}-k0"

    def up(self) -> None:
        for ns in (self.ns_gen, self.ns_sink):
            sh("ip", "netns", "add", ns)
            self.made.append(("netns", ns))
        for outer, inner, ns in ((self.sw_in, self.gen_if, self.ns_gen), (self.sw_out, self.sink_if, self.ns_sink)):
            sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            self.made.append(("link", outer))
            sh("ip", "link", "set", inner, "netns", ns)
            for cmd in (["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                        ["ip", "link", "set", inner, "up"],
                        ["ethtool", "-K", inner, "rx", "off", "tx", "off", "sg", "off", "tso", "off",
                         "gso", "off", "gro", "off"]):
                sh("ip", "netns", "exec", ns, *cmd, check=False)
            with open(f"/proc/sys/net/ipv6/conf/{outer}/disable_ipv6", "w") as f:
                f.write("1")
            sh("ip", "link", "set", outer, "up")
            sh("ethtool", "-K", outer, "rx", "off", "tx", "off", "sg", "off", "tso", "off", "gso", "off",
               "gro", "off", check=False)

    def sink_count(self) -> int:
        out = sh("ip", "-n", self.ns_sink, "-s", "-o", "link", "show", self.sink_if)
        # "... RX: bytes packets errors ... \    123 456 ..." : the second field after "RX:" line
        fields = out.split("\\")
        for i, part in enumerate(fields):
            if part.strip().startswith("RX:"):
                return int(fields[i + 1].split()[1])
        raise RuntimeError(f"cannot read RX packets of {self.sink_if}: {out!r}")

    def down(self) -> None:
        for kind, name in reversed(self.made):
            if kind == "link":
                sh("ip", "link", "del", name, check=False)
            else:
                sh("ip", "netns", "del", name, check=False)
        self.made.clear()

    def leftovers(self) -> list[str]:
        left = [n for n in (self.sw_in, self.sw_out) if os.path.exists(f"/sys/class/net/{n}")]
        nss = sh("ip", "netns", "list", check=False)
        return left + [ns for ns in (self.ns_gen, self.ns_sink) if ns in nss.split()]


def _helper(*args: str, ns: str | None = None, **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "softswitch.bench", *args]
    if ns:
        cmd = ["ip", "netns", "exec", ns, *cmd]
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    return subprocess.Popen(cmd, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, **kw)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure_veth_rate(bed: VethBed, frames: list[bytes], warmup: float, window: float,
                      agg: bool = False) -> tuple[float, float]:
    """Blasts frames into the middle element; returns (delivered pps, offered pps)."""
    with tempfile.NamedTemporaryFile(prefix="xb-frames-", delete=False) as f:
        f.write(_write_frames(frames))
        path = f.name
    try:
        gen = _helper("--role", "gen", "--ifname", bed.gen_if, "--frames", path,
                      "--seconds", str(warmup + window + 0.3), *(["--agg"] if agg else []), ns=bed.ns_gen)
        try:
            time.sleep(warmup)
            c0, t0 = bed.sink_count(), time.monotonic()
            time.sleep(window)
            c1, t1 = bed.sink_count(), time.monotonic()
            out, _ = gen.communicate(timeout=30)
        finally:
            _stop(gen)
        sent = int(out.split("sent=")[1].split()[0]) if "sent=" in out else 0
        return (c1 - c0) / (t1 - t0), sent / (warmup + window + 0.3)
    finally:
        os.unlink(path)


# --- what runs in the middle -------------------------------------------------------------------

def start_softswitch(bed: VethBed, wl: Workload, log_path: str, profile_path: str | None = None,
                     datapath: str = "python"):
    from softswitch.control.client import RuntimeCommandError, SoftswitchClient
    from softswitch.node import free_tcp_port, log_tail, port_accepts
    port = free_tcp_port()
    cmd = [sys.executable, "-m", "softswitch", wl.program, "-i", f"1@{bed.sw_in}", "-i", f"2@{bed.sw_out}",
           "--thrift-port", str(port), "--log-file", log_path, "--datapath", datapath]
    for k, v in wl.defines.items():
        cmd += ["-D", f"{k}={v}"]
    with open(log_path, "w") as log:   # start-up errors (stderr) land in the same log
        env = dict(os.environ, PYTHONPATH=REPO_ROOT)
        if profile_path:
            env["SOFTSWITCH_PROFILE"] = profile_path
        proc = subprocess.Popen(cmd, env=env, cwd=REPO_ROOT,
                                stdout=log, stderr=subprocess.STDOUT)
    pin(proc.pid, DUT_CPU)
    deadline = time.monotonic() + 60
    while not port_accepts(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError(f"softswitch for {wl.name} did not start; log {log_path}:\n{log_tail(log_path, 20)}")
        time.sleep(0.05)
    try:
        with SoftswitchClient(port) as client:
            client.execute_many(wl.commands, check=True)
    except RuntimeCommandError as e:
        _stop(proc)
        raise RuntimeError(f"{wl.name}: {e}") from None
    return proc


def start_compiled(bed: VethBed, wl: Workload, log_path: str):
    return start_softswitch(bed, wl, log_path, datapath="compiled")


def _relay_rate(bed: VethBed, args, relay: subprocess.Popen, label: str) -> float:
    """Delivered pps through a started relay process (it prints a line when ready)."""
    try:
        relay.stdout.readline()
        progress(f"do-nothing {label}: {args.warmup:g} s warm-up + {args.window:g} s window")
        pps, offered = measure_veth_rate(bed, forward_workload().frames, args.warmup, args.window)
    finally:
        _stop(relay)
    progress(f"  {label} {pps / 1000:.1f} kpps delivered (generator offered {offered / 1000:.1f} kpps)")
    return pps


def measure_relay(bed: VethBed, args) -> float:
    return _relay_rate(bed, args, _helper("--role", "relay", "--in-if", bed.sw_in, "--out-if", bed.sw_out),
                       "relay")


def measure_c_relay(bed: VethBed, args) -> float:
    from softswitch.native.build import build_executable
    exe = build_executable(os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_relay.c"))
    relay = subprocess.Popen([str(exe), bed.sw_in, bed.sw_out], stdout=subprocess.PIPE, text=True)
    pin(relay.pid, DUT_CPU)
    return _relay_rate(bed, args, relay, "C relay")


def measure_switch(bed: VethBed, wl: Workload, args, rnd: int, label: str = "softswitch",
                   start=None) -> float:
    """Delivered pps of one switch on the bed: the softswitch, or `start(bed, wl, log_path)`
    -> process for another target (bench switch passes BMv2's)."""
    log_path = os.path.join(tempfile.gettempdir(), f"{bed.prefix}-{label}-{wl.name}.log")
    progress(f"{label} {wl.name}: start, program, {args.warmup:g} s warm-up + {args.window:g} s window")
    profile_path = f"{log_path}.prof" if args.profile and rnd == 1 and start is None else None
    proc = start(bed, wl, log_path) if start else start_softswitch(bed, wl, log_path, profile_path)
    # a native target (the compiled path, BMv2) is sampled by perf over the same window
    perf_path = f"{log_path}.perf" if args.profile and rnd == 1 and start is not None else None
    rec = perf_profile.start(proc.pid, args.warmup + args.window, perf_path) if perf_path else None
    try:
        pps, offered = measure_veth_rate(bed, wl.frames, args.warmup, args.window, wl.fresh_generations)
    finally:
        rows = perf_profile.finish(rec, perf_path) if perf_path else []
        _stop(proc)
    if profile_path:
        print_profile(wl.name, profile_path)
    if perf_path:
        progress(f"perf profile of the {label} {wl.name} switch process through veths "
                 f"(samples of that process, {args.warmup + args.window:g} s):\n{perf_profile.summary(rows)}")
    progress(f"  {wl.name} {pps / 1000:.1f} kpps delivered (offered {offered / 1000:.1f} kpps)")
    return pps


def print_profile(name: str, path: str, top: int = 15) -> None:
    import io
    import pstats
    out = io.StringIO()
    pstats.Stats(path, stream=out).sort_stats("tottime").print_stats(top)
    progress(f"profile of the {name} switch process through veths "
             "(cProfile inflates call overhead; read the shares):\n" + out.getvalue())


# what other targets (BMv2) run: aggregation at k=64 is the softswitch's own figure
OTHERS_WORKLOADS = ("fwd", "agg32")


def measure_inproc() -> dict[str, float]:
    from softswitch.bench.inproc import measure_aggregation_both, measure_compiled_fwd, measure_inproc as inproc
    out = inproc()
    out["fwd_compiled"] = measure_compiled_fwd()
    out.update(measure_aggregation_both(report=lambda m: None))
    return out


def main(argv=None, others: dict | None = None) -> int:
    """`others`: {label: start(bed, workload, log_path) -> process} of other switch targets,
    measured on the same veths with the same workloads in every round, their rates appended
    to the last line as <label>_fwd_veth_kpps=... <label>_agg32_veth_kpps=..."""
    others = others or {}
    ap = argparse.ArgumentParser(prog="python3 -m softswitch.bench", description=__doc__.split("\n")[0])
    ap.add_argument("--window", type=float, default=4.0, help="seconds counted per veth measurement")
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2, help="repeat the veth measurements; the best is kept")
    ap.add_argument("--skip-inproc", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="profile the switch process during each first-round veth run and print where "
                         "its time goes: cProfile for the Python path, perf samples for the compiled "
                         "path and other native targets")
    ap.add_argument("--role", choices=["gen", "relay"], help=argparse.SUPPRESS)
    ap.add_argument("--ifname", help=argparse.SUPPRESS)
    ap.add_argument("--frames", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--agg", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--in-if", help=argparse.SUPPRESS)
    ap.add_argument("--out-if", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role:
        pin(0, GEN_CPU if args.role == "gen" else DUT_CPU)
    if args.role == "gen":
        run_generator(args.ifname, args.frames, args.seconds, agg=args.agg)
        return 0
    if args.role == "relay":
        run_relay(args.in_if, args.out_if)
        return 0
    if os.geteuid() != 0:
        print("softswitch.bench: the veth part needs root (network namespaces); run it as root", file=sys.stderr)
        return 1

    inproc = {}
    if not args.skip_inproc:
        progress("in-process: forward.p4, aggregation k=32, k=64 (no sockets)")
        inproc = measure_inproc()
        for k, v in inproc.items():
            progress(f"  {k}: {v:.1f} kpps")

    workloads = [forward_workload(), aggregation_workload(32), aggregation_workload(64)]
    bed = VethBed(f"xb{os.getpid() % 100000}")
    results: dict[str, float] = {}
    try:
        progress(f"veth bed {bed.ns_gen} -> {bed.sw_in} | {bed.sw_out} -> {bed.ns_sink}; "
                 f"{args.rounds} round(s), best of each kept (this machine is shared: less disturbed runs win)")
        bed.up()
        for rnd in range(1, args.rounds + 1):
            pps = measure_relay(bed, args)
            results["relay"] = max(results.get("relay", 0.0), pps)
            results["c_relay"] = max(results.get("c_relay", 0.0), measure_c_relay(bed, args))
            for wl in workloads:
                pps = measure_switch(bed, wl, args, rnd)
                results[wl.name] = max(results.get(wl.name, 0.0), pps)
                progress(f"  round {rnd}: {wl.name} is {pps / results['relay']:.2f} of the best relay so far")
                # the compiled data path, same bed, same round
                pps = measure_switch(bed, wl, args, rnd, "compiled", start_compiled)
                results[f"{wl.name}_compiled"] = max(results.get(f"{wl.name}_compiled", 0.0), pps)
                for label, start in others.items():
                    if wl.name not in OTHERS_WORKLOADS:
                        continue
                    key = f"{label}_{wl.name}"
                    results[key] = max(results.get(key, 0.0),
                                       measure_switch(bed, wl, args, rnd, label, start))
    finally:
        bed.down()
        left = bed.leftovers()
        if left:
            progress(f"WARNING: could not remove {left}")
    for wl in workloads:
        own = measure_workload_inproc(wl)
        progress(f"{wl.name} ({os.path.relpath(wl.program, REPO_ROOT)}, veth frames): in-process {own / 1000:.1f} kpps, "
                 f"through veths {results[wl.name] / 1000:.1f} kpps = {results[wl.name] / own:.2f} of it")

    def f(key):
        return f"{inproc[key]:.1f}" if key in inproc else "nan"
    print(f"veth: relay_kpps={results['relay'] / 1000:.1f} fwd_kpps={results['fwd'] / 1000:.1f} "
          f"agg32_kpps={results['agg32'] / 1000:.1f}")
    print(f"switch: fwd_veth_kpps={results['fwd'] / 1000:.1f} fwd_veth_kpps_compiled={results['fwd_compiled'] / 1000:.1f} "
          f"compiled_vs_python={results['fwd_compiled'] / results['fwd']:.1f} "
          f"fwd_compiled_veth_ratio={results['fwd_compiled'] / results['relay']:.2f} "
          f"fwd_inproc_kpps={f('fwd')} fwd_inproc_kpps_compiled={f('fwd_compiled')} agg32_inproc_kpps={f('agg32')} agg64_inproc_kpps={f('agg64')} "
          f"fwd_veth_ratio={results['fwd'] / results['relay']:.2f} "
          f"agg32_veth_ratio={results['agg32'] / results['relay']:.2f} "
          f"agg32_veth_kpps={results['agg32'] / 1000:.1f} agg32_veth_kpps_compiled={results['agg32_compiled'] / 1000:.1f} "
          f"agg64_veth_kpps={results['agg64'] / 1000:.1f} agg64_veth_kpps_compiled={results['agg64_compiled'] / 1000:.1f} "
          f"agg64_compiled_vs_python={results['agg64_compiled'] / results['agg64']:.1f} "
          f"agg64_p4_inproc_kpps={f('agg64_p4')} agg64_p4_inproc_kpps_compiled={f('agg64_p4_compiled')} "
          f"c_relay_veth_kpps={results['c_relay'] / 1000:.1f} "
          f"fwd_compiled_vs_c_relay={results['fwd_compiled'] / results['c_relay']:.2f} "
          f"agg64_compiled_vs_c_relay={results['agg64_compiled'] / results['c_relay']:.2f}"
          + "".join(f" {label}_{wl.name}_veth_kpps={results[f'{label}_{wl.name}'] / 1000:.1f}"
                    for label in others for wl in workloads if wl.name in OTHERS_WORKLOADS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
