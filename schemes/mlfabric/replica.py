"""MLfabric's replica server: follows the primary, and takes over when the primary dies.

Following: the primary connects twice (schemes/mlfabric/wire.py): on the data channel it
sends the initial model, then every applied version's update (REPL tag v), which the
replica applies with the primary's arithmetic (model -= float32(lr / N) * update, so its
model of version v has the primary's bits) and acknowledges (REPL_ACK v); on the heads
channel it announces each version as soon as it exists, with the (rank, iteration) of
the updates that made it (HEAD v), and each worker that ended (LEFT rank).

Takeover: when the data channel breaks without the primary's BYE, the primary is dead.
The updates lost are the primary's last announced version minus the replica's version
(the primary grants only while that difference stays <= d_rep, scheduler.py). The
replica then runs the primary's loop (schemes/mlfabric/server.py, without a replica of
its own) from its version: each surviving worker connects (HELLO rank, FAILOVER tag c)
and is released to start iteration c on the replica's model. Its update of c - 1 is
reported applied (the release's applied_at) when a version this replica holds was made
with it: the primary applied and replicated it, then died before its reply got out (the
worker does not re-send it, so nothing is applied twice); otherwise it is lost.

It ends when every worker still training said BYE, or at SIGTERM (a worker that ended
while the primary was dying may never reach it): its stats line carries the failover.

    python3 -m schemes.mlfabric.replica --host IP --port P --children N --lr LR --tau-max T ...
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from schemes.mlfabric import wire as W
from schemes.mlfabric.server import FabricServer, common_args
from workers import framing as fr
from workers.process import serve_and_report


class Stopped(Exception):
    """SIGTERM: the testbed ends the replica once the workers are done."""


class ReplicaServer(FabricServer):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.replica_version = 0          # versions applied while following
        self.primary_seen = 0             # the primary's last announced version
        self.left_at_primary: set[int] = set()
        self.applied_at_primary: dict[tuple[int, int], int] = {}   # (rank, iteration) -> version applied to
        self.failover: dict | None = None
        self.data: fr.Channel | None = None
        self.heads_in: fr.Channel | None = None
        self.stopping = threading.Event()
        self.serving = False

    def stop(self, *_):
        # Raised only while following or serving: a SIGTERM that lands while the replica
        # is already ending (closing, printing its stats) must not turn a clean end into
        # a traceback.
        if not self.stopping.is_set():
            self.stopping.set()
            if self.serving:
                raise Stopped()

    def serve(self) -> dict:
        self.serving = True
        try:
            try:
                if self._follow():
                    self._take_over()
            except Stopped:
                pass
            finally:
                self.serving = False
            if self.error and not isinstance(self.error, Stopped):
                raise self.error
            return self.stats()
        finally:
            self.close()

    # ------------------------------------------------------------------ following
    def _follow(self) -> bool:
        """Apply the primary's versions; -> True when the primary died (False: it ended)."""
        for _ in range(2):
            ch = fr.accept(self.lsock, self.accept_timeout_s, f"{self.name}: the primary", self.timeout_s)
            _, which, _ = ch.recv(fr.HELLO, what="HELLO")
            if which == W.DATA_CHANNEL:
                self.data = ch
            else:
                self.heads_in = ch
        if self.data is None or self.heads_in is None:
            raise fr.PeerError(f"{self.name}: the primary opened two {'data' if self.data else 'heads'} "
                               f"channels: is it mlfabric's primary?")
        self.heads_in.sock.settimeout(None)   # silent while the job computes: that is fine
        _, _, m = self.data.recv(fr.MODEL_INIT, what="the initial model")
        self.model = m.copy()
        heads = threading.Thread(target=self._read_heads, daemon=True)
        heads.start()
        self.data.sock.settimeout(None)       # the primary may be idle for long; death shows as EOF
        while True:
            try:
                kind, tag, arr = self.data.recv(what="the primary's next version")
            except fr.PeerError as e:
                self._lost(str(e))
                return True
            if kind == fr.BYE:     # a normal end: read the heads channel to its end, so
                heads.join(self.timeout_s)   # the primary's last notices are not refused
                return False
            if kind != W.REPL or tag != self.replica_version + 1 or arr.size != self.model.size:
                raise fr.PeerError(f"{self.data.peer}: frame kind {kind} tag {tag} where version "
                                   f"{self.replica_version + 1}'s update belongs")
            self.model -= self.step * arr
            self.replica_version = tag
            try:
                self.data.send(W.REPL_ACK, tag)
            except fr.PeerError as e:   # the primary died between its update and our ack
                self._lost(str(e))
                return True

    def _read_heads(self) -> None:
        while True:
            try:
                kind, tag, arr = self.heads_in.recv(what="the primary's version announcements")
            except fr.PeerError:
                return
            if kind == W.HEAD:
                self.primary_seen = max(self.primary_seen, tag)
                for rank, iteration in arr.reshape(-1, 2).tolist():
                    self.applied_at_primary[(rank, iteration)] = tag - 1
            elif kind == W.LEFT:
                self.left_at_primary.add(tag)

    def _lost(self, why: str) -> None:
        time.sleep(0.2)   # the heads channel's last frames (sent before the data's) drain
        self.primary_seen = max(self.primary_seen, self.replica_version)
        self.failover = {"primary_died": why, "primary_version": self.primary_seen,
                         "replica_version": self.replica_version,
                         "lost_updates": self.primary_seen - self.replica_version,
                         "d_rep": self.core.d_rep, "workers_ended_before": sorted(self.left_at_primary),
                         "t": time.monotonic()}
        print(f"{self.name}: primary lost at version {self.primary_seen}, taking over at "
              f"{self.replica_version} ({self.failover['lost_updates']} updates lost)",
              file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ serving
    def _take_over(self) -> None:
        c = self.core
        c.d_rep, c.version, c.replica_acked = None, self.replica_version, self.replica_version
        c.left = [True] * self.children      # nobody is back yet; each FAILOVER joins one
        self.replica = None
        expected = self.children - len(self.left_at_primary)
        self.lsock.settimeout(0.5)
        threading.Thread(target=self._accept_workers, daemon=True).start()
        self._loop(expected)

    def _accept_workers(self) -> None:
        while self.error is None and not self.stopping.is_set():
            try:
                ch = fr.accept(self.lsock, 0.5, f"{self.name}: a worker", self.timeout_s)
            except fr.PeerError:
                continue
            except OSError:
                return                          # closed: the replica is ending
            try:
                _, rank, _ = ch.recv(fr.HELLO, what="HELLO")
                _, nxt, _ = ch.recv(W.FAILOVER, what="the worker's FAILOVER")
            except fr.PeerError as e:
                ch.close()
                print(f"{self.name}: a connection that was no worker failing over: {e}",
                      file=sys.stderr, flush=True)
                continue
            if not 0 <= rank < self.children:
                ch.close()
                continue
            ch.peer = f"{self.name}: worker {rank}"
            self.inbox.put((rank, ("join", ch, nxt)))

    def _handle(self, src, kind, tag, arr=None) -> int:
        if kind == "join":                      # (rank, ("join", channel, next iteration))
            self._attach(src, tag)
            # its update of the iteration before survived if it made a version this
            # replica holds: the primary applied it and died before the reply got out
            last = int(arr) - 1
            v = self.applied_at_primary.get((src, last), W.NOT_APPLIED)
            survived = W.NOT_APPLIED < v < self.replica_version
            self.applied_at[src] = v if survived else W.NOT_APPLIED
            self.failover.setdefault("rejoined", []).append(src)
            if survived:
                self.failover.setdefault("survived", []).append([src, last, v])
            self._send_releases([self.core.join(src, int(arr))], self.outboxes)
            return 0
        return super()._handle(src, kind, tag, arr)

    def stats(self) -> dict:
        out = super().stats()
        out.update(role="replica", followed_versions=self.replica_version,
                   final_version=self.core.version if self.failover else self.replica_version,
                   failover=self.failover)
        return out

    def close(self) -> None:
        super().close()
        for ch in (self.data, self.heads_in):
            if ch is not None:
                ch.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m schemes.mlfabric.replica",
                                 description=__doc__.splitlines()[0])
    common_args(ap)
    ap.add_argument("--name", default="replica")
    a = ap.parse_args(argv)

    def serve() -> dict:
        r = ReplicaServer(a.host, a.port, a.children, a.lr, a.tau_max, a.on_late, a.slots, a.agg_window,
                          None, None, a.timeout, a.name, a.accept_timeout)
        r.core.d_rep = a.d_rep
        signal.signal(signal.SIGTERM, r.stop)
        signal.signal(signal.SIGINT, r.stop)
        return r.serve()
    rc = serve_and_report(serve, (fr.PeerError, ValueError))
    # The stats are out: a late SIGTERM (the testbed ending a replica it saw still alive)
    # must not turn this clean end into -15 during the interpreter's finalization.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return rc


if __name__ == "__main__":
    sys.exit(main())
