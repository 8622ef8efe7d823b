"""Worker side of the aggregation protocol as a sans-I/O state machine.

The client never touches sockets or clocks: the driver feeds it received UDP
payloads and the current time, and sends what it returns. So the same code runs
over a UDP socket in a Mininet host and in a simulated network in tests.

    client = InaClient(ClientConfig(job=1, agg_ip="10.1.1.254", sender=0, fan_in=2, window=8))
    out = client.start(int32_values, now)          # -> [Send(dst_ip, payload)]
    out = client.on_packet(payload, now)           # a result arrived
    out = client.on_timer(now)                     # at client.next_deadline()
    client.done, client.result()

The same in batches (workers/ina_udp.py): start_batch, on_packets (many results read
at one `now`) and on_timer_batch return a SendBatch, one (m, payload bytes) array whose
rows are the payloads. A tensor's payloads are packed once, by numpy, when it starts
(workers/agg_batch.py); a send is a row of that array (RETX set on a copy), and results
are parsed and stored for a whole batch at once. The state machine still takes the
results of a batch one by one, as on_packet does, so a batch yields exactly the sends
of its packets fed one at a time (tests/test_ina_batch.py): only the bytes' handling
is batched, not the decisions.

Sequencing (docs/protocol.md): chunks get consecutive sequence numbers that
continue across calls to start(); chunk seq uses slot seq % W with generation
seq // W + 1, so every worker of the job names the same chunk the same way.
Chunk j may be sent once chunk j - W (same slot, previous generation) has its
result: a slot copy is reused only after everyone below has finished with it.

Congestion control (workers/congestion.py, ATP/TCP-like AIMD): the slots W bound what
may be in flight, the congestion window cwnd <= W bounds what is. A chunk whose timer
fires leaves the pipe and waits in a retransmission queue; queued retransmissions and
new chunks leave lowest chunk first, only while fewer than cwnd chunks are in flight. So
a loss burst is not answered by a burst of the same size.

Loss detection (`rack=True`, the default), as TCP's RACK-TLP (RFC 8985) adapted to
per-chunk results:
- a chunk is lost when a chunk sent after it got its result and a reordering window
  (min RTT / 4) has passed beyond the round trip that result took (at least SRTT for a
  re-sent chunk);
- the retransmission timeout of a chunk is restarted by every useful result, as TCP
  restarts its timer on every ACK of new data (RFC 6298, 5.3): it fires only when
  results stopped coming for a whole RTO (a tail loss, a stall).
Why: with only a timer per chunk from its send time, a worker whose own window filled a
slow link's queue timed out chunks that were only queued: in slow start the round trip
grows by a frame time per result and the samples lag behind it (flat ina, 1 Mbps access
links with 0.3 s of queue: 127 of 256 chunks re-sent in the first iteration, all spurious,
and their answers then held the next iteration's results 0.3 s behind them). `rack=False`
keeps the per-chunk timers alone.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from workers import agg_batch
from workers import agg_packet as wire
from workers.chunking import num_chunks
from workers.congestion import Aimd, cubic_c, queue_backlog, veno_threshold
from workers.pacing import Pacer
from workers.rtt import RttEstimator


class AggregationFailed(RuntimeError):
    """A chunk got no result after the allowed retransmissions."""


@dataclass(frozen=True)
class ClientConfig:
    job: int
    agg_ip: str            # aggregation address of this worker's aggregation point
    sender: int            # this worker's child index there
    fan_in: int            # number of children there
    window: int            # slots of the job (the switches' num_slots for it)
    k: int = 32
    initial_rto: float = 1.0
    min_rto: float = 0.005
    max_rto: float = 10.0
    max_retransmissions: int = 50
    congestion_control: bool = True     # False: cwnd = window always (fixed window)
    initial_cwnd: int = 16              # packets in flight before the first results
    pacing: bool = True                 # pace at the measured delivery rate (workers/pacing.py)
    rack: bool = True                   # RACK loss detection, RTO restarted by results
    congestion_law: str = "cubic"       # "reno" | "cubic" (workers/congestion.py)
    # "cut": every loss cuts cwnd; "backlog": only a loss with a queue behind it (TCP Veno's
    # backlog test, congestion.queue_backlog) does, a random one is only re-sent
    loss_response: str = "cut"
    time_dilation: float = 1.0          # for cubic's real-world clock
    # added to RACK's reordering window (s): the time the switches take to repair a loss
    # between them (docs/protocol.md, "Lossless links ..."), so they repair it first
    reorder_extra: float = 0.0
    # a cap on the send rate, packets/s (0: none): every tensor is paced at most at it
    # (l3dml's rate synchronization paces a datacenter's workers; workers/pacing.py)
    max_rate_pps: float = 0.0
    # the state machine's implementation (workers/ina_core.make_client): "python" this
    # module, "c" workers/native/ina_core.c, "auto" C when it builds, else Python
    core: str = "auto"

    def __post_init__(self):
        if not 1 <= self.window < 2**15:
            raise ValueError(f"window must be 1..32767 slots (got {self.window})")
        if not 0 <= self.sender < self.fan_in <= 32:
            raise ValueError(f"need 0 <= sender < fan_in <= 32 (got sender {self.sender}, "
                             f"fan_in {self.fan_in})")
        if self.initial_cwnd < 1:
            raise ValueError(f"initial_cwnd must be at least 1 packet (got {self.initial_cwnd})")
        if self.k not in (32, 64):
            raise ValueError(f"k must be 32 or 64, as the switch program's AGG_K (got {self.k})")
        if self.loss_response not in ("cut", "backlog"):
            raise ValueError(f'loss_response must be "cut" or "backlog" (got {self.loss_response!r})')
        if self.max_rate_pps < 0:
            raise ValueError(f"max_rate_pps must be >= 0 (0: no cap), got {self.max_rate_pps}")
        if self.reorder_extra < 0:
            raise ValueError(f"reorder_extra must be >= 0 s (got {self.reorder_extra})")
        if self.core not in ("python", "c", "auto"):
            raise ValueError(f'core must be "python", "c" or "auto" (got {self.core!r})')

    @classmethod
    def for_worker(cls, tree, host: str, **opts) -> "ClientConfig":
        """The configuration of `host` in an aggregation tree (control/agg_tree.AggTree)."""
        if host not in tree.workers:
            raise ValueError(f"{host} is not a worker of job {tree.job} (workers: {sorted(tree.workers)})")
        b = tree.workers[host]
        return cls(job=tree.job, agg_ip=b.agg_address, sender=b.sender, fan_in=b.fan_in,
                   window=tree.window, **opts)


@dataclass(frozen=True)
class Send:
    dst_ip: str
    payload: bytes


@dataclass(frozen=True)
class SendBatch:
    """Payloads to send to one address, in order: row i of `payloads` is one datagram."""
    dst_ip: str
    payloads: np.ndarray        # (m, 16 + 4k) uint8, C-contiguous

    def __len__(self) -> int:
        return len(self.payloads)

    def sends(self) -> list[Send]:
        return [Send(self.dst_ip, row.tobytes()) for row in self.payloads]


@dataclass
class ClientStats:
    sent: int = 0               # packets, first transmissions and retransmissions
    retransmissions: int = 0
    results: int = 0            # useful results (one per chunk)
    duplicate_results: int = 0  # results for chunks already done or not current
    bad_packets: int = 0        # not decodable, wrong job, or offset mismatch
    bytes_sent: int = 0
    bytes_received: int = 0
    cwnd_decreases: int = 0     # multiplicative decreases (at most one per recovery episode)
    cwnd_undos: int = 0         # decreases undone: every timed-out chunk was only late
    random_losses: int = 0      # losses with no queue behind them (loss_response "backlog")


@dataclass
class _Iteration:
    base_seq: int
    length: int
    n: int                                          # chunks
    packets: np.ndarray                             # (n, 16 + 4k) uint8: their payloads
    sums: np.ndarray                                # (n, k) int32: the results' values
    exponents: np.ndarray
    flags: int
    sent_at: list = field(default_factory=list)
    retries: list = field(default_factory=list)
    deadline: list = field(default_factory=list)
    last_tx: list = field(default_factory=list)     # time of the latest transmission
    timeout: list = field(default_factory=list)     # its RTO (backed off) when it was sent
    lost: list = field(default_factory=list)        # heap of timed-out chunks to re-send
    in_flight: int = 0                              # sent, no result, not timed out
    outstanding: dict = field(default_factory=dict) # in the pipe: j -> last_tx, in send order
    event: set = field(default_factory=set)         # timed out since the last cut, unanswered
    event_resent: bool = False                      # one of them was re-sent: real loss
    episode: set = field(default_factory=set)       # unanswered at the last cut: no cut till none is
    results: set = field(default_factory=set)      # chunks that have their result
    # heap of the chunks that may go (never sent, their slot free): the first window at
    # the start (a sorted list is a heap), then chunk j + W when chunk j gets its result
    unlocked: list = field(default_factory=list)
    overflow: bool = False


def pack_values(cfg: ClientConfig, values: np.ndarray, base_seq: int, exponent=0,
                overflow: bool = False, reuse: tuple | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """A tensor's payloads for start(): ((n, 16 + 4k) uint8 rows, chunk j = sequence number
    base_seq + j; the (n, k) int32 array its sums go to; the n exponents; the number of
    values). Also workers/ina_core.py's.

    reuse: the last tensor's (rows, sums), filled again when it had as many chunks (the
    usual case: one gradient per iteration). Fresh arrays of tens of MB each cost their
    page faults, and the sums' fall inside the transfer, as results are written. Safe:
    sends are copies, result() is a copy (or a view the caller takes as such), a new tensor
    starts only when the last is done, and the sums need no zeroing: every row is written
    by its chunk's result before done."""
    flat = np.asarray(values).reshape(-1)
    if flat.dtype != np.int32:
        raise TypeError(f"chunks carry int32 values; quantize first (got {flat.dtype})")
    k = cfg.k
    n = num_chunks(flat.size, k)
    if flat.size == n * k:
        vals = flat.reshape(n, k)
    else:                                               # the last chunk zero padded
        vals = np.zeros((n, k), dtype=np.int32)
        vals.reshape(-1)[:flat.size] = flat
    out = sums = None
    if reuse is not None and len(reuse[0]) == n:
        out, sums = reuse[0].view(agg_batch.packet_dtype(k)).reshape(n), reuse[1]
    exps = np.broadcast_to(np.asarray(exponent, dtype=np.int64), (n,)).copy()
    flags = wire.DATA | (wire.OVERFLOW if overflow else 0)
    packets = agg_batch.pack_tensor(cfg.job, flags, base_seq, cfg.window, cfg.sender,
                                    cfg.fan_in, exps, vals, out=out)
    if sums is None:
        sums = np.empty((n, k), dtype=np.int32)
    return packets.view(np.uint8).reshape(n, -1), sums, exps, flat.size


def congestion_window(cfg: ClientConfig) -> Aimd:
    """A new client's congestion window (the C core takes its constants from it too)."""
    w = cfg.window
    return Aimd(cwnd=float(min(w, cfg.initial_cwnd) if cfg.congestion_control else w),
                ssthresh=float(w), max_cwnd=float(w), enabled=cfg.congestion_control,
                law=cfg.congestion_law, time_dilation=cfg.time_dilation,
                c=cubic_c(wire.frame_bytes(cfg.k)))


def failure_message(cfg: ClientConfig, j: int, retransmissions: int) -> str:
    """AggregationFailed's text for chunk j of the tensor."""
    return (f"job {cfg.job}: chunk at offset {j * cfg.k} got no result after "
            f"{retransmissions} retransmissions to {cfg.agg_ip}; check that the switches "
            "are programmed for this job (control/agg_entries.py) and routes reach it")


class InaClient:
    def __init__(self, cfg: ClientConfig):
        self.cfg = cfg
        self.rtt = RttEstimator(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
        self.stats = ClientStats()
        self.next_seq = 0
        self._it: _Iteration | None = None
        self._timers: list[tuple[float, int]] = []
        # Timeouts in a row with no result in between. Random loss while results keep
        # coming is not backed off (other chunks prove the path works); a stall (link
        # down, congestion, unprogrammed switch) backs off exponentially.
        self._stalls = 0
        # RACK state: the latest send time among answered chunks (first transmissions
        # only: Karn), the round trip of that answer, and the time of the last result
        self._rack_sent = float("-inf")
        self._rack_rtt = 0.0
        self._rack_at: float | None = None
        self._progress = float("-inf")
        self.cc = congestion_window(cfg)
        self.pacer = Pacer(enabled=cfg.pacing, max_rate=cfg.max_rate_pps)
        self._veno_beta = veno_threshold(wire.frame_bytes(cfg.k))
        self._pace_at: float | None = None  # when pacing lets the next sends go
        # chunks transmitted since the last output, in order, and which of them are RETX
        self._out: list[int] = []
        self._out_retx: list[int] = []
        self._payload_len = agg_batch.payload_len(cfg.k)
        nothing = np.empty((0, self._payload_len), dtype=np.uint8)
        nothing.flags.writeable = False
        self._nothing = SendBatch(cfg.agg_ip, nothing)      # most timer calls send nothing

    # ------------------------------------------------------------- inputs
    def start(self, values: np.ndarray, now: float, exponent=0, overflow: bool = False) -> list[Send]:
        """Begin aggregating one int32 tensor. exponent: one int, or one per chunk."""
        return self.start_batch(values, now, exponent, overflow).sends()

    def start_batch(self, values: np.ndarray, now: float, exponent=0,
                    overflow: bool = False) -> SendBatch:
        if self._it is not None and not self.done:
            raise RuntimeError("previous tensor is still being aggregated; wait for done")
        it = self._it
        packets, sums, exps, length = pack_values(self.cfg, values, self.next_seq, exponent, overflow,
                                                  reuse=(it.packets, it.sums) if it else None)
        n = len(packets)
        self._it = _Iteration(self.next_seq, length, n, packets, sums, exps,
                              wire.DATA | (wire.OVERFLOW if overflow else 0),
                              [None] * n, [0] * n, [None] * n, [None] * n, [0.0] * n,
                              unlocked=list(range(min(self.cfg.window, n))))
        self.next_seq += n
        self._timers = []
        self._rack_sent, self._rack_at, self._progress = float("-inf"), None, now
        self.pacer.start(now)
        self._send_ready(now)
        return self._flush()

    def on_packet(self, payload: bytes, now: float, arrival: float | None = None) -> list[Send]:
        """A packet read at `now`; `arrival` is when it reached the host (the kernel's
        receive timestamp, on the same clock), if known: the delivery-rate estimate needs
        it, since a worker waiting for a CPU reads results in batches."""
        self.stats.bytes_received += len(payload)
        f = wire.decode(payload)
        if f is None or f.job != self.cfg.job or not f.flags & wire.RESULT or len(f.values) != self.cfg.k:
            self.stats.bad_packets += 1
            return []
        j = (f.gen - 1) * self.cfg.window + f.slot - (self._it.base_seq if self._it else 0)
        if self._on_result(j, f.offset == j * self.cfg.k, f.flags, now, arrival):
            self._it.sums[j] = f.values
        return self._flush().sends()

    def on_packets(self, rows: np.ndarray, lengths, now: float, arrivals=None) -> SendBatch:
        """Datagrams read at `now`, in order: row i of `rows` (uint8, at least 16 + 4k
        wide) holds the first bytes of datagram i, lengths[i] its length; arrivals[i] its
        arrival time or None (see on_packet). The same as on_packet on each in turn."""
        cfg, it = self.cfg, self._it
        if not isinstance(lengths, list):
            lengths = np.asarray(lengths).tolist()
        self.stats.bytes_received += sum(lengths)
        size, k, w, job = self._payload_len, cfg.k, cfg.window, cfg.job
        base = it.base_seq if it else 0
        taken, chunks = [], []
        for i, ((pjob, flags, slot, gen, offset, _, _, _, pk), length) in \
                enumerate(zip(agg_batch.headers(rows), lengths)):
            # well-formed as agg_packet.decode and on_packet's checks: whole, our k, our job
            if length < size or pk != k or pjob != job or not flags & wire.RESULT:
                self.stats.bad_packets += 1
                continue
            j = (gen - 1) * w + (slot & 0x7FFF) - base
            if self._on_result(j, offset == j * k, flags, now,
                               None if arrivals is None else arrivals[i]):
                taken.append(i)
                chunks.append(j)
        if taken:
            agg_batch.store_values(it.sums, chunks, rows, taken, k)
        return self._flush()

    def _on_result(self, j: int, offset_ok: bool, flags: int, now: float,
                   arrival: float | None) -> bool:
        """A well-formed result of this job for chunk j (its header's flags); True if it
        was accepted (its values are then the caller's to store)."""
        it = self._it
        if it is None or not 0 <= j < it.n or j in it.results or it.sent_at[j] is None:
            self.stats.duplicate_results += 1
            return False
        if not offset_ok:
            self.stats.bad_packets += 1     # a switch mixed up slots: never accept it
            return False
        it.results.add(j)
        if j + self.cfg.window < it.n:      # its slot is free for the chunk W later
            heapq.heappush(it.unlocked, j + self.cfg.window)
        it.overflow |= bool(flags & wire.OVERFLOW)
        self.stats.results += 1
        if it.deadline[j] is not None:      # still in the pipe (not waiting in `lost`)
            it.in_flight -= 1
        it.deadline[j] = None
        it.outstanding.pop(j, None)
        self._progress = now
        cc = self.cc
        it.episode.discard(j)
        if it.event and j in it.event:
            it.event.discard(j)
            if not it.event and not it.event_resent and cc.before_cut is not None:
                cc.undo()                   # all of the event's chunks were only late
                self.stats.cwnd_undos += 1
        cc.on_result(now)
        # Karn's rule over the job: only unambiguous samples. Not after this worker's own
        # re-send, nor when the result says (RETX) that a re-sent contribution or partial
        # completed it: then it waited for another worker's loss recovery, and that
        # worker's timeout in its round trip inflated SRTT, the RTO and RACK's window of
        # every worker (flat ina, 1 % WAN loss: SRTT grew to 12 s and tensors from 1.1 to
        # 31 s in tests/test_congestion.py's simulation; docs/protocol.md)
        if it.retries[j] == 0 and not flags & wire.RETX:
            sent = it.sent_at[j]
            rtt = self.rtt
            rtt.sample(now - sent)
            if sent >= self._rack_sent:
                self._rack_sent, self._rack_rtt = sent, now - sent
                if self.cfg.rack:
                    self._rack_detect(now)
            # nor re-sent chunks for the rate: a switch answers them from its stored
            # result, in bursts at the LAN's rate, not the path's
            self.pacer.on_result(now if arrival is None else arrival, rtt.srtt)
        self._stalls = 0
        self._send_ready(now)
        return True

    def on_timer(self, now: float) -> list[Send]:
        return self.on_timer_batch(now).sends()

    def on_timer_batch(self, now: float) -> SendBatch:
        it = self._it
        if self.cfg.rack and it is not None:
            self._rack_detect(now)
        fired = False
        while self._timers and self._timers[0][0] <= now:
            deadline, j = heapq.heappop(self._timers)
            if it is None or j in it.results or it.deadline[j] != deadline:
                continue                    # answered or re-armed since
            restart = self._progress + it.timeout[j]
            if self.cfg.rack and restart > now:
                it.deadline[j] = restart    # results came meanwhile: the timer restarts
                heapq.heappush(self._timers, (restart, j))
                continue
            if it.retries[j] >= self.cfg.max_retransmissions:
                raise AggregationFailed(failure_message(self.cfg, j, it.retries[j]))
            self._declare_lost(j, now)
            fired = True
        if fired:                           # a timeout: no result for a whole RTO
            self._stalls += 1               # (before the re-sends below are armed)
        if it is not None:
            self._send_ready(now)
        return self._flush()

    def _declare_lost(self, j: int, now: float) -> None:
        # The copy left the pipe (lost, or stuck behind a slower worker): it no longer
        # counts against cwnd, and the window shrinks once per recovery episode.
        it = self._it
        it.deadline[j] = None
        it.in_flight -= 1
        it.outstanding.pop(j, None)
        heapq.heappush(it.lost, j)
        if self.cfg.loss_response == "backlog" and \
                queue_backlog(self.cc.cwnd, self.rtt.srtt, self.rtt.min_rtt) < self._veno_beta:
            self.stats.random_losses += 1   # no queue behind it: re-sent, the window kept
            return
        # One cut per recovery episode, as TCP's (RFC 6582, 6675): not again while a chunk
        # that was unanswered at the last cut still is. A worker whose chunk waits for
        # another's slow recovery declares it lost again and again, and had cut each time
        # (the slowest workers' windows collapsed while the job waited; docs/protocol.md)
        if not it.episode and self.cc.on_loss(it.last_tx[j], now):
            self.stats.cwnd_decreases += 1
            it.event, it.event_resent = set(), False
            it.episode = {x for x in it.lost if x not in it.results}
            it.episode.update(it.outstanding)
        it.event.add(j)

    def _reorder_window(self) -> float:
        return (self.rtt.min_rtt or 0.0) / 4 + self.cfg.reorder_extra

    def _rack_detect(self, now: float) -> None:
        """Declare lost, oldest first, the chunks sent before an answered one whose round
        trip plus the reordering window has passed (RFC 8985, 6.2)."""
        it, self._rack_at, lost = self._it, None, []
        # A re-sent chunk waits at least SRTT, not the answered chunk's round trip alone: a
        # chunk's result waits for the last worker's copy, so a worker that was that last
        # one sees a round trip of its own path only, while its other chunks wait for the
        # others' copies. With that as the wait, chunks were declared lost 5 ms after they
        # were sent (near the root) and again and again (one 88 times; flat ina, 1 % WAN
        # loss, simulation), and with cuts a chunk ran out of re-sends. A first copy waits
        # the answered chunk's round trip only (RFC 8985): with the floor, a worker ahead
        # of the job (SRTT: its wait at the root, seconds) found its own losses that late.
        # A first copy kept ends the scan (every later one was sent later and waits as long);
        # a re-sent chunk kept does not (the first copies after it wait less).
        reorder, floor = self._reorder_window(), max(self._rack_rtt, self.rtt.srtt or 0.0)
        for j, t in it.outstanding.items():     # oldest first
            if t >= self._rack_sent:
                break
            resent = it.retries[j] > 0
            wait = (floor if resent else self._rack_rtt) + reorder
            if now < t + wait:
                if self._rack_at is None or t + wait < self._rack_at:
                    self._rack_at = t + wait
                if not resent:
                    break
                continue
            if it.retries[j] >= self.cfg.max_retransmissions:
                continue                    # its own timer reports the failure
            lost.append(j)
        for j in lost:
            self._declare_lost(j, now)

    def set_max_rate(self, pps: float) -> None:
        """Cap the sending rate at pps packets/s (0: no cap) from the next tensor on
        (Pacer.set_max_rate): a scheme's controller re-pacing a running worker."""
        self.pacer.set_max_rate(pps)

    # ------------------------------------------------------------ outputs
    def next_deadline(self) -> float | None:
        it = self._it
        while self._timers and (it is None or self._timers[0][1] in it.results
                                or it.deadline[self._timers[0][1]] != self._timers[0][0]):
            heapq.heappop(self._timers)
        times = ([self._timers[0][0]] if self._timers else []) + \
            ([self._pace_at] if self._pace_at is not None and not self.done else []) + \
            ([self._rack_at] if self._rack_at is not None and not self.done else [])
        return min(times) if times else None

    @property
    def done(self) -> bool:
        return self._it is not None and len(self._it.results) == self._it.n

    @property
    def overflow(self) -> bool:
        """Some contribution to the last tensor was clipped by quantization."""
        return bool(self._it and self._it.overflow)

    def result(self, copy: bool = True) -> np.ndarray:
        """The aggregated int32 tensor (sum over all workers of the job). copy=False: a
        view of the client's buffer, valid until the next start (saves a caller that
        converts it at once a copy of tens of MB)."""
        if not self.done:
            raise RuntimeError("aggregation not finished: keep feeding packets and timers")
        it = self._it
        view = it.sums.reshape(-1)[:it.length]
        return view.copy() if copy else view

    def result_exponents(self) -> np.ndarray:
        return self._it.exponents.copy()

    # ------------------------------------------------------------ internals
    def _send_ready(self, now: float) -> None:
        """Queued retransmissions and new chunks, the lowest chunk first, while cwnd and
        pacing allow (into the outbox: _flush packs them). A chunk j >= W may go once chunk
        j - W has its result (its slot is free: `unlocked`), so a slot whose chunk waits
        for a re-send holds back only its own next chunk. Lowest first, re-sends and new chunks alike: every worker then works on
        the oldest unfinished chunk first, which all of them can send; with re-sends first
        a worker whose cwnd was full of chunks waiting for another worker's copies re-sent
        them over and over, and never sent the one that worker waited for from it."""
        it, pace = self._it, self.pacer
        # Constant during this call: only results and losses move cwnd, only samples the
        # RTO, only start() the pacing rate; an unpaced Pacer always lets sends go.
        allowed, paced, rto = self.cc.allowed(), pace.rate is not None, self.rtt.rto
        lost, results, unlocked = it.lost, it.results, it.unlocked
        out, outstanding, timers, deadline = self._out, it.outstanding, self._timers, it.deadline
        while it.in_flight < allowed and (not paced or pace.may_send(now)):
            while lost and lost[0] in results:
                heapq.heappop(lost)         # a late result answered it meanwhile
            if lost and (not unlocked or lost[0] < unlocked[0]):
                j = heapq.heappop(lost)
                it.retries[j] += 1
                self.stats.retransmissions += 1
                if j in it.event:
                    it.event_resent = True
                    self.cc.before_cut = None   # a re-sent chunk's result cannot tell loss from delay
                n = min(self._stalls, it.retries[j])
                self._transmit(j, now, True, self.rtt.backed_off(n) if n else rto)
                continue
            if not unlocked:
                break
            # a new chunk: _transmit inlined (the hot path: one chunk per result in steady
            # state); it was never sent, so it is in no timer or `outstanding` yet
            j = heapq.heappop(unlocked)
            out.append(j)
            it.sent_at[j] = it.last_tx[j] = outstanding[j] = now
            it.in_flight += 1
            if paced:
                pace.sent(now)
            it.timeout[j] = rto             # never re-sent: backed_off(0) is the RTO
            deadline[j] = d = now + rto
            heapq.heappush(timers, (d, j))
        blocked = (lost or unlocked) and it.in_flight < allowed
        self._pace_at = pace.next_send_time(now) if blocked else None

    def _flush(self) -> SendBatch:
        """The outbox as payloads: rows of the tensor's packed packets, RETX set on the
        re-sent ones' copies."""
        out, retx = self._out, self._out_retx
        if not out:
            return self._nothing
        self.stats.sent += len(out)
        self.stats.bytes_sent += len(out) * self._payload_len
        rows = self._it.packets.take(out, axis=0)      # a copy, in send order
        if retx:
            rows[retx, 1] |= wire.RETX                  # byte 1: the flags
        self._out, self._out_retx = [], []
        return SendBatch(self.cfg.agg_ip, rows)

    def _transmit(self, j: int, now: float, retx: bool, timeout: float) -> None:
        it = self._it
        if retx:
            self._out_retx.append(len(self._out))
        self._out.append(j)
        if it.sent_at[j] is None:
            it.sent_at[j] = now
        it.last_tx[j] = now
        it.in_flight += 1
        it.outstanding.pop(j, None)
        it.outstanding[j] = now             # to the end: the newest transmission
        if self.pacer.rate is not None:
            self.pacer.sent(now)
        it.timeout[j] = timeout             # the RTO, backed off, when it was sent
        it.deadline[j] = deadline = now + timeout
        heapq.heappush(self._timers, (deadline, j))
