"""NetStorm's datacenter server: the I/O shell around schemes/netstorm/engine.py.

    python3 -m schemes.netstorm.server --config JSON

One per datacenter, on its first host. Connections:
  - its own workers (ps's worker side, schemes/ps/communicator.py): chunks in, sums out;
  - one TCP connection to each overlay neighbour's server, for sending, with its own send
    queue (whose length the auxiliary-path choice looks at) and a sender thread; the
    neighbour answers every message with RECV_REPLY on that connection (network awareness
    times them, schemes/netstorm/awareness.py), and SPEED reports go to the scheduler;
  - one from each neighbour, for receiving (a reader thread each);
  - the scheduler: CHECKIN at each iteration's start, POLICY/GO/ROUTES/STOP back.
All protocol state lives in the engine, driven by one loop over an event queue, so no
state is shared between threads except the send queues and the link meter (locked).

The server exits 0 after the scheduler's STOP (every datacenter's workers are done, so no
message is in flight), non-zero with the reason on stderr when any peer fails; closing its
sockets then makes its workers, neighbours and the scheduler fail too, naming it.
"""
from __future__ import annotations

import argparse
import json
import queue
import socket
import sys
import threading
import time

import numpy as np

import schemes.netstorm.multipath as multipath
import schemes.netstorm.policy as pol
from schemes.netstorm.awareness import LinkMeter
from schemes.netstorm.engine import CheckIn, DcEngine, Deliver, Send
from schemes.netstorm.wire import (CHECKIN, DONE, GO, MSG, MSG_BODY, PEER_HELLO, POLICY,
                                   RECV_REPLY, ROUTES, SPEED, STOP, FAIL, Header, ProtocolError,
                                   decode_json, encode_json)
from workers import framing as fr
from workers.process import serve_and_report


class NetstormServer:
    def __init__(self, cfg: dict):
        self.cfg = cfg
        o = cfg["options"]
        self.me = int(cfg["dc"])
        self.name = f"netstorm server of datacenter {self.me}"
        self.n_workers = int(cfg["workers"])
        self.neighbors = {int(j): (a[0], int(a[1])) for j, a in cfg["neighbors"].items()}
        self.timeout = float(cfg["timeout_s"])
        self.dilation = float(cfg["time_dilation"])
        self.busy, self.idle = o["primary_busy"], o["auxiliary_idle"]
        self.multipath = o["multipath"]
        self.engine = DcEngine(self.me, self.n_workers, int(cfg["total"]), int(cfg["chunk_values"]),
                               self._choose)
        self.meter = LinkMeter(size_threshold=o["report_bytes"], samples=o["report_messages"],
                               report_rate=o["report_rate"])
        self.report_bytes = o["report_bytes"]
        self.meter_lock = threading.Lock()
        self.events: queue.Queue = queue.Queue()
        self.out = {j: queue.Queue() for j in self.neighbors}
        self.writing = {j: 0 for j in self.neighbors}
        self.workers: list[fr.Channel | None] = [None] * self.n_workers
        self.to_workers = [queue.Queue() for _ in range(self.n_workers)]
        self.incoming: dict[int, fr.Channel] = {}
        self.outgoing: dict[int, fr.Channel] = {}
        self.sched: fr.Channel | None = None
        self.sched_lock = threading.Lock()
        self.stopping = threading.Event()
        self.senders: list[threading.Thread] = []
        self.policy = None
        self.speed_reports = 0
        self.lsock = fr.listen(cfg["ip"], int(cfg["port"]))

    # ------------------------------------------------------------------ setup
    def serve(self) -> dict:
        try:
            acc_err: list = []
            acc = threading.Thread(target=lambda: self._guard(self._accept_all, acc_err), daemon=True)
            acc.start()
            sh, sp = self.cfg["scheduler"]
            self.sched = fr.connect(sh, int(sp), f"{self.name}: the scheduler {sh}:{sp}", None,
                                    self.timeout)
            self.sched.send(fr.HELLO, self.me)
            for j, (h, p) in sorted(self.neighbors.items()):
                ch = fr.connect(h, p, f"{self.name}: datacenter {j}'s server {h}:{p}", None, self.timeout)
                ch.send(PEER_HELLO, self.me)
                self.outgoing[j] = ch
            acc.join()
            if acc_err:
                raise acc_err[0]
            self._start_threads()
            try:
                self._loop()
            except BaseException as e:
                self._tell_scheduler(e)
                raise
            return self._stats()
        finally:
            self.stopping.set()
            self.close()

    @staticmethod
    def _guard(fn, errors: list) -> None:
        try:
            fn()
        except BaseException as e:
            errors.append(e)

    def _accept_all(self) -> None:
        deadline = time.monotonic() + self.timeout
        need = self.n_workers + len(self.neighbors)
        for _ in range(need):
            left = max(0.1, deadline - time.monotonic())
            ch = fr.accept(self.lsock, left, f"{self.name}: a worker or neighbour", self.timeout)
            kind, tag, _ = ch.recv(what="HELLO")
            if kind == fr.HELLO and 0 <= tag < self.n_workers and self.workers[tag] is None:
                ch.peer = f"{self.name}: worker {tag}"
                self.workers[tag] = ch
            elif kind == PEER_HELLO and tag in self.neighbors and tag not in self.incoming:
                ch.peer = f"{self.name}: datacenter {tag}'s server"
                ch.sock.settimeout(None)   # a link no tree uses may stay silent all run
                self.incoming[tag] = ch
            else:
                ch.close()
                raise ProtocolError(f"{self.name}: unexpected HELLO (kind {kind}, tag {tag}): "
                                    f"a second connection, or a placement that disagrees")
        self.lsock.close()

    def _thread(self, fn, *args) -> threading.Thread:
        def body():
            try:
                fn(*args)
            except BaseException as e:
                if not self.stopping.is_set():
                    self.events.put(("error", e))
        t = threading.Thread(target=body, daemon=True)
        t.start()
        return t

    def _start_threads(self) -> None:
        for r, ch in enumerate(self.workers):
            self._thread(self._worker_reader, r, ch)
            self.senders.append(self._thread(self._sender, ch, self.to_workers[r]))
        for j, ch in self.incoming.items():
            self._thread(self._neighbor_reader, j, ch)
        for j, ch in self.outgoing.items():
            self.senders.append(self._thread(self._overlay_sender, j, ch))
            self._thread(self._reply_reader, j, ch)
        self._thread(self._scheduler_reader)

    # ------------------------------------------------------------------ threads
    def _worker_reader(self, rank: int, ch: fr.Channel) -> None:
        while True:
            kind, tag, arr = ch.recv(what="DATA or BYE")
            if kind == fr.BYE:
                self.events.put(("bye", rank))
                return
            if kind not in (fr.DATA, fr.DATA_END):
                raise ProtocolError(f"{ch.peer}: frame kind {kind}, expected DATA")
            self.events.put(("local", rank, tag >> 24, tag & 0xFFFFFF, arr))

    def _sender(self, ch: fr.Channel, q: queue.Queue) -> None:
        while True:
            item = q.get()
            if item is None:
                return
            ch.send(*item)

    def _overlay_sender(self, j: int, ch: fr.Channel) -> None:
        seq = 0
        q = self.out[j]
        while True:
            item = q.get()
            if item is None:     # STOP: nothing more will go this way; say so, then end
                ch.send(fr.BYE, 0)
                return
            header, values = item
            self.writing[j] = 1
            if values.nbytes >= self.report_bytes:
                with self.meter_lock:
                    self.meter.sent(j, seq, values.nbytes, time.monotonic())
            ch.send(MSG, seq, header.pack())
            ch.send(MSG_BODY, seq, values)
            self.writing[j] = 0
            seq += 1

    def _reply_reader(self, j: int, ch: fr.Channel) -> None:
        while True:
            kind, seq, arr = ch.recv(what="RECV_REPLY")
            if kind == fr.BYE:   # the neighbour stopped (after STOP: no reply is owed)
                return
            if kind != RECV_REPLY:
                raise ProtocolError(f"{ch.peer}: frame kind {kind}, expected RECV_REPLY")
            if arr.size != 1 or arr.dtype != np.float64:
                raise ProtocolError(f"{ch.peer}: malformed RECV_REPLY")
            with self.meter_lock:   # one-way, as the authors: the neighbour's receive time
                speed = self.meter.replied(j, seq, float(arr[0]))   # (hosts share the clock)
            if speed is not None:   # emulated Mbps -> real-world Mbps
                mbps = speed * self.dilation
                self._to_scheduler(SPEED, 0, np.array([j, mbps], np.float64))
                self.speed_reports += 1

    def _neighbor_reader(self, j: int, ch: fr.Channel) -> None:
        while True:
            kind, seq, harr = ch.recv(what="a message")
            if kind == fr.BYE:
                return
            if kind != MSG:
                raise ProtocolError(f"{ch.peer}: frame kind {kind}, expected a message header")
            header = Header.unpack(harr, self.me, j)
            _, _, body = ch.recv(MSG_BODY, seq, what="a message body")
            ch.send(RECV_REPLY, seq, np.array([time.monotonic()], np.float64))
            self.events.put(("msg", j, header, body))

    def _scheduler_reader(self) -> None:
        while True:
            kind, tag, arr = self.sched.recv(what="a policy, GO, routes or STOP")
            if kind == POLICY:
                self.events.put(("policy", int(tag), pol.Policy.from_json(decode_json(arr))))
            elif kind == GO:
                self.events.put(("go", int(tag)))
            elif kind == ROUTES:
                self.events.put(("routes", pol.routes_from_json(decode_json(arr))))
            elif kind == STOP:
                self.stopping.set()   # neighbours may close before this loop sees STOP
                self.events.put(("stop",))
                return
            else:
                raise ProtocolError(f"{self.name}: unexpected frame kind {kind} from the scheduler")

    def _tell_scheduler(self, e: BaseException) -> None:
        try:   # best effort: the scheduler may be what failed
            self._to_scheduler(FAIL, self.me, encode_json(str(e)))
        except (fr.PeerError, OSError):
            pass

    def _to_scheduler(self, kind: int, tag: int, arr=None) -> None:
        with self.sched_lock:
            self.sched.send(kind, tag, arr)

    # ------------------------------------------------------------------ the loop
    def _choose(self, paths: tuple) -> tuple:
        if not self.multipath or len(paths) == 1:
            return paths[0]
        qlen = {p[1]: self.out[p[1]].qsize() + self.writing[p[1]] for p in paths}
        return multipath.choose_path(paths, qlen, self.busy, self.idle)

    def _loop(self) -> None:
        byes = 0
        e = self.engine
        while True:
            ev = self.events.get()
            kind = ev[0]
            if kind == "error":
                raise ev[1]
            if kind == "local":
                actions = e.on_local(ev[1], ev[2], ev[3], ev[4])
            elif kind == "msg":
                actions = e.on_message(ev[1], ev[2], ev[3])
            elif kind == "policy":
                self.policy = ev[2]
                actions = e.on_policy(ev[1], self.policy)
            elif kind == "go":
                if self.policy is None:
                    raise ProtocolError(f"{self.name}: GO before any policy")
                actions = e.on_policy(ev[1], self.policy)
            elif kind == "routes":
                e.on_routes(ev[1])
                actions = []
            elif kind == "bye":
                byes += 1
                if byes == self.n_workers:
                    self._to_scheduler(DONE, e.finished)
                actions = []
            elif kind == "stop":
                return
            for a in actions:
                if isinstance(a, Send):
                    if a.hop not in self.out:
                        raise ProtocolError(f"{self.name}: path leads to {a.hop}, not a neighbour")
                    self.out[a.hop].put((a.header, a.values))
                elif isinstance(a, Deliver):
                    tag = fr.chunk_tag(a.iteration, a.chunk)
                    for q in self.to_workers:
                        q.put((fr.RESULT, tag, a.values))
                elif isinstance(a, CheckIn):
                    self._to_scheduler(CHECKIN, a.iteration)

    # ------------------------------------------------------------------ end
    def _stats(self) -> dict:
        for ch in self.incoming.values():   # no message is owed a reply any more
            try:
                ch.send(fr.BYE, 0)
            except fr.PeerError:
                pass                        # that neighbour has closed already
        for q in list(self.out.values()) + self.to_workers:
            q.put(None)
        for t in self.senders:
            t.join(self.timeout)
        chans = [c for c in self.workers if c] + list(self.incoming.values()) + \
            list(self.outgoing.values())
        tcp = [c.tcp_counters() for c in chans]
        s = self.engine.stats
        return {"server": f"dc{self.me}", "iterations": self.engine.finished,
                "messages_primary": s["sent_primary"], "messages_auxiliary": s["sent_auxiliary"],
                "messages_relayed": s["relayed"], "speed_reports": self.speed_reports,
                "policy_versions": {str(k): v for k, v in s["policy_versions"].items()},
                "tcp_segments_sent": sum(t[0] for t in tcp),
                "tcp_retransmissions": sum(t[1] for t in tcp),
                "bytes_sent": sum(c.bytes_sent for c in chans),
                "bytes_received": sum(c.bytes_received for c in chans)}

    def close(self) -> None:
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in [*self.workers, *self.incoming.values(), *self.outgoing.values(), self.sched]:
            if c:
                c.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m schemes.netstorm.server",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="JSON written by schemes/netstorm/plan.py")
    a = ap.parse_args(argv)
    return serve_and_report(lambda: NetstormServer(json.loads(a.config)).serve(),
                            (fr.PeerError, ProtocolError, ValueError, socket.error))


if __name__ == "__main__":
    sys.exit(main())
