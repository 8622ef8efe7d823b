"""The analytic model of an iteration: what each scheme's `model.py` returns, and the
physics every model shares (pure; no Mininet, no processes).

A scheme's model is `predict(graph, scenario, options) -> Prediction`, a pure function of
the *undilated* topology graph (topologies.graph.build_graph, real-world Mbps and ms), the
scenario and the scheme's options. It predicts, in real-world seconds, what
analysis/measure.py reports for a steady iteration (the first one, warm-up, is left out
there and here): the job's time per iteration (its pace, iteration_period_s), the mean compute and
communication times and
the WAN bytes per iteration. It is model output, never a measurement: everything that
shows it says "model". docs/model.md has the formula of every scheme and says which part
is physics and which is assumption.

`terms` add up to `iteration_s`, in order: the compute phase (the slowest worker, BSP),
the bottleneck of the communication (the largest of: serialization of the bytes that
cross the busiest directed link, headers included; the window limit; a switch's packet
rate), then the additive latencies (propagation round trips, pipeline fill, slow start
after idle). `limits` keeps every candidate bottleneck, binding or not.

Kernel constants (TCP's minimum retransmission timeout) run on the emulation's clock, so
in real-world units they are divided by the time dilation s; that is the only place s
enters a model.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field

import networkx as nx

from topologies.graph import hosts
from workers import compute_time as ct

# ---------------------------------------------------------------- wire constants (bytes)
ETH = 14                       # Ethernet header, as tc/htb counts a frame (no FCS, preamble)
IPV4 = 20
TCP_HDR = 32                   # 20 + 12 of timestamps, Linux's default
MTU = 1500
MSS = MTU - IPV4 - TCP_HDR     # 1448 payload bytes per segment
SEG_OVERHEAD = ETH + IPV4 + TCP_HDR   # 66 bytes of headers per segment
ACK_FRAME = ETH + IPV4 + TCP_HDR      # a pure ACK: 66 bytes
ACK_EVERY = 2                  # delayed ACKs: one ACK per two full segments
INIT_CWND = 10 * MSS           # Linux's initial window (RFC 6928)
RTO_MIN_S = 0.200              # Linux's TCP_RTO_MIN, on the emulated clock
CUBIC_BETA = 0.7               # RFC 8312's beta (Linux: 717/1024; workers/congestion.Aimd.beta)
CUBIC_C_SEGMENTS = 0.4         # RFC 8312's C, segments / s^3 (Linux's cubic)
RWND_MAX = 6291456 // 2        # tcp_rmem max (6 MiB, stock Linux) with half kept for overhead
                               # (the scenario's tcp.rmem_bytes when it sets them)
WMEM_MAX = 4194304             # tcp_wmem max (4 MiB, stock Linux): a sender's send buffer
# send buffer a segment in flight takes (its 1448 bytes and its sk_buff), measured: a ring
# hop at 50 Mbps on a 233 ms path (2012 segments before its queue overflows) held 1699-1727
# segments unacknowledged for 30 s with tcp_wmem max 4 MiB (4194304 / 1727)
SNDBUF_PER_SEGMENT = 2429
# Measured on these machines (shared/DESIGN.md, "Scale"): the Python softswitch forwards
# and aggregates about 40 kpps; emulated packets per second, x s in real-world units.
SOFTSWITCH_PPS = 40_000.0


# A caveat that starts with this explains a run faster than the model; the fidelity
# warning lists it only then (testbed/fidelity.py), the others only for slower runs.
FASTER = "faster than the model: "


@dataclass
class Prediction:
    """A model's answer for one scenario (real-world seconds and bytes)."""
    scheme: str
    iteration_s: float
    comm_s: float                       # as measure.py's comm_time_mean_s (waiting included)
    compute_s: float                    # as measure.py's compute_time_mean_s
    wan_bytes_per_iteration: float
    terms: dict = field(default_factory=dict)   # name -> seconds, in order; they add up
    limits: dict = field(default_factory=dict)  # every candidate bottleneck, seconds
    notes: list = field(default_factory=list)   # assumptions and non-binding effects
    # effects the model leaves out that can make a run slower than predicted: the
    # fidelity warning names them (testbed/fidelity.py)
    caveats: list = field(default_factory=list)
    kind: str = "model"                 # always "model": this is not a measurement

    def largest_term(self) -> tuple[str, float]:
        return max(self.terms.items(), key=lambda kv: kv[1]) if self.terms else ("", 0.0)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["terms"] = {k: round(v, 6) for k, v in self.terms.items()}
        d["limits"] = {k: round(v, 6) for k, v in self.limits.items()}
        for k in ("iteration_s", "comm_s", "compute_s"):
            d[k] = round(d[k], 6)
        d["wan_bytes_per_iteration"] = round(d["wan_bytes_per_iteration"])
        return d


# ---------------------------------------------------------------- sizes
def parameters(scenario) -> int:
    """Values each worker aggregates per iteration."""
    from workers.workload import parameter_count
    return int(parameter_count(scenario.workload.model_dump()))


def tcp_wire(payload: float) -> tuple[float, float]:
    """(data bytes on the wire, ACK bytes on the way back) of a TCP payload."""
    segs = math.ceil(payload / MSS) if payload > 0 else 0
    return payload + segs * SEG_OVERHEAD, math.ceil(segs / ACK_EVERY) * ACK_FRAME


def framed(values: int, chunk_values: int, header: int) -> int:
    """Payload bytes of `values` float32 sent as frames of at most chunk_values values."""
    frames = max(1, math.ceil(values / chunk_values))
    return 4 * values + frames * header


# ---------------------------------------------------------------- paths and links
class Net:
    """Paths and links of an undilated graph. Routing is the control plane's: minimum
    one-way delay between switches (control/routes.py); a host's only link is to its rack."""

    def __init__(self, graph):
        self.g = graph
        self._sp: dict = {}
        self._switches = graph.subgraph(n for n, a in graph.nodes(data=True) if a["role"] != "host")

    def _switch_path(self, a, b) -> list:
        if a not in self._sp:
            from control.routes import _weight
            self._sp[a] = nx.single_source_dijkstra_path(self._switches, a, weight=_weight)
        return self._sp[a][b]

    def path(self, a, b) -> list:
        """Nodes from a to b (hosts or switches); [a] when a == b."""
        if a == b:
            return [a]
        g = self.g
        sa = next(iter(g[a])) if g.nodes[a]["role"] == "host" else a
        sb = next(iter(g[b])) if g.nodes[b]["role"] == "host" else b
        mid = self._switch_path(sa, sb)
        return ([a] if sa != a else []) + mid + ([b] if sb != b else [])

    def delay(self, a, b) -> float:
        """One-way propagation delay a -> b, seconds."""
        p = self.path(a, b)
        return sum(self.g.edges[u, v]["delay_ms"] for u, v in zip(p, p[1:])) / 1000.0

    def rtt(self, a, b) -> float:
        return 2 * self.delay(a, b)

    def path_loss(self, a, b) -> float:
        """Probability that a packet a -> b is lost on the way (each link's loss_pct,
        independent)."""
        p = self.path(a, b)
        return 1.0 - math.prod(1 - self.g.edges[u, v].get("loss_pct", 0) / 100 for u, v in zip(p, p[1:]))

    def rate_bps(self, u, v) -> float:
        """The rate of the direction u -> v: the edge's bandwidth_mbps unless the edge has
        a rate for that direction (direction_mbps {src: Mbps}, a step of a per-direction
        bandwidth schedule: schemes/model_schedule.py)."""
        return self.mbps(u, v) * 1e6

    def mbps(self, u, v) -> float:
        a = self.g.edges[u, v]
        return (a.get("direction_mbps") or {}).get(u, a["bandwidth_mbps"])

    def min_rate_bps(self, a, b) -> float:
        p = self.path(a, b)
        return min((self.rate_bps(u, v) for u, v in zip(p, p[1:])), default=float("inf"))

    def kind(self, u, v) -> str:
        return self.g.edges[u, v]["kind"]

    def label(self, u, v) -> str:
        k = self.kind(u, v)
        return f"{u}->{v} ({k} {self.mbps(u, v):g} Mbps)"


class Load:
    """Bytes per directed link in one iteration (data plus reverse ACKs)."""

    def __init__(self, net: Net):
        self.net = net
        self.bytes: dict = defaultdict(float)
        self.flows: dict = defaultdict(int)     # concurrent flows per directed link
        self.pkts: dict = defaultdict(float)    # packets per directed link

    def tcp(self, a, b, payload: float, count: int = 1, streams: int | None = None) -> None:
        """`count` TCP transfers a -> b of `payload` bytes each, on `streams` concurrent
        streams (default: each transfer its own; a ring hop sends its steps' chunks one
        after the other on one stream)."""
        data, acks = tcp_wire(payload)
        p = self.net.path(a, b)
        segs = math.ceil(payload / MSS) if payload > 0 else 0
        for u, v in zip(p, p[1:]):
            self.bytes[(u, v)] += count * data
            self.bytes[(v, u)] += count * acks
            self.flows[(u, v)] += count if streams is None else streams
            self.pkts[(u, v)] += count * segs
            self.pkts[(v, u)] += count * math.ceil(segs / ACK_EVERY)

    def frames(self, a, b, n: int, frame: int) -> None:
        p = self.net.path(a, b)
        for u, v in zip(p, p[1:]):
            self.bytes[(u, v)] += n * frame
            self.flows[(u, v)] += 1
            self.pkts[(u, v)] += n

    def serialization(self) -> tuple[float, tuple | None]:
        """(seconds, link) of the busiest directed link."""
        best, link = 0.0, None
        for (u, v), b in self.bytes.items():
            t = 8 * b / self.net.rate_bps(u, v)
            if t > best:
                best, link = t, (u, v)
        return best, link

    def share_bps(self, a, b) -> float:
        """A flow's fair share of its path: min over its links of rate / flows on it."""
        p = self.net.path(a, b)
        return min((self.net.rate_bps(u, v) / max(1, self.flows[(u, v)]) for u, v in zip(p, p[1:])),
                   default=float("inf"))

    def switch_rate(self, scenario) -> tuple[float, str | None]:
        """(seconds, switch) of the switch that handles the most packets, at the softswitch's
        measured rate (SOFTSWITCH_PPS emulated pps = x s real-world pps). None for bmv2
        (its rate depends on its build)."""
        if scenario.switch.backend == "bmv2":
            return 0.0, None
        per: dict = defaultdict(float)
        for (u, v), n in self.pkts.items():
            if self.net.g.nodes[v]["role"] != "host":
                per[v] += n
        if not per:
            return 0.0, None
        sw = max(per, key=per.get)
        return per[sw] / (SOFTSWITCH_PPS * scenario.time_dilation), sw

    def wan_bytes(self) -> float:
        return sum(b for (u, v), b in self.bytes.items() if self.net.kind(u, v) == "wan")


def link_limits(load: Load, scenario) -> dict:
    """Candidate bottlenecks every scheme has: the busiest link's serialization and the
    busiest switch's packet rate (software switch)."""
    out = {}
    t, link = load.serialization()
    if link:
        out[f"serialization at {load.net.label(*link)}"] = t
    t, sw = load.switch_rate(scenario)
    if sw:
        out[f"packet rate of switch {sw} (softswitch ~{SOFTSWITCH_PPS / 1000:g} kpps emulated, "
            f"x s = {scenario.time_dilation:g})"] = t
    return out


def tcp_flow_limit(load: Load, flows, scenario) -> tuple[str, float] | None:
    """The slowest TCP stream when a stream is limited below its fair share by the receive
    window (RWND_MAX per RTT) or by random loss (tcp_loss_rate: the kernel's law's response).
    flows: (a, b, payload bytes). None when every stream gets its share."""
    worst = None
    for a, b, payload in flows:
        if a == b or payload <= 0:
            continue
        net = load.net
        rtt, share = net.rtt(a, b), load.share_bps(a, b)
        loss = net.path_loss(a, b)
        cands = {"receive window": 8 * rwnd_max(scenario) / rtt if rtt > 0 else float("inf")}
        law = _tcp(scenario, "congestion_control", "cubic")
        if loss > 0 and rtt > 0 and law in ("cubic", "reno"):
            cands[f"loss ({law} response)"] = tcp_loss_rate(loss, rtt, law, scenario)
        why, rate = min(cands.items(), key=lambda kv: kv[1])
        if rate < share:
            t = 8 * tcp_wire(payload)[0] / rate
            if worst is None or t > worst[1]:
                worst = (f"{why}: stream {a}->{b} at {rate / 1e6:.3g} Mbps", t)
    return worst



def response_window(p: float, rtt_s: float, law: str, c: float, beta: float = CUBIC_BETA) -> float:
    """Average congestion window (chunks) of loss-based TCP cutting on a fraction p of its
    packets (the response functions): AIMD +1 per round trip and x beta per loss,
    sqrt((1 + beta) / (2 (1 - beta) p)) (beta 0.5: Mathis' 1.22 / sqrt(p)); cubic
    (RFC 8312, 5.1) the larger of that, at its beta 0.7 (workers/congestion.py keeps Reno's
    growth as a floor), and (c (3 + beta) / (4 (1 - beta)))^(1/4) (rtt / p)^(3/4), rtt_s in
    seconds of the clock the sender's cubic runs on (the INA client's: real-world; the
    kernel's: the emulated wall clock, tcp_loss_rate)."""
    if p <= 0:
        return math.inf
    if law == "reno":
        return math.sqrt(1.5 / p)
    aimd = math.sqrt((1 + beta) / (2 * (1 - beta) * p))
    return max(aimd, (c * (3 + beta) / (4 * (1 - beta))) ** 0.25 * (rtt_s / p) ** 0.75)


def loss_window(p: float, rtt_s: float, law: str, c: float, beta: float = CUBIC_BETA) -> float:
    """Average window (chunks) of a worker that loses a fraction p of its chunks at random
    and cuts at most once per loss event (workers/congestion.Aimd.on_loss and the client's
    recovery episode, as TCP NewReno):
    the cuts follow the loss *event* rate, one event per window with a loss in it,
    p_e = (1 - (1 - p)^W) / W (TFRC's loss event rate, RFC 5348, 5), so W is the fixed
    point W = response_window(p_e). At 2 % loss and W ~ 12 that is 6 % more window than
    response_window(p)."""
    w = response_window(p, rtt_s, law, c, beta)
    for _ in range(50):
        if not math.isfinite(w) or w <= 1:
            return w
        p_e = (1.0 - (1.0 - p) ** w) / w
        nxt = response_window(p_e, rtt_s, law, c, beta)
        if abs(nxt - w) < 1e-9 * w:
            return nxt
        w = nxt
    return w


def tcp_loss_rate(p: float, rtt: float, law: str, scenario) -> float:
    """Bits / s of a kernel TCP stream losing a fraction p of its segments at random:
    the response function's window (loss_window: one cut per round trip with a loss,
    SACK) per round trip. Reno is Mathis' 1.22 MSS / (RTT sqrt p) and clock-free; cubic
    grows with the time since its last cut on the kernel's clock, which under time
    dilation s runs on the emulated seconds: its round trip there is rtt x s, so the
    emulation's cubic regrows faster per round trip than a real host's would (an effect
    of dilation, stated in docs/model.md)."""
    clock_rtt = rtt * scenario.time_dilation
    w = loss_window(p, clock_rtt, law, CUBIC_C_SEGMENTS)
    return w * MSS * 8 / rtt


def tcp_limits(load: Load, flows, scenario) -> dict:
    """The candidate bottlenecks of a TCP scheme: every link's serialization
    (link_limits) and, if one stream is held below its share, that stream (tcp_flow_limit)."""
    limits = link_limits(load, scenario)
    slow = tcp_flow_limit(load, flows, scenario)
    if slow:
        limits[slow[0]] = slow[1]
    return limits


# ---------------------------------------------------------------- TCP dynamics
def rto_s(rtt: float, scenario) -> float:
    """Linux's retransmission timeout with a steady RTT: SRTT + max(4 RTTVAR, rto_min);
    RTTVAR is taken as ~0 (a steady path), rto_min runs on the emulated clock."""
    return rtt + RTO_MIN_S / scenario.time_dilation


def slow_start_extra(payload: float, rate_bps: float, rtt: float, cwnd0: float) -> float:
    """Seconds a transfer of `payload` bytes at a fair share `rate_bps` loses because its
    window starts at cwnd0 (bytes) and doubles per round trip until it covers the share's
    bandwidth-delay product, compared with sending at the share's rate from the start."""
    if payload <= 0 or rtt <= 0 or rate_bps <= 0:
        return 0.0
    r = rate_bps / 8.0
    bdp = r * rtt
    t, sent, c = 0.0, 0.0, max(float(MSS), cwnd0)
    while sent < payload:
        if c >= bdp:
            t += (payload - sent) / r
            break
        step = min(c, payload - sent)
        sent += step
        t += rtt if sent < payload else step / r + rtt / 2   # the last round: half a trip
        c *= 2
    return max(0.0, t - payload / r)


# a graph attribute: predict with the closed forms only (schemes/model_schedule.py's steps)
CLOSED_FORM_ONLY = "model_closed_form_only"


# A host sends each burst up to this late (real-world seconds, uniform): the scheduling and
# interrupt noise of a sender, which breaks the phase-locking of identical streams in a
# deterministic packet simulation (Floyd and Jacobson, "On traffic phase effects in
# packet-switched gateways", 1992; ns-2's TCP agents add a random `overhead_` per packet for
# the same reason). Without it alltoall's 132 identical streams finished together in
# schemes/model_packets.py, at the closed form, where the runs took 1.12-1.32 x that; with it
# the recorded lossless runs of ps, mxnet-ps, hier-ps, ring and alltoall went from 20 to 25
# of 30 inside [0.9, 1.2] and none left the band (docs/model.md, "Send-time noise"). Not
# fitted per scheme: one value for every scheme and scenario; 10 and 30 us gave 25 and 23 of
# the 30.
SEND_JITTER_S = 10e-6


def simulated_tcp(scenario):
    """The kernel TCP of the scenario as schemes/model_chain simulates it, or None for a
    congestion control it does not have (cubic and reno only)."""
    from schemes import model_chain as ch
    law = _tcp(scenario, "congestion_control", "cubic")
    if law not in ("cubic", "reno"):
        return None
    return ch.Tcp(law, CUBIC_BETA if law == "cubic" else 0.5, INIT_CWND // MSS,
                  RTO_MIN_S / scenario.time_dilation, scenario.time_dilation,
                  bool(_tcp(scenario, "slow_start_after_idle", True)), 8 * (MSS + SEG_OVERHEAD),
                  max_flight(scenario), SEND_JITTER_S)


def max_flight(scenario) -> float:
    """Segments a sender can have unacknowledged whatever its window: its send buffer holds
    every segment until it is acknowledged, and counts each at SNDBUF_PER_SEGMENT bytes
    (tcp_wmem max, the scenario's tcp.wmem_bytes); the receiver's window (rwnd_max) too."""
    wmem = _tcp(scenario, "wmem_bytes", None)
    return min((wmem[2] if wmem else WMEM_MAX) / SNDBUF_PER_SEGMENT, rwnd_max(scenario) / MSS)


def _tcp(scenario, name, default):
    tcp = getattr(scenario, "tcp", None)   # the scenario's tcp section (stock Linux defaults)
    return getattr(tcp, name, default) if tcp is not None else default


def rwnd_max(scenario) -> float:
    """Largest receive window: tcp_rmem max / 2 (the rest is kept for overhead)."""
    rmem = _tcp(scenario, "rmem_bytes", None)
    return rmem[2] / 2 if rmem else RWND_MAX


def restart_after_idle(idle_s: float, rtt: float, scenario) -> int:
    """Halvings of cwnd Linux applies after an idle period (tcp_slow_start_after_idle = 1,
    the default, scenario tcp.slow_start_after_idle): one per RTO elapsed (tcp_cwnd_restart)."""
    if not _tcp(scenario, "slow_start_after_idle", True):
        return 0
    rto = rto_s(rtt, scenario)
    return int(idle_s // rto) if idle_s > rto else 0


def tcp_idle_term(payload: float, share_bps: float, rtt: float, idle_s: float, scenario,
                  notes: list, what: str, window: float | None = None) -> float:
    """Slow start after idle of one stream (0 when the kernel does not restart it).
    Its window before the idle period is `window` bytes, by default the share's
    bandwidth-delay product."""
    h = restart_after_idle(idle_s, rtt, scenario)
    bdp = share_bps / 8 * rtt if window is None else window
    notes.append(f"{what}: idle {idle_s:.3f} s between iterations vs RTO {rto_s(rtt, scenario):.3f} s"
                 f" -> {'cwnd halved %d time(s) (slow start after idle)' % h if h else 'no restart'}"
                 f"; the first iteration starts from 10 segments (warm-up, not modelled)")
    if not h:
        return 0.0
    return slow_start_extra(payload, share_bps, rtt, max(INIT_CWND, bdp / 2 ** h))


# ---------------------------------------------------------------- compute (BSP)
@dataclass
class Compute:
    mean_s: float          # mean over workers and iterations (measure's compute_time_mean_s)
    max_s: float           # mean over iterations of the slowest worker's (BSP waits for it)
    how: str


def compute(graph, scenario, workers: list[str] | None = None) -> Compute:
    """Compute time of the steady iterations. Constant model without transient stragglers:
    exact (max over workers of value x persistent factors / compute_speed). Otherwise the
    workers' own seeded draws (workers/compute_time.py) for the run's steady iterations
    (at most 200, a sample of 64 workers of large jobs): the expectation of the max is
    then estimated by the same numbers the run will draw."""
    workers = workers or hosts(graph)
    spec = scenario.compute_time.model_dump()
    strag = scenario.stragglers.model_dump()
    ids = [_identity(graph, w) for w in workers]
    if spec.get("model", "constant") == "constant" and not strag.get("transient"):
        times = [ct.compute_sample(spec, strag, i, 1, scenario.seed).real_ms / 1000 for i in ids]
        return Compute(sum(times) / len(times), max(times), "exact (constant model)")
    n_it = scenario.iterations or 50
    its = range(1, max(2, min(n_it, 201)))
    sample = ids if len(ids) <= 64 else ids[:: math.ceil(len(ids) / 64)]
    per_it = [[ct.compute_sample(spec, strag, i, it, scenario.seed).real_ms / 1000 for i in sample]
              for it in its]
    mean = sum(sum(x) for x in per_it) / sum(len(x) for x in per_it)
    mx = sum(max(x) for x in per_it) / len(per_it)
    how = (f"seeded draws of the run's {len(per_it)} steady iteration(s)"
           + ("" if sample is ids else f", {len(sample)} of {len(ids)} workers (max underestimated)"))
    return Compute(mean, mx, how)


def compute_draws(graph, scenario, workers: list[str]):
    """A function (worker, iteration) -> its compute time in real-world seconds: the very
    seeded draws the run's workers make (workers/compute_time.py), persistent and
    transient stragglers included, for the simulations that follow each worker
    (schemes/model_chain.py)."""
    spec = scenario.compute_time.model_dump()
    strag = scenario.stragglers.model_dump()
    ids = {w: _identity(graph, w) for w in workers}

    def draw(w: str, iteration: int) -> float:
        return ct.compute_sample(spec, strag, ids[w], iteration, scenario.seed).real_ms / 1000
    return draw


def _identity(graph, w: str) -> ct.WorkerIdentity:
    """Worker w as workers/compute_time.py draws for it."""
    n = graph.nodes[w]
    return ct.WorkerIdentity(n["worker_index"], _host_id(graph, w), n["dc"], n["compute_speed"])


def _host_id(graph, w: str) -> str:
    return w[len(graph.graph.get("prefix", "")):]


def common_notes(graph) -> list:
    out = []
    if any(a.get("bandwidth_schedule") for _, _, a in graph.edges(data=True)):
        out.append("bandwidth schedule: this prediction has every link at its configured "
                   "bandwidth_mbps; per schedule step: schemes/model_schedule.py (run.py predict)")
    if any(a.get("jitter_ms") for _, _, a in graph.edges(data=True)):
        out.append("jitter not modelled (mean delays only)")
    return out


# ---------------------------------------------------------------- assembling
def assemble(scheme: str, comp: Compute, limits: dict, additive: dict, wan_bytes: float,
             notes: list, caveats: list = ()) -> Prediction:
    """Iteration = compute (slowest worker) + the binding limit + the additive terms."""
    limits = {k: v for k, v in limits.items() if v is not None}
    bottleneck = max(limits.items(), key=lambda kv: kv[1]) if limits else ("", 0.0)
    terms = {f"compute (slowest worker; {comp.how})": comp.max_s}
    if bottleneck[0]:
        terms[bottleneck[0]] = bottleneck[1]
    terms.update({k: v for k, v in additive.items() if v > 0})
    comm_after = sum(v for k, v in terms.items() if not k.startswith("compute"))
    it = comp.max_s + comm_after
    # measure's comm time starts at each worker's first send: it includes waiting for the
    # slowest worker's compute (BSP), on average max - mean
    return Prediction(scheme, it, comm_after + comp.max_s - comp.mean_s, comp.mean_s, wan_bytes,
                      terms, limits, notes, list(caveats))


def predict(scheme_name: str, graph, scenario, options=None) -> Prediction:
    """The model of a registered scheme on an undilated graph (options: parsed, or the
    scenario's scheme_options when None). Raises ValueError if the scheme has no model."""
    import schemes
    sch = schemes.get(scheme_name)
    if sch.model is None:
        raise ValueError(f"scheme {scheme_name} has no model (schemes/<name>/model.py; docs/model.md)")
    if options is None:
        options = sch.parse_options(scenario.scheme_options if scenario.scheme == scheme_name else {})
    if graph.graph.get("dilated", 1.0) != 1.0:
        raise ValueError("the model takes the real-world graph (build_graph, not dilate_graph)")
    return sch.model(graph, scenario, options)
