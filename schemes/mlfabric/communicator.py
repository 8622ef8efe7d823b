"""Worker side of mlfabric: ask the scheduler, send when granted, get the model back, and
fail over to the replica when the primary dies (schemes/mlfabric/wire.py: the protocol).

comm (written by schemes/mlfabric/plan.py):
    primary    [ip, port]
    replica    [ip, port] or null (no replication)
    child_rank this worker's rank at the server
    timeout_s  emulated seconds of silence before a server counts as dead

Per iteration c, push_pull: REQUEST c (the update's size), wait for the GRANT (the
scheduler serializes transfers into the PS, so this wait is the order on the wire), send
the gradient (or not: dropped because it would exceed tau_max), wait for the release. If
the primary's connection breaks at any point, the worker connects to the replica, says
FAILOVER c + 1 and carries on from the replica's model: its update of c is lost (Pulled.
applied_at None, like a dropped one).
"""
from __future__ import annotations

import time

import numpy as np

from schemes.mlfabric import wire as W
from workers import framing as fr
from workers.communicator import CommunicatorBase, Counters, Me, Pulled


class MlfabricCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me):
        self.me, self.rank, self.timeout = me, int(comm["child_rank"]), float(comm["timeout_s"])
        self.replica = tuple(comm["replica"]) if comm.get("replica") else None
        self.size: int | None = None
        self.server = "primary"
        self.before = Counters()                  # the primary's channel's, after a failover
        self.last: dict = {}
        self.chan = self._connect(tuple(comm["primary"]), "primary")

    def _connect(self, addr, role: str) -> fr.Channel:
        h, p = addr
        ch = fr.connect(h, p, f"{self.me.name}: {role} {h}:{p}", self.timeout, self.timeout)
        try:
            ch.send(fr.HELLO, self.rank)
        except BaseException:
            ch.close()
            raise
        return ch

    def init_model(self, model: np.ndarray) -> None:
        vec = np.ascontiguousarray(model, dtype=np.float32)
        self.size = vec.size
        self.chan.send(fr.MODEL_INIT, 0, vec)

    def push_pull(self, grad: np.ndarray, iteration: int) -> Pulled:
        if self.size is None:
            raise RuntimeError("mlfabric: push_pull before init_model: the worker loop must send the "
                               "initial model first")
        vec = np.ascontiguousarray(grad, dtype=np.float32)
        if vec.size != self.size:
            raise ValueError(f"mlfabric: gradient of {vec.size} values for a model of {self.size}")
        t0 = time.monotonic()
        try:
            route, group = self._ask(iteration, vec.nbytes)
            t_grant = time.monotonic()
            if route == W.DIRECT:
                self.chan.send(fr.DATA_END, group, vec)
            pulled = self._release(iteration + 1)
        except fr.PeerError:
            if self.replica is None or self.server == "replica":
                raise
            return self._fail_over(iteration, t0)
        self.last = {"server": self.server, "grant_wait_s": round(t_grant - t0, 6),
                     "route": "dropped" if route == W.DROP else "direct", "group": group}
        return pulled

    def _ask(self, iteration: int, nbytes: int) -> tuple[int, int]:
        self.chan.send(W.REQUEST, iteration, np.array([nbytes], np.int64))
        _, _, g = self.chan.recv(W.GRANT, iteration, what=f"the grant to send iteration {iteration}'s "
                                                            f"update (the scheduler serializes transfers)")
        if g.size != 3 or int(g[1]) not in (W.DIRECT, W.DROP):
            raise fr.PeerError(f"{self.chan.peer}: grant {g.tolist()} is not [group, route, members] "
                               f"with a route this worker knows")
        return int(g[1]), int(g[0])

    def _release(self, nxt: int) -> Pulled:
        what = f"the model to start iteration {nxt}"
        _, _, head = self.chan.recv(fr.MODEL_VERSION, nxt, what=what)
        _, _, model = self.chan.recv(fr.MODEL, nxt, what=what)
        if head.size != 4 or int(head[0]) != nxt or model.size != self.size:
            raise fr.PeerError(f"{self.chan.peer}: release {head.tolist()} with a model of {model.size} "
                               f"values, expected iteration {nxt} and {self.size} values")
        applied = int(head[3])
        return Pulled(model, int(head[1]), int(head[2]), None if applied == W.NOT_APPLIED else applied)

    def _fail_over(self, iteration: int, t0: float) -> Pulled:
        """The primary is gone: continue on the replica from iteration + 1."""
        self.before = self.counters()
        self.chan.close()
        self.chan = self._connect(self.replica, "replica")
        self.server = "replica"
        self.chan.send(W.FAILOVER, iteration + 1)
        pulled = self._release(iteration + 1)
        self.last = {"server": "replica", "route": "lost in failover", "failover_s":
                     round(time.monotonic() - t0, 6)}
        return pulled

    def counters(self) -> Counters:
        now, b = fr.channel_counters([self.chan]), self.before
        return Counters(*(getattr(now, k) + getattr(b, k) for k in Counters.__dataclass_fields__))

    def stats(self) -> dict:
        return dict(self.last)

    def describe(self) -> dict:
        return {"servers": 1 + (self.replica is not None), "mode": "asp",
                "tcp_congestion_control": self.chan.congestion_control()}

    def close(self) -> None:
        try:
            self.chan.send(fr.BYE, 0)
        except fr.PeerError:
            pass   # the server is gone already; nothing left to tell it
        self.chan.close()
