"""The C packet loop (c/ss_loop.c) over AF_PACKET sockets, from Python.

    loop = NativePacketLoop(compiled_switch, [(fd, port, max_frame, ignore_outgoing), ...])
    loop.run(wake_fds, timeout_ms)   # -> 1: a wake fd is readable; 0: timeout
    loop.take_counters()             # per port rx/tx counts since the last call, and unknown-port drops

The sockets stay owned by their Python objects (the caller opens, configures and closes
them); the C side only reads and writes them. Tables and multicast groups are synced
into C before every run, so a change made while handling a wake fd applies to the next
batch.
"""
from __future__ import annotations

import ctypes

PORT_COUNTERS = ("rx_packets", "rx_oversized", "tx_packets", "tx_bytes", "tx_errors")


class _Port(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int32), ("port", ctypes.c_int32), ("max_frame", ctypes.c_int32),
                ("ignore_outgoing", ctypes.c_int32)] + [(n, ctypes.c_uint64) for n in PORT_COUNTERS]


class PacketLoopError(OSError):
    """poll() failed in the C loop."""


class NativePacketLoop:
    def __init__(self, compiled, ports):
        self.compiled = compiled
        lib = self.lib = compiled.lib
        lib.ss_loop_new.restype = ctypes.c_void_p
        lib.ss_loop_new.argtypes = ()
        lib.ss_loop_delete.restype = None
        lib.ss_loop_delete.argtypes = (ctypes.c_void_p,)
        lib.ss_loop_take_unknown.restype = ctypes.c_uint64
        lib.ss_loop_take_unknown.argtypes = (ctypes.c_void_p,)
        lib.ss_loop_run.restype = ctypes.c_int
        lib.ss_loop_run.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Port), ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_int32), ctypes.c_int, ctypes.c_int)
        self.bufs = lib.ss_loop_new()
        if not self.bufs:
            raise MemoryError("the compiled packet loop could not allocate its buffers")
        self.ports = (_Port * len(ports))()
        for slot, (fd, number, max_frame, ignore) in zip(self.ports, ports):
            slot.fd, slot.port, slot.max_frame, slot.ignore_outgoing = fd, number, max_frame, int(ignore)

    def run(self, wake_fds, timeout_ms: int) -> int:
        self.compiled.mirror.sync()
        wake = (ctypes.c_int32 * max(1, len(wake_fds)))(*wake_fds)
        rc = self.lib.ss_loop_run(self.compiled.ctx, self.bufs, self.ports, len(self.ports), wake,
                                  len(wake_fds), int(timeout_ms))
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

    def close(self) -> None:
        if self.bufs:
            self.lib.ss_loop_delete(self.bufs)
            self.bufs = None
