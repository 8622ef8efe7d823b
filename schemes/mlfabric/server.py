"""MLfabric's parameter server: the scheduler's socket edge, and the primary's replication.

Built on ps's asynchronous server (schemes/ps/async_server.py: accepting the workers, the
initial models, one reader thread per worker feeding one queue, one sender thread per
worker, failing cleanly): the main loop takes the frames in queue order and hands them to
the scheduler core (schemes/mlfabric/scheduler.py), then carries out what it decides:

  REQUEST       -> core.request: grants go out (GRANT), drops are released at once
  DATA_END g    -> a member's gradient of group g; once every member's is in, the group is
                   applied as one version: model -= float32(lr / N) * (float32 sum of the
                   members' gradients in rank order); the members are released
  REPL_ACK v    -> core.acked(v): grants held back by the replication bound may go
  BYE           -> core.leave

As the primary (a replica address given) it connects to the replica once every worker is
in and sends every applied version (REPL) and its number (HEAD), schemes/mlfabric/wire.py.
The replica (schemes/mlfabric/replica.py) runs this same loop after it takes over.

    python3 -m schemes.mlfabric.server --host IP --port P --children N --lr LR
        --tau-max T [--on-late drop|aggregate] [--slots K] [--agg-window W]
        [--replica IP:PORT --d-rep D] [--name primary] [--timeout S]
"""
from __future__ import annotations

import argparse
import hashlib
import queue
import sys
import time

import numpy as np

from schemes.mlfabric import wire as W
from schemes.mlfabric.scheduler import Drop, Grant, MlfabricCore
from schemes.ps.async_server import AsyncServer
from workers import framing as fr
from workers.process import serve_and_report
from workers.training_modes import Release


class FabricServer(AsyncServer):
    def __init__(self, host: str, port: int, children: int, lr: float, tau_max: int,
                 on_late: str = "drop", slots: int = 1, agg_window: int = 0,
                 replica: tuple[str, int] | None = None, d_rep: int | None = None,
                 timeout_s: float = 60.0, name: str = "primary", accept_timeout_s: float | None = None):
        super().__init__(host, port, children, lr, None, timeout_s, name, accept_timeout_s)
        if replica is not None and d_rep is None:
            raise ValueError("--replica needs --d-rep (the replication bound)")
        self.core = MlfabricCore(children, tau_max, on_late, slots, d_rep if replica else None, agg_window)
        self.replica = replica
        self.inbox: queue.Queue = queue.Queue()
        self.outboxes: dict[int, queue.Queue] = {}
        self.senders: list = []
        self.parts: dict[int, dict[int, np.ndarray]] = {}   # group -> worker -> gradient
        self.repl: fr.Channel | None = None
        self.heads: fr.Channel | None = None
        self.repl_out: queue.Queue | None = None
        self.heads_out: queue.Queue | None = None
        self.grants = {"direct": 0, "grouped": 0, "dropped": 0}

    # ------------------------------------------------------------------ the run
    def _run(self) -> None:
        try:
            if self.replica:
                self._connect_replica()
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
                    src, item = self.inbox.get(timeout=0.2)
                except queue.Empty:
                    continue
                if isinstance(item, BaseException):
                    raise item
                present -= self._handle(src, *item)
        except BaseException as e:
            self._fail(e)
        if self.error is None and self.repl is not None:
            self.repl_out.put((fr.BYE, 0, None))      # a normal end: the replica stops following
        for q in [*self.outboxes.values(), self.repl_out, self.heads_out]:
            if q is not None:
                q.put(None)
        for t in self.senders:
            t.join()

    def _handle(self, src, kind: int, tag: int, arr: np.ndarray) -> int:
        """One frame from worker `src` (or "replica"); -> workers that ended with it."""
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
            elif kind == fr.BYE:
                self._dispatch(self.core.leave(src))
                if self.heads_out is not None:
                    self.heads_out.put((W.LEFT, src, None))
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
        if grad.dtype != np.float32 or grad.size != self.model.size:
            raise ValueError(f"gradient of {grad.size} {grad.dtype} values, expected "
                             f"{self.model.size} float32: same scenario everywhere?")
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
            self.heads_out.put((W.HEAD, v, None))
            self.repl_out.put((W.REPL, v, update))
        self._dispatch(outs)

    def _dispatch(self, outs: list) -> None:
        releases = []
        for o in outs:
            if isinstance(o, Grant):
                self.grants["direct" if len(o.members) == 1 else "grouped"] += 1
                for m in o.members:
                    self.outboxes[m.worker].put((W.GRANT, m.iteration,
                                                 np.array([o.group, W.DIRECT, len(o.members)], np.int64)))
            elif isinstance(o, Drop):
                self.grants["dropped"] += 1
                self.applied_at[o.request.worker] = W.NOT_APPLIED
                self.outboxes[o.request.worker].put((W.GRANT, o.request.iteration,
                                                     np.array([-1, W.DROP, 1], np.int64)))
            elif isinstance(o, Release):
                releases.append(o)
        self._send_releases(releases, self.outboxes)

    # ------------------------------------------------------------------ replication
    def _connect_replica(self) -> None:
        h, p = self.replica
        what = f"{self.name}: replica {h}:{p}"
        self.repl = fr.connect(h, p, what, self.timeout_s, self.accept_timeout_s)
        self.repl.send(fr.HELLO, W.DATA_CHANNEL)
        self.repl.send(fr.MODEL_INIT, 0, self.model)
        self.heads = fr.connect(h, p, f"{what} (heads)", self.timeout_s, self.accept_timeout_s)
        self.heads.send(fr.HELLO, W.HEADS_CHANNEL)
        self.repl_out, self.heads_out = queue.Queue(), queue.Queue()
        self.senders += [self._thread(self._sender, self.repl, self.repl_out),
                         self._thread(self._sender, self.heads, self.heads_out)]
        self._thread(self._acks)

    def _acks(self) -> None:
        while True:
            try:
                f = self.repl.recv(what="the replica's acknowledgement")
            except BaseException as e:
                if self.error is None and self.replica:
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
                "aggregate_s": round(self.apply_s, 6)}

    def close(self) -> None:
        super().close()
        for ch in (self.repl, self.heads):
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
    a = ap.parse_args(argv)
    return serve_and_report(lambda: FabricServer(a.host, a.port, a.children, a.lr, a.tau_max, a.on_late,
                                                 a.slots, a.agg_window, a.replica, a.d_rep, a.timeout,
                                                 a.name, a.accept_timeout).serve(),
                            (fr.PeerError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
