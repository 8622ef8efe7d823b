"""Chunked TCP streams that wait for each other, under random loss: a seeded simulation
at round-trip granularity (pure; the ring's, ps's and hier-ps's models use it when a path
loses packets, and ps's and hier-ps's without loss when schemes/model_packets.py's
segment-level simulation is beyond its budget: docs/model.md, "Simulated TCP round by
round").

Why a simulation: these schemes' streams are not backlogged. A ring hop sends one chunk
per step and waits for the chunk from the left; a ps pull stream waits for sums, which
wait for every worker's push; a hier-ps stream carries one partial sum per iteration and
idles. A lost segment then delays its chunk by a recovery round that nothing overlaps,
windows restart after idle, and the slowest stream holds every sum and step that waits
for it. The response function of a backlogged stream (schemes/model.py, tcp_loss_rate)
misses all of it: at 1 % loss, 1 MB gradients, 3 DCs x 4 workers the ring measured 10.9 x
its cycle model.

What is simulated, per TCP stream, with the kernel's mechanisms and constants only (no
fitted factor):
  - chunk c of a stream is sendable once its inputs are in (the chunk from the left; that
    chunk of every push a server sums); a stream's chunks go in order;
  - bursts of min(cwnd - in flight, what is sendable) segments; each segment arrives when
    serialized at the stream's rate, plus the one-way delay, unless lost (independently,
    with the path's loss probability);
  - a loss followed by three delivered segments is found by RACK at the third one's ACK
    (no reordering window then), with fewer after it a quarter round trip after the ACKs
    of its burst (min_rtt / 4), a stream's last segment by the tail loss probe (2 smoothed
    round trips); one cut per window (x beta);
  - growth: slow start (+ acknowledged segments) below ssthresh, then cubic (RFC 8312, on
    the kernel's clock: the emulated seconds, rtt x s, with its TCP-friendly region) or
    Reno's +1 per round trip; only while the window limits the sender
    (tcp_is_cwnd_limited, with tcp_cwnd_validate's record: a burst that filled cwnd
    marks the window limited until it is acknowledged);
  - cwnd validation (tcp_cwnd_application_limited): a window neither filled nor
    acknowledged for an RTO shrinks halfway to what was used;
  - slow start after idle (tcp_cwnd_restart): with nothing in flight or awaiting repair,
    cwnd halves per RTO idle, not below min(initial window, cwnd); ssthresh keeps 3/4 of
    the window before; cubic does not count the idle time.
What it predicts is what analysis/measure.py reports of the run: the pace from the end of
the warm-up iteration to the end of the run's last, windows growing from the initial one
included (a long job: the steady pace), averaged over fixed seeds: the same scenario
gives the same number."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CUBIC_C = 0.4          # RFC 8312's C (segments / s^3)
RACK_REO = 0.25        # RACK's reordering window: min_rtt / 4 (Linux's default)
DUP_THRESH = 3         # ... and none once this many later segments are in (tcp_rack_reo_wnd)
TLP_SRTTS = 2.0        # tail loss probe timeout: 2 x SRTT (RFC 8985)
MIN_RTT_S = 1e-4       # a hop configured with no delay still takes this long (cubic's clock)


@dataclass(frozen=True)
class Hop:
    """One directed hop of the chain: its round trip and one-way delay (real-world
    seconds), the rate its stream gets (bits / s) and the probability a segment is lost."""
    rtt_s: float
    delay_s: float
    rate_bps: float
    loss: float


@dataclass(frozen=True)
class Tcp:
    """The kernel's settings and constants the simulation uses."""
    law: str                 # "cubic" or "reno"
    beta: float              # window kept after a loss (cubic 0.7, reno 0.5)
    init_cwnd: int           # segments (Linux: 10)
    rto_min_s: float         # TCP_RTO_MIN in real-world seconds (0.2 / time dilation)
    clock_scale: float       # kernel seconds per real-world second (the time dilation)
    restart_after_idle: bool
    seg_wire_bits: float     # bits one full segment takes on the wire
    # segments a sender may have unacknowledged whatever its window: its send buffer
    # (tcp_wmem max) and the receiver's window (tcp_rmem max), schemes.model.max_flight
    max_flight: float = math.inf
    # real-world seconds a burst may leave late, uniformly at random: the hosts' send-time
    # noise (schemes.model.SEND_JITTER_S). Only the segment-level simulation uses it
    # (schemes/model_packets.py: without it identical streams stay in lock-step)
    send_jitter_s: float = 0.0


def cubic_cnt(cwnd: float, target: float, friendly: float, had_max: bool) -> float:
    """Segments acknowledged per segment of window growth in cubic's congestion avoidance
    (tcp_cubic.c, bictcp_update): reach the cubic target in about a round trip; at most 5 %
    a round trip before a first loss (last_max_cwnd 0, cnt <= 20); at least the TCP-friendly
    estimate's pace; and never faster than one segment per two acknowledged ("cwnd grows at
    1.5x per RTT": a window far below its target grows by half, not doubles, each round trip)."""
    cnt = cwnd / (target - cwnd) if target > cwnd else 100 * cwnd
    if not had_max:
        cnt = min(cnt, 20.0)
    if friendly > cwnd:
        cnt = min(cnt, cwnd / (friendly - cwnd))
    return max(cnt, 2.0)


class Sender:
    """The state of one hop's TCP sender (segments, real-world seconds). Bursts in flight
    are (time their ACKs are back, segments, lost any, time sent, window-limited)."""

    def __init__(self, hop: Hop, tcp: Tcp):
        self.hop, self.tcp = hop, tcp
        self.cwnd = float(tcp.init_cwnd)
        self.ssthresh = math.inf
        self.w_max = 0.0
        self.epoch = None          # cubic: kernel-clock start of the epoch (_epoch)
        self.k = self.origin = self.w_start = 0.0
        self.cut_mark = -math.inf  # bursts sent before the last cut do not cut again
        self.last_send = None
        self.wire_free = 0.0       # the hop's link is busy serializing until then
        self.flight: list = []
        self.used, self.stamp = 0, 0.0   # cwnd validation: window used since `stamp`
        # tcp_cwnd_validate's record (burst by burst): a window in which a burst filled
        # cwnd counts as limited until that burst is acknowledged (win_until), so all
        # of that window's ACKs grow it, even those of bursts the application ran dry in;
        # win_out: the most segments out in the window (slow start's test)
        self.win_limited, self.win_out, self.win_until = False, 0, -math.inf

    def _rto(self) -> float:
        """Linux's RTO on a steady path: SRTT + rto_min (RTTVAR ~ 0)."""
        return self.hop.rtt_s + self.tcp.rto_min_s

    def _keep_ssthresh(self) -> None:
        """tcp_current_ssthresh before the window shrinks: at least 3/4 of the window; a
        threshold never set (TCP_INFINITE_SSTHRESH) stays unset, so a stream that has not
        yet left slow start slow-starts again to wherever its window takes it."""
        self.ssthresh = max(self.ssthresh, 0.75 * self.cwnd)

    def _restart(self, now: float) -> None:
        if self.flight or not self.tcp.restart_after_idle or self.last_send is None:
            return
        rto = self._rto()
        idle = now - self.last_send
        if idle <= rto:
            return
        floor = min(float(self.tcp.init_cwnd), self.cwnd)
        self._keep_ssthresh()
        c = self.cwnd
        while idle > rto and c > floor:
            c /= 2
            idle -= rto
        self.cwnd = max(c, floor)
        self.used, self.stamp = 0, now   # tcp_cwnd_restart stamps the new window
        if self.epoch is not None:   # cubic does not count idle time (CA_EVENT_TX_START)
            self.epoch += (now - self.last_send) * self.tcp.clock_scale

    def _cut(self, now: float) -> None:
        t = self.tcp
        if t.law == "cubic" and self.cwnd < self.w_max:   # fast convergence
            self.w_max = self.cwnd * (1 + t.beta) / 2
        else:
            self.w_max = self.cwnd
        self.cwnd = max(2.0, self.cwnd * t.beta)
        self.ssthresh = self.cwnd
        self._epoch(now, (self.w_max * (1 - t.beta) / CUBIC_C) ** (1 / 3), self.w_max)
        self.cut_mark = now

    def _epoch(self, now: float, k: float, origin: float) -> None:
        """A cubic epoch from now: W(t) = C (t - k)^3 + origin, t on the kernel's clock;
        the TCP-friendly estimate starts from the window now."""
        self.epoch, self.k, self.origin, self.w_start = now * self.tcp.clock_scale, k, origin, self.cwnd

    def _grow(self, now: float, acked: int) -> None:
        t = self.tcp
        if self.cwnd < self.ssthresh:
            self.cwnd = min(self.cwnd + acked, max(self.ssthresh, self.cwnd))
            return
        reno = self.cwnd + acked / self.cwnd
        if t.law != "cubic":
            self.cwnd = reno
            return
        if self.epoch is None:   # a new epoch from here, with no earlier maximum: K = 0
            self._epoch(now, 0.0, self.cwnd)
        rtt_k = max(self.hop.rtt_s, MIN_RTT_S) * t.clock_scale
        el = now * t.clock_scale - self.epoch + rtt_k
        target = CUBIC_C * (el - self.k) ** 3 + self.origin
        friendly = self.w_start + 3 * (1 - t.beta) / (1 + t.beta) * el / rtt_k
        self.cwnd += acked / cubic_cnt(self.cwnd, target, friendly, self.w_max > 0)

    def _validate(self, now: float, inflight: int, limited: bool) -> None:
        """Linux's cwnd validation (tcp_cwnd_validate, with slow start after idle on): a
        sender that for an RTO has neither filled its window nor heard an ACK of new data
        (_acked) shrinks it halfway to what it used (tcp_cwnd_application_limited), not
        below the initial window."""
        if limited or not self.tcp.restart_after_idle:
            self.used, self.stamp = 0, now
            return
        self.used = max(self.used, inflight)
        if now - self.stamp >= self._rto():
            used = max(self.used, self.tcp.init_cwnd)
            if used < self.cwnd and not self._in_recovery():
                self._keep_ssthresh()
                self.cwnd = (self.cwnd + used) / 2
            self.used, self.stamp = 0, now

    def _acked(self, now: float) -> None:
        """An ACK of new data outside a window reduction: tcp_cong_avoid runs (whether or
        not the window may grow) and stamps the window as in use (snd_cwnd_stamp), so the
        application-limited shrink of _validate needs an RTO without such ACKs."""
        self.stamp = max(self.stamp, now)

    def _in_recovery(self) -> bool:
        return any(f[2] for f in self.flight)

    def _acks(self, now: float) -> None:
        keep = []
        for back, n, lost, sent, limited in self.flight:
            if back > now:
                keep.append((back, n, lost, sent, limited))
            elif lost:
                if sent >= self.cut_mark:
                    self._cut(back)
            else:
                self._acked(back)
                if limited or self._window_limited():
                    self._grow(back, n)
        self.flight = keep

    def _window_limited(self) -> bool:
        """tcp_is_cwnd_limited: limited in the current window, or in slow start with the
        window below twice the most segments out in it."""
        return self.win_limited or (self.cwnd < self.ssthresh and self.cwnd < 2 * self.win_out)

    def _note_usage(self, start: float, back: float, inflight: int, full: bool) -> None:
        """tcp_cwnd_validate's first part, at a burst sent at `start` (its ACKs back at
        `back`): a new window once the one marked is acknowledged, or when this burst
        fills cwnd, or when it has more out than the window's most."""
        if start >= self.win_until or full or (not self.win_limited and inflight > self.win_out):
            self.win_limited, self.win_out, self.win_until = full, inflight, back

    def send(self, ready: float, segments: int, rng: np.random.Generator) -> float:
        """Send a chunk of `segments` that became sendable at `ready`: when the receiver
        has all of it."""
        return float(self.stream(np.array([ready]), np.array([segments]), rng)[0])

    def stream(self, ready: np.ndarray, segments: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Send chunks in order, chunk c (segments[c] segments) sendable from ready[c]:
        when the receiver has each chunk (an array like ready)."""
        h, t = self.hop, self.tcp
        seg_ready = np.repeat(np.maximum.accumulate(ready), segments)
        total = len(seg_ready)
        seg_done = np.zeros(total)
        nxt, retx = 0, []                 # next new segment; [(due, segment)] to send again
        now = float(seg_ready[0]) if total else float(ready[0])
        while nxt < total or retx:
            self._acks(now)
            if not self.flight and not retx:   # a segment not yet repaired is outstanding
                self._restart(now)
            room = int(min(self.cwnd, t.max_flight) - sum(f[1] for f in self.flight))
            fresh = int(np.searchsorted(seg_ready, now, side="right")) - nxt
            retx.sort()
            due = next((i for i, r in enumerate(retx) if r[0] > now), len(retx))
            if room < 1 or not (fresh > 0 or due):
                later = [f[0] for f in self.flight] + [r[0] for r in retx if r[0] > now]
                if nxt < total and seg_ready[nxt] > now:
                    later.append(float(seg_ready[nxt]))
                now = max(now, min(later))
                continue
            k_r = min(room, due)
            k_n = min(room - k_r, max(0, fresh))
            ids = np.concatenate([np.array([r[1] for r in retx[:k_r]], dtype=np.int64),
                                  np.arange(nxt, nxt + k_n)])
            del retx[:k_r]
            nxt += k_n
            n = len(ids)
            start = max(now, self.wire_free)
            end = start + n * t.seg_wire_bits / h.rate_bps
            lost = rng.random(n) < h.loss if h.loss else np.zeros(n, dtype=bool)
            # each segment arrives once it is serialized (not the whole burst)
            arrive = start + (np.arange(1, n + 1) * t.seg_wire_bits / h.rate_bps) + h.delay_s
            seg_done[ids[~lost]] = arrive[~lost]
            # a loss is found when later segments are acknowledged (RACK): at the ACK of the
            # DUP_THRESH-th segment after it (Linux's reordering window is 0 once that many
            # are SACKed: tcp_rack_reo_wnd), with fewer after it in the burst a quarter round
            # trip after the burst's ACKs; the stream's last segment only by the tail probe
            ser = t.seg_wire_bits / h.rate_bps
            for j in np.flatnonzero(lost):
                if j == n - 1 and nxt == total:
                    due = end + TLP_SRTTS * h.rtt_s
                elif n - 1 - j >= DUP_THRESH:
                    due = start + (j + 1 + DUP_THRESH) * ser + h.rtt_s
                else:
                    due = end + (1 + RACK_REO) * h.rtt_s
                retx.append((due, int(ids[j])))
            # the window grows only while it limits the sender (tcp_is_cwnd_limited): in
            # slow start while it is under twice what is in flight, after it once filled;
            # and on every ACK of a window marked limited (_note_usage)
            inflight = n + sum(f[1] for f in self.flight)
            limited = (self.cwnd < 2 * inflight) if self.cwnd < self.ssthresh else inflight >= int(self.cwnd)
            # the burst's ACKs come back spaced as it was serialized, each freeing room for
            # a segment sent as it arrives: the next burst may go one round trip after the
            # first segment (its serialization then spaces it as the ACK clock would)
            back = start + t.seg_wire_bits / h.rate_bps + h.rtt_s
            self.flight.append((back, n, bool(lost.any()), start, limited))
            self._note_usage(start, back, inflight, inflight >= int(self.cwnd))
            self._validate(start, inflight, limited or self._window_limited())
            self.wire_free = self.last_send = end
            now = end
        bounds = np.concatenate([[0], np.cumsum(segments)[:-1]])
        return np.maximum.reduceat(seg_done, bounds) if total else ready.astype(float)


def _compute(compute, worker, iteration: int) -> float:
    """compute: seconds for every worker, or a function (worker, iteration) -> seconds."""
    return compute(worker, iteration) if callable(compute) else float(compute)


def ring_ends(hops: list, segments: list, steps: int, compute, tcp: Tcp,
              iterations: int, seed: int = 0) -> list:
    """When each of `iterations` iterations of a ring of len(hops) workers ends (the last
    worker's result): worker r sends over hops[r] to r+1 a chunk of segments[r] segments
    per step, `steps` steps per iteration, step k+1 after the chunk of step k from the left
    arrived, and step 0 after its compute (seconds, or a function (r, iteration) ->
    seconds)."""
    w = len(hops)
    rng = np.random.default_rng(seed)
    senders = [Sender(h, tcp) for h in hops]
    got = [0.0] * w                     # when worker r has the chunk of the previous step
    ends = []
    for i in range(iterations):
        got = [g + _compute(compute, r, i) for r, g in enumerate(got)]
        for _ in range(steps):
            got = [senders[(r - 1) % w].send(got[(r - 1) % w], segments[(r - 1) % w], rng)
                   for r in range(w)]
        ends.append(max(got))
    return ends


def pace(ends: list, run_iterations: int | None, warmup: int = 1, steady_last: int = 8) -> float:
    """The pace analysis/measure.py reports (iteration_period_s: from the end of the
    warm-up to the end of the last iteration, per steady iteration) of a run of
    `run_iterations` iterations whose first len(ends) are simulated; the iterations
    beyond them at the steady pace of the last `steady_last` simulated. None: a long
    job, the steady pace itself."""
    k = len(ends)
    last = min(steady_last, k - 1)
    steady = (ends[-1] - ends[-1 - last]) / last
    if run_iterations is None:
        return steady
    n = max(run_iterations, warmup + 1)
    if n <= k:
        return (ends[n - 1] - ends[warmup - 1]) / (n - warmup)
    return (ends[-1] - ends[warmup - 1] + (n - k) * steady) / (n - warmup)


def run_words(run_iterations: int | None, seeds: int = 1) -> str:
    """How a simulated pace was taken, for a term's name (with the seeds averaged, if more
    than one: seeds_for)."""
    how = "steady pace of a long job" if run_iterations is None else \
        f"pace of the run's {run_iterations} iterations after the warm-up one"
    return how + (f", {seeds} seeds" if seeds > 1 else "")


def hop(net, a, b, rate_bps) -> Hop | None:
    """The Hop a -> b of a schemes.model.Net, at rate_bps(a, b); None when a and b share a
    host (no network)."""
    return Hop(net.rtt(a, b), net.delay(a, b), rate_bps(a, b), net.path_loss(a, b)) if a != b else None


def seeds_for(run_iterations: int | None, lossy: bool, cap: int = 16, samples: int = 40) -> int:
    """Seeds to average over: one without loss (nothing is random then); under loss
    enough that the steady iterations simulated add up to about `samples` (a short run's
    pace is as noisy in the model as in the emulation), at most 16."""
    if not lossy:
        return 1
    steady = max(1, min(run_iterations or cap, cap) - 1)
    return max(2, min(16, math.ceil(samples / steady)))


def mean_pace(ends_of, run_iterations: int | None, lossy: bool, cap: int = 16) -> float:
    """pace() averaged over seeds_for() seeds of ends_of(iterations, seed), simulating the
    run's iterations up to `cap` (a long job: `cap`, its last ones as the steady pace)."""
    k = min(run_iterations, cap) if run_iterations else cap
    runs = [pace(ends_of(max(k, 2), seed), run_iterations)
            for seed in range(seeds_for(run_iterations, lossy, cap))]
    return sum(runs) / len(runs)


@dataclass(frozen=True)
class Stream:
    """One TCP stream of a streamed push/pull tree, per iteration: chunk c of it
    (segments[c] segments) can go once chunk c of every stream in `inputs` has arrived
    (a server sums them first), or, for a worker's push (`inputs` empty), once `worker`
    has computed. `hop` None: sender and receiver share a host (no network)."""
    hop: Hop | None
    segments: tuple
    inputs: tuple = ()
    worker: str | None = None
    # a message taken whole (store and forward, netstorm): it goes once all of its inputs
    # are in and is in, every chunk of it, once its last segment is
    whole: bool = False
    # none of it goes before the first chunk of every stream of `gate` is in plus gate_s
    # (netstorm's barrier: a server checks in at its first local chunk, and sends once the
    # scheduler has heard from every server)
    gate: tuple = ()
    gate_s: float = 0.0
    # inputs whose chunks are not this stream's (netstorm: blocks of other sizes than the
    # workers' chunks): per input, per chunk of this stream, the input's chunk it waits
    # for (its chunks arrive in order, so the last one needed), -1 for none of it;
    # empty: chunk c waits for chunk c of every input
    needs: tuple = ()


def tree_ends(streams: list, results: dict, compute, tcp: Tcp, iterations: int,
              seed: int = 0, trace: dict | None = None) -> list:
    """When each of `iterations` iterations of a streamed push/pull (ps, hier-ps) ends
    (the last worker's results): `streams` in an order where every stream comes after its
    inputs; results[w] = the indices of the streams whose arrival ends worker w's
    iteration (its pulls). A worker starts its next push its compute time after its
    results are in (seconds, or a function (worker, iteration) -> seconds). trace (a
    dict): gets, per stream index, (when it could first send, when its last chunk
    arrived) of every iteration."""
    rng = np.random.default_rng(seed)
    senders = [Sender(s.hop, tcp) if s.hop else None for s in streams]
    start = {w: 0.0 for w in results}
    ends = []
    for it in range(iterations):
        got = []
        for i, s in enumerate(streams):
            if s.needs:
                if len(s.needs) != len(s.inputs) or any(len(n) != len(s.segments) for n in s.needs):
                    raise ValueError(f"stream {i}: needs must hold one entry per input, each one "
                                     f"per chunk of its {len(s.segments)}")
                ready = np.max([np.where(np.asarray(need) >= 0, got[j][np.maximum(need, 0)], 0.0)
                                for j, need in zip(s.inputs, s.needs)], axis=0)
                if s.whole:
                    ready = np.full(len(s.segments), float(np.max(ready)))
            elif s.inputs and s.whole:
                ready = np.full(len(s.segments), max(float(np.max(got[j])) for j in s.inputs))
            elif s.inputs:
                if any(len(got[j]) != len(s.segments) for j in s.inputs):
                    raise ValueError(f"stream {i}: inputs of another chunk count than its "
                                     f"{len(s.segments)} need Stream.needs")
                ready = np.max([got[j] for j in s.inputs], axis=0)
            else:
                ready = np.full(len(s.segments), start[s.worker] + _compute(compute, s.worker, it))
            if s.gate:
                ready = np.maximum(ready, max(float(np.min(got[j])) for j in s.gate) + s.gate_s)
            seg = np.asarray(s.segments)
            arrived = senders[i].stream(ready, seg, rng) if senders[i] else ready
            if trace is not None:
                trace.setdefault(i, []).append((float(np.min(ready)), float(np.max(arrived))))
            got.append(np.full(len(seg), float(np.max(arrived))) if s.whole else arrived)
        start = {w: float(max(got[j].max() for j in idx)) for w, idx in results.items()}
        ends.append(max(start.values()))
    return ends


def chunk_segments(values: int, chunk_values: int, header: int, mss: int) -> tuple:
    """Segments per chunk of a stream of `values` float32 in frames of at most
    chunk_values values (+ header each): a byte stream, so chunk c ends in the segment
    that holds its last byte."""
    frames = max(1, math.ceil(values / chunk_values))
    sizes = [4 * min(chunk_values, values - i * chunk_values) + header for i in range(frames)]
    ends = np.ceil(np.cumsum(sizes) / mss).astype(int)
    return tuple(int(x) for x in np.diff(np.concatenate([[0], ends])))
