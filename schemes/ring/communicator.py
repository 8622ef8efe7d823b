"""Ring all-reduce over TCP: reduce-scatter, then all-gather (the classic bandwidth-optimal
algorithm: each worker sends 2 (W-1)/W of its tensor per iteration, whatever W is).

Worker r listens for its left neighbour (r-1) and connects to its right neighbour (r+1).
The tensor is split into W chunks (`workers.framing.shard_bounds`). Reduce-scatter step s: send
chunk (r-s) mod W to the right, receive chunk (r-s-1) mod W from the left and add it to
the own copy; after W-1 steps worker r holds the full sum of chunk (r+1) mod W. All-gather
step s: pass chunk (r+1-s) mod W on, receive (and keep) chunk (r-s) mod W.

Sending and receiving overlap (a sender thread), otherwise two neighbours both blocked in
sendall on a full TCP window would deadlock on large chunks.

`plan.ring_order` places the workers of a datacenter next to each other, datacenters in order,
so the ring crosses the WAN once per consecutive pair of datacenters (W_dc hops in all).
Summation order of chunk c: ranks c, c+1, ... around the ring (fixed, reproducible).

comm (schemes/ring/plan.py): ring_rank, ring_size, listen [ip, port], right [ip, port],
timeout_s (emulated seconds of silence before a neighbour counts as dead).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
import threading

import numpy as np

from workers import framing as fr
from workers.communicator import CommunicatorBase, Counters, Me


class RingCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me):
        rank, size = int(comm["ring_rank"]), int(comm["ring_size"])
        timeout_s = connect_timeout_s = float(comm["timeout_s"])
        listen_addr, right_addr, name = tuple(comm["listen"]), tuple(comm["right"]), me.name
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

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        buf = np.array(grad, dtype=np.float32, copy=True)
        w, r = self.size, self.rank
        if w == 1:
            return buf
        b = fr.shard_bounds(buf.size, w)
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

    def describe(self) -> dict:
        return {"tcp_congestion_control": self.right.congestion_control() if self.right else None}

    def counters(self) -> Counters:
        return fr.channel_counters([self.right, self.left])

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown(wait=False)
        for c in (self.right, self.left):
            if c:
                c.close()
