"""MLfabric's parameter server: the scheduler's socket edge, and the primary's replication.

Built on ps's asynchronous server (schemes/ps/async_server.py: accepting the workers, the
initial models, one reader thread per worker feeding one queue, one sender thread per
worker, failing cleanly): the main loop takes the frames in queue order and hands them to
the scheduler core (schemes/mlfabric/scheduler.py), then carries out what it decides:

  REQUEST       -> core.request: grants go out (GRANT), drops are released at once; a
                   group routed through an aggregator is announced to it (AGG_GROUP)
  DATA_END g    -> a member's gradient of group g; once every member's is in, the group is
                   applied as one version: model -= float32(lr / N) * (float32 sum of the
                   members' gradients in rank order); the members are released. A direct
                   single transfer also feeds the bandwidth measurement (grant -> arrival)
  AGG_SUM g     -> (from an aggregator) the same sum, computed there: applied the same way,
                   unless the group fell back already (then it is discarded)
  AGG_FAIL g    -> a member cannot reach g's aggregator: g falls back (as when its
                   aggregator times out or its connection breaks): every member is granted
                   again, DIRECT, and the aggregator is not chosen again
  REPL_ACK v    -> core.acked(v): grants held back by the replication bound may go
  BYE           -> core.leave

As the primary (a replica address given) it connects to the replica once every worker is
in and sends every applied version (REPL) and its number (HEAD), schemes/mlfabric/wire.py.
The replica (schemes/mlfabric/replica.py) runs this same loop after it takes over.

    python3 -m schemes.mlfabric.server --host IP --port P --children N --lr LR
        --tau-max T [--on-late drop|aggregate] [--slots K] [--agg-window W]
        [--replica IP:PORT --d-rep D] [--name primary] [--timeout S]
        [--aggregation JSON --agg-timeout S]   (plan.py writes the JSON: candidates, bandwidths)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import queue
import sys
import threading
import time

import numpy as np

from schemes.mlfabric import wire as W
from schemes.mlfabric.aggregation import AggregatorChoice, Candidate, GroupTracker
from schemes.mlfabric.placement import Bandwidth
from schemes.mlfabric.scheduler import Drop, Grant, MlfabricCore
from schemes.ps.async_server import AsyncServer
from workers import framing as fr
from workers.process import serve_and_report
from workers.training_modes import Release


class FabricServer(AsyncServer):
    def __init__(self, host: str, port: int, children: int, lr: float, tau_max: int,
                 on_late: str = "drop", slots: int = 1, agg_window: int = 0,
                 replica: tuple[str, int] | None = None, d_rep: int | None = None,
                 timeout_s: float = 60.0, name: str = "primary", accept_timeout_s: float | None = None,
                 aggregation: dict | None = None, agg_timeout_s: float = 2.0):
        super().__init__(host, port, children, lr, None, timeout_s, name, accept_timeout_s)
        if replica is not None and d_rep is None:
            raise ValueError("--replica needs --d-rep (the replication bound)")
        self.choice, self.agg_addr, self.worker_hosts = None, {}, []
        if aggregation:
            try:
                cands = [Candidate(c["name"], c["host"], c.get("worker")) for c in aggregation["candidates"]]
                self.agg_addr = {c["name"]: tuple(c["address"]) for c in aggregation["candidates"]}
                self.worker_hosts = list(aggregation["workers"])
                self.bw = Bandwidth(aggregation["bandwidth"], aggregation["ps"])
                self.choice = AggregatorChoice(cands, self.worker_hosts, aggregation["ps"], self.bw)
            except (KeyError, TypeError) as e:
                raise ValueError(f"--aggregation: missing or malformed field {e} (candidates [{{name, host, "
                                 f"worker, address}}], workers, ps, bandwidth): written by plan.py") from None
            if len(self.worker_hosts) != children:
                raise ValueError(f"--aggregation: {len(self.worker_hosts)} worker hosts for {children} workers")
        self.agg_timeout_s = agg_timeout_s
        self.tracker = GroupTracker()
        self.agg_chans: dict[str, fr.Channel] = {}
        self.agg_members: dict[tuple[str, int], tuple[int, ...]] = {}
        self.granted_at: dict[int, float] = {}
        self.fallbacks: list[dict] = []
        self.agg_lost: dict[str, str] = {}
        self.by_aggregator: dict[str, int] = {}
        self.core = MlfabricCore(children, tau_max, on_late, slots, d_rep if replica else None, agg_window,
                                 choose=self.choice)
        self.replica = replica
        self.inbox: queue.Queue = queue.Queue()
        self.outboxes: dict[int, queue.Queue] = {}
        self.senders: list = []
        self.parts: dict[int, dict[int, np.ndarray]] = {}   # group -> worker -> gradient
        self.repl: fr.Channel | None = None
        self.heads: fr.Channel | None = None
        self.repl_ending = False          # the BYE went out: the replica's EOF is expected
        self.repl_out: queue.Queue | None = None
        self.grants = {"direct": 0, "grouped": 0, "dropped": 0, "aggregated": 0}

    # ------------------------------------------------------------------ the run
    def _run(self) -> None:
        try:
            if self.replica:
                self._connect_replica()
            self._connect_aggregators()
            for rank in range(self.children):
                self._attach(rank, self.chans[rank])
        except BaseException as e:
            self._fail(e)
        self._loop(self.children)

    def _attach(self, rank: int, ch: fr.Channel) -> None:
        """Serve worker `rank` on `ch`: its sender and its reader."""
        self.chans[rank] = ch
        self.outboxes[rank] = queue.Queue()
        self.senders.append(self._thread(self._sender, ch, self.outboxes[rank]))
        self._thread(self._reader, rank, self.inbox)

    def _loop(self, present: int) -> None:
        try:
            while present and self.error is None:
                try:
                    src, item = self.inbox.get(timeout=0.05 if self.tracker.sent else 0.2)
                except queue.Empty:
                    self._expire()
                    continue
                if isinstance(item, BaseException):
                    raise item
                present -= self._handle(src, *item)
                self._expire()
        except BaseException as e:
            self._fail(e)
        if self.error is None and self.repl is not None:
            self.repl_out.put((fr.BYE, 0, None))      # a normal end: the replica stops following
        for name, ch in list(self.agg_chans.items()):  # the aggregators end with the PS
            self._agg_send(name, fr.BYE, 0)
            ch.close()
        for q in [*self.outboxes.values(), self.repl_out]:
            if q is not None:
                q.put(None)
        for t in self.senders:
            t.join()
        if self.error is None and self.repl is not None:
            self._end_replication()

    def _end_replication(self) -> None:
        """A graceful end: the heads channel closes (the replica reads it to its end), then
        the primary waits for the replica to close the data channel. Closing the data
        channel first would reset it under the replica's last REPL_ACK, and the replica
        would take that for the primary's death."""
        self.repl_ending = True
        self.heads.close()
        self.acks.join(self.timeout_s)

    def _handle(self, src, kind: int, tag: int, arr: np.ndarray) -> int:
        """One frame from worker `src` (or "replica"); -> workers that ended with it."""
        if isinstance(src, tuple):                   # ("agg", name)
            self._from_aggregator(src[1], kind, tag, arr)
            return 0
        if src == "replica":
            if kind != W.REPL_ACK:
                raise fr.PeerError(f"{self.repl.peer}: frame kind {kind} where REPL_ACK belongs")
            self._dispatch(self.core.acked(tag))
            return 0
        peer = self.chans[src].peer
        try:
            if kind == W.REQUEST:
                self._dispatch(self.core.request(src, tag, int(arr[0])))
            elif kind == fr.DATA_END:
                self._part(src, tag, arr)
            elif kind == W.AGG_FAIL:
                s = self.tracker.sent.get(tag)
                if s is not None and src in s.members:   # else: it fell back already
                    self._lose(s.via, f"worker {src} cannot reach it")
            elif kind == fr.BYE:
                self._dispatch(self.core.leave(src))
                self._announce(W.LEFT, src)
                return 1
            else:
                raise fr.PeerError(f"{peer}: frame kind {kind} where REQUEST, a granted gradient or "
                                   f"BYE belongs: is the worker running mlfabric's communicator?")
        except ValueError as e:
            raise fr.PeerError(f"{peer}: {e}") from None
        return 0

    def _part(self, rank: int, group: int, grad: np.ndarray) -> None:
        g = self.core.inflight.get(group)
        if g is None or rank not in g.workers:
            raise ValueError(f"gradient for group {group}, which was not granted to it")
        if self.tracker.at_aggregator(group):
            raise ValueError(f"gradient for group {group} sent to the PS, but the group goes through "
                             f"aggregator {self.tracker.sent[group].via}")
        if grad.dtype != np.float32 or grad.size != self.model.size:
            raise ValueError(f"gradient of {grad.size} {grad.dtype} values, expected "
                             f"{self.model.size} float32: same scenario everywhere?")
        t0 = self.granted_at.pop(group, None)
        if t0 is not None and self.choice is not None:   # a single direct transfer: its rate
            self.bw.observe(self.worker_hosts[rank], grad.nbytes, time.monotonic() - t0)
        parts = self.parts.setdefault(group, {})
        parts[rank] = grad
        if len(parts) == len(g.members):
            del self.parts[group]
            self._apply(group, fr.sum_in_order([parts[w] for w in g.workers]))

    def _apply(self, group: int, update: np.ndarray) -> None:
        t0 = time.perf_counter()
        self.model -= self.step * update          # in place, float32: the replay's arithmetic
        self.apply_s += time.perf_counter() - t0
        rows, outs = self.core.arrived(group)
        for r in rows:
            self.applied_at[r.worker] = r.version_applied
        v = self.core.version
        if self.repl_out is not None:
            # who made version v: a worker whose reply is lost with the primary learns
            # from the replica that its update survived (replica.py, on FAILOVER)
            self._announce(W.HEAD, v, np.array([(r.worker, r.iteration) for r in rows], np.int64).ravel())
            self.repl_out.put((W.REPL, v, update))
        self._dispatch(outs)

    def _dispatch(self, outs: list) -> None:
        releases = []
        for o in outs:
            if isinstance(o, Grant):
                self.grants["direct" if len(o.members) == 1 else "grouped"] += 1
                route = self._route(o)
                if route == W.DIRECT and len(o.members) == 1:
                    self.granted_at[o.group] = time.monotonic()
                for m in o.members:
                    self.outboxes[m.worker].put((W.GRANT, m.iteration,
                                                 np.array([o.group, route, len(o.members)], np.int64)))
            elif isinstance(o, Drop):
                self.grants["dropped"] += 1
                self.applied_at[o.request.worker] = W.NOT_APPLIED
                self.outboxes[o.request.worker].put((W.GRANT, o.request.iteration,
                                                     np.array([-1, W.DROP, 1], np.int64)))
            elif isinstance(o, Release):
                releases.append(o)
        self._send_releases(releases, self.outboxes)

    # ------------------------------------------------------------------ aggregation
    def _connect_aggregators(self) -> None:
        """Connect to every candidate; one that cannot be reached is never chosen."""
        for name, (h, p) in self.agg_addr.items():
            try:
                ch = fr.connect(h, p, f"{self.name}: aggregator {name} {h}:{p}", self.timeout_s,
                                self.accept_timeout_s)
                ch.send(W.AGG_JOIN, 0)
            except fr.PeerError as e:
                self._lose(name, f"unreachable at the start ({e})")
                continue
            ch.sock.settimeout(None)                 # silent while no group goes through it
            self.agg_chans[name] = ch
            threading.Thread(target=self._agg_reader, args=(name, ch), daemon=True).start()

    def _agg_reader(self, name: str, ch: fr.Channel) -> None:
        while True:
            try:
                f = ch.recv(what=f"aggregator {name}'s sums")
            except fr.PeerError as e:
                self.inbox.put((("agg", name), ("gone", 0, str(e))))
                return
            self.inbox.put((("agg", name), f))

    def _agg_send(self, name: str, kind: int, tag: int, arr=None) -> bool:
        ch = self.agg_chans.get(name)
        if ch is None:
            return False
        try:
            ch.send(kind, tag, arr)                  # tiny frames: sent from the loop itself
            return True
        except fr.PeerError as e:
            self._lose(name, f"send failed ({e})")
            return False

    def _route(self, g: Grant) -> int:
        """The GRANT route of group g: its aggregator's index once told, else DIRECT."""
        if g.via is None:
            return W.DIRECT
        if not self._agg_send(g.via, W.AGG_GROUP, g.group, np.array(g.workers, np.int64)):
            return W.DIRECT                          # gone since the choice: straight to the PS
        self.tracker.send(g.group, g.via, g.workers, time.monotonic(), self.agg_timeout_s,
                          self.choice.predicted.get(g.via, 0.0))
        self.grants["aggregated"] += 1
        return self.choice.index(g.via)

    def _from_aggregator(self, name: str, kind, tag: int, arr) -> None:
        if kind == "gone":
            if name in self.agg_chans:
                self._lose(name, f"its connection broke ({arr})")
            return
        if kind == W.AGG_MEMBERS:
            self.agg_members[(name, tag)] = tuple(int(r) for r in arr)
            return
        if kind != W.AGG_SUM:
            raise fr.PeerError(f"aggregator {name}: frame kind {kind} where AGG_MEMBERS or AGG_SUM belongs")
        members = self.agg_members.pop((name, tag), None)
        if members is None:
            raise fr.PeerError(f"aggregator {name}: the sum of group {tag} without its members first")
        try:
            accept = self.tracker.sum_arrived(tag, name, members)
        except ValueError as e:
            raise fr.PeerError(f"aggregator {name}: {e}") from None
        if not accept:
            return                                   # the group fell back: applied once, directly
        if arr.dtype != np.float32 or arr.size != self.model.size:
            raise fr.PeerError(f"aggregator {name}: a sum of {arr.size} {arr.dtype} values, expected "
                               f"{self.model.size} float32")
        self.by_aggregator[name] = self.by_aggregator.get(name, 0) + 1
        self._apply(tag, arr)

    def _lose(self, name: str, why: str) -> None:
        """Aggregator `name` is dead or unreachable: never chosen again, its groups fall back."""
        if self.choice is not None:
            self.choice.out.add(name)
        self.agg_lost.setdefault(name, why)
        ch = self.agg_chans.pop(name, None)
        if ch is not None:
            ch.close()
        print(f"{self.name}: aggregator {name} is out: {why}", file=sys.stderr, flush=True)
        for g, s in self.tracker.aggregator_lost(name, f"{name}: {why}"):
            self._fall_back(g, s)

    def _expire(self) -> None:
        for g, s in self.tracker.expired(time.monotonic()):
            if self.choice is not None:
                self.choice.out.add(s.via)           # slow once: not chosen again
            self.agg_lost.setdefault(s.via, f"group {g} timed out")
            self._agg_send(s.via, W.AGG_CANCEL, g)
            self._fall_back(g, s)

    def _fall_back(self, group: int, s) -> None:
        """Every member of `group` sends its gradient straight to the PS now."""
        g = self.core.inflight[group]
        self.fallbacks.append({"group": group, "via": s.via, "members": list(s.members),
                               "why": self.tracker.fell_back[group]})
        for m in g.members:
            self.outboxes[m.worker].put((W.GRANT, m.iteration,
                                         np.array([group, W.DIRECT, len(g.members)], np.int64)))

    # ------------------------------------------------------------------ replication
    def _connect_replica(self) -> None:
        h, p = self.replica
        what = f"{self.name}: replica {h}:{p}"
        self.repl = fr.connect(h, p, what, self.timeout_s, self.accept_timeout_s)
        self.repl.send(fr.HELLO, W.DATA_CHANNEL)
        self.heads = fr.connect(h, p, f"{what} (heads)", self.timeout_s, self.accept_timeout_s)
        self.heads.send(fr.HELLO, W.HEADS_CHANNEL)
        # the model only once both channels are open: the replica reads nothing before it
        # has accepted both, so a model larger than the sockets' buffers sent first blocked
        # the primary there while the replica waited for the second connection (1 MB at
        # `bench schemes`' point hung the run in its first iteration)
        self.repl.send(fr.MODEL_INIT, 0, self.model)
        self.repl_out = queue.Queue()
        self.senders.append(self._thread(self._sender, self.repl, self.repl_out))
        self.acks = self._thread(self._acks)

    def _announce(self, kind: int, tag: int, arr: np.ndarray | None = None) -> None:
        """HEAD or LEFT on the heads channel, written before anything that follows from it
        (a version's releases): a worker that saw version v means the replica was told of
        v, so a failover counts every version the workers saw. Only the loop thread
        writes here."""
        if self.heads is None:
            return
        try:
            self.heads.send(kind, tag, arr)
        except fr.PeerError as e:
            raise fr.PeerError(f"{self.repl.peer}: the replica is gone ({e}); updates can no longer "
                               f"be replicated within d_rep: see its log") from None

    def _acks(self) -> None:
        while True:
            try:
                f = self.repl.recv(what="the replica's acknowledgement")
            except BaseException as e:
                if self.error is None and self.replica and not self.repl_ending:
                    self.inbox.put(("replica", fr.PeerError(
                        f"{self.repl.peer}: the replica is gone ({e}); updates can no longer be "
                        f"replicated within d_rep: see its log")))
                return
            self.inbox.put(("replica", f))

    # ------------------------------------------------------------------ end
    def stats(self) -> dict:
        tcp = [c.tcp_counters() for c in self.chans if c]
        c = self.core
        return {"server": self.name, "mode": "asp", "tau_max": c.tau_max, "on_late": c.on_late,
                "slots": c.slots, "d_rep": c.d_rep, "updates": len(c.log), "final_version": c.version,
                "replica_acked": c.replica_acked if self.replica else None,
                "grants": dict(self.grants), "dropped": len(c.dropped), "late_merged": c.late_merged,
                "model_sha1": hashlib.sha1(self.model.tobytes()).hexdigest() if self.model is not None else None,
                "tcp_segments_sent": sum(t[0] for t in tcp), "tcp_retransmissions": sum(t[1] for t in tcp),
                "bytes_sent": sum(ch.bytes_sent for ch in self.chans if ch),
                "bytes_received": sum(ch.bytes_received for ch in self.chans if ch),
                "aggregate_s": round(self.apply_s, 6), "aggregation": self._agg_stats()}

    def _agg_stats(self) -> dict | None:
        if self.choice is None:
            return None
        t = self.tracker
        return {"aggregators": list(self.agg_addr), "groups_sent": self.grants["aggregated"],
                "groups_applied": t.applied, "by_aggregator": dict(self.by_aggregator),
                "fell_back": self.fallbacks, "late_sums_discarded": t.discarded,
                "out": dict(self.agg_lost), "timeout_s": self.agg_timeout_s,
                "measured_to_ps_Bps": {h: round(b) for h, b in self.bw.measured.items()}}

    def close(self) -> None:
        super().close()
        for ch in (self.repl, self.heads, *self.agg_chans.values()):
            if ch is not None:
                ch.close()


def address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected IP:PORT")
    return host, int(port)


def common_args(ap: argparse.ArgumentParser) -> None:
    """The arguments the primary and the replica share (the replica runs this loop later)."""
    ap.add_argument("--host", required=True, help="address to listen on (this host's IP)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--children", type=int, required=True, help="workers to expect")
    ap.add_argument("--lr", type=float, required=True, help="the workload's learning rate")
    ap.add_argument("--tau-max", type=int, required=True, help="maximum delay of an update")
    ap.add_argument("--on-late", default="drop", help="drop | aggregate (scheduler.py)")
    ap.add_argument("--slots", type=int, default=1, help="transfers into the PS at once")
    ap.add_argument("--agg-window", type=int, default=0, help="versions apart a group may read")
    ap.add_argument("--d-rep", type=int, default=None, help="replication bound, versions")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds of silence before giving up")
    ap.add_argument("--accept-timeout", type=float, default=None,
                    help="seconds to wait for connections (default: --timeout)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m schemes.mlfabric.server",
                                 description=__doc__.splitlines()[0])
    common_args(ap)
    ap.add_argument("--replica", type=address, default=None, help="the replica's IP:PORT")
    ap.add_argument("--name", default="primary")
    ap.add_argument("--aggregation", type=json.loads, default=None,
                    help="JSON: aggregator candidates, worker hosts, PS host, bandwidths (plan.py)")
    ap.add_argument("--agg-timeout", type=float, default=2.0,
                    help="seconds a group may take at its aggregator beyond 2x its predicted time")
    a = ap.parse_args(argv)
    return serve_and_report(lambda: FabricServer(a.host, a.port, a.children, a.lr, a.tau_max, a.on_late,
                                                 a.slots, a.agg_window, a.replica, a.d_rep, a.timeout,
                                                 a.name, a.accept_timeout, a.aggregation,
                                                 a.agg_timeout).serve(),
                            (fr.PeerError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
