"""CompiledSwitch: a program's compiled pipeline, driven like softswitch.target.switch.Switch.

    sw = Switch.from_file("p4/forward.p4")     # the Python path: program, SwitchState
    csw = CompiledSwitch(sw)                    # Unsupported / BuildError when it cannot
    csw.process(1, frame)                       # [(port, bytes)], as Switch.process
    csw.state is sw.state                       # the one state the control plane changes

`compile_switch(sw, log)` is what the switch process calls: the CompiledSwitch, or None
after logging the one line that names why the program stays on the Python path.
"""
from __future__ import annotations

import ctypes
import time

from softswitch.native.build import BuildError, load_library
from softswitch.native.cgen_program import generate
from softswitch.native.cgen_types import Unsupported
from softswitch.native.mirror import StateMirror, declare
from softswitch.runtime.v1model import format_log
from softswitch.target.switch import STAT_KEYS, _worth_logging

# ssrt.h's ss_stats, in its order
C_STATS = ("packets_in", "packets_out", "dropped", "parser_errors", "checksum_errors", "oversized",
           "multicast_copies", "errors", "clones", "resubmits", "recirculations", "loop_limit_drops", "digests",
           "assert_failures")


class _Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in C_STATS]


class _Bucket(ctypes.Structure):
    """ssrt.h's ss_bucket."""
    _fields_ = [("rate", ctypes.c_double), ("burst", ctypes.c_int64), ("tokens", ctypes.c_int64),
                ("last", ctypes.c_int64), ("color", ctypes.c_int64)]


class _MeterRecord(ctypes.Structure):
    """ssrt.h's ss_meter: what runtime.state.MeterCellView reads and writes."""
    _fields_ = [("configured", ctypes.c_int64), ("has_origin", ctypes.c_int64), ("origin", ctypes.c_int64),
                ("b", _Bucket * 2)]


class _Frame(ctypes.Structure):
    _fields_ = [("port", ctypes.c_int32), ("off", ctypes.c_uint32), ("len", ctypes.c_uint32)]


class _Out(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("cap", ctypes.c_size_t), ("used", ctypes.c_size_t),
                ("frames", ctypes.POINTER(_Frame)), ("n", ctypes.c_int), ("fcap", ctypes.c_int)]


def _declare(lib) -> None:
    declare(lib)
    lib.ss_new.restype = ctypes.c_void_p
    lib.ss_new.argtypes = ()
    lib.ss_delete.restype = None
    lib.ss_delete.argtypes = (ctypes.c_void_p,)
    lib.ss_stats_of.restype = ctypes.POINTER(_Stats)
    lib.ss_stats_of.argtypes = (ctypes.c_void_p,)
    lib.ss_out_of.restype = ctypes.POINTER(_Out)
    lib.ss_out_of.argtypes = (ctypes.c_void_p,)
    lib.ss_process.restype = ctypes.c_int
    lib.ss_process.argtypes = (ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint64)
    lib.ss_ext_bind.restype = ctypes.c_int
    lib.ss_ext_bind.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
    lib.ss_process_rounds.restype = ctypes.c_uint64
    lib.ss_process_rounds.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int32),
                                      ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_uint32),
                                      ctypes.c_uint64, ctypes.c_uint64)


class CompiledSwitch:
    def __init__(self, switch):
        """Raises Unsupported (the construct) or BuildError (the compiler's output)."""
        self.switch = switch
        self.state = switch.state
        self.program = switch.program
        self.log = switch.log
        self.cprogram = generate(switch.program, switch.state)
        self.lib = lib = load_library(self.cprogram.source)
        _declare(lib)
        self.ctx = lib.ss_new()
        if not self.ctx:
            raise MemoryError("the compiled data path could not allocate its switch context")
        self._stats = lib.ss_stats_of(self.ctx).contents
        self._out = lib.ss_out_of(self.ctx).contents
        self._bind_externs()
        self._declare_events()
        self.mirror = StateMirror(lib, self.ctx, self.cprogram.tables, self.state.pre,
                                  self.state.mirroring if self.cprogram.clones else None)
        self.mirror.sync()

    def _bind_externs(self) -> None:
        """Registers and counters: one copy of the cells, owned by the Python objects. Each
        adopts a ctypes array (its current values copied in) as its storage and C borrows a
        pointer to it, so CLI/P4Runtime reads and writes and the packets see one memory, in
        both directions, with nothing to synchronise. The Python path keeps plain lists
        (its speed is unchanged); only a program running here switches to arrays."""
        ctypes_of = {"uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16,
                     "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64}
        for info in self.cprogram.externs:
            if info.kind == "register":
                arrays = [(ctypes_of[info.ctype] * info.size)()]
                info.obj.adopt(*arrays)
            elif info.kind == "counter":
                arrays = [(ctypes.c_uint64 * info.size)(), (ctypes.c_uint64 * info.size)()]
                info.obj.adopt(*arrays)
            elif info.kind == "direct_counter":     # a cell per entry handle slot of the table
                arrays = [(ctypes.c_uint64 * info.size)(), (ctypes.c_uint64 * info.size)()]
                info.obj.adopt_counter_cells(*arrays)
            else:           # meter / direct_meter: a record per cell (entry handle slot)
                arrays = [(_MeterRecord * info.size)()]
                info.obj.adopt(arrays[0])
            for k, cells in enumerate(arrays):
                if self.lib.ss_ext_bind(self.ctx, info.slot + k, ctypes.addressof(cells)) != 0:
                    raise RuntimeError(f"extern slot {info.slot + k} of {info.obj.name} does not exist in C")

    def _declare_events(self) -> None:
        nvals = max([1] + [n for _, _, n in self.cprogram.events])

        class Event(ctypes.Structure):          # ss_ctx.h's ss_event for this program
            _fields_ = [("id", ctypes.c_int64), ("vals", ctypes.c_uint64 * nvals)]
        lib = self.lib
        lib.ss_events_of.restype = ctypes.POINTER(Event)
        lib.ss_events_of.argtypes = (ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_uint64))
        lib.ss_events_clear.restype = None
        lib.ss_events_clear.argtypes = (ctypes.c_void_p,)
        self._events_lost = 0
        self._digests_drained = 0
        self._asserts_drained = 0

    def drain_events(self) -> None:
        """log_msg and digest calls queued by C since the last drain, handled as the Python
        path does: each log_msg line logged, digests appended to Switch.digests (the newest
        kept) and logged, the first ten and then every thousandth. Calls beyond the queue's
        room (a long C loop round) are counted (events_lost) and logged once per drain;
        stats['digests'] counts every digest either way."""
        if not self.cprogram.events:
            return
        n, lost = ctypes.c_int32(), ctypes.c_uint64()
        evs = self.lib.ss_events_of(self.ctx, ctypes.byref(n), ctypes.byref(lost))
        sw = self.switch
        for i in range(n.value):
            kind, text, nvals = self.cprogram.events[evs[i].id]
            vals = tuple(evs[i].vals[:nvals])
            if kind == "log":
                self.log.info("log_msg: %s", format_log(text, vals))
            elif kind == "assert":
                self._asserts_drained += 1
                if _worth_logging(self._asserts_drained):
                    self.log.error("assert/assume failed at %s: packet dropped (%d so far)",
                                   text, self._asserts_drained)
            else:
                sw.digests.append((text, vals))
        self.lib.ss_events_clear(self.ctx)
        self._log_new_digests()
        if lost.value:
            self._events_lost += lost.value
            self.log.warning("compiled path: %d log_msg/digest calls in one round beyond the queue's "
                             "room were not logged (%d so far)", lost.value, self._events_lost)

    def _log_new_digests(self) -> None:
        """Switch._log_digests' rules on the digests drained."""
        sw = self.switch
        for name, values in sw.digests[sw._digests_seen:]:
            self._digests_drained += 1
            if _worth_logging(self._digests_drained):
                self.log.info("digest %s: %s", name, values)
        if len(sw.digests) > 2 * sw.DIGESTS_KEPT:
            del sw.digests[:-sw.DIGESTS_KEPT]
        sw._digests_seen = len(sw.digests)

    @property
    def digests(self) -> list:
        return self.switch.digests

    @property
    def stats(self) -> dict:
        """Switch.stats' keys; those the compiled path cannot produce stay 0."""
        out = {k: 0 for k in STAT_KEYS}
        for name in C_STATS:
            out[name] = getattr(self._stats, name)
        return out

    def process(self, port: int, data: bytes, now_us: int | None = None) -> list[tuple[int, bytes]]:
        self.mirror.sync()
        if now_us is None:
            now_us = time.monotonic_ns() // 1000
        data = bytes(data)
        n = self.lib.ss_process(self.ctx, port, data, len(data), now_us)
        self.drain_events()
        if n == 0:
            return []
        o = self._out
        base = o.buf
        frames = o.frames
        return [(frames[i].port, ctypes.string_at(base + frames[i].off, frames[i].len)) for i in range(n)]

    @staticmethod
    def prepare(packets) -> tuple:
        """[(port, bytes)] as the C arrays process_rounds takes (build once, run many times:
        converting thousands of frames costs more than the compiled path running them)."""
        n = len(packets)
        datas = [bytes(d) for _, d in packets]
        return (n, (ctypes.c_int32 * n)(*[p for p, _ in packets]), (ctypes.c_char_p * n)(*datas),
                (ctypes.c_uint32 * n)(*[len(d) for d in datas]), datas)

    def process_rounds(self, packets, rounds: int, now_us: int = 0) -> int:
        """Run [(port, bytes)] (or what prepare() made of them) `rounds` times in C, outputs
        discarded: the in-process benchmark's loop. Returns the number of output frames."""
        self.mirror.sync()
        n, ports, datas, lens, _keep = packets if isinstance(packets, tuple) else self.prepare(packets)
        out = self.lib.ss_process_rounds(self.ctx, n, ports, datas, lens, now_us, rounds)
        self.drain_events()
        return out

    def close(self) -> None:
        if self.ctx:
            self.lib.ss_delete(self.ctx)
            self.ctx = None

    def __del__(self):
        try:
            self.close()
        except Exception:   # interpreter shutdown: the library may be gone already
            pass


def compile_switch(switch, log):
    """The CompiledSwitch of `switch`'s program, or None after one log line saying why the
    program runs on the Python path."""
    try:
        return CompiledSwitch(switch)
    except Unsupported as e:
        where = f" at {e.loc}" if e.loc.line else ""
        log.info("datapath: python (the compiled path does not support %s%s)", e.construct, where)
    except BuildError as e:
        log.warning("datapath: python (building the compiled path failed: %s)", e)
    return None
