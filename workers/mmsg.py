"""Many UDP datagrams per system call: Linux's sendmmsg and recvmmsg through ctypes.

Why: a worker at tens of Mbps sends and receives ~20 000 datagrams per second; one
sendto or recvmsg each costs it a few microseconds of Python and system-call entry,
as much as its whole state machine. Python has no sendmmsg or recvmmsg, so libc's are
called with their message headers laid out in numpy arrays (built once, reused), and
a batch is one call. Without them (another libc, another OS) the same classes loop over
sendto / recvmsg (`plain=True` forces that, for tests and comparison).

The receive side keeps the kernel's receive timestamp of every datagram
(SO_TIMESTAMPNS, set on the socket by workers/ina_udp.open_socket): pacing needs when
results arrived, not when a busy worker read them (workers/pacing.py).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import socket
import struct

import numpy as np

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)     # asm-generic/socket.h
MSG_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0x40)
UIO_MAXIOV = 1024                       # the kernel's cap on messages per call
_TIMESPEC = struct.Struct("@qq")
ANC_BYTES = socket.CMSG_SPACE(_TIMESPEC.size)


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("msg_name", ctypes.c_void_p), ("msg_namelen", ctypes.c_uint32),
                ("msg_iov", ctypes.c_void_p), ("msg_iovlen", ctypes.c_size_t),
                ("msg_control", ctypes.c_void_p), ("msg_controllen", ctypes.c_size_t),
                ("msg_flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("msg_hdr", _Msghdr), ("msg_len", ctypes.c_uint)]


class _Cmsghdr(ctypes.Structure):
    _fields_ = [("cmsg_len", ctypes.c_size_t), ("cmsg_level", ctypes.c_int),
                ("cmsg_type", ctypes.c_int)]


def _layout(fields: dict, offsets: list, size: int) -> np.dtype:
    """A numpy dtype laid out as a C structure (offsets and size taken from ctypes)."""
    return np.dtype({"names": list(fields), "formats": list(fields.values()),
                     "offsets": offsets, "itemsize": size})


_IOVEC = _layout({"iov_base": np.uintp, "iov_len": np.uintp},
                 [_Iovec.iov_base.offset, _Iovec.iov_len.offset], ctypes.sizeof(_Iovec))
_MSGHDR_FIELDS = {"msg_name": np.uintp, "msg_namelen": np.uint32, "msg_iov": np.uintp,
                  "msg_iovlen": np.uintp, "msg_control": np.uintp, "msg_controllen": np.uintp,
                  "msg_flags": np.int32}
_MMSGHDR = _layout({**_MSGHDR_FIELDS, "msg_len": np.uint32},     # msg_hdr is at offset 0
                   [getattr(_Msghdr, n).offset for n in _MSGHDR_FIELDS] + [_Mmsghdr.msg_len.offset],
                   ctypes.sizeof(_Mmsghdr))
_CMSG = _layout({"cmsg_len": np.uintp, "cmsg_level": np.int32, "cmsg_type": np.int32},
                [_Cmsghdr.cmsg_len.offset, _Cmsghdr.cmsg_level.offset, _Cmsghdr.cmsg_type.offset],
                ctypes.sizeof(_Cmsghdr))
_CMSG_DATA = ctypes.sizeof(_Cmsghdr)     # CMSG_DATA's offset: the header, size_t aligned


def _libc_calls():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        send, recv = libc.sendmmsg, libc.recvmmsg
    except (OSError, AttributeError):
        return None, None
    send.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
    recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p]
    send.restype = recv.restype = ctypes.c_int
    return send, recv


_SENDMMSG, _RECVMMSG = _libc_calls()


def sockaddr_in(ip: str, port: int) -> bytes:
    """struct sockaddr_in: family in host order, port and address in network order."""
    return struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton(ip) + bytes(8)


def _vectors(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sendmmsg/recvmmsg's arrays over (m, size) uint8 rows: an iovec per row and an mmsghdr
    per iovec. The caller keeps both (the kernel reads them through raw addresses)."""
    m, size = rows.shape
    iov = np.zeros(m, dtype=_IOVEC)
    iov["iov_base"] = rows.ctypes.data + size * np.arange(m, dtype=np.uintp)
    iov["iov_len"] = size
    hdrs = np.zeros(m, dtype=_MMSGHDR)
    hdrs["msg_iov"] = iov.ctypes.data + _IOVEC.itemsize * np.arange(m, dtype=np.uintp)
    hdrs["msg_iovlen"] = 1
    return iov, hdrs


class Sender:
    """Sends rows of a (m, n) uint8 array as m datagrams to one address, blocking (on a
    non-blocking socket: waits until writable) until all have left.

    The rows are copied into a buffer of the sender's whose message headers point at it
    once and for all, so a batch costs one copy and one call, whatever its size."""

    def __init__(self, sock: socket.socket, plain: bool = False):
        self.sock = sock
        self.batched = _SENDMMSG is not None and not plain
        self.calls = 0                  # system calls made (for benchmarks)
        self._buf = np.zeros((0, 0), dtype=np.uint8)
        self._dst = None

    def _allocate(self, m: int, size: int) -> None:
        cap = max(m, 2 * len(self._buf), 64)
        self._buf = np.zeros((cap, size), dtype=np.uint8)
        self._iov, self._hdrs = _vectors(self._buf)
        self._hdrs_ptr = self._hdrs.ctypes.data
        self._dst = None

    def send(self, dst: tuple[str, int], rows: np.ndarray) -> None:
        if not len(rows):
            return
        if not self.batched:
            for row in rows:
                self._one(row.tobytes(), dst)
            return
        m, size = rows.shape
        if m > len(self._buf) or size != self._buf.shape[1]:
            self._allocate(m, size)
        if dst != self._dst:
            self._addr = np.frombuffer(sockaddr_in(*dst), dtype=np.uint8).copy()
            self._hdrs["msg_name"] = self._addr.ctypes.data
            self._hdrs["msg_namelen"] = self._addr.size
            self._dst = dst
        self._buf[:m] = rows
        done, fd, base = 0, self.sock.fileno(), self._hdrs_ptr
        while done < m:
            n = _SENDMMSG(fd, base + done * _MMSGHDR.itemsize, min(m - done, UIO_MAXIOV), 0)
            self.calls += 1
            if n >= 0:
                done += n
                continue
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS):
                select.select([], [self.sock], [], 0.1)     # socket buffer full: wait
            elif err != errno.EINTR:
                raise OSError(err, f"sendmmsg to {dst[0]}:{dst[1]}: {os.strerror(err)}")

    def _one(self, payload: bytes, dst) -> None:
        while True:
            try:
                self.sock.sendto(payload, dst)
                self.calls += 1
                return
            except BlockingIOError:         # socket buffer full: wait until writable
                select.select([], [self.sock], [], 0.1)


class Receiver:
    """Reads up to `batch` waiting datagrams per call, without blocking:
    recv() -> (rows, lengths, stamps), row i holding datagram i's first `size` bytes,
    lengths[i] its length (as read: cut to `size`), stamps[i] its kernel receive time
    (CLOCK_REALTIME seconds; NaN without one). Nothing waiting: no rows, empty lists.
    The rows are reused by the next call: consume them before.

    Lengths and stamps are lists, not arrays: a worker at a few Mbps reads one or two
    datagrams per wake-up, and then every numpy operation (~1 us each, whatever the
    size) cost more than the Python that reads the few values."""

    def __init__(self, sock: socket.socket, size: int = 2048, batch: int = 64, plain: bool = False):
        self.sock, self.size, self.batch = sock, size, batch
        self.batched = _RECVMMSG is not None and not plain
        self.calls = 0
        self.rows = np.zeros((batch, size), dtype=np.uint8)
        if self.batched:
            self._ctrl = np.zeros((batch, ANC_BYTES), dtype=np.uint8)
            self._iov, self._hdrs = _vectors(self.rows)
            self._hdrs["msg_control"] = self._ctrl.ctypes.data + ANC_BYTES * np.arange(batch, dtype=np.uintp)
            self._hdrs_ptr = self._hdrs.ctypes.data
            # views, read after each call: what the kernel wrote
            self._msg_len, self._controllen = self._hdrs["msg_len"], self._hdrs["msg_controllen"]
            head = self._ctrl[:, :_CMSG.itemsize].view(_CMSG)[:, 0]
            self._ctrl_level, self._ctrl_type = head["cmsg_level"], head["cmsg_type"]
            self._ctrl_ts = self._ctrl[:, _CMSG_DATA:_CMSG_DATA + _TIMESPEC.size].view(np.int64)

    def recv(self) -> tuple[np.ndarray, list, list]:
        return self._recv_batched() if self.batched else self._recv_plain()

    def _recv_batched(self):
        self._controllen[:] = ANC_BYTES              # the kernel writes back what it used
        while True:
            n = _RECVMMSG(self.sock.fileno(), self._hdrs_ptr, self.batch, MSG_DONTWAIT, None)
            self.calls += 1
            if n >= 0:
                break
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.EWOULDBLOCK):
                return self.rows[:0], [], []
            if err != errno.EINTR:
                raise OSError(err, f"recvmmsg: {os.strerror(err)}")
        # one cmsghdr then a timespec per message (the socket asks for nothing else)
        whole = _CMSG_DATA + _TIMESPEC.size
        stamps = [sec + nsec * 1e-9 if used >= whole and level == socket.SOL_SOCKET
                  and kind == SO_TIMESTAMPNS else float("nan")
                  for (sec, nsec), used, level, kind in
                  zip(self._ctrl_ts[:n].tolist(), self._controllen[:n].tolist(),
                      self._ctrl_level[:n].tolist(), self._ctrl_type[:n].tolist())]
        return self.rows[:n], self._msg_len[:n].tolist(), stamps

    def _recv_plain(self):
        lengths, stamps = [], []
        while len(lengths) < self.batch:
            try:
                data, anc, _, _ = self.sock.recvmsg(self.size, ANC_BYTES)
            except BlockingIOError:
                break
            finally:
                self.calls += 1
            self.rows[len(lengths), :len(data)] = np.frombuffer(data, dtype=np.uint8)
            lengths.append(len(data))
            stamps.append(realtime_stamp(anc))
        return self.rows[:len(lengths)], lengths, stamps


def realtime_stamp(anc) -> float:
    """The SO_TIMESTAMPNS receive time in an ancillary-data list (CLOCK_REALTIME
    seconds), NaN without one."""
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return sec + nsec * 1e-9
    return float("nan")
