"""Parameter server over TCP (MXNet-like baseline), BSP.

Server side: `AggregationServer` accepts its children (workers, or lower servers in
hier-ps), then for every chunk of the tensor receives it from every child, sums them in
float32 in child-rank order (deterministic: the same inputs give the same bits every
run), optionally pushes that partial sum to an upstream server and relays its RESULT
(hier-ps), and returns the sum to every child; chunks stream, so pulling chunk j
overlaps pushing chunk j+1 (as MXNet's PS splits large tensors into keys). With k shards, k servers each own one
contiguous range of the tensor (`shard_bounds`) and workers talk to all of them at once.

Worker side: `PSClient.allreduce(vec, iteration) -> summed vec`.

    python3 -m workers.comm_ps --host 10.1.1.1 --port 7100 --children 4 [--upstream IP:PORT --rank R]

The server exits 0 when every child has said BYE, non-zero (with the reason on stderr)
when a child dies or stalls; its children then see their connection close instead of hanging.
"""
from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from workers import framing as fr

# 16 KiB per frame: small enough that push and pull overlap, big enough that per-frame
# Python overhead stays far below the transfer time at the testbed's rates
DEFAULT_CHUNK_VALUES = 4096


def shard_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """k contiguous ranges covering 0..n, sizes differing by at most one (numpy's array_split)."""
    if k < 1:
        raise ValueError(f"shards must be >= 1 (got {k})")
    base, extra = divmod(n, k)
    out, lo = [], 0
    for i in range(k):
        hi = lo + base + (1 if i < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


def sum_in_order(parts: list[np.ndarray]) -> np.ndarray:
    """float32 sum of parts[0] + parts[1] + ... left to right (the order fixes the bits)."""
    acc = np.array(parts[0], dtype=np.float32, copy=True)
    for p in parts[1:]:
        acc += p
    return acc


def chunk_bounds(lo: int, hi: int, chunk_values: int) -> list[tuple[int, int]]:
    """The range lo..hi cut into pieces of at most chunk_values (at least one piece)."""
    if chunk_values < 1:
        raise ValueError(f"chunk size must be >= 1 value (got {chunk_values})")
    return [(a, min(a + chunk_values, hi)) for a in range(lo, hi, chunk_values)] or [(lo, hi)]


def chunk_tag(iteration: int, chunk: int) -> int:
    return (iteration << 24) | chunk


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
                if len(kinds) != 1 or kinds & {fr.BYE} or len(tags) != 1 or len(sizes) != 1:
                    raise fr.PeerError(
                        f"{self.name}: children out of step in iteration {self.iterations} (kinds "
                        f"{sorted(kinds)}, tags {sorted(tags)}, sizes {sorted(sizes)}): same scenario "
                        f"everywhere? a child that ended early stops the whole job")
                kind, tag = kinds.pop(), tags.pop()
                t0 = time.perf_counter()
                total = sum_in_order([a for _, _, a in frames])
                self.aggregate_s += time.perf_counter() - t0
                if self.up:
                    pending.put(tag)
                    up_out.put((kind, tag, total))
                else:
                    for q in q_out:
                        q.put((fr.RESULT, tag, total))
                if kind == fr.DATA_END:
                    self.iterations += 1
        except BaseException as e:
            self._fail(e)
        pending.put(None)
        up_out.put(None)
        for q in q_out:
            q.put(None)
        for t in threads[n:]:   # senders drain what is queued; readers are done or closed
            t.join()

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
        deadline = time.monotonic() + self.accept_timeout_s
        for _ in range(self.children):
            left = max(0.1, deadline - time.monotonic())
            ch = fr.accept(self.lsock, left, f"{self.name}: a child", self.timeout_s)
            _, rank, _ = ch.recv(fr.HELLO, what="HELLO")
            if not 0 <= rank < self.children or self.chans[rank] is not None:
                ch.close()
                raise fr.PeerError(f"{self.name}: child rank {rank} is out of range 0..{self.children - 1} "
                                   f"or connected twice: the scheme's placement is inconsistent")
            ch.peer = f"{self.name}: child {rank} ({ch.peer.split(' ', 3)[-1]})"
            self.chans[rank] = ch
        self.lsock.close()

    def close(self) -> None:
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in self.chans + [self.up]:
            if c:
                c.close()


class PSClient:
    """A worker's side: stream its gradient to the shard servers in chunks of at most
    chunk_values while the sums of earlier chunks stream back."""

    def __init__(self, servers: list[tuple[str, int]], rank: int, timeout_s: float = 60.0,
                 connect_timeout_s: float | None = None, name: str = "worker",
                 chunk_values: int = DEFAULT_CHUNK_VALUES):
        if not servers:
            raise ValueError("PSClient needs at least one server")
        self.chunk_values = chunk_values
        self.chans = [fr.connect(h, p, f"{name}: server {h}:{p}", timeout_s, connect_timeout_s)
                      for h, p in servers]
        for c in self.chans:
            c.send(fr.HELLO, rank)
        self.pool = ThreadPoolExecutor(2 * len(servers))

    def allreduce(self, vec: np.ndarray, iteration: int) -> np.ndarray:
        vec = np.ascontiguousarray(vec, dtype=np.float32)
        out = np.empty_like(vec)
        jobs = []
        for ch, (lo, hi) in zip(self.chans, shard_bounds(vec.size, len(self.chans))):
            pieces = chunk_bounds(lo, hi, self.chunk_values)
            jobs.append(self.pool.submit(self._push, ch, vec, pieces, iteration))
            jobs.append(self.pool.submit(self._pull, ch, out, pieces, iteration))
        try:
            for j in jobs:
                j.result()
        except BaseException:
            for c in self.chans:   # unblock the other jobs; this client is finished anyway
                c.close()
            raise
        return out

    @staticmethod
    def _push(ch, vec, pieces, iteration) -> None:
        for j, (a, b) in enumerate(pieces):
            ch.send(fr.DATA_END if j == len(pieces) - 1 else fr.DATA, chunk_tag(iteration, j), vec[a:b])

    @staticmethod
    def _pull(ch, out, pieces, iteration) -> None:
        for j, (a, b) in enumerate(pieces):
            _, _, got = ch.recv(fr.RESULT, chunk_tag(iteration, j),
                                what=f"the sum of chunk {j} of iteration {iteration}")
            if got.size != b - a:
                raise fr.PeerError(f"{ch.peer}: result has {got.size} values, expected {b - a}")
            out[a:b] = got

    @property
    def bytes_sent(self) -> int:
        return sum(c.bytes_sent for c in self.chans)

    @property
    def bytes_received(self) -> int:
        return sum(c.bytes_received for c in self.chans)

    def tcp_counters(self) -> tuple[int, int]:
        """(TCP segments sent, retransmissions) over all connections so far."""
        pairs = [c.tcp_counters() for c in self.chans]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    def close(self) -> None:
        for c in self.chans:
            try:
                c.send(fr.BYE, 0)
            except fr.PeerError:
                pass   # the server is gone already; nothing left to tell it
            c.close()
        self.pool.shutdown(wait=False)


def _addr(s: str) -> tuple[str, int]:
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected IP:PORT, got {s!r}")
    return host, int(port)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m workers.comm_ps", description=__doc__.splitlines()[0])
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
    t0 = time.monotonic()
    try:
        srv = AggregationServer(a.host, a.port, a.children, a.timeout, a.upstream, a.rank, a.name,
                                a.accept_timeout)
        stats = srv.serve()
    except (fr.PeerError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stats["elapsed_s"] = round(time.monotonic() - t0, 3)
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
