"""User-space egress link emulation: fixed delay, jitter and random loss per port.

This machine's kernel has htb/tbf but no netem, so WAN delay, jitter and loss are applied by
the switch itself on its egress ports (bandwidth stays with htb on the interface, which the
kernel does well). Each port gets a delay line:

- loss: each frame is dropped with probability loss_pct/100 (Bernoulli, seeded RNG);
- delay: the frame leaves at now + delay_ms + jitter, jitter ~ Normal(0, jitter_ms);
  the sample is clipped at 0 so no frame leaves before it arrived;
- order: unless reordering is asked for, a frame never leaves before the previous one
  (departure = max(sample, previous departure)), as on a real link, which is FIFO;
  with reorder=1 frames leave in departure-time order (a heap), as netem does;
- limit: at most `limit` frames wait in the line (netem's limit); more are counted as overflow.

The process's selectors loop asks `next_due()` and wakes at that time with a timerfd
(`PreciseTimer`), because epoll's own timeout has only millisecond resolution.
Pure logic (`DelayLine`) takes `now` as an argument so it is unit-tested without clocks.
"""
from __future__ import annotations

import collections
import ctypes
import ctypes.util
import heapq
import os
import random
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class LinkEmuConfig:
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    seed: int | None = None
    reorder: bool = False
    limit: int = 10000

    def __post_init__(self):
        for name in ("delay_ms", "jitter_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"link emulation: {name}={getattr(self, name)} must be >= 0 ms")
        if not 0.0 <= self.loss_pct <= 100.0:
            raise ValueError(f"link emulation: loss_pct={self.loss_pct} must be a percentage in 0..100")
        if self.limit < 1:
            raise ValueError(f"link emulation: limit={self.limit} must be at least 1 frame")

    @property
    def is_noop(self) -> bool:
        return self.delay_ms == 0 and self.jitter_ms == 0 and self.loss_pct == 0


_FIELDS = {"delay_ms": float, "jitter_ms": float, "loss_pct": float, "seed": int, "reorder": int, "limit": int}


def parse_link_emu_spec(spec: str) -> tuple[int, LinkEmuConfig]:
    """'2:delay_ms=10,jitter_ms=1,loss_pct=0.5,seed=7' -> (2, LinkEmuConfig(...))."""
    port_text, sep, rest = spec.partition(":")
    if not sep or not port_text.strip().isdigit():
        raise ValueError(f"bad --link-emu {spec!r}: expected PORT:delay_ms=D,jitter_ms=J,loss_pct=L[,seed=S]")
    values = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, val = item.partition("=")
        key = key.strip()
        if not eq or key not in _FIELDS:
            raise ValueError(f"bad --link-emu {spec!r}: unknown setting {item!r}; "
                             f"known settings: {', '.join(_FIELDS)}")
        try:
            values[key] = _FIELDS[key](val)
        except ValueError:
            raise ValueError(f"bad --link-emu {spec!r}: {key}={val!r} is not a number") from None
    if "reorder" in values:
        values["reorder"] = bool(values["reorder"])
    return int(port_text), LinkEmuConfig(**values)


def format_link_emu_spec(port: int, cfg: LinkEmuConfig) -> str:
    """Inverse of parse_link_emu_spec (used by the Mininet class to build command lines)."""
    parts = [f"delay_ms={cfg.delay_ms:g}", f"jitter_ms={cfg.jitter_ms:g}", f"loss_pct={cfg.loss_pct:g}"]
    if cfg.seed is not None:
        parts.append(f"seed={cfg.seed}")
    if cfg.reorder:
        parts.append("reorder=1")
    if cfg.limit != LinkEmuConfig.limit:
        parts.append(f"limit={cfg.limit}")
    return f"{port}:" + ",".join(parts)


class DelayLine:
    """One egress port's emulated link. Times are seconds on any monotonic clock."""

    def __init__(self, config: LinkEmuConfig):
        self.config = config
        self._rng = random.Random(config.seed)
        self._delay = config.delay_ms / 1000.0
        self._jitter = config.jitter_ms / 1000.0
        self._loss = config.loss_pct / 100.0
        self._fifo: collections.deque = collections.deque()   # (due, frame), due non-decreasing
        self._heap: list = []                                 # (due, seq, frame) when reordering
        self._seq = 0
        self._last_due = float("-inf")
        self.submitted = self.sent = self.lost = self.overflow = 0

    def __len__(self) -> int:
        return len(self._heap) if self.config.reorder else len(self._fifo)

    def sample_delay(self) -> float:
        """Delay of the next frame in seconds (before FIFO ordering)."""
        d = self._delay
        if self._jitter:
            d += self._rng.gauss(0.0, self._jitter)
        return d if d > 0.0 else 0.0

    def submit(self, frame: bytes, now: float) -> bool:
        """Enqueues a frame; False if the emulated link lost it or the line is full."""
        self.submitted += 1
        if self._loss and self._rng.random() < self._loss:
            self.lost += 1
            return False
        if len(self) >= self.config.limit:
            self.overflow += 1
            return False
        due = now + self.sample_delay()
        if self.config.reorder:
            heapq.heappush(self._heap, (due, self._seq, frame))
            self._seq += 1
        else:
            if due < self._last_due:
                due = self._last_due
            self._last_due = due
            self._fifo.append((due, frame))
        return True

    def next_due(self) -> float | None:
        if self.config.reorder:
            return self._heap[0][0] if self._heap else None
        return self._fifo[0][0] if self._fifo else None

    def pop_due(self, now: float) -> list[bytes]:
        """Frames whose departure time has come, in departure order."""
        out = []
        if self.config.reorder:
            heap = self._heap
            while heap and heap[0][0] <= now:
                out.append(heapq.heappop(heap)[2])
        else:
            fifo = self._fifo
            while fifo and fifo[0][0] <= now:
                out.append(fifo.popleft()[1])
        self.sent += len(out)
        return out

    def counters(self) -> dict:
        return {"submitted": self.submitted, "sent": self.sent, "lost": self.lost,
                "overflow": self.overflow, "queued": len(self)}


class LinkEmulation:
    """The delay lines of all emulated egress ports of one switch."""

    def __init__(self, configs: dict[int, LinkEmuConfig]):
        self.lines = {port: DelayLine(cfg) for port, cfg in configs.items()}

    def __contains__(self, port: int) -> bool:
        return port in self.lines

    def submit(self, port: int, frame: bytes, now: float) -> bool:
        return self.lines[port].submit(frame, now)

    def next_due(self) -> float | None:
        dues = [d for d in (line.next_due() for line in self.lines.values()) if d is not None]
        return min(dues) if dues else None

    def pop_due(self, now: float) -> list[tuple[int, bytes]]:
        return [(port, f) for port, line in self.lines.items() for f in line.pop_due(now)]


# --- a timer with sub-millisecond resolution for the selectors loop -------------------------

CLOCK_MONOTONIC = 1
TFD_NONBLOCK = os.O_NONBLOCK
TFD_CLOEXEC = os.O_CLOEXEC
TFD_TIMER_ABSTIME = 1
PR_SET_TIMERSLACK = 29


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class PreciseTimer:
    """A Linux timerfd armed at absolute CLOCK_MONOTONIC times (what time.monotonic() reads).

    It becomes readable at the deadline with the kernel's hrtimer precision (tens of
    microseconds), so registering it in the selector gives the loop sub-millisecond wake-ups
    that epoll's millisecond timeout cannot.
    """

    def __init__(self):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._settime = libc.timerfd_settime
        self._settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
        # The kernel may fire a normal thread's timers up to 50 us late to batch wake-ups
        # (timer slack); 1 ns asks for the deadline itself.
        libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(1), 0, 0, 0)
        fd = libc.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_create failed: {os.strerror(err)}")
        self.fd = fd
        self.armed_at: float | None = None

    def fileno(self) -> int:
        return self.fd

    def arm(self, deadline: float) -> None:
        """Fires at monotonic time `deadline` (seconds); re-arming replaces the old deadline."""
        if self.armed_at == deadline:
            return
        sec = int(deadline)
        nsec = int((deadline - sec) * 1e9)
        if sec <= 0 and nsec <= 0:
            nsec = 1   # an all-zero value would disarm the timer instead of firing now
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(sec, nsec))
        if self._settime(self.fd, TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_settime failed: {os.strerror(err)}")
        self.armed_at = deadline

    def disarm(self) -> None:
        if self.armed_at is None:
            return
        self._settime(self.fd, 0, ctypes.byref(_Itimerspec()), None)
        self.armed_at = None

    def consume(self) -> int:
        """Clears readiness after it fired; returns the number of expirations (0 if spurious)."""
        self.armed_at = None
        try:
            return struct.unpack("<Q", os.read(self.fd, 8))[0]
        except BlockingIOError:
            return 0

    def close(self) -> None:
        os.close(self.fd)
