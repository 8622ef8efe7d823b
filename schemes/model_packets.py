"""TCP streams that wait for each other, simulated segment by segment over shared
drop-tail queues, both directions, ACKs included (pure, seeded; docs/model.md, "Shared
queues").

Why, beside schemes/model_chain.py: that simulation gives each stream a fixed share of its
path and no queue, so streams never meet. On the WAN they do: ps's four push streams of a
remote datacenter share one drop-tail queue, and the pull streams of the other direction
fill the queue the pushes' ACKs wait in (and the other way round). Measured at bench
schemes' point (3 DCs x 4, 1 MB, 50 Mbps, no loss configured): the two directions of a
remote datacenter's WAN link take turns at the full rate instead of overlapping (while one
runs at 5 emulated Mbps the other gets 0.2-3.2: its ACKs wait behind the first's queue, so
its window covers a longer round trip), and 1.5 % of the segments are lost at queues that
overflow. Two-way traffic over drop-tail queues is the
classic effect of Zhang, Shenker and Clark (SIGCOMM 1991): ACK compression and a round trip
that grows by the other direction's queue.

What is simulated: every link direction on the streams' paths is a FIFO at its rate with
the byte limit the emulation gives it (topologies.linkemu.queue_bytes, queue_bdp), then its
delay and its random loss (the datacenter links too: without their rate, a server's partial
sums left at once and overflowed the WAN queue, where the emulation feeds them at the LAN's
pace). Each stream is a Linux-like TCP sender and receiver:
the window, slow start, cubic or reno growth, slow start after idle and cwnd validation of
model_chain.Sender (the same code), with tcp_cwnd_validate's record of the window that
limited the sender (it grows on all that window's ACKs); delayed ACKs (one per two
segments, at once on a hole; cumulative, with the segments since the ACK before as SACK);
RACK loss detection (a segment sent before one that was delivered is lost once three later
segments are in, or a quarter of the minimum round trip after); one window cut per
recovery; the tail loss probe (2 SRTT) and the RTO (Linux's estimator: SRTT + the largest
deviation of a round); cubic's HyStart delay exit as Linux has it (once per connection,
rounds from the first window); at most Tcp.max_flight segments unacknowledged (the send
buffer, tcp_wmem max, and the receive window's maximum). Left out: PRR's pacing of the
recovery (the window is cut at once), SACK blocks' limits, the receive window's
autotuning (it grows ahead of these windows), HyStart's ACK-train exit, the hosts' NIC
queues. Each burst leaves up to Tcp.send_jitter_s late at random (the hosts' send-time
noise, schemes.model.SEND_JITTER_S): without it identical streams stay in lock-step, and
the pace is then averaged over seeds (pace, JITTER_SEEDS; docs/model.md, "Send-time
noise").

Streams depend on each other as in model_chain (a tree's pull chunk after that chunk of
every push; a ring hop's step after its left neighbour's previous step), and the window
code is model_chain.Sender's own (slow start, cubic, restart, validation), so the two
simulations differ only in the network under them."""
from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from schemes.model_chain import DUP_THRESH, RACK_REO, Hop, Tcp, Sender, _compute
from schemes.model_chain import pace as chain_pace
from topologies.linkemu import queue_bytes

ACK_WIRE_BITS = 8 * 66        # a pure ACK on the wire (schemes.model.ACK_FRAME)
HYSTART_LOW = 16              # HyStart acts from this window (segments; Linux's hystart_low_window)
HYSTART_SAMPLES = 8           # RTT samples per round HyStart takes its minimum of
HYSTART_MIN_S, HYSTART_MAX_S = 0.004, 0.016   # its delay threshold clamp, kernel seconds
DELACK_S = 0.040              # the delayed-ACK timer, kernel seconds (TCP_DELACK_MIN)
TLP_MIN_S = 0.002             # the probe timer's floor, kernel seconds (TCP_TIMEOUT_MIN)


@dataclass(frozen=True)
class Queue:
    """One direction of a link whose queue is simulated: rate (bits / s), one-way delay
    (s), byte limit of its drop-tail queue, probability a packet is lost after it."""
    rate_bps: float
    delay_s: float
    limit_bytes: float
    loss: float


@dataclass(frozen=True)
class PacketStream:
    """One TCP stream: its data path and its ACKs' path (tuples of queue indices), its
    base round trip; per iteration chunk c of it (segments[c] segments) goes once chunk
    c - lag of every stream in `inputs` arrived (counted over iterations: a tree's sums
    lag 0, a ring's steps 1), and, if it has a `worker`, an iteration's first chunk once
    that worker has computed (a push: every chunk). data None: sender and receiver share
    a host."""
    data: tuple | None
    acks: tuple | None
    rtt_s: float
    segments: tuple
    inputs: tuple = ()
    worker: str | None = None
    lag: int = 0


class _Flow(Sender):
    """A stream's sender and receiver. Segment states: 0 not sent, 1 in flight, 2 marked
    lost (waiting to go again), 3 delivered."""

    def __init__(self, s: PacketStream, tcp: Tcp):
        # the hop gives Sender's window code the path's base round trip (cubic's clock,
        # the restart's floor); rate and loss are the queues' here
        super().__init__(Hop(s.rtt_s, s.rtt_s / 2, math.inf, 0.0), tcp)
        self.s = s
        self.state: list = []
        self.sent_at: list = []
        self.sends: list = []          # transmissions of each segment
        self.order: deque = deque()    # (time sent, segment) in the order sent
        self.retx: deque = deque()     # segments marked lost, to send again
        self.avail = self.nxt = self.out = 0
        self.una = 0                   # the first segment not yet delivered
        self.recovery_end = -1         # in recovery until every segment below this is in
        # Linux's RTT estimator (tcp_rtt_estimator), seeded by the handshake's sample:
        # mdev4 is its mdev_us (four mean deviations), rttvar the largest of a round's,
        # decaying by a quarter a round toward the next round's largest, never below rto_min
        self.srtt, self.mdev4 = s.rtt_s, 2 * s.rtt_s
        self.rttvar = self.mdev_max = max(self.mdev4, tcp.rto_min_s)
        self.rtt_seq = 0
        self.rack_ts, self.rack_seg, self.rack_rtt = -math.inf, -1, s.rtt_s
        self.backoff = 1
        self.deadline, self.probed = math.inf, False
        self.round_end, self.round_min, self.round_n = 0, math.inf, 0
        # cubic's HyStart acts until it first fires (ca->found), and again only after an
        # RTO (cubictcp_state on TCP_CA_Loss): a restart after idle slow-starts without it
        self.hystart_found = False
        # tcp_cwnd_validate's record of whether the window limits the sender: set for the
        # window it was seen in (until snd_una passes cwnd_usage_seq), with the most
        # segments out in that window (max_packets_out)
        self.cwnd_limited, self.max_out, self.usage_seq = False, 0, 0
        # receiver
        self.got: list = []
        self.rcv_nxt = 0
        self.high_rcv = -1
        self.unacked: list = []        # segments arrived since the last ACK
        self.delack_at = math.inf
        self.chunk_ends: list = []     # cumulative segments at the end of each chunk
        self.done = 0                  # chunks the receiver has whole

    def _in_recovery(self) -> bool:
        return self.recovery_end >= 0

    def note_usage(self, cwnd_limited: bool) -> None:
        """tcp_cwnd_validate's first part, after a transmission attempt: a window in which
        the sender was cwnd-limited counts as limited until it is acknowledged, even when
        the application runs dry in it (so its ACKs grow the window); otherwise the most
        segments it had out."""
        if self.una >= self.usage_seq or cwnd_limited or \
                (not self.cwnd_limited and self.out > self.max_out):
            self.cwnd_limited, self.max_out, self.usage_seq = cwnd_limited, self.out, self.nxt

    def is_cwnd_limited(self) -> bool:
        """tcp_is_cwnd_limited: limited in the current window, or in slow start with the
        window below twice the most segments out."""
        if self.cwnd_limited:
            return True
        return self.cwnd < self.ssthresh and self.cwnd < 2 * self.max_out

    def add(self, n: int) -> None:
        """The application wrote n more segments."""
        self.avail += n
        grow = self.avail - len(self.state)
        if grow > 0:
            self.state += [0] * grow
            self.sent_at += [0.0] * grow
            self.sends += [0] * grow
            self.got += [False] * grow

    def _rto(self) -> float:
        """Linux's RTO from the smoothed round trip and its variation (what the restart
        after idle and cwnd validation compare with)."""
        return self.srtt + self.rttvar

    def rto(self) -> float:
        return self.backoff * self._rto()


class Sim:
    """The event loop: streams (in an order where each comes after its inputs), queues,
    results[w] = indices of the streams whose arrival ends worker w's iteration."""

    def __init__(self, streams: list, queues: list, results: dict, compute, tcp: Tcp,
                 iterations: int, seed: int = 0):
        self.streams, self.queues, self.results = streams, queues, results
        self.compute, self.tcp, self.iterations = compute, tcp, iterations
        self.rng = np.random.default_rng(seed)
        self.free = [0.0] * len(queues)      # each queue's link is busy until then
        self.links = ([q.rate_bps for q in queues], [8 * q.limit_bytes for q in queues],
                      [q.delay_s for q in queues], [q.loss for q in queues])
        self.flows = [_Flow(s, tcp) for s in streams]
        self.dependents = {i: [] for i in range(len(streams))}
        for j, s in enumerate(streams):
            for i in s.inputs:
                self.dependents[i].append(j)
        self.released = [0] * len(streams)   # chunks handed to each sender
        self.finished = {w: 0 for w in results}
        self.started = {w: 0 for w in results}  # iterations each worker has computed for
        self.ends = [0.0] * iterations
        self.worker_ends = {w: [] for w in results}   # when each worker's iterations end
        self.heap: list = []
        self.n = 0

    # ------------------------------------------------------------ the loop
    def at(self, t: float, fn, *args) -> None:
        self.n += 1
        heapq.heappush(self.heap, (t, self.n, fn, args))

    def run(self) -> list:
        for w in self.results:
            self.at(_compute(self.compute, w, 0), self.start_push, w, 0)
        while self.heap:
            t, _, fn, args = heapq.heappop(self.heap)
            fn(t, *args)
        return self.ends

    # ------------------------------------------------------------ chunks and iterations
    def start_push(self, t: float, w, it: int) -> None:
        self.started[w] = it + 1
        for j, s in enumerate(self.streams):
            if s.worker != w:
                continue
            if not s.inputs:
                for c in range(len(s.segments)):
                    self.release(t, j, it * len(s.segments) + c)
            else:
                self.advance(t, j)

    def advance(self, t: float, d: int) -> None:
        """Hand stream d the chunks its inputs (and its worker's compute) allow."""
        s = self.streams[d]
        ready = min(self.flows[i].done for i in s.inputs) + s.lag
        while self.released[d] < ready:
            c = self.released[d]
            if s.worker is not None and c % len(s.segments) == 0 and \
                    self.started[s.worker] <= c // len(s.segments):
                break                    # the iteration's first chunk waits for the compute
            self.release(t, d, c)

    def release(self, t: float, j: int, chunk: int) -> None:
        """Chunk `chunk` (counted over iterations) of stream j may go."""
        s, f = self.streams[j], self.flows[j]
        n = s.segments[chunk % len(s.segments)]
        self.released[j] = chunk + 1
        end = (f.chunk_ends[-1] if f.chunk_ends else 0) + n
        f.chunk_ends.append(end)
        if s.data is None:             # same host: there at once
            f.add(n)
            f.rcv_nxt = end
            self.chunk_in(t, j)
            return
        f.add(n)
        self.send(t, j)

    def chunk_in(self, t: float, j: int) -> None:
        f = self.flows[j]
        while f.done < len(f.chunk_ends) and f.rcv_nxt >= f.chunk_ends[f.done]:
            f.done += 1
            for d in self.dependents[j]:
                self.advance(t, d)
        for w, idx in self.results.items():
            if j not in idx:
                continue
            it = self.finished[w]
            while it < self.iterations and all(
                    self.flows[i].done >= (it + 1) * len(self.streams[i].segments) for i in idx):
                self.ends[it] = max(self.ends[it], t)
                self.worker_ends[w].append(t)
                it += 1
                if it < self.iterations:
                    self.at(t + _compute(self.compute, w, it), self.start_push, w, it)
            self.finished[w] = it

    # ------------------------------------------------------------ the network
    def travel(self, t: float, path: tuple, k: int, bits: float, deliver, args) -> None:
        """A packet reaches queue k of its path (or, past the last, its end) at time t."""
        if k < len(path):
            self.at(t, self.enqueue, path, k, bits, deliver, args)
        else:
            self.at(t, deliver, *args)

    def enqueue(self, t: float, path: tuple, k: int, bits: float, deliver, args) -> None:
        heap, free, rate, limit, delay, loss = self.heap, self.free, *self.links
        while True:
            i = path[k]
            f = free[i]
            if (f - t) * rate[i] + bits > limit[i]:
                return                                    # drop-tail
            free[i] = done = (f if f > t else t) + bits / rate[i]
            if loss[i] and self.rng.random() < loss[i]:
                return
            t = done + delay[i]
            k += 1
            # the next queue at once when nothing else happens before (the same order of
            # arrivals as through the event loop, one event fewer)
            if k == len(path) or (heap and heap[0][0] <= t):
                self.travel(t, path, k, bits, deliver, args)
                return

    # ------------------------------------------------------------ the sender
    def send(self, t: float, j: int) -> None:
        if self.tcp.send_jitter_s > 0:   # the burst leaves up to send_jitter_s late
            t += self.rng.uniform(0.0, self.tcp.send_jitter_s)
        f, tcp = self.flows[j], self.tcp
        if f.out == 0 and not f.retx:
            f._restart(t)
        sent = False
        while f.out < int(min(f.cwnd, tcp.max_flight)) and (f.retx or f.nxt < f.avail):
            if f.retx:
                seg = f.retx.popleft()
                if f.state[seg] != 2:
                    continue
            else:
                seg = f.nxt
                f.nxt += 1
            f.state[seg] = 1
            f.out += 1
            f.sent_at[seg] = t
            f.sends[seg] += 1
            f.order.append((t, seg))
            f.last_send = t
            sent = True
            self.travel(t, f.s.data, 0, tcp.seg_wire_bits, self.arrive, (j, seg))
        # tcp_write_xmit's ending (it runs only with data waiting to go): cwnd-limited when
        # the window is full, then tcp_cwnd_validate when it sent something or the window
        # stopped it
        full = f.out >= int(f.cwnd)
        if sent or (full and (f.retx or f.nxt < f.avail)):
            f.note_usage(full)
            f._validate(t, f.out, f.is_cwnd_limited())
        if sent:
            self.arm(t, j)

    def arm(self, t: float, j: int) -> None:
        """The probe timer (2 SRTT), then the RTO, while something is in flight."""
        f = self.flows[j]
        if f.out == 0:
            f.deadline = math.inf
            return
        # Linux's probe timeout: 2 SRTT, plus the delayed-ACK allowance of rto_min when a
        # single segment is out (its ACK may be delayed), else a 2 ms floor; at most the RTO
        pto = 2 * f.srtt + (f.tcp.rto_min_s if f.out == 1 else TLP_MIN_S / f.tcp.clock_scale)
        due = t + (f.rto() if f.probed else min(pto, f.rto()))
        f.deadline = due
        self.at(due, self.timer, j, due)

    def timer(self, t: float, j: int, due: float) -> None:
        f = self.flows[j]
        if due != f.deadline or f.out == 0:
            return
        if not f.probed:               # tail loss probe: the newest segment in flight again
            f.probed = True
            seg = max((s for _, s in f.order if f.state[s] == 1), default=None)
            if seg is not None:
                f.sent_at[seg] = t
                f.sends[seg] += 1
                f.order.append((t, seg))
                self.travel(t, f.s.data, 0, self.tcp.seg_wire_bits, self.arrive, (j, seg))
            self.arm(t, j)
            return
        # RTO: everything in flight is lost, the window starts again from one segment
        f._keep_ssthresh()
        f.ssthresh = max(2.0, f.cwnd * f.tcp.beta)
        f.cwnd = 1.0
        f.epoch = None
        f.hystart_found = False
        for _, s in f.order:
            if f.state[s] == 1:
                f.state[s] = 2
                f.out -= 1
                f.retx.append(s)
        f.order.clear()
        f.recovery_end = -1
        f.probed = False
        f.backoff *= 2
        self.send(t, j)

    def ack(self, t: float, j: int, segs: list, cum: int) -> None:
        """An ACK: everything below `cum` is in (cumulative, so a lost ACK's news comes
        with the next), and `segs` arrived since the ACK before it (SACK)."""
        f = self.flows[j]
        new = 0
        oldest = newest = None         # sent once, newly acknowledged: RTT samples
        for seg in itertools.chain(range(f.una, cum), segs):
            if f.state[seg] == 3:
                continue
            if f.state[seg] == 1:
                f.out -= 1
            f.state[seg] = 3
            new += 1
            if f.sends[seg] == 1:
                if oldest is None:
                    oldest = seg
                if newest is None or f.sent_at[seg] >= f.sent_at[newest]:
                    newest = seg
            if (f.sent_at[seg], seg) > (f.rack_ts, f.rack_seg):
                f.rack_ts, f.rack_seg, f.rack_rtt = f.sent_at[seg], seg, t - f.sent_at[seg]
        if not new:
            return
        if oldest is not None:
            # one sample per ACK, as the kernel takes them: SRTT from the oldest segment it
            # acknowledges, cubic's HyStart from the newest (tcp_clean_rtx_queue)
            self.sample(f, t - f.sent_at[oldest], t - f.sent_at[newest], cum)
        f.probed, f.backoff = False, 1
        self.detect(t, j)
        while f.una < len(f.state) and f.state[f.una] == 3:
            f.una += 1
        if 0 <= f.recovery_end <= f.una:   # every segment sent before the cut is in
            f.recovery_end = -1
        if f.recovery_end < 0:
            f._acked(t)
            if f.is_cwnd_limited():
                f._grow(t, new)
        self.send(t, j)
        if f.out:
            self.arm(t, j)

    def sample(self, f: _Flow, rtt: float, ca_rtt: float, cum: int) -> None:
        """One ACK's RTT samples (rtt for SRTT and the RTO, ca_rtt for HyStart); cum: its
        cumulative point, which ends the estimator's and HyStart's rounds."""
        self.estimate_rtt(f, rtt, cum)
        if f.tcp.law == "cubic" and not f.hystart_found and f.cwnd < f.ssthresh:
            self.hystart(f, ca_rtt, cum)

    @staticmethod
    def estimate_rtt(f: _Flow, rtt: float, cum: int) -> None:
        """Linux's tcp_rtt_estimator."""
        err = rtt - f.srtt
        f.srtt += err / 8
        m = abs(err) - f.mdev4 / 4
        if err < 0 and m > 0:          # a falling RTT moves the deviation 8 x slower
            m /= 8
        f.mdev4 += m
        if f.mdev4 > f.mdev_max:
            f.mdev_max = f.mdev4
            f.rttvar = max(f.rttvar, f.mdev_max)
        if cum > f.rtt_seq:            # a round trip's samples are in
            if f.mdev_max < f.rttvar:
                f.rttvar -= (f.rttvar - f.mdev_max) / 4
            f.rtt_seq, f.mdev_max = f.nxt, f.tcp.rto_min_s

    @staticmethod
    def hystart(f: _Flow, ca_rtt: float, cum: int) -> None:
        """Cubic's HyStart delay exit (hystart_update): leave slow start when the smallest
        RTT of a round's samples (from its ninth on) is above the path's by the threshold.
        A round ends once the segment sent first after its start is acknowledged
        (after(snd_una, end_seq)), so its first samples see the queue at its start; rounds
        are counted from the first window on, the check waits for a window of
        hystart_low_window (Linux since 25c1a9ca53db, 2025, in the stable kernels too)."""
        if cum > f.round_end:
            f.round_end, f.round_min, f.round_n = f.nxt, math.inf, 0
        if f.cwnd < HYSTART_LOW:
            return
        f.round_min = min(f.round_min, ca_rtt)
        if f.round_n < HYSTART_SAMPLES:
            f.round_n += 1
            return
        base = f.s.rtt_s * f.tcp.clock_scale
        eta = min(max(base / 8, HYSTART_MIN_S), HYSTART_MAX_S) / f.tcp.clock_scale
        if f.round_min > f.s.rtt_s + eta:
            f.ssthresh = f.cwnd
            f.hystart_found = True

    def detect(self, t: float, j: int) -> None:
        """RACK: segments sent before the newest delivered one and still missing."""
        f = self.flows[j]
        lost = False
        # sent before the newest delivered segment: earlier, or in the same burst before it
        while f.order and f.order[0] < (f.rack_ts, f.rack_seg):
            sent, seg = f.order[0]
            if f.state[seg] != 1 or sent != f.sent_at[seg]:
                f.order.popleft()          # delivered, or sent again since
                continue
            # Linux's reordering window: none once DUP_THRESH later segments are in (no
            # reordering on these paths) or in recovery, else a quarter of min_rtt
            reo = 0.0 if f.rack_seg - seg >= DUP_THRESH or f.recovery_end >= 0 else RACK_REO * f.s.rtt_s
            if t < sent + f.rack_rtt + reo:
                self.at(sent + f.rack_rtt + reo, self.recheck, j)
                break
            f.order.popleft()
            f.state[seg] = 2
            f.out -= 1
            f.retx.append(seg)
            lost = True
        if lost and f.recovery_end < 0:
            if f.sent_at[f.retx[-1]] >= f.cut_mark:
                f._cut(t)
            f.recovery_end = f.nxt

    def recheck(self, t: float, j: int) -> None:
        self.detect(t, j)
        self.send(t, j)

    # ------------------------------------------------------------ the receiver
    def arrive(self, t: float, j: int, seg: int) -> None:
        f = self.flows[j]
        hole = seg != f.rcv_nxt
        if not f.got[seg]:
            f.got[seg] = True
            f.high_rcv = max(f.high_rcv, seg)
            while f.rcv_nxt < len(f.got) and f.got[f.rcv_nxt]:
                f.rcv_nxt += 1
        f.unacked.append(seg)
        # at once on a hole (or while one is open), else one ACK per two segments
        if hole or len(f.unacked) >= 2 or f.rcv_nxt <= f.high_rcv:
            self.send_ack(t, j)
        elif f.delack_at == math.inf:
            f.delack_at = t + DELACK_S / self.tcp.clock_scale
            self.at(f.delack_at, self.delack, j, f.delack_at)
        # the kernel acknowledges as the segment comes in; the application reads it, and
        # writes what it allows (a pull's chunk, a ring's next step), after that ACK
        if f.done < len(f.chunk_ends) and f.rcv_nxt >= f.chunk_ends[f.done]:
            self.chunk_in(t, j)

    def delack(self, t: float, j: int, due: float) -> None:
        f = self.flows[j]
        if f.delack_at == due and f.unacked:
            self.send_ack(t, j)

    def send_ack(self, t: float, j: int) -> None:
        f = self.flows[j]
        segs, f.unacked, f.delack_at = f.unacked, [], math.inf
        self.travel(t, f.s.acks, 0, ACK_WIRE_BITS, self.ack, (j, segs, f.rcv_nxt))


# ---------------------------------------------------------------- from a scheme's streams
def paths(net, flows: list, seg_bits: float) -> tuple[list, list]:
    """(PacketStreams, Queues) of a scheme's streams, flows = (a, b, segments per chunk, inputs,
    worker) as model_chain's tree builders give them: every link direction on a path a
    queue, sized as the emulation sizes it (topologies.linkemu.queue_bytes, queue_bdp)."""
    index: dict = {}
    queues: list = []

    def walk(a, b) -> tuple:
        p = net.path(a, b)
        for u, v in zip(p, p[1:]):
            if (u, v) not in index:
                e = net.g.edges[u, v]
                index[(u, v)] = len(queues)
                queues.append(Queue(net.rate_bps(u, v), e["delay_ms"] / 1000,
                                    queue_bytes(net.mbps(u, v), e["delay_ms"], float(e.get("queue_bdp") or 1.0)),
                                    e.get("loss_pct", 0) / 100))
        return tuple(index[(u, v)] for u, v in zip(p, p[1:]))

    streams = [PacketStream(walk(a, b), walk(b, a), net.rtt(a, b), tuple(segs), tuple(inputs), worker)
               if a != b else PacketStream(None, None, 0.0, tuple(segs), tuple(inputs), worker)
               for a, b, segs, inputs, worker in flows]
    return streams, queues


def tree_ends(streams: list, queues: list, results: dict, compute, tcp: Tcp, iterations: int,
              seed: int = 0) -> list:
    """When each of `iterations` iterations ends (the last worker's results): like
    model_chain.tree_ends (and ring_ends, with lag 1), the streams meeting in the queues."""
    return Sim(streams, queues, results, compute, tcp, iterations, seed).run()


# packet-hops one seed's simulation may take (~20 s of CPU) over the iterations it
# simulates: alltoall with 4 MB gradients at bench schemes' point (132 streams, 2.3 M
# packet-hops an iteration) fits its run's 4 iterations; at the old 2 M it fell back to the
# closed form, which left out what the send-time noise adds (1.26 / 1.49 x at 50 / 100
# Mbps, docs/model.md). Beyond it the round-level simulation, or the closed form beyond
# its budget (schemes/ps/model.py TREE_BUDGET): seconds either way
PACKET_BUDGET = 10_000_000
PACKET_CAP = 8                 # iterations simulated at most; beyond, the steady pace of the last
PACKET_MIN = 3                 # and at least: the warm-up and two steady ones


def _hops_per_iteration(streams: list) -> float:
    """Packet-hops of one iteration: every segment's hops and its ACK's, one per two."""
    return sum(sum(s.segments) * (len(s.data) + len(s.acks) / 2) for s in streams if s.data)


def iterations_for(streams: list, run_iterations: int | None) -> int | None:
    """How many iterations to simulate within PACKET_BUDGET (every segment's hops and its
    ACK's, one per two): the run's, at most PACKET_CAP, fewer for a large job down to
    PACKET_MIN (the rest at the steady pace of those); None when not even that fits."""
    per = _hops_per_iteration(streams)
    k = max(min(run_iterations or PACKET_CAP, PACKET_CAP), 2)
    k = min(k, int(PACKET_BUDGET // per) if per else k)
    return k if k >= min(PACKET_MIN, max(run_iterations or PACKET_CAP, 2)) else None


def fits(streams: list, run_iterations: int | None) -> bool:
    """Whether simulate within PACKET_BUDGET (iterations_for)."""
    return iterations_for(streams, run_iterations) is not None


# seeds the pace is averaged over when the hosts' send-time noise is on (Tcp.send_jitter_s):
# each seed's simulation fits PACKET_BUDGET, so a prediction takes up to 4 x its CPU
JITTER_SEEDS = 4

# a simulation this large (packet-hops a seed) says, seed by seed, where it is: the
# prediction takes more than a few seconds (the command line shows the logger's lines)
PROGRESS_HOPS = 1_000_000
log = logging.getLogger(__name__)


def pace(streams: list, queues: list, results: dict, compute, tcp: Tcp,
         run_iterations: int | None) -> float:
    """The pace analysis/measure.py reports (model_chain.pace) of the run, simulated
    without random loss over iterations_for() iterations (the caller checks fits()
    first): averaged over JITTER_SEEDS seeds of the send-time noise, one run of the loop
    without it (nothing is random then)."""
    k = iterations_for(streams, run_iterations)
    seeds = JITTER_SEEDS if tcp.send_jitter_s > 0 else 1
    hops = k * _hops_per_iteration(streams)
    total = 0.0
    for seed in range(seeds):
        if hops >= PROGRESS_HOPS:
            log.info("model: simulating %d streams segment by segment, %d iterations "
                     "(%.1f M packet-hops): seed %d of %d", sum(1 for s in streams if s.data),
                     k, hops / 1e6, seed + 1, seeds)
        total += chain_pace(tree_ends(streams, queues, results, compute, tcp, k, seed), run_iterations)
    return total / seeds
