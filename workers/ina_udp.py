"""Thin UDP socket driver for the sans-I/O InaClient (runs inside a worker host).

The kernel builds Ethernet/IPv4/UDP; the client only sees payloads. The socket is
bound to the protocol's port (both source and destination port are AGG_UDP_PORT,
docs/protocol.md), so results multicast down by the switches reach it.

    sock = open_socket(host_ip)
    total = aggregate(sock, client, int32_values, exponent=e)
"""
from __future__ import annotations

import select
import socket
import struct
import time

import numpy as np

from workers.agg_packet import AGG_UDP_PORT
from workers.ina_client import InaClient

RECV_BYTES = 2048
# SO_TIMESTAMPNS (Linux, asm-generic/socket.h; Python does not export it): the kernel
# stamps each datagram on arrival (CLOCK_REALTIME, struct timespec), so the worker knows
# when results reached it even when it reads them late, in a batch.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@qq")
ANC_BYTES = socket.CMSG_SPACE(_TIMESPEC.size)


def open_socket(bind_ip: str = "0.0.0.0", port: int = AGG_UDP_PORT, rcvbuf: int = 4 << 20) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    try:
        s.bind((bind_ip, port))
    except OSError as e:
        s.close()
        raise OSError(e.errno, f"cannot bind UDP {bind_ip}:{port} for aggregation ({e.strerror}); "
                               "is another worker using this port in the same network namespace?") from None
    s.setblocking(False)
    return s


def aggregate(sock: socket.socket, client: InaClient, values: np.ndarray, exponent=0,
              overflow: bool = False, port: int = AGG_UDP_PORT, timeout_s: float | None = None,
              clock=time.monotonic) -> np.ndarray:
    """Send one int32 tensor, serve retransmissions, return the aggregated int32 tensor."""
    (total,) = aggregate_many(sock, [(client, values)], exponent, overflow, port, timeout_s, clock)
    return total


def aggregate_many(sock: socket.socket, parts, exponent=0, overflow: bool = False,
                   port: int = AGG_UDP_PORT, timeout_s: float | None = None,
                   clock=time.monotonic) -> list[np.ndarray]:
    """Aggregate several int32 tensors at once, each through its own client (own job, own
    aggregation point, window and congestion control): `parts` is [(client, values)], the
    jobs distinct. Results are handed to the client of their job (the header's first byte);
    a datagram of no client's job goes to the first client, which counts it as bad.
    Returns the aggregated tensors in the order of `parts`."""
    clients = [c for c, _ in parts]
    by_job = {c.cfg.job: c for c in clients}
    if len(by_job) != len(clients):
        raise ValueError(f"aggregate_many: jobs {[c.cfg.job for c in clients]} must be distinct")
    start = clock()
    for c, values in parts:
        _send(sock, c.start(values, start, exponent, overflow), port)
    while not all(c.done for c in clients):
        now = clock()
        if timeout_s is not None and now - start > timeout_s:
            raise TimeoutError(f"aggregation not finished after {timeout_s} s "
                               f"({sum(c.stats.results for c in clients)} results, "
                               f"{sum(c.stats.retransmissions for c in clients)} "
                               "retransmissions); check the switches and routes")
        deadlines = [d for c in clients if (d := c.next_deadline()) is not None]
        wait = 0.5 if not deadlines else max(0.0, min(deadlines) - now)
        readable, _, _ = select.select([sock], [], [], wait)
        now = clock()
        if readable:
            offset = time.time() - now      # realtime - clock: kernel stamps onto `clock`
            while True:
                try:
                    payload, anc, _, _ = sock.recvmsg(RECV_BYTES, ANC_BYTES)
                except BlockingIOError:
                    break
                c = by_job.get(payload[0], clients[0]) if payload else clients[0]
                _send(sock, c.on_packet(payload, now, arrival_time(anc, offset, now)), port)
        for c in clients:
            _send(sock, c.on_timer(now), port)
    return [c.result() for c in clients]


def arrival_time(anc, realtime_minus_clock: float, now: float) -> float | None:
    """The kernel's receive timestamp of a datagram on the caller's clock (None without
    one); never later than `now`."""
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return min(now, sec + nsec * 1e-9 - realtime_minus_clock)
    return None


def _send(sock: socket.socket, sends, port: int) -> None:
    for s in sends:
        while True:
            try:
                sock.sendto(s.payload, (s.dst_ip, port))
                break
            except BlockingIOError:         # socket buffer full: wait until writable
                select.select([], [sock], [], 0.1)
