"""Link emulation: bandwidth by htb in the kernel; delay, jitter, loss by netem or in user space.

Three modes, chosen once per run and recorded in the manifest:
- ``netem``: the kernel has sch_netem. Each interface end gets netem (delay, jitter, loss)
  at the root and, under it, htb (rate) with a byte-limited bfifo: the packet is delayed,
  then queued and sent at the link's rate, the order of userspace mode (the softswitch's
  delay line, then htb in the kernel).
- ``userspace``: no netem (the case on the testbed machines). Bandwidth stays htb in the
  kernel; delay, jitter and loss are applied by the softswitch on its egress ports
  (its ``link_emu`` option, ``{port: dict(delay_ms, jitter_ms, loss_pct, seed, limit)}``).
  * switch-switch links (uplink, wan): each switch applies the full one-way delay, jitter
    and loss on its egress into the link, so each direction is emulated exactly.
  * host-switch links (access): a host has no softswitch, so the host->switch direction
    cannot be delayed. The switch's egress toward the host carries the whole round trip
    (2 x one-way delay, jitter as configured) so RTTs stay right; loss is applied once, on
    the switch->host direction only. A warning says so whenever such a link has nonzero
    delay or loss.
- ``relay``: no netem and a switch that cannot emulate links itself (BMv2). Each link with
  delay, jitter or loss gets a relay process (``python3 -m softswitch.linkem``, the
  softswitch's delay line) spliced into it; each direction is exact, access links included.
  htb stays in the kernel, on the interface the relay writes into, so a frame is delayed
  first and then queued for the link's rate (topologies/relay_plan.py: the wiring).

htb is applied with our own tc commands, not TCLink (Mininet silently ignores rates above
1000 Mbps); every rate is read back from the kernel after it is set.

Both modes size their queues by one rule (docs/runtime.md, "How both modes size their
queues"): the queue waiting for the link is one bandwidth-delay product in bytes
(``queue_bytes``, a bfifo under htb); the delay line (netem's ``limit``, the softswitch's
``link_emu`` limit) holds, counted in the smallest frames a run carries, what the link has
in flight plus that queue (``delay_line_limit``).

Pure planning functions come first; functions that run commands take a ``run`` callable
(``run(cmd) -> str``) so the same code works in the root namespace and in hosts.
"""
from __future__ import annotations

import math
import re
import os
import subprocess
from dataclasses import dataclass, field

from topologies.ports import interface_name, timer_loop_ports
from topologies.relay_plan import RelaySpec, relay_for_edge

MODES = ("netem", "userspace", "relay")
HTB_HANDLE = "5"    # htb qdisc handle; its single class is 5:1 (root qdisc without netem)
NETEM_HANDLE = "1"  # netem mode: the root qdisc, htb 5: is its child (class 1:1)
MTU_FRAME = 1514
MIN_QUEUE_PKTS = 64
MIN_QUEUE_RTT_S = 0.020
# The smallest frame a run carries, in bytes as tc counts them (no FCS): TCP's pure ACKs are
# 66, ICMP echoes 98, aggregation frames 186 (k = 32) and 314 (k = 64). Delay lines count
# frames, so they are sized for this one and never fill before the byte queue does.
MIN_FRAME = 64
JITTER_SIGMAS = 4   # netem's normal distribution table ends near 4 sigma
PROBE_PREFIX = "gdmlnp"   # scratch veth of the netem probe (testbed.cleanup sweeps leftovers)


class LinkEmuError(RuntimeError):
    """A requested link setting cannot be applied."""


# ---------------------------------------------------------------- mode selection

def kernel_has_netem(run=None) -> bool:
    """Probe netem by adding it to a scratch veth pair (deleted again)."""
    run = run or _run_root
    name = f"{PROBE_PREFIX}{os.getpid() % 100000}"
    try:
        run(f"ip link add {name}a type veth peer name {name}b")
    except LinkEmuError:
        return False
    try:
        run(f"tc qdisc add dev {name}a root netem delay 1ms")
        return True
    except LinkEmuError:
        return False
    finally:
        try:
            run(f"ip link del {name}a")
        except LinkEmuError:
            pass


def choose_mode(requested: str | None, netem_available: bool,
                backend: str = "softswitch") -> tuple[str, str]:
    """Return (mode, reason). ``requested`` is 'auto'/None, 'netem', 'userspace' or 'relay';
    ``backend`` the switch backend: without netem, auto picks userspace for the softswitch
    (its own egress delay lines) and relay for BMv2 (which cannot delay frames)."""
    requested = (requested or "auto").lower()
    if requested == "auto":
        if netem_available:
            return "netem", "auto: the kernel has sch_netem"
        if backend == "bmv2":
            return "relay", ("auto: the kernel has no sch_netem and BMv2 cannot delay frames; "
                             "delay/jitter/loss applied by relay processes on the links")
        return "userspace", "auto: the kernel has no sch_netem; delay/jitter/loss applied by the softswitch"
    if requested == "netem":
        if not netem_available:
            raise LinkEmuError(
                "link emulation 'netem' was forced but this kernel has no sch_netem "
                "(modprobe sch_netem, or set link_emulation: userspace or auto)")
        return "netem", "forced in the scenario"
    if requested in ("userspace", "relay"):
        return requested, "forced in the scenario"
    raise LinkEmuError(f"unknown link emulation mode {requested!r}: use auto, netem, userspace or relay")


# ---------------------------------------------------------------- planning (pure)

@dataclass(frozen=True)
class Impair:
    """Delay/jitter/loss applied to one direction of a link."""
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0

    def is_zero(self) -> bool:
        return self.delay_ms == 0 and self.jitter_ms == 0 and self.loss_pct == 0


@dataclass(frozen=True)
class IntfShape:
    """What is applied on the egress of one interface end."""
    node: str
    intf: str
    port: int | None           # switch port number, None for hosts
    is_host: bool
    rate_mbps: float | None    # htb rate, None = unshaped
    queue_pkts: int
    netem: Impair | None       # netem mode only
    queue_bytes: int = 0       # byte limit of the htb leaf queue (0: queue_pkts MTU frames)
    netem_limit: int = 0       # netem's limit in packets (0: queue_pkts)


@dataclass
class LinkEmuPlan:
    mode: str
    intfs: list[IntfShape] = field(default_factory=list)
    # userspace mode: per switch, per egress port, the softswitch link_emu option
    switch_emu: dict[str, dict[int, dict]] = field(default_factory=dict)
    # relay mode: one relay per link with delay, jitter or loss
    relays: list[RelaySpec] = field(default_factory=list)
    # timer loops: (switch, out port, in port), a veth pair between two ports of the switch
    loops: list[tuple[str, int, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def intf(self, name: str) -> IntfShape:
        for s in self.intfs:
            if s.intf == name:
                return s
        raise KeyError(name)


def queue_packets(rate_mbps: float | None, delay_ms: float, bdp: float = 1.0,
                  dilation: float = 1.0) -> int:
    """`bdp` bandwidth-delay products of the link's round trip (at least 20 ms), at least
    64 packets (the scenario's queue_bdp; 1 by default). On a time-dilated graph (rates / s,
    delays x s) pass `dilation` = s: the 20 ms floor is real-world time, 20 s ms emulated,
    so a short link's queue holds the bytes of the undilated network's (the floor in
    emulated time made a LAN port's queue s times smaller: 165 frames instead of 1651 for
    1 Gbps at s = 10, and four workers' bursts overflowed a rack's uplink)."""
    if not rate_mbps:
        return 1000
    rtt_s = max(2 * delay_ms / 1000.0, MIN_QUEUE_RTT_S * dilation)
    return max(MIN_QUEUE_PKTS, math.ceil(bdp * rate_mbps * 1e6 * rtt_s / (8 * MTU_FRAME)))


def queue_bytes(rate_mbps: float | None, delay_ms: float, bdp: float = 1.0, dilation: float = 1.0) -> int:
    """The same bandwidth-delay product in bytes: the queue in front of the link, in both
    modes. The htb leaf counts bytes (bfifo), not packets: a packet limit sized in MTU
    frames holds only a fifth of a BDP of 314-byte aggregation frames (k = 64), and a
    geo-ina burst of partial sums overflowed it (softswitch tx_errors) while ps's TCP
    segments fitted."""
    return queue_packets(rate_mbps, delay_ms, bdp, dilation) * MTU_FRAME


def in_flight_bytes(rate_mbps: float | None, delay_ms: float, jitter_ms: float = 0.0) -> int:
    """What a link at full rate has on its delay line: rate x the longest delay a frame gets
    (delay + 4 jitter). 0 for an unshaped link (no rate to count with)."""
    if not rate_mbps:
        return 0
    return math.ceil(rate_mbps * 1e6 / 8 * (delay_ms + JITTER_SIGMAS * jitter_ms) / 1000.0)


def delay_line_limit(rate_mbps: float | None, delay_ms: float, jitter_ms: float = 0.0,
                     min_frame: int = MIN_FRAME, dilation: float = 1.0) -> int:
    """Packets a delay line must be able to hold: the bytes in flight plus the queue behind
    it (queue_bytes), counted in frames of ``min_frame`` bytes. Pass the link's highest rate
    (peak_rate_mbps): the limit is set once, rate changes only touch htb.

    netem's limit counts packets: those in its delay line, and in some kernel versions also
    those queued in its child qdisc (not checked here: this kernel has no netem); this
    limit is enough for both readings. A frame it would refuse is one the byte queue behind the
    line would drop anyway (that queue takes at most queue_bytes + rate x delay bytes in any
    window as long as the delay), so what is queued is bounded in bytes by the bfifo alone,
    the same for small frames and MTU frames."""
    if min_frame <= 0:
        raise LinkEmuError(f"min_frame must be positive, got {min_frame}")
    total = in_flight_bytes(rate_mbps, delay_ms, jitter_ms) + queue_bytes(rate_mbps, delay_ms,
                                                                          dilation=dilation)
    return math.ceil(total / min_frame)


def delay_line_options(imp: Impair, peak_mbps: float | None, seed: int, min_frame: int = MIN_FRAME,
                       dilation: float = 1.0) -> dict:
    """One direction's delay line, as the softswitch's link_emu option and the relay's
    --a-to-b/--b-to-a take it (LinkEmuConfig's fields)."""
    return dict(delay_ms=imp.delay_ms, jitter_ms=imp.jitter_ms, loss_pct=imp.loss_pct, seed=seed,
                limit=delay_line_limit(peak_mbps, imp.delay_ms, imp.jitter_ms, min_frame, dilation))


def line_seed(seed: int, edge_index: int, second_end: bool) -> int:
    """The delay line seed of one direction of the edge_index-th edge (sorted order): each
    direction of each link draws its own loss and jitter, reproducibly from the run's seed."""
    return (seed * 1000003 + edge_index * 2 + int(second_end)) & 0x7FFFFFFF


def _check_edge(u, v, d):
    for key in ("bandwidth_mbps", "delay_ms", "jitter_ms", "loss_pct"):
        val = d.get(key) or 0
        if val < 0:
            raise LinkEmuError(f"link {u}-{v}: {key} is negative ({val}); fix the scenario")
    if (d.get("loss_pct") or 0) > 100:
        raise LinkEmuError(f"link {u}-{v}: loss_pct {d['loss_pct']} is above 100")


def peak_rate_mbps(graph, d: dict) -> float | None:
    """The highest rate an edge will have: its bandwidth or its schedule's maximum (the
    schedule is in real-world Mbps, the edge's rate already divided by time dilation)."""
    rate = d.get("bandwidth_mbps") or None
    sched = d.get("bandwidth_schedule")
    if not rate or not sched:
        return rate
    top = max(p["mbps"] for p in sched) if isinstance(sched, list) else sched["max_mbps"]
    return max(rate, top / float(graph.graph.get("dilated", 1.0) or 1.0))


def plan(graph, mode: str, seed: int = 0, min_frame: int = MIN_FRAME,
         loops: dict[str, float] | None = None) -> LinkEmuPlan:
    """Decide what each interface end applies. ``graph`` is already time-dilated;
    ``min_frame`` is the smallest frame (bytes) the run carries (delay_line_limit).
    ``loops``: {switch: delay in ms (dilated)} of the switches' timer loops."""
    if mode not in MODES:
        raise LinkEmuError(f"unknown link emulation mode {mode!r}")
    result = LinkEmuPlan(mode=mode)
    for i, (sw, delay_ms) in enumerate(sorted((loops or {}).items())):
        _plan_loop(graph, result, sw, float(delay_ms), line_seed(seed, 10**6 + i, False), min_frame)
    impaired_access = []
    s = float(graph.graph.get("dilated", 1.0) or 1.0)   # queue floors are real-world time
    for idx, (u, v) in enumerate(sorted(tuple(sorted(e)) for e in graph.edges)):
        d = graph.edges[u, v]
        _check_edge(u, v, d)
        rate = d.get("bandwidth_mbps") or None
        imp = Impair(float(d.get("delay_ms") or 0), float(d.get("jitter_ms") or 0),
                     float(d.get("loss_pct") or 0))
        bdp = float(d.get("queue_bdp") or 1.0)
        q = queue_packets(rate, imp.delay_ms, bdp, s)
        peak = peak_rate_mbps(graph, d)   # a delay line must hold what the fastest rate sends
        ends = [(u, v), (v, u)]
        host_link = any(graph.nodes[n]["role"] == "host" for n in (u, v))
        for n, peer in ends:
            is_host = graph.nodes[n]["role"] == "host"
            port = None if is_host else d["ports"][n]
            netem = imp if (mode == "netem" and not imp.is_zero()) else None
            limit = delay_line_limit(peak, imp.delay_ms, imp.jitter_ms, min_frame, s) if netem else 0
            result.intfs.append(IntfShape(n, interface_name(graph, n, peer), port, is_host,
                                          rate, q, netem, queue_bytes(rate, imp.delay_ms, bdp, s), limit))
            if mode != "userspace" or is_host:
                continue
            if host_link:
                eff = Impair(2 * imp.delay_ms, imp.jitter_ms, imp.loss_pct)
            else:
                eff = imp
            if eff.is_zero():
                continue
            result.switch_emu.setdefault(n, {})[port] = delay_line_options(
                eff, peak, line_seed(seed, idx, n == v), min_frame, s)
        if mode == "relay" and not imp.is_zero():
            # the same impairment each way, each direction with its own seed
            result.relays.append(relay_for_edge(
                graph, u, v, delay_line_options(imp, peak, line_seed(seed, idx, False), min_frame, s),
                delay_line_options(imp, peak, line_seed(seed, idx, True), min_frame, s)))
        if mode == "userspace" and host_link and (imp.delay_ms or imp.loss_pct or imp.jitter_ms):
            impaired_access.append(f"{u}-{v}")
    if impaired_access:
        result.warnings.append(
            f"{len(impaired_access)} access link(s) ({', '.join(impaired_access[:3])}"
            f"{', ...' if len(impaired_access) > 3 else ''}) have delay/jitter/loss: userspace "
            f"link emulation applies their delay twice on the switch->host direction (RTT "
            f"exact, one-way asymmetric) and their loss only on that direction")
    return result


def _plan_loop(graph, result: LinkEmuPlan, sw: str, delay_ms: float, seed: int, min_frame: int):
    """A switch's timer loop: a veth pair from its out port to its in port, unshaped and
    never lossy, whose out end delays every frame by the loop's delay."""
    if result.mode == "relay":
        raise LinkEmuError(f"switch {sw} needs a timer loop (a delay between two of its ports) "
                           "and relay mode has no relay for it: set link_emulation.mode: "
                           "userspace with switch.backend: softswitch (or netem where the "
                           "kernel has it)")
    if delay_ms <= 0:
        raise LinkEmuError(f"switch {sw}: a timer loop needs a positive delay (got {delay_ms} ms)")
    out, inn = timer_loop_ports(graph, sw)
    imp = Impair(delay_ms, 0.0, 0.0)
    netem = imp if result.mode == "netem" else None
    q = queue_packets(None, delay_ms)
    limit = delay_line_limit(None, delay_ms, 0.0, min_frame)
    result.intfs += [IntfShape(sw, f"{sw}-eth{out}", out, False, None, q, netem, 0, limit if netem else 0),
                     IntfShape(sw, f"{sw}-eth{inn}", inn, False, None, q, None)]
    if result.mode == "userspace":
        result.switch_emu.setdefault(sw, {})[out] = delay_line_options(imp, None, seed, min_frame)
    result.loops.append((sw, out, inn))


# ---------------------------------------------------------------- tc commands (pure)

def _rate_arg(rate_mbps: float) -> str:
    # kbit keeps fractional Mbps exact to 1 kbit/s (dilated rates are often fractional)
    return f"{max(1, round(rate_mbps * 1000))}kbit"


def _burst_bytes(rate_mbps: float) -> int:
    # enough tokens for one 4 ms kernel tick at this rate, and at least 2 frames, so htb
    # neither starves at high rates nor bursts far above the rate at low ones
    return max(2 * MTU_FRAME, math.ceil(rate_mbps * 1e6 / 8 * 0.004))


def _netem_args(n: Impair) -> str:
    args = f"delay {n.delay_ms}ms"
    if n.jitter_ms:
        args += f" {n.jitter_ms}ms distribution normal"
    if n.loss_pct:
        args += f" loss {n.loss_pct}%"
    return args


def shape_commands(s: IntfShape) -> list[str]:
    """tc commands that set up one interface end (run in the interface's namespace).

    Without netem: htb 5: (class 5:1 at the link's rate) at the root, bfifo 10: of
    ``queue_bytes`` under it. With netem: netem 1: at the root (delay, jitter, loss; limit
    ``netem_limit`` packets) and the same htb 5: + bfifo 10: as its child, so a frame is
    delayed first and then waits in a byte-limited queue for the link, as in userspace
    mode. htb stays 5:1 in both, so rate changes and readback are the same."""
    cmds = [f"tc qdisc del dev {s.intf} root 2>/dev/null || true"]
    parent = "root"
    if s.netem is not None:
        cmds.append(f"tc qdisc add dev {s.intf} root handle {NETEM_HANDLE}: netem "
                    f"{_netem_args(s.netem)} limit {s.netem_limit or s.queue_pkts}")
        parent = f"parent {NETEM_HANDLE}:1"
    if s.rate_mbps:
        burst = _burst_bytes(s.rate_mbps)
        cmds += [
            f"tc qdisc add dev {s.intf} {parent} handle {HTB_HANDLE}: htb default 1",
            f"tc class add dev {s.intf} parent {HTB_HANDLE}: classid {HTB_HANDLE}:1 htb "
            f"rate {_rate_arg(s.rate_mbps)} burst {burst} cburst {burst} quantum {MTU_FRAME * 4}",
            f"tc qdisc add dev {s.intf} parent {HTB_HANDLE}:1 handle 10: bfifo limit "
            f"{s.queue_bytes or s.queue_pkts * MTU_FRAME}",
        ]
    return cmds


def rate_change_command(intf: str, rate_mbps: float) -> str:
    """Live bandwidth change of an already shaped interface (keeps its queue)."""
    if rate_mbps <= 0:
        raise LinkEmuError(f"{intf}: bandwidth must be positive, got {rate_mbps} Mbps")
    burst = _burst_bytes(rate_mbps)
    return (f"tc class change dev {intf} parent {HTB_HANDLE}: classid {HTB_HANDLE}:1 htb "
            f"rate {_rate_arg(rate_mbps)} burst {burst} cburst {burst} quantum {MTU_FRAME * 4}")


_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}


def parse_htb_rate_bps(tc_text: str) -> float | None:
    """Rate of class 5:1 in bits/s from ``tc class show dev X`` (this iproute2 has no JSON
    for htb classes). tc prints rounded rates (e.g. 2500Mbit for 2500.5 Mbit), so callers
    compare with a tolerance."""
    for line in tc_text.splitlines():
        m = re.search(rf"class htb {HTB_HANDLE}:1 .*?\brate ([0-9.]+)([KMGT]?bit)\b", line, re.I)
        if m:
            return float(m.group(1)) * _UNITS[m.group(2).lower()]
    return None


# ---------------------------------------------------------------- applying (side effects)

def _run_root(cmd: str) -> str:
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if p.returncode != 0:
        raise LinkEmuError(f"`{cmd}` failed: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def apply_shape(s: IntfShape, run) -> None:
    """Apply one interface's shaping and verify the kernel took the rate."""
    for cmd in shape_commands(s):
        run(cmd)
    if s.rate_mbps:
        verify_rate(s.intf, s.rate_mbps, run)


def verify_rate(intf: str, rate_mbps: float, run) -> None:
    got = parse_htb_rate_bps(run(f"tc class show dev {intf}"))
    want = rate_mbps * 1e6
    if got is None or abs(got - want) > max(0.01 * want, 1000):
        raise LinkEmuError(
            f"{intf}: htb rate read back is {got} bit/s but {want:.0f} bit/s was requested; "
            f"the kernel did not apply the bandwidth (check `tc class show dev {intf}`)")


def change_rate(intf: str, rate_mbps: float, run) -> None:
    run(rate_change_command(intf, rate_mbps))
    verify_rate(intf, rate_mbps, run)
