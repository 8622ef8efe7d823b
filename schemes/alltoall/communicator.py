"""Worker side of alltoall: send the whole gradient to every other worker, receive theirs,
sum all of them in rank order (so every worker gets the same bits).

comm (schemes/alltoall/plan.py): rank, peers [[ip, port], ...] indexed by rank (this
worker's own entry is where it listens), timeout_s.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from workers import framing as fr
from workers.communicator import CommunicatorBase, Counters, Me


class AllToAllCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me):
        self.rank, peers = int(comm["rank"]), [tuple(p) for p in comm["peers"]]
        self.n, timeout = len(peers), float(comm["timeout_s"])
        self.out: dict[int, fr.Channel] = {}   # rank -> channel we send on
        self.inc: dict[int, fr.Channel] = {}   # rank -> channel we receive on
        self.pool = ThreadPoolExecutor(max(1, 2 * (self.n - 1)))
        lsock = fr.listen(*peers[self.rank])   # listen first: peers may connect any time
        errors = []

        def accept_all():
            try:
                for _ in range(self.n - 1):
                    ch = fr.accept(lsock, timeout, f"{me.name}: a peer", timeout)
                    _, r, _ = ch.recv(fr.HELLO, what="a peer's HELLO")
                    if not 0 <= r < self.n or r == self.rank or r in self.inc:
                        ch.close()
                        raise fr.PeerError(f"{me.name}: peer says rank {r}: plan inconsistent")
                    self.inc[r] = ch
            except fr.PeerError as e:
                errors.append(e)
            finally:
                lsock.close()

        t = threading.Thread(target=accept_all, daemon=True)
        t.start()
        try:
            for r, (h, p) in enumerate(peers):
                if r != self.rank:
                    self.out[r] = fr.connect(h, p, f"{me.name}: peer {r} {h}:{p}", timeout, timeout)
                    self.out[r].send(fr.HELLO, self.rank)
        finally:
            t.join()
            if errors:
                self.close()
        if errors:
            raise errors[0]

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        vec = np.ascontiguousarray(grad, dtype=np.float32)
        sends = [self.pool.submit(ch.send, fr.DATA, iteration, vec) for ch in self.out.values()]
        recvs = {r: self.pool.submit(ch.recv, fr.DATA, iteration, f"iteration {iteration}'s gradient")
                 for r, ch in self.inc.items()}
        try:
            for f in sends:
                f.result()
            parts = {r: f.result()[2] for r, f in recvs.items()}
        except BaseException:
            self.close()   # unblock the other jobs; this worker is finished anyway
            raise
        parts[self.rank] = vec
        return fr.sum_in_order([parts[r] for r in range(self.n)])

    def describe(self) -> dict:
        chans = [*self.out.values(), *self.inc.values()]
        return {"tcp_congestion_control": chans[0].congestion_control() if chans else None}

    def counters(self) -> Counters:
        return fr.channel_counters([*self.out.values(), *self.inc.values()])

    def close(self) -> None:
        for ch in [*self.out.values(), *self.inc.values()]:
            ch.close()
        self.pool.shutdown(wait=False)
