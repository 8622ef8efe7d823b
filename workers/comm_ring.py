"""Ring all-reduce over TCP: reduce-scatter, then all-gather (the classic bandwidth-optimal
algorithm: each worker sends 2 (W-1)/W of its tensor per iteration, whatever W is).

Worker r listens for its left neighbour (r-1) and connects to its right neighbour (r+1).
The tensor is split into W chunks (`comm_ps.shard_bounds`). Reduce-scatter step s: send
chunk (r-s) mod W to the right, receive chunk (r-s-1) mod W from the left and add it to
the own copy; after W-1 steps worker r holds the full sum of chunk (r+1) mod W. All-gather
step s: pass chunk (r+1-s) mod W on, receive (and keep) chunk (r-s) mod W.

Sending and receiving overlap (a sender thread), otherwise two neighbours both blocked in
sendall on a full TCP window would deadlock on large chunks.

`ring_order` places the workers of a datacenter next to each other, datacenters in order,
so the ring crosses the WAN once per consecutive pair of datacenters (W_dc hops in all).
Summation order of chunk c: ranks c, c+1, ... around the ring (fixed, reproducible).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
import threading

import numpy as np

from workers import framing as fr
from workers.comm_ps import shard_bounds


def ring_order(workers: list[tuple[object, object, str]]) -> list[str]:
    """Ring order of (datacenter key, in-datacenter key, name) triples: datacenters contiguous."""
    return [name for _, _, name in sorted(workers, key=lambda w: (w[0], w[1]))]


def wan_crossings(order: list[str], dc_of: dict) -> int:
    """Ring links (including last -> first) whose ends are in different datacenters."""
    n = len(order)
    return sum(dc_of[order[i]] != dc_of[order[(i + 1) % n]] for i in range(n)) if n > 1 else 0


class RingCommunicator:
    def __init__(self, rank: int, size: int, listen_addr: tuple[str, int],
                 right_addr: tuple[str, int], timeout_s: float = 60.0,
                 connect_timeout_s: float | None = None, name: str = "worker"):
        if not 0 <= rank < size:
            raise ValueError(f"ring rank {rank} out of range 0..{size - 1}")
        self.rank, self.size, self.timeout_s = rank, size, timeout_s
        self.right = self.left = None
        self.pool = None
        if size == 1:
            return
        lsock = fr.listen(*listen_addr)   # listen first: the left neighbour may connect any time
        result: dict = {}

        def accept_left():
            try:
                ch = fr.accept(lsock, connect_timeout_s or timeout_s,
                               f"{name}: left neighbour (rank {(rank - 1) % size})", timeout_s)
                _, r, _ = ch.recv(fr.HELLO, what="the left neighbour's HELLO")
                if r != (rank - 1) % size:
                    ch.close()
                    raise fr.PeerError(f"{name}: left neighbour says rank {r}, expected "
                                       f"{(rank - 1) % size}: ring addresses are inconsistent")
                result["left"] = ch
            except fr.PeerError as e:
                result["error"] = e
            finally:
                lsock.close()

        t = threading.Thread(target=accept_left, daemon=True)
        t.start()
        h, p = right_addr
        try:
            self.right = fr.connect(h, p, f"{name}: right neighbour (rank {(rank + 1) % size}) {h}:{p}",
                                    timeout_s, connect_timeout_s)
            self.right.send(fr.HELLO, rank)
        finally:
            t.join()
        if "error" in result:
            if self.right:
                self.right.close()
            raise result["error"]
        self.left = result["left"]
        self.pool = ThreadPoolExecutor(1)

    def _step(self, tag: int, send_chunk: np.ndarray, what: str) -> np.ndarray:
        fut = self.pool.submit(self.right.send, fr.DATA, tag, send_chunk)
        try:
            _, _, got = self.left.recv(fr.DATA, tag, what=what)
        except fr.PeerError:
            self.right.close()   # unblock our sender; the neighbour is gone anyway
            raise
        fut.result()
        return got

    def allreduce(self, vec: np.ndarray, iteration: int) -> np.ndarray:
        buf = np.array(vec, dtype=np.float32, copy=True)
        w, r = self.size, self.rank
        if w == 1:
            return buf
        b = shard_bounds(buf.size, w)
        chunk = lambda c: buf[b[c][0]:b[c][1]]
        step = 0
        for s in range(w - 1):          # reduce-scatter
            send_c, recv_c = (r - s) % w, (r - s - 1) % w
            got = self._step((iteration << 16) | step, chunk(send_c).copy(),
                             f"reduce-scatter step {s} of iteration {iteration}")
            chunk(recv_c)[:] = got + chunk(recv_c)   # partial of ranks left of us, then ours
            step += 1
        for s in range(w - 1):          # all-gather
            send_c, recv_c = (r + 1 - s) % w, (r - s) % w
            got = self._step((iteration << 16) | step, chunk(send_c).copy(),
                             f"all-gather step {s} of iteration {iteration}")
            chunk(recv_c)[:] = got
            step += 1
        return buf

    @property
    def bytes_sent(self) -> int:
        return self.right.bytes_sent if self.right else 0

    @property
    def bytes_received(self) -> int:
        return self.left.bytes_received if self.left else 0

    def tcp_counters(self) -> tuple[int, int]:
        """(TCP segments sent, retransmissions) on both ring connections so far."""
        pairs = [c.tcp_counters() for c in (self.right, self.left) if c]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown(wait=False)
        for c in (self.right, self.left):
            if c:
                c.close()
