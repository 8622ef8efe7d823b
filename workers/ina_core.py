"""The INA client with its per-result work in C (workers/native/ina_core.c), and the
factory that picks a client for a ClientConfig.

    client = make_client(cfg)       # cfg.core: "python" | "c" | "auto"

Why: InaClient's Python costs several microseconds per result, and a worker handles tens
of thousands of results per second on a machine whose cores it shares with the switch and
the other workers (docs/ina.md, "The client core"). InaCoreClient is the same state
machine, decision for decision: workers/ina_client.py stays the reference and the
fallback, tests/test_ina_core.py drives both with the same events and compares every byte
sent and every counter. Here stay what is not per result: the checks and the packing of a
tensor when it starts (numpy, as InaClient), the exceptions, and read-only views of the
estimators' state for the communicators (rtt.srtt, rtt.rto, cc.cwnd, pacer.rate;
rtt.granularity is also written).
"""
from __future__ import annotations

import ctypes
import warnings
from pathlib import Path

import numpy as np

from workers import agg_batch
from workers import agg_packet as wire
from workers import pacing
from workers.congestion import veno_threshold
from workers.ina_client import (AggregationFailed, ClientConfig, ClientStats, InaClient, SendBatch,
                                congestion_window, failure_message, pack_values)
from workers.native.build import CompileError, shared_library
from workers.rtt import RttEstimator

SOURCE = Path(__file__).resolve().parent / "native" / "ina_core.c"
_ERR_FAILED, _ERR_NEGATIVE_RTT, _ERR_MEMORY = -1, -2, -3
_STATS = tuple(ClientStats.__dataclass_fields__)


class _Config(ctypes.Structure):
    """struct ina_config of ina_core.c, field for field."""
    _fields_ = [(f, ctypes.c_int64) for f in (
        "job", "window", "k", "max_retransmissions", "cc_enabled", "cubic", "rack", "pacing",
        "backlog", "initial_cwnd", "quantum", "burst_quanta", "min_samples", "payload_len")] + \
        [(f, ctypes.c_double) for f in (
            "initial_rto", "min_rto", "max_rto", "granularity", "beta", "cubic_c",
            "time_dilation", "veno_beta", "gain", "interval_rtts", "reorder_extra", "max_rate")]


class CoreStats(ctypes.Structure):
    """ClientStats' counters where the C core counts them (the head of struct ina_view):
    the same attribute names, read and written in place, so they are always current."""
    _fields_ = [(f, ctypes.c_int64) for f in _STATS]

    def snapshot(self) -> ClientStats:
        return ClientStats(*(getattr(self, f) for f in _STATS))

    def __repr__(self) -> str:
        return repr(self.snapshot())


class _View(ctypes.Structure):
    """struct ina_view of ina_core.c, field for field: the counters and estimators."""
    _fields_ = [("stats", CoreStats)] + [(f, ctypes.c_int64) for f in (
        "has_it", "n", "n_results", "overflow", "has_srtt", "has_min_rtt", "has_rate",
        "err_chunk", "err_retries", "outbox", "outbox_rows")] + \
        [(f, ctypes.c_double) for f in (
            "srtt", "rttvar", "min_rtt", "granularity", "cwnd", "ssthresh", "rate", "err_rtt")]


_lib = None
_lib_error: str | None = None


def library() -> ctypes.CDLL:
    """ina_core.c, built once per process (and cached on disk: workers/native/build.py)."""
    global _lib, _lib_error
    if _lib is None and _lib_error is None:
        try:
            lib = shared_library(SOURCE)
        except (CompileError, OSError) as e:
            _lib_error = str(e)
        else:
            p, i64, dbl = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
            for name, res, args in [
                    ("ina_new", p, [ctypes.POINTER(_Config), ctypes.POINTER(_View)]), ("ina_free", None, [p]),
                    ("ina_start", i64, [p, i64, i64, p, p, dbl]),
                    ("ina_on_packets", i64, [p, p, i64, p, i64, dbl, p]),
                    ("ina_on_timer", i64, [p, dbl]), ("ina_next_deadline", dbl, [p]),
                    ("ina_rto", dbl, [p]), ("ina_set_max_rate", None, [p, dbl])]:
                f = getattr(lib, name)
                f.restype, f.argtypes = res, args
            _lib = lib
    if _lib is None:
        raise CompileError(_lib_error)
    return _lib


_warned = False


def make_client(cfg: ClientConfig):
    """The client cfg.core asks for: "python" InaClient, "c" InaCoreClient (CompileError
    if it cannot be built), "auto" the C one when it builds, else InaClient after one
    warning saying why."""
    global _warned
    if cfg.core == "python":
        return InaClient(cfg)
    if cfg.core == "c":
        return InaCoreClient(cfg)
    try:
        library()
    except CompileError as e:
        if not _warned:
            _warned = True
            warnings.warn(f"INA client core in C unavailable, using the Python one: {e}",
                          RuntimeWarning, stacklevel=2)
        return InaClient(cfg)
    return InaCoreClient(cfg)


class _RttView:
    """client.rtt of InaClient (an RttEstimator), over the C state."""
    def __init__(self, owner: "InaCoreClient"):
        self._o = owner

    srtt = property(lambda self: self._o._v.srtt if self._o._v.has_srtt else None)
    rttvar = property(lambda self: self._o._v.rttvar if self._o._v.has_srtt else None)
    min_rtt = property(lambda self: self._o._v.min_rtt if self._o._v.has_min_rtt else None)
    rto = property(lambda self: self._o._lib.ina_rto(self._o._core))

    @property
    def granularity(self) -> float:
        return self._o._v.granularity

    @granularity.setter
    def granularity(self, value: float) -> None:
        self._o._v.granularity = float(value)


class _CcView:
    def __init__(self, owner: "InaCoreClient"):
        self._o = owner

    cwnd = property(lambda self: self._o._v.cwnd)
    ssthresh = property(lambda self: self._o._v.ssthresh)


class _PacerView:
    def __init__(self, owner: "InaCoreClient"):
        self._o = owner

    rate = property(lambda self: self._o._v.rate if self._o._v.has_rate else None)


class InaCoreClient:
    """InaClient's interface (batch and per-packet calls, done, result, stats, ...) over
    the state machine in C."""

    def __init__(self, cfg: ClientConfig):
        lib = library()
        # the Python objects validate the options as InaClient's do and give the constants
        rtt = RttEstimator(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
        cc = congestion_window(cfg)
        pacer = pacing.Pacer(enabled=cfg.pacing)
        self._payload_len = agg_batch.payload_len(cfg.k)
        c = _Config(job=cfg.job, window=cfg.window, k=cfg.k, max_retransmissions=cfg.max_retransmissions,
                    cc_enabled=cfg.congestion_control, cubic=cc.law == "cubic", rack=cfg.rack,
                    pacing=cfg.pacing, backlog=cfg.loss_response == "backlog",
                    initial_cwnd=cfg.initial_cwnd, quantum=pacer.quantum,
                    burst_quanta=pacing.BURST_QUANTA, min_samples=pacing.MIN_SAMPLES,
                    payload_len=self._payload_len, initial_rto=rtt.initial_rto,
                    min_rto=rtt.min_rto, max_rto=rtt.max_rto, granularity=rtt.granularity,
                    beta=cc.beta, cubic_c=cc.c, time_dilation=cc.time_dilation,
                    veno_beta=veno_threshold(wire.frame_bytes(cfg.k)), gain=pacer.gain,
                    interval_rtts=pacing.INTERVAL_RTTS, reorder_extra=cfg.reorder_extra,
                    max_rate=cfg.max_rate_pps)
        self._v = _View()
        core = lib.ina_new(ctypes.byref(c), ctypes.byref(self._v))
        if not core:
            raise MemoryError("ina_new")
        self._lib, self._core = lib, core
        self.stats = self._v.stats      # the counters C updates: current after every call
        self.cfg = cfg
        self.next_seq = 0
        self.rtt, self.cc, self.pacer = _RttView(self), _CcView(self), _PacerView(self)
        self._arrays = None             # the tensor's packets, sums, exponents, length
        self._outbox, self._outbox_at = None, 0     # a view of C's outbox (rows to send)
        nothing = np.empty((0, self._payload_len), dtype=np.uint8)
        nothing.flags.writeable = False
        self._nothing = SendBatch(cfg.agg_ip, nothing)
        self._batch_buffers(64)

    def _batch_buffers(self, size: int) -> None:
        """Room for a batch's lengths and arrival times, with their addresses taken once
        (numpy's .ctypes.data costs ~1 us a call, as much as the C work of a result)."""
        self._lengths = np.empty(size, np.int64)
        self._arrivals = np.empty(size, np.float64)
        self._lengths_at = self._lengths.ctypes.data
        self._arrivals_at = self._arrivals.ctypes.data

    def __del__(self):
        core, self._core = getattr(self, "_core", None), None
        if core:
            self._lib.ina_free(core)

    # ------------------------------------------------------------- inputs
    def start(self, values: np.ndarray, now: float, exponent=0, overflow: bool = False):
        return self.start_batch(values, now, exponent, overflow).sends()

    def start_batch(self, values: np.ndarray, now: float, exponent=0,
                    overflow: bool = False) -> SendBatch:
        """As InaClient.start_batch."""
        if self._arrays is not None and not self.done:
            raise RuntimeError("previous tensor is still being aggregated; wait for done")
        last = self._arrays
        packets, sums, exps, length = pack_values(self.cfg, values, self.next_seq, exponent, overflow,
                                                  reuse=last[:2] if last else None)
        n = len(packets)
        self._arrays = (packets, sums, exps, length)
        base, self.next_seq = self.next_seq, self.next_seq + n
        m = self._lib.ina_start(self._core, n, base, packets.ctypes.data, sums.ctypes.data, now)
        return self._sends(m)

    def on_packet(self, payload: bytes, now: float, arrival: float | None = None):
        """As InaClient.on_packet (through the batch call: the same decisions)."""
        rows, lengths = agg_batch.rows_of([payload], self._payload_len)
        return self.on_packets(rows, lengths, now, None if arrival is None else [arrival]).sends()

    def on_packets(self, rows: np.ndarray, lengths, now: float, arrivals=None) -> SendBatch:
        """As InaClient.on_packets (None among arrivals: read at `now`)."""
        m = len(lengths)
        if m > len(self._lengths):
            self._batch_buffers(2 * m)
        self._lengths[:m] = lengths
        arr = None
        if arrivals is not None:
            self._arrivals[:m] = arrivals   # numpy makes a None NaN, which C reads as `now`
            arr = self._arrivals_at
        if not rows.flags.c_contiguous or rows.shape[1] < self._payload_len:
            rows = _widened(rows, self._payload_len)
        r = self._lib.ina_on_packets(self._core, _address(rows), rows.strides[0],
                                     self._lengths_at, m, now, arr)
        return self._sends(r)

    def on_timer(self, now: float):
        return self.on_timer_batch(now).sends()

    def set_max_rate(self, pps: float) -> None:
        if pps < 0:
            raise ValueError(f"max_rate must be >= 0 (0: no cap), got {pps}")
        self._lib.ina_set_max_rate(self._core, float(pps))

    def on_timer_batch(self, now: float) -> SendBatch:
        return self._sends(self._lib.ina_on_timer(self._core, now))

    def _sends(self, m: int) -> SendBatch:
        if m > 0:
            v = self._v
            if v.outbox != self._outbox_at:     # C grew (moved) its outbox: view it anew
                buf = (ctypes.c_uint8 * (v.outbox_rows * self._payload_len)).from_address(v.outbox)
                self._outbox = np.frombuffer(buf, np.uint8).reshape(v.outbox_rows, -1)
                self._outbox_at = v.outbox
            return SendBatch(self.cfg.agg_ip, self._outbox[:m].copy())
        if m == 0:
            return self._nothing
        v = self._v
        if m == _ERR_FAILED:
            raise AggregationFailed(failure_message(self.cfg, v.err_chunk, v.err_retries))
        if m == _ERR_NEGATIVE_RTT:
            raise ValueError(f"negative RTT sample {v.err_rtt}: timestamps must come from one "
                             "monotonic clock")
        raise MemoryError("ina_core: out of memory")

    # ------------------------------------------------------------ outputs
    def next_deadline(self) -> float | None:
        d = self._lib.ina_next_deadline(self._core)
        return None if d != d else d

    @property
    def done(self) -> bool:
        v = self._v
        return bool(v.has_it) and v.n_results == v.n

    @property
    def overflow(self) -> bool:
        return bool(self._v.has_it and self._v.overflow)

    def result(self, copy: bool = True) -> np.ndarray:
        """As InaClient.result (copy=False: a view, valid until the next start)."""
        if not self.done:
            raise RuntimeError("aggregation not finished: keep feeding packets and timers")
        _, sums, _, length = self._arrays
        view = sums.reshape(-1)[:length]
        return view.copy() if copy else view

    def result_exponents(self) -> np.ndarray:
        return self._arrays[2].copy()


def _address(a: np.ndarray) -> int:
    """The address of an array's data: through ctypes' buffer protocol (~0.3 us) where the
    array is writable and not empty (the UDP receiver's rows), else numpy's .ctypes (~1 us)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def _widened(rows: np.ndarray, width: int) -> np.ndarray:
    """rows as a C-contiguous array at least `width` wide (zero padded): C reads whole rows."""
    out = np.zeros((len(rows), max(width, rows.shape[1])), dtype=np.uint8)
    out[:, :rows.shape[1]] = rows
    return out
