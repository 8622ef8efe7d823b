"""Thin UDP socket driver for the sans-I/O InaClient, or its C core workers/ina_core.py
(the same calls; runs inside a worker host).

The kernel builds Ethernet/IPv4/UDP; the client only sees payloads. The socket is
bound to the protocol's port (both source and destination port are AGG_UDP_PORT,
docs/protocol.md), so results multicast down by the switches reach it.

    sock = open_socket(host_ip)
    total = aggregate(sock, client, int32_values, exponent=e)

Batched (docs/ina.md, the worker's packet path): every wake-up reads the waiting
results RECV_BATCH at a time (recvmmsg, workers/mmsg.py), hands each batch to the
client at once (InaClient.on_packets) and sends what it answers in one sendmmsg, so
system calls and Python work are paid per batch, not per packet.
"""
from __future__ import annotations

import select
import socket
import time

import numpy as np

from workers.agg_packet import AGG_UDP_PORT
from workers.ina_client import InaClient
from workers.mmsg import ANC_BYTES, SO_TIMESTAMPNS, Receiver, Sender, realtime_stamp

__all__ = ["ANC_BYTES", "RECV_BYTES", "SO_TIMESTAMPNS", "aggregate", "aggregate_many",
           "arrival_time", "open_socket"]

RECV_BYTES = 2048
# Datagrams per recvmmsg: half the bench's window of 128, so a worker answers the
# first results of a burst before it has read the whole of it.
RECV_BATCH = 64


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
              clock=time.monotonic, copy: bool = True) -> np.ndarray:
    """Send one int32 tensor, serve retransmissions, return the aggregated int32 tensor."""
    (total,) = aggregate_many(sock, [(client, values)], exponent, overflow, port, timeout_s,
                              clock, copy)
    return total


def aggregate_many(sock: socket.socket, parts, exponent=0, overflow: bool = False,
                   port: int = AGG_UDP_PORT, timeout_s: float | None = None,
                   clock=time.monotonic, copy: bool = True) -> list[np.ndarray]:
    """Aggregate several int32 tensors at once, each through its own client (own job, own
    aggregation point, window and congestion control): `parts` is [(client, values)], the
    jobs distinct. Results are handed to the client of their job (the header's first byte);
    a datagram of no client's job goes to the first client, which counts it as bad.
    Returns the aggregated tensors in the order of `parts` (copy=False: the clients' own
    buffers, valid until their next start: InaClient.result)."""
    clients = [c for c, _ in parts]
    by_job = {c.cfg.job: c for c in clients}
    if len(by_job) != len(clients):
        raise ValueError(f"aggregate_many: jobs {[c.cfg.job for c in clients]} must be distinct")
    sender, receiver = Sender(sock), Receiver(sock, RECV_BYTES, RECV_BATCH)
    start = clock()
    for c, values in parts:
        _send(sender, c.start_batch(values, start, exponent, overflow), port)
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
                rows, lengths, stamps = receiver.recv()
                if not len(rows):
                    break
                arrivals = arrival_times(stamps, offset, now)
                for c, idx in _by_client(clients, by_job, rows, lengths):
                    if idx is None:
                        out = c.on_packets(rows, lengths, now, arrivals)
                    else:
                        out = c.on_packets(rows[idx], [lengths[i] for i in idx], now,
                                           [arrivals[i] for i in idx])
                    _send(sender, out, port)
                if len(rows) < RECV_BATCH:
                    break                   # drained: no need for a call that says EAGAIN
        for c in clients:
            _send(sender, c.on_timer_batch(now), port)
    return [c.result(copy) for c in clients]


def _by_client(clients, by_job: dict, rows: np.ndarray, lengths: list):
    """[(client, indices of its datagrams or None for all)]: results go to the client
    of their job (the first byte); empty datagrams and unknown jobs to the first one,
    which counts them as bad."""
    if len(clients) == 1:
        return [(clients[0], None)]
    jobs = rows[:, 0].tolist()
    owner = [by_job.get(j, clients[0]) if n else clients[0] for j, n in zip(jobs, lengths)]
    return [(c, idx) for c in clients if (idx := [i for i, o in enumerate(owner) if o is c])]


def arrival_times(stamps, realtime_minus_clock: float, now: float) -> list[float]:
    """Kernel receive timestamps (CLOCK_REALTIME, NaN: none) on the caller's clock, never
    later than `now`; `now` where there is none (the client's default then)."""
    return [now if s != s else min(now, s - realtime_minus_clock) for s in stamps]


def arrival_time(anc, realtime_minus_clock: float, now: float) -> float | None:
    """The kernel's receive timestamp of a datagram on the caller's clock (None without
    one); never later than `now`."""
    stamp = realtime_stamp(anc)
    return None if stamp != stamp else min(now, stamp - realtime_minus_clock)


def _send(sender: Sender, batch, port: int) -> None:
    if len(batch):
        sender.send((batch.dst_ip, port), batch.payloads)
