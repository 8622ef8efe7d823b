"""The parameter server of schemes ps and hier-ps: a process in a Mininet host, BSP.

`AggregationServer` accepts its children (workers, or lower servers in
hier-ps), then for every chunk of the tensor receives it from every child, sums them in
float32 in child-rank order (deterministic: the same inputs give the same bits every
run), optionally pushes that partial sum to an upstream server and relays its RESULT
(hier-ps), and returns the sum to every child; chunks stream, so pulling chunk j
overlaps pushing chunk j+1 (as MXNet's PS splits large tensors into keys). With k shards, k servers each own one
contiguous range of the tensor (`workers.framing.shard_bounds`) and workers talk to all of them at once.

Row frames (ps with push touched_rows): for a row-sparse piece every child sends the rows
it touched (ROWS, ids + values, sizes differing per child); the server returns the union
of their rows with the per-row sums in child-rank order (ROWS_RESULT), the same bits as
the dense sum (workers.framing.sum_rows_in_order). Only a server without an upstream
takes them: hier-ps pushes dense.

The worker side is schemes/ps/communicator.py.

    python3 -m schemes.ps.server --host 10.1.1.1 --port 7100 --children 4 [--upstream IP:PORT --rank R]

The server exits 0 when every child has said BYE, non-zero (with the reason on stderr)
when a child dies or stalls; its children then see their connection close instead of hanging.
"""
from __future__ import annotations

import argparse
import queue
import sys
import threading
import time

import numpy as np

from workers import framing as fr
from workers.framing import sum_in_order
from workers.process import serve_and_report

class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


class AggregationServer:
    """Sums the DATA frames of `children` children frame by frame (see module doc).

    Streaming: each child sends its range as a sequence of chunks; the server sums chunk j
    as soon as every child's chunk j is in and sends it back (or up) while later chunks
    still arrive, so pushing and pulling overlap on the links as in MXNet's key slicing.
    Threads: a reader per child, a sender per child, the summing loop; with an upstream, a
    sender and a reader towards it. The first error closes every connection (no hangs)."""

    def __init__(self, host: str, port: int, children: int, timeout_s: float = 60.0,
                 upstream: tuple[str, int] | None = None, rank: int = 0, name: str = "ps",
                 accept_timeout_s: float | None = None):
        if children < 1:
            raise ValueError(f"a server needs at least one child (got {children})")
        self.children, self.timeout_s, self.name = children, timeout_s, name
        self.upstream_addr, self.rank = upstream, rank
        self.accept_timeout_s = accept_timeout_s or timeout_s
        self.lsock = fr.listen(host, port)
        self.address = self.lsock.getsockname()
        self.chans: list[fr.Channel | None] = [None] * children
        self.up: fr.Channel | None = None
        self.iterations = 0
        self.aggregate_s = 0.0   # time spent summing (CPU), for the summary
        self.error: BaseException | None = None
        self._lock = threading.Lock()

    def serve(self) -> dict:
        try:
            self._accept_children()
            if self.upstream_addr:
                h, p = self.upstream_addr
                self.up = fr.connect(h, p, f"{self.name}: upstream server {h}:{p}", self.timeout_s,
                                     self.accept_timeout_s)
                self.up.send(fr.HELLO, self.rank)
            self._run()
            if self.error:
                raise self.error
            if self.up:
                self.up.send(fr.BYE, self.iterations)
            stats = self.stats()   # before close: TCP_INFO needs the sockets open
        finally:
            self.close()
        return stats

    def _fail(self, e: BaseException) -> None:
        with self._lock:
            if self.error is None:
                self.error = e
        self.close()   # unblocks every thread stuck in send or recv

    def _thread(self, fn, *args) -> threading.Thread:
        def body():
            try:
                fn(*args)
            except BaseException as e:   # reported by serve(); peers see their sockets close
                self._fail(e)
        t = threading.Thread(target=body, daemon=True)
        t.start()
        return t

    def _run(self) -> None:
        n = self.children
        q_in = [queue.Queue() for _ in range(n)]
        q_out = [queue.Queue() for _ in range(n)]
        up_out, pending = queue.Queue(), queue.Queue()
        threads = [self._thread(self._reader, c, q) for c, q in zip(self.chans, q_in)]
        threads += [self._thread(self._sender, c, q) for c, q in zip(self.chans, q_out)]
        if self.up:
            threads.append(self._thread(self._sender, self.up, up_out))
            threads.append(self._thread(self._up_reader, pending, q_out))
        try:
            while self.error is None:
                frames = [self._get(q) for q in q_in]
                if frames is None or any(f is None for f in frames):
                    break
                kinds = {k for k, _, _ in frames}
                if kinds == {fr.BYE}:
                    break
                tags, sizes = {t for _, t, _ in frames}, {a.size for _, _, a in frames}
                rows = kinds <= {fr.ROWS, fr.ROWS_END}     # touched rows: sizes differ
                if len(kinds) != 1 or kinds & {fr.BYE} or len(tags) != 1 or \
                        (len(sizes) != 1 and not rows):
                    raise fr.PeerError(
                        f"{self.name}: children out of step in iteration {self.iterations} (kinds "
                        f"{sorted(kinds)}, tags {sorted(tags)}, sizes {sorted(sizes)}): same scenario "
                        f"everywhere? a child that ended early stops the whole job")
                kind, tag = kinds.pop(), tags.pop()
                t0 = time.perf_counter()
                if rows:
                    if self.up:
                        raise fr.PeerError(f"{self.name}: touched-row frames reached a server with an "
                                           f"upstream; only ps (one level) takes push touched_rows")
                    result = (fr.ROWS_RESULT, tag, self._sum_rows(frames))
                else:
                    result = (fr.RESULT, tag, sum_in_order([a for _, _, a in frames]))
                self.aggregate_s += time.perf_counter() - t0
                if self.up:
                    pending.put(tag)
                    up_out.put((kind, tag, result[2]))
                else:
                    for q in q_out:
                        q.put(result)
                if kind in (fr.DATA_END, fr.ROWS_END):
                    self.iterations += 1
        except BaseException as e:
            self._fail(e)
        pending.put(None)
        up_out.put(None)
        for q in q_out:
            q.put(None)
        for t in threads[n:]:   # senders drain what is queued; readers are done or closed
            t.join()

    def _sum_rows(self, frames) -> np.ndarray:
        """The ROWS_RESULT payload of one row piece: every child's rows, summed per row."""
        parts = [fr.decode_rows(a, self.chans[r].peer) for r, (_, _, a) in enumerate(frames)]
        widths = {int(a[1]) for _, _, a in frames}
        if len(widths) != 1:
            raise fr.PeerError(f"{self.name}: children sent rows of widths {sorted(widths)} for one "
                               f"piece: same scenario everywhere?")
        return fr.encode_rows(*fr.sum_rows_in_order(parts, widths.pop()))

    def _get(self, q: queue.Queue):
        while True:
            try:
                item = q.get(timeout=0.2)
            except queue.Empty:
                if self.error is not None:
                    return None
                continue
            if isinstance(item, _Failure):
                raise item.error
            return item

    def _reader(self, ch: fr.Channel, q: queue.Queue) -> None:
        while True:
            try:
                f = ch.recv(what="DATA or BYE")
            except BaseException as e:
                q.put(_Failure(e))
                return
            q.put(f)
            if f[0] == fr.BYE:
                return

    def _sender(self, ch: fr.Channel, q: queue.Queue) -> None:
        while True:
            item = q.get()
            if item is None or self.error is not None:
                return
            ch.send(*item)

    def _up_reader(self, pending: queue.Queue, q_out: list) -> None:
        while True:
            tag = pending.get()
            if tag is None or self.error is not None:
                return
            _, _, total = self.up.recv(fr.RESULT, tag, what=f"the global sum of chunk {tag & 0xFFFFFF} "
                                                            f"of iteration {tag >> 24}")
            for q in q_out:
                q.put((fr.RESULT, tag, total))

    def stats(self) -> dict:
        chans = [c for c in self.chans if c] + ([self.up] if self.up else [])
        tcp = [c.tcp_counters() for c in chans]
        return {"server": self.name, "iterations": self.iterations,
                "tcp_segments_sent": sum(t[0] for t in tcp),
                "tcp_retransmissions": sum(t[1] for t in tcp),
                "bytes_sent": sum(c.bytes_sent for c in chans),
                "bytes_received": sum(c.bytes_received for c in chans),
                "aggregate_s": round(self.aggregate_s, 6)}

    def _accept_children(self) -> None:
        self.chans = fr.accept_ranked(self.lsock, self.children, self.name, "child",
                                      self.timeout_s, self.accept_timeout_s)

    def close(self) -> None:
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in self.chans + [self.up]:
            if c:
                c.close()


def _addr(s: str) -> tuple[str, int]:
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected IP:PORT, got {s!r}")
    return host, int(port)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m schemes.ps.server", description=__doc__.splitlines()[0])
    ap.add_argument("--host", required=True, help="address to listen on (this host's IP)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--children", type=int, required=True, help="workers (or lower servers) to expect")
    ap.add_argument("--upstream", type=_addr, default=None, help="hier-ps: the global server IP:PORT")
    ap.add_argument("--rank", type=int, default=0, help="hier-ps: this server's rank at the upstream")
    ap.add_argument("--name", default="ps")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds of silence before giving up")
    ap.add_argument("--accept-timeout", type=float, default=None,
                    help="seconds to wait for all children to connect (default: --timeout)")
    a = ap.parse_args(argv)
    return serve_and_report(lambda: AggregationServer(a.host, a.port, a.children, a.timeout, a.upstream,
                                                      a.rank, a.name, a.accept_timeout).serve(),
                            (fr.PeerError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
