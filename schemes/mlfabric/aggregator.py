"""MLfabric's aggregator process: sums a group's gradients and forwards one update to the PS.

It runs on an idle worker's host or on a datacenter's gateway-side host (aggregation.py
says when each is chosen). The PS connects once (AGG_JOIN) and tells it each group it
routes here (AGG_GROUP: the member ranks); members connect on first use (HELLO rank) and
send their gradient (DATA_END tag group). Parts may come before their group's notice, so
they wait. Once a group's parts are all in, the aggregator sends AGG_MEMBERS and AGG_SUM:
the float32 sum of the parts in rank order (framing.sum_in_order, the PS's own order, so
numpy can replay it bit for bit). AGG_CANCEL drops a group that fell back to the PS.

It ends when the PS's connection ends (BYE, or the PS died: nothing is left to forward
to), or at SIGTERM; its stats line counts what it aggregated.

    python3 -m schemes.mlfabric.aggregator --host IP --port P --children N --name agg-h1 [--timeout S]
"""
from __future__ import annotations

import argparse
import queue
import signal
import sys
import threading

import numpy as np

from schemes.mlfabric import wire as W
from workers import framing as fr
from workers.process import serve_and_report

PS = "ps"


class PsGone(Exception):
    """The PS's connection broke while a sum was forwarded: the service is over."""


class Stopped(Exception):
    """SIGTERM: the testbed ends the aggregator once the workers are done."""


class Aggregator:
    def __init__(self, host: str, port: int, children: int, name: str, timeout_s: float = 60.0):
        self.children, self.name, self.timeout_s = children, name, timeout_s
        self.lsock = fr.listen(host, port)
        self.inbox: queue.Queue = queue.Queue()
        self.ps: fr.Channel | None = None
        self.chans: list[fr.Channel] = []
        self.groups: dict[int, tuple[int, ...]] = {}          # group -> members (rank order)
        self.parts: dict[int, dict[int, np.ndarray]] = {}     # group -> rank -> gradient
        self.cancelled: set[int] = set()
        self.counts = {"groups": 0, "parts": 0, "cancelled": 0, "parts_dropped": 0, "sums_unsent": 0}
        self.closing = threading.Event()

    def stop(self, *_):
        raise Stopped()

    def serve(self) -> dict:
        print(f"{self.name}: listening on {self.lsock.getsockname()}", file=sys.stderr, flush=True)
        threading.Thread(target=self._accept, daemon=True).start()
        try:
            self._loop()
        except (Stopped, PsGone):
            pass
        finally:
            self.close()
        return self.stats()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                ch = fr.accept(self.lsock, 1.0, f"{self.name}: a peer", self.timeout_s)
            except fr.PeerError:
                continue
            except OSError:
                return                                # listening socket closed: ending
            threading.Thread(target=self._reader, args=(ch,), daemon=True).start()

    def _reader(self, ch: fr.Channel) -> None:
        try:
            kind, tag, _ = ch.recv(what="HELLO or AGG_JOIN")
        except fr.PeerError:
            ch.close()
            return
        if kind == W.AGG_JOIN:
            src = PS
            ch.sock.settimeout(None)                  # the PS may route nothing here for long
        elif kind == fr.HELLO and 0 <= tag < self.children:
            src = int(tag)
            ch.sock.settimeout(None)                  # a member sends only when granted
        else:
            print(f"{self.name}: {ch.peer}: frame kind {kind} tag {tag} is neither a worker's HELLO "
                  f"nor the PS's AGG_JOIN: closed", file=sys.stderr, flush=True)
            ch.close()
            return
        self.inbox.put((src, ("open", ch)))
        while True:
            try:
                f = ch.recv(what="a gradient, a group or BYE")
            except fr.PeerError as e:
                self.inbox.put((src, ("gone", str(e))))
                return
            self.inbox.put((src, f))
            if f[0] == fr.BYE:
                return

    def _loop(self) -> None:
        while True:
            try:
                src, item = self.inbox.get(timeout=0.5)   # a timeout: SIGTERM gets its turn
            except queue.Empty:
                continue
            kind = item[0]
            if kind == "open":
                self.chans.append(item[1])
                if src == PS:
                    if self.ps is not None:
                        raise fr.PeerError(f"{self.name}: a second PS connected: one PS per run")
                    self.ps = item[1]
                continue
            if src == PS:
                if kind in ("gone", fr.BYE):
                    return                            # the PS ended or died: nothing to forward to
                self._from_ps(kind, item[1], item[2])
            elif kind == fr.DATA_END:
                self._part(src, item[1], item[2])
            elif kind not in ("gone", fr.BYE):
                raise fr.PeerError(f"{self.name}: worker {src} sent frame kind {kind} where a "
                                   f"gradient (DATA_END) belongs: is it mlfabric's communicator?")

    def _from_ps(self, kind: int, group: int, arr: np.ndarray) -> None:
        if kind == W.AGG_GROUP:
            members = tuple(int(r) for r in arr)
            if not members or list(members) != sorted(set(members)) or members[-1] >= self.children:
                raise fr.PeerError(f"{self.name}: group {group} with members {list(members)}: expected "
                                   f"distinct ranks 0..{self.children - 1} in order")
            self.groups[group] = members
            self._maybe_forward(group)
        elif kind == W.AGG_CANCEL:
            self.cancelled.add(group)
            self.groups.pop(group, None)
            self.counts["parts_dropped"] += len(self.parts.pop(group, {}))
            self.counts["cancelled"] += 1
        else:
            raise fr.PeerError(f"{self.name}: the PS sent frame kind {kind} where AGG_GROUP, "
                               f"AGG_CANCEL or BYE belongs")

    def _part(self, rank: int, group: int, grad: np.ndarray) -> None:
        self.counts["parts"] += 1
        if group in self.cancelled:
            self.counts["parts_dropped"] += 1         # the group went to the PS directly
            return
        if grad.dtype != np.float32:
            raise fr.PeerError(f"{self.name}: worker {rank} sent a {grad.dtype} gradient, expected float32")
        self.parts.setdefault(group, {})[rank] = grad
        self._maybe_forward(group)

    def _maybe_forward(self, group: int) -> None:
        members, parts = self.groups.get(group), self.parts.get(group, {})
        if members is None or set(parts) != set(members):
            return                                    # its notice or a part is still to come
        total = fr.sum_in_order([parts[r] for r in members])
        del self.groups[group], self.parts[group]
        try:
            self.ps.send(W.AGG_MEMBERS, group, np.array(members, np.int64))
            self.ps.send(W.AGG_SUM, group, total)
        except fr.PeerError:
            # the PS ended (or died) while this sum was late, e.g. after a stall: it had
            # sent the group's members to itself already; nothing is left to forward to
            self.counts["sums_unsent"] += 1
            raise PsGone() from None
        self.counts["groups"] += 1

    def stats(self) -> dict:
        return {"server": self.name, "role": "aggregator", **self.counts,
                "waiting_groups": len(self.groups),
                "bytes_sent": sum(c.bytes_sent for c in self.chans),
                "bytes_received": sum(c.bytes_received for c in self.chans)}

    def close(self) -> None:
        self.closing.set()
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in self.chans:
            c.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m schemes.mlfabric.aggregator",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--host", required=True, help="address to listen on (this host's IP)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--children", type=int, required=True, help="workers of the job (ranks 0..N-1)")
    ap.add_argument("--name", required=True, help="this aggregator's name in the plan")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a stalled send may take")
    a = ap.parse_args(argv)

    def serve() -> dict:
        agg = Aggregator(a.host, a.port, a.children, a.name, a.timeout)
        signal.signal(signal.SIGTERM, agg.stop)
        signal.signal(signal.SIGINT, agg.stop)
        return agg.serve()
    return serve_and_report(serve, (fr.PeerError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
