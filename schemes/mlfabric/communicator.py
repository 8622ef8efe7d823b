"""Worker side of mlfabric: ask the scheduler, send when granted, get the model back, and
fail over to the replica when the primary dies (schemes/mlfabric/wire.py: the protocol).

comm (written by schemes/mlfabric/plan.py):
    primary    [ip, port]
    replica    [ip, port] or null (no replication)
    child_rank this worker's rank at the server
    timeout_s  emulated seconds of silence before a server counts as dead
    aggregators  [[name, ip, port], ...] (a GRANT's route >= 0 indexes it) or absent
    agg_timeout_s  emulated seconds to reach an aggregator before telling the PS it cannot

Per iteration c, push_pull: REQUEST c (the update's size), wait for the GRANT (the
scheduler serializes transfers into the PS, so this wait is the order on the wire), send
the gradient (to the PS; to the aggregator the grant names, connecting on first use; or
not at all: dropped because it would exceed tau_max), wait for the release. A second GRANT
of the same iteration before the release means the group fell back (its aggregator timed
out or died): the gradient goes straight to the PS. An aggregator this worker cannot
reach is reported (AGG_FAIL), so the group falls back at once. If
the primary's connection breaks at any point, the worker connects to the replica, says
FAILOVER c + 1 and carries on from the replica's model: its update of c is lost (Pulled.
applied_at None, like a dropped one) unless the replica holds a version made with it
(the primary applied it and died before replying): then applied_at is that version.
"""
from __future__ import annotations

import time

import numpy as np

from schemes.mlfabric import wire as W
from schemes.ps.async_communicator import send_initial_model, update_vector
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
        self.aggregators = [(str(n), str(h), int(p)) for n, h, p in comm.get("aggregators") or []]
        self.agg_timeout = float(comm.get("agg_timeout_s", self.timeout))
        self.agg_chans: dict[int, fr.Channel | None] = {}   # None: it could not be reached
        self.agg_opened: list[fr.Channel] = []              # every one, for the byte counters
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
        self.size = send_initial_model(self.chan, model)

    def push_pull(self, grad: np.ndarray, iteration: int) -> Pulled:
        vec = update_vector(grad, self.size, "mlfabric")
        t0 = time.monotonic()
        try:
            route, group = self._ask(iteration, vec.nbytes)
            t_grant = time.monotonic()
            if route == W.DIRECT:
                self.chan.send(fr.DATA_END, group, vec)
            elif route >= 0:
                self._to_aggregator(route, group, vec)
            pulled, fell_back = self._release_or_resend(iteration, group, vec)
        except fr.PeerError:
            if self.replica is None or self.server == "replica":
                raise
            return self._fail_over(iteration, t0)
        self.last = {"server": self.server, "grant_wait_s": round(t_grant - t0, 6),
                     "route": "dropped" if route == W.DROP else "direct" if route == W.DIRECT
                     else "aggregator fell back" if fell_back else "aggregated", "group": group}
        if route >= 0:
            self.last["aggregator"] = self.aggregators[route][0]
        return pulled

    def _to_aggregator(self, index: int, group: int, vec: np.ndarray) -> None:
        """Send to aggregator `index`; if it cannot be reached, tell the PS (AGG_FAIL)."""
        name, h, p = self.aggregators[index]
        ch = self.agg_chans.get(index)
        try:
            if index not in self.agg_chans:
                ch = self.agg_chans[index] = None
                ch = fr.connect(h, p, f"{self.me.name}: aggregator {name} {h}:{p}", self.agg_timeout,
                                self.agg_timeout)
                ch.send(fr.HELLO, self.rank)
                self.agg_chans[index] = ch
                self.agg_opened.append(ch)
            if ch is None:
                raise fr.PeerError(f"aggregator {name} could not be reached before")
            ch.send(fr.DATA_END, group, vec)
        except fr.PeerError:
            if ch is not None:
                ch.close()
                self.agg_chans[index] = None
            self.chan.send(W.AGG_FAIL, group)   # the PS re-grants the group DIRECT

    def _release_or_resend(self, iteration: int, group: int, vec: np.ndarray) -> tuple[Pulled, bool]:
        """The release; before it, maybe a second grant: the group fell back, send to the PS."""
        fell_back = False
        while True:
            kind, tag, arr = self.chan.recv(what=f"the model to start iteration {iteration + 1}")
            if kind == W.GRANT and tag == iteration and arr.size == 3 and int(arr[0]) == group \
                    and int(arr[1]) == W.DIRECT and not fell_back:
                self.chan.send(fr.DATA_END, group, vec)
                fell_back = True
                continue
            if kind != fr.MODEL_VERSION or tag != iteration + 1:
                raise fr.PeerError(f"{self.chan.peer}: frame kind {kind} tag {tag} where the release "
                                   f"of iteration {iteration + 1} (or a fallback grant) belongs")
            return self._release(iteration + 1, arr), fell_back

    def _ask(self, iteration: int, nbytes: int) -> tuple[int, int]:
        self.chan.send(W.REQUEST, iteration, np.array([nbytes], np.int64))
        _, _, g = self.chan.recv(W.GRANT, iteration, what=f"the grant to send iteration {iteration}'s "
                                                            f"update (the scheduler serializes transfers)")
        if g.size != 3 or not (int(g[1]) in (W.DIRECT, W.DROP) or 0 <= int(g[1]) < len(self.aggregators)):
            raise fr.PeerError(f"{self.chan.peer}: grant {g.tolist()} is not [group, route, members] "
                               f"with a route this worker knows")
        return int(g[1]), int(g[0])

    def _release(self, nxt: int, head: np.ndarray | None = None) -> Pulled:
        what = f"the model to start iteration {nxt}"
        if head is None:
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
        for ch in [self.chan, *self.agg_opened]:     # the replica routes nothing through them
            ch.close()
        self.agg_opened, self.agg_chans = [], {}
        self.chan = self._connect(self.replica, "replica")
        self.server = "replica"
        self.chan.send(W.FAILOVER, iteration + 1)
        pulled = self._release(iteration + 1)
        self.last = {"server": "replica", "failover_s": round(time.monotonic() - t0, 6),
                     "route": "lost in failover" if pulled.applied_at is None
                     else "applied before failover"}
        return pulled

    def counters(self) -> Counters:
        now, b = fr.channel_counters([self.chan, *self.agg_opened]), self.before
        return Counters(*(getattr(now, k) + getattr(b, k) for k in Counters.__dataclass_fields__))

    def stats(self) -> dict:
        return dict(self.last)

    def describe(self) -> dict:
        return {"servers": 1 + (self.replica is not None), "mode": "asp",
                "tcp_congestion_control": self.chan.congestion_control()}

    def close(self) -> None:
        for ch in [self.chan, *self.agg_chans.values()]:
            if ch is None:
                continue
            try:
                ch.send(fr.BYE, 0)
            except fr.PeerError:
                pass   # the peer is gone already; nothing left to tell it
            ch.close()
