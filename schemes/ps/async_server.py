"""The asynchronous parameter server of scheme ps (training modes ssp and asp).

The server holds the model (float32, the workers' layout: workers.workload.model_vector).
Each worker pushes the gradient of its iteration c; the server applies it at once,
    model <- model - step * gradient,  step = float32(lr / N)
(one worker's gradient scaled 1/N, so N updates move the model as one bsp step), and
releases the worker to start c + 1 on the newest model when the SSP gate allows it. The
decisions (versions, gate, staleness log) are workers.training_modes.SspCore's; this module
is the socket edge around it: one reader thread per worker feeds one queue, and the main
loop handles the frames in the order it takes them, so "the order updates arrive" is that
queue's order and every model sent is the one of its version.

Protocol per connection (workers/framing.py):
    worker -> server   HELLO rank, MODEL_INIT model (every worker: they must agree), then per
                       iteration c: DATA_END tag c gradient; at the end BYE
    server -> worker   per release: MODEL_VERSION tag c+1 [c+1, version, clock, applied_at],
                       MODEL tag c+1 model

    python3 -m schemes.ps.async_server --host IP --port P --children N --lr 0.1 [--staleness S]

It exits 0 once every worker said BYE, printing its stats (with the final model's version
and sha1, so tests can replay the updates); non-zero with the reason when a worker dies.
"""
from __future__ import annotations

import argparse
import hashlib
import queue
import sys
import threading
import time

import numpy as np

from workers import framing as fr
from workers.process import serve_and_report
from workers.training_modes import Release, SspCore


class AsyncServer:
    def __init__(self, host: str, port: int, children: int, lr: float, staleness: int | None,
                 timeout_s: float = 60.0, name: str = "ps", accept_timeout_s: float | None = None):
        self.core = SspCore(children, staleness)       # validates children and the bound
        self.children, self.timeout_s, self.name = children, timeout_s, name
        self.step = np.float32(lr / children)
        self.accept_timeout_s = accept_timeout_s or timeout_s
        self.lsock = fr.listen(host, port)
        self.address = self.lsock.getsockname()
        self.chans: list[fr.Channel | None] = [None] * children
        self.model: np.ndarray | None = None
        self.applied_at = [0] * children               # version each worker's last update got
        self.apply_s = 0.0
        self.max_waiting = 0                           # most workers held by the gate at once
        self.error: BaseException | None = None

    # ------------------------------------------------------------------ the run
    def serve(self) -> dict:
        try:
            self._accept_children()
            self._receive_initial_models()
            self._run()
            if self.error:
                raise self.error
            stats = self.stats()
        finally:
            self.close()
        return stats

    def _run(self) -> None:
        inbox: queue.Queue = queue.Queue()
        outboxes = [queue.Queue() for _ in range(self.children)]
        readers = [self._thread(self._reader, r, inbox) for r in range(self.children)]
        senders = [self._thread(self._sender, self.chans[r], outboxes[r]) for r in range(self.children)]
        present = self.children
        try:
            while present and self.error is None:
                try:
                    rank, item = inbox.get(timeout=0.2)
                except queue.Empty:
                    continue
                if isinstance(item, BaseException):
                    raise item
                kind, tag, arr = item
                if kind == fr.BYE:
                    present -= 1
                    self._send_releases(self.core.leave(rank), outboxes)
                    continue
                if kind != fr.DATA_END:
                    raise fr.PeerError(f"{self.chans[rank].peer}: frame kind {kind} where a gradient "
                                       f"(DATA_END) or BYE belongs: is the worker in the same mode?")
                self._send_releases(self._apply(rank, tag, arr), outboxes)
        except BaseException as e:
            self._fail(e)
        for q in outboxes:
            q.put(None)
        for t in senders:
            t.join()
        del readers   # daemon threads, done or unblocked by close()

    def _apply(self, rank: int, iteration: int, grad: np.ndarray) -> list[Release]:
        if grad.dtype != np.float32 or grad.size != self.model.size:
            raise fr.PeerError(f"{self.chans[rank].peer}: gradient of {grad.size} {grad.dtype} values, "
                               f"expected {self.model.size} float32: same scenario everywhere?")
        try:
            applied, releases = self.core.push(rank, iteration)
        except ValueError as e:
            raise fr.PeerError(f"{self.chans[rank].peer}: {e}") from None
        t0 = time.perf_counter()
        self.model -= self.step * grad     # in place, float32: the replay's arithmetic
        self.apply_s += time.perf_counter() - t0
        self.applied_at[rank] = applied.version_applied
        self.max_waiting = max(self.max_waiting, len(self.core.waiting))
        return releases

    def _send_releases(self, releases: list[Release], outboxes) -> None:
        if not releases:
            return
        snapshot = self.model.copy()       # later updates must not change what these workers get
        for r in releases:
            head = np.array([r.iteration, r.version, r.clock, self.applied_at[r.worker]], dtype=np.int64)
            outboxes[r.worker].put((fr.MODEL_VERSION, r.iteration, head))
            outboxes[r.worker].put((fr.MODEL, r.iteration, snapshot))

    # ------------------------------------------------------------------ threads
    def _fail(self, e: BaseException) -> None:
        if self.error is None:
            self.error = e
        self.close()   # unblocks every thread stuck in send or recv; workers see the close

    def _thread(self, fn, *args) -> threading.Thread:
        def body():
            try:
                fn(*args)
            except BaseException as e:
                self._fail(e)
        t = threading.Thread(target=body, daemon=True)
        t.start()
        return t

    def _reader(self, rank: int, inbox: queue.Queue) -> None:
        ch = self.chans[rank]
        while True:
            try:
                f = ch.recv(what="a gradient or BYE")
            except BaseException as e:
                inbox.put((rank, e))
                return
            inbox.put((rank, f))
            if f[0] == fr.BYE:
                return

    def _sender(self, ch: fr.Channel, q: queue.Queue) -> None:
        while True:
            item = q.get()
            if item is None or self.error is not None:
                return
            ch.send(*item)

    # ------------------------------------------------------------------ set-up, end
    def _accept_children(self) -> None:
        self.chans = fr.accept_ranked(self.lsock, self.children, self.name, "worker",
                                      self.timeout_s, self.accept_timeout_s)

    def _receive_initial_models(self) -> None:
        """Every worker built the same seeded model; the server keeps rank 0's and checks
        the others' bits (a worker with another scenario would train another model)."""
        for rank, ch in enumerate(self.chans):
            _, _, m = ch.recv(fr.MODEL_INIT, what="the initial model")
            if m.dtype != np.float32:
                raise fr.PeerError(f"{ch.peer}: initial model is {m.dtype}, expected float32")
            if self.model is None:
                self.model = m.copy()
            elif m.size != self.model.size or not np.array_equal(m.view(np.uint32),
                                                                  self.model.view(np.uint32)):
                raise fr.PeerError(f"{ch.peer}: its initial model differs from worker 0's: same "
                                   f"scenario (seed, workload) everywhere?")

    def stats(self) -> dict:
        tcp = [c.tcp_counters() for c in self.chans if c]
        return {"server": self.name, "mode": "asp" if self.core.bound is None else "ssp",
                "staleness_bound": self.core.bound, "updates": self.core.version,
                "final_version": self.core.version, "clock": self.core.clock,
                "model_sha1": hashlib.sha1(self.model.tobytes()).hexdigest() if self.model is not None else None,
                "max_waiting": self.max_waiting,
                "tcp_segments_sent": sum(t[0] for t in tcp), "tcp_retransmissions": sum(t[1] for t in tcp),
                "bytes_sent": sum(c.bytes_sent for c in self.chans if c),
                "bytes_received": sum(c.bytes_received for c in self.chans if c),
                "aggregate_s": round(self.apply_s, 6)}

    def close(self) -> None:
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in self.chans:
            if c:
                c.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m schemes.ps.async_server",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--host", required=True, help="address to listen on (this host's IP)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--children", type=int, required=True, help="workers to expect")
    ap.add_argument("--lr", type=float, required=True, help="the workload's learning rate")
    ap.add_argument("--staleness", type=int, default=None, help="ssp's bound s (absent: asp)")
    ap.add_argument("--name", default="ps")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds of silence before giving up")
    ap.add_argument("--accept-timeout", type=float, default=None,
                    help="seconds to wait for all workers to connect (default: --timeout)")
    a = ap.parse_args(argv)
    return serve_and_report(lambda: AsyncServer(a.host, a.port, a.children, a.lr, a.staleness, a.timeout,
                                                a.name, a.accept_timeout).serve(),
                            (fr.PeerError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
