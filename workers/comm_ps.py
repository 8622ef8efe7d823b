"""Parameter server over TCP (MXNet-like baseline), BSP.

Server side: `AggregationServer` accepts its children (workers, or lower servers in
hier-ps), then each iteration receives one DATA frame from every child, sums them in
float32 in child-rank order (deterministic: the same inputs give the same bits every
run), optionally pushes that partial sum to an upstream server and waits for its RESULT
(hier-ps), and returns the sum to every child. With k shards, k servers each own one
contiguous range of the tensor (`shard_bounds`) and workers talk to all of them at once.

Worker side: `PSClient.allreduce(vec, iteration) -> summed vec`.

    python3 -m workers.comm_ps --host 10.1.1.1 --port 7100 --children 4 [--upstream IP:PORT --rank R]

The server exits 0 when every child has said BYE, non-zero (with the reason on stderr)
when a child dies or stalls; its children then see their connection close instead of hanging.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from workers import framing as fr


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


class AggregationServer:
    """Sums DATA frames of `children` children per iteration (see module doc)."""

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

    def serve(self) -> dict:
        try:
            self._accept_children()
            if self.upstream_addr:
                h, p = self.upstream_addr
                self.up = fr.connect(h, p, f"{self.name}: upstream server {h}:{p}", self.timeout_s,
                                     self.accept_timeout_s)
                self.up.send(fr.HELLO, self.rank)
            with ThreadPoolExecutor(self.children) as pool:
                while self._one_iteration(pool):
                    self.iterations += 1
            if self.up:
                self.up.send(fr.BYE, self.iterations)
            stats = self.stats()   # before close: TCP_INFO needs the sockets open
        finally:
            self.close()
        return stats

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

    def _one_iteration(self, pool) -> bool:
        frames = list(pool.map(lambda c: c.recv(what="DATA or BYE"), self.chans))
        kinds = {k for k, _, _ in frames}
        if kinds == {fr.BYE}:
            return False
        tags = {t for _, t, _ in frames}
        if kinds != {fr.DATA} or len(tags) != 1 or {a.size for _, _, a in frames}.__len__() != 1:
            raise fr.PeerError(f"{self.name}: children out of step in iteration {self.iterations} "
                               f"(kinds {sorted(kinds)}, iterations {sorted(tags)}, sizes "
                               f"{sorted({a.size for _, _, a in frames})}): same scenario everywhere?")
        tag = tags.pop()
        t0 = time.perf_counter()
        total = sum_in_order([a for _, _, a in frames])
        self.aggregate_s += time.perf_counter() - t0
        if self.up:
            self.up.send(fr.DATA, tag, total)
            _, _, total = self.up.recv(fr.RESULT, tag, what=f"the global sum of iteration {tag}")
        list(pool.map(lambda c: c.send(fr.RESULT, tag, total), self.chans))
        return True

    def close(self) -> None:
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in self.chans + [self.up]:
            if c:
                c.close()


class PSClient:
    """A worker's side: push its gradient to the shard servers, pull the sums back."""

    def __init__(self, servers: list[tuple[str, int]], rank: int, timeout_s: float = 60.0,
                 connect_timeout_s: float | None = None, name: str = "worker"):
        if not servers:
            raise ValueError("PSClient needs at least one server")
        self.chans = [fr.connect(h, p, f"{name}: server {h}:{p}", timeout_s, connect_timeout_s)
                      for h, p in servers]
        for c in self.chans:
            c.send(fr.HELLO, rank)
        self.pool = ThreadPoolExecutor(len(servers)) if len(servers) > 1 else None

    def allreduce(self, vec: np.ndarray, iteration: int) -> np.ndarray:
        vec = np.ascontiguousarray(vec, dtype=np.float32)
        bounds = shard_bounds(vec.size, len(self.chans))

        def exchange(i: int) -> np.ndarray:
            lo, hi = bounds[i]
            self.chans[i].send(fr.DATA, iteration, vec[lo:hi])
            _, _, out = self.chans[i].recv(fr.RESULT, iteration, what=f"the sum of iteration {iteration}")
            if out.size != hi - lo:
                raise fr.PeerError(f"{self.chans[i].peer}: result has {out.size} values, expected {hi - lo}")
            return out

        if self.pool is None:
            return exchange(0).copy()
        return np.concatenate(list(self.pool.map(exchange, range(len(self.chans)))))

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
        if self.pool:
            self.pool.shutdown()


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
