"""The C packet loop (c/ss_loop.c) over AF_PACKET sockets, from Python.

    loop = NativePacketLoop(compiled_switch, [(fd, port, max_frame, ignore_outgoing), ...],
                            link_emu={port: LinkEmuConfig}, pcaps={port: (in_path, out_path)})
    loop.run(wake_fds, timeout_ms)   # -> 1: a wake fd is readable; 0: timeout
    loop.take_counters()             # per port rx/tx counts since the last call, and unknown-port drops
    loop.link_emu_counters()         # per emulated port: submitted, sent, lost, overflow, queued

The sockets stay owned by their Python objects (the caller opens, configures and closes
them); the C side only reads and writes them. Delay lines (c/ss_linkem.c) and pcap files
(c/ss_pcap.c) are made here and freed by close(). Tables and multicast groups are synced
into C before every run, so a change made while handling a wake fd applies to the next
batch.
"""
from __future__ import annotations

import ctypes

PORT_COUNTERS = ("rx_packets", "rx_oversized", "tx_packets", "tx_bytes", "tx_errors")
LINK_EMU_COUNTERS = ("submitted", "sent", "lost", "overflow", "queued")   # DelayLine.counters()'s keys


class _Port(ctypes.Structure):
    _fields_ = ([("fd", ctypes.c_int32), ("port", ctypes.c_int32), ("max_frame", ctypes.c_int32),
                 ("ignore_outgoing", ctypes.c_int32)] + [(n, ctypes.c_uint64) for n in PORT_COUNTERS]
                + [("delay", ctypes.c_void_p), ("pcap_in", ctypes.c_void_p), ("pcap_out", ctypes.c_void_p)])


class PacketLoopError(OSError):
    """poll() failed in the C loop."""


class NativePacketLoop:
    def __init__(self, compiled, ports, link_emu: dict | None = None, pcaps: dict | None = None):
        self.compiled = compiled
        lib = self.lib = compiled.lib
        _declare(lib)
        self.bufs = lib.ss_loop_new()
        if not self.bufs:
            raise MemoryError("the compiled packet loop could not allocate its buffers")
        self.ports = (_Port * len(ports))()
        self.delays: dict[int, NativeDelayLine] = {}
        try:
            for slot, (fd, number, max_frame, ignore) in zip(self.ports, ports):
                slot.fd, slot.port, slot.max_frame, slot.ignore_outgoing = fd, number, max_frame, int(ignore)
                if link_emu and number in link_emu:
                    self.delays[number] = NativeDelayLine(lib, link_emu[number])
                    slot.delay = self.delays[number].handle
                if pcaps and number in pcaps:
                    slot.pcap_in, slot.pcap_out = (_open_pcap(lib, path) for path in pcaps[number])
        except BaseException:
            self.close()
            raise

    def run(self, wake_fds, timeout_ms: int) -> int:
        self.compiled.mirror.sync()
        wake = (ctypes.c_int32 * max(1, len(wake_fds)))(*wake_fds)
        rc = self.lib.ss_loop_run(self.compiled.ctx, self.bufs, self.ports, len(self.ports), wake,
                                  len(wake_fds), int(timeout_ms))
        self.compiled.drain_events()
        if rc < 0:
            raise PacketLoopError(-rc, f"the compiled packet loop's poll() failed (errno {-rc})")
        return rc

    def take_counters(self) -> tuple[dict, int]:
        """({port number: {counter: n}}, unknown egress port drops) since the last call."""
        out = {}
        for p in self.ports:
            out[p.port] = {n: getattr(p, n) for n in PORT_COUNTERS}
            for n in PORT_COUNTERS:
                setattr(p, n, 0)
        return out, self.lib.ss_loop_take_unknown(self.bufs)

    def link_emu_counters(self) -> dict:
        return {number: line.counters() for number, line in self.delays.items()}

    def close(self) -> None:
        """Frees the buffers and delay lines and closes the pcap files (frames still in a
        delay line are dropped, as on the Python path). Safe to call twice."""
        failed = []
        for slot in self.ports:
            for name in ("pcap_in", "pcap_out"):
                handle = getattr(slot, name)
                if handle:
                    if self.lib.ss_pcap_close(handle) != 0:
                        failed.append(slot.port)
                    setattr(slot, name, None)
            slot.delay = None
        for line in self.delays.values():
            line.close()
        if self.bufs:
            self.lib.ss_loop_delete(self.bufs)
            self.bufs = None
        if failed:
            raise OSError(f"pcap capture of port(s) {sorted(set(failed))} lost its last frames (disk full?)")


class NativeDelayLine:
    """A C delay line (c/ss_linkem.c) for one port; `submit`/`pop` with an explicit
    clock in ns are for tests, the packet loop drives it itself."""

    def __init__(self, lib, cfg):
        self.lib = lib
        self.config = cfg
        seed = -1 if cfg.seed is None else cfg.seed & 0x7FFFFFFFFFFFFFFF
        self.handle = lib.ss_delay_new(cfg.delay_ms, cfg.jitter_ms, cfg.loss_pct, seed, int(cfg.reorder), cfg.limit)
        if not self.handle:
            raise MemoryError(f"cannot allocate a delay line of {cfg.limit} frames")

    def submit(self, frame: bytes, now_ns: int) -> bool:
        return bool(self.lib.ss_delay_submit(self.handle, frame, len(frame), now_ns))

    def next_due(self) -> int | None:
        due = self.lib.ss_delay_next_due(self.handle)
        return None if due == 2**64 - 1 else due

    def pop_due(self, now_ns: int) -> list[bytes]:
        out = []
        while True:
            item = self.lib.ss_delay_pop(self.handle, now_ns)
            if not item:
                return out
            header = _Item.from_address(item)
            out.append(ctypes.string_at(item + _Item.data.offset, header.len))
            self.lib.ss_delay_item_free(item)

    def counters(self) -> dict:
        out = (ctypes.c_uint64 * 5)()
        self.lib.ss_delay_counters(self.handle, out)
        return dict(zip(LINK_EMU_COUNTERS, out))

    def close(self) -> None:
        if self.handle:
            self.lib.ss_delay_delete(self.handle)
            self.handle = None


class _Item(ctypes.Structure):       # ss_dl_item's header; the frame follows at .data
    _fields_ = [("due", ctypes.c_uint64), ("seq", ctypes.c_uint64), ("len", ctypes.c_uint32),
                ("data", ctypes.c_uint8 * 0)]


def _open_pcap(lib, path: str) -> int:
    handle = lib.ss_pcap_open(path.encode())
    if not handle:
        raise OSError(f"cannot open {path} for writing (--pcap): check that the folder is writable")
    return handle


def _declare(lib) -> None:
    """ctypes signatures of the loop's C API (c/ss_loop.c, ss_linkem.c, ss_pcap.c)."""
    vp, u64, i32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int32
    for name, restype, argtypes in (
            ("ss_loop_new", vp, ()),
            ("ss_loop_delete", None, (vp,)),
            ("ss_loop_take_unknown", u64, (vp,)),
            ("ss_loop_run", ctypes.c_int, (vp, vp, ctypes.POINTER(_Port), ctypes.c_int, ctypes.POINTER(i32),
                                           ctypes.c_int, ctypes.c_int)),
            ("ss_delay_new", vp, (ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_int64, ctypes.c_int,
                                  ctypes.c_uint32)),
            ("ss_delay_delete", None, (vp,)),
            ("ss_delay_counters", None, (vp, ctypes.POINTER(u64))),
            ("ss_delay_submit", ctypes.c_int, (vp, ctypes.c_char_p, ctypes.c_uint32, u64)),
            ("ss_delay_next_due", u64, (vp,)),
            ("ss_delay_pop", vp, (vp, u64)),
            ("ss_delay_item_free", None, (vp,)),
            ("ss_pcap_open", vp, (ctypes.c_char_p,)),
            ("ss_pcap_close", ctypes.c_int, (vp,))):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
