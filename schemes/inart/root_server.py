"""InArt's parameter server as the root of an aggregation tree: RootEngine behind a UDP socket.

    python3 -m schemes.inart.root_server --ip 10.0.1.1 --job 1 --fan-in 3 --slots 64 \\
        --children '[{"index": 0, "address": "10.1.0.254"}, {"index": 1, "address": "10.0.1.2"}, ...]'

or, when switch points fall back to this server for slots they have no memory for, the
children per slot range instead of --fan-in and --children (root_engine's module doc):

    ... --slots 64 --ranges '[{"start": 0, "end": 32, "children": [...]},
                              {"start": 32, "end": 64, "children": [...]}]'

Binds the aggregation port (both ports of the protocol are AGG_UDP_PORT, docs/protocol.md)
on --ip, feeds every datagram to the engine and sends what it returns, from the same socket,
to the destination's aggregation port. Runs until SIGTERM or SIGINT, then prints one JSON line
of counters (workers.process.serve_and_report). A datagram the kernel cannot take at once
(send buffer full) is dropped and counted, as a switch drops under congestion: the children's
retransmissions recover it (their duplicates are answered from the stored result).
"""
from __future__ import annotations

import argparse
import errno
import json
import select
import signal
import sys
import time

from schemes.inart.root_engine import RootEngine
from workers.agg_packet import AGG_UDP_PORT
from workers.ina_udp import RECV_BYTES, open_socket
from workers.process import serve_and_report

BATCH = 256            # datagrams read per wake-up before sending what they produced


def _children_list(items, field: str) -> list[tuple[int, str]]:
    if not isinstance(items, list):
        raise ValueError(f'{field}: expected a JSON list of {{"index": i, "address": "ip"}}')
    out = []
    for i, c in enumerate(items):
        if not isinstance(c, dict) or set(c) != {"index", "address"} or not isinstance(c["index"], int):
            raise ValueError(f'{field}[{i}]: expected {{"index": <int>, "address": "<ip>"}}, got {c!r}')
        out.append((c["index"], c["address"]))
    return out


def _json(text: str, field: str, shape: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{field}: not JSON ({e}); give {shape}") from None


def parse_children(text: str) -> list[tuple[int, str]]:
    """--children JSON: a list of {"index": i, "address": ip} -> [(index, address)]."""
    return _children_list(_json(text, "--children", 'a list of {"index": i, "address": "ip"}'),
                          "--children")


def parse_ranges(text: str) -> list[tuple[int, int, list[tuple[int, str]]]]:
    """--ranges JSON: a list of {"start": s, "end": e, "children": [{"index", "address"}...]}
    -> [(start, end, [(index, address)])]; RootEngine checks that they cover the window."""
    shape = 'a list of {"start": s, "end": e, "children": [{"index": i, "address": "ip"}, ...]}'
    items = _json(text, "--ranges", shape)
    if not isinstance(items, list):
        raise ValueError(f"--ranges: expected {shape}")
    out = []
    for i, r in enumerate(items):
        if not isinstance(r, dict) or set(r) != {"start", "end", "children"} \
                or not all(isinstance(r[x], int) for x in ("start", "end")):
            raise ValueError(f'--ranges[{i}]: expected {{"start": <int>, "end": <int>, '
                             f'"children": [...]}}, got {r!r}')
        out.append((r["start"], r["end"], _children_list(r["children"], f"--ranges[{i}].children")))
    return out


def build_engine(a) -> RootEngine:
    """The engine the command line describes: one range (--fan-in, --children) or --ranges."""
    if a.ranges is not None:
        if a.fan_in is not None or a.children is not None:
            raise ValueError("--ranges: give either --ranges or --fan-in with --children, not both")
        return RootEngine.with_ranges(a.job, a.slots, parse_ranges(a.ranges), a.k)
    if a.fan_in is None or a.children is None:
        raise ValueError("--children: give --fan-in and --children (or --ranges)")
    return RootEngine(a.job, a.fan_in, a.slots, parse_children(a.children), a.k)


class RootServer:
    """The loop around one RootEngine (module doc). `stop()` may be called from a signal
    handler: the loop notices within `poll_s`."""

    def __init__(self, engine: RootEngine, ip: str, port: int = AGG_UDP_PORT,
                 poll_s: float = 0.2, progress_s: float = 10.0, log=sys.stderr):
        self.engine, self.port, self.poll_s = engine, port, poll_s
        self.progress_s, self.log = progress_s, log
        self.sock = open_socket(ip, port)
        self.counts = dict(packets_in=0, bytes_in=0, packets_out=0, bytes_out=0,
                           send_dropped=0, send_errors=0)
        self._running = True

    def stop(self, *_):
        self._running = False

    def serve(self) -> dict:
        ip, port = self.sock.getsockname()
        e = self.engine
        if len(e.ranges) == 1:
            print(f"inart root {ip}:{port}: job {e.job}, fan-in {e.fan_in}, {e.slots} slots, "
                  f"children {', '.join(c.address for c in e.children)}", file=self.log, flush=True)
        else:
            print(f"inart root {ip}:{port}: job {e.job}, {e.slots} slots in {len(e.ranges)} ranges: "
                  + "; ".join(f"slots {r.start}..{r.end - 1} fan-in {r.fan_in}, children "
                              f"{', '.join(c.address for c in r.children)}" for r in e.ranges),
                  file=self.log, flush=True)
        next_progress = time.monotonic() + self.progress_s
        try:
            while self._running:
                readable, _, _ = select.select([self.sock], [], [], self.poll_s)
                if readable:
                    self._drain()
                if self.progress_s > 0 and time.monotonic() >= next_progress:
                    next_progress += self.progress_s
                    print(f"inart root: {self._progress()}", file=self.log, flush=True)
        finally:
            self.sock.close()
        return dict(role="inart-root", job=e.job, **self.counts, **e.stats())

    def _drain(self) -> None:
        """Read up to BATCH waiting datagrams (a recvmmsg in spirit), then send the replies."""
        out = []
        for _ in range(BATCH):
            try:
                data, (src, _) = self.sock.recvfrom(RECV_BYTES)
            except BlockingIOError:
                break
            self.counts["packets_in"] += 1
            self.counts["bytes_in"] += len(data)
            out.extend(self.engine.handle(data, src))
        for dst, payload in out:
            try:
                self.sock.sendto(payload, (dst, self.port))
            except BlockingIOError:
                self.counts["send_dropped"] += 1
                continue
            except OSError:                     # no route, unreachable: a lost packet too
                self.counts["send_errors"] += 1
                continue
            self.counts["packets_out"] += 1
            self.counts["bytes_out"] += len(payload)

    def _progress(self) -> str:
        ev = self.engine.stats()["events"]
        return (f"{self.counts['packets_in']} in, {self.counts['packets_out']} out, "
                f"{ev['complete']} complete, {ev['dup_answer']} answered, {ev['bad']} bad")


def bind_when_free(make, wait_s: float, poll_s: float = 0.005):
    """make() until the port is free or wait_s passed (EADDRINUSE is retried, nothing else)."""
    deadline = time.monotonic() + wait_s
    if wait_s > 0:
        print(f"inart root: waiting for the port (up to {wait_s:g} s)", file=sys.stderr, flush=True)
    while True:
        try:
            return make()
        except OSError as e:
            if e.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                raise
            time.sleep(poll_s)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m schemes.inart.root_server",
                                description=__doc__.splitlines()[0])
    p.add_argument("--ip", required=True, help="this host's IP: the address children send to")
    p.add_argument("--job", type=int, required=True)
    p.add_argument("--fan-in", type=int, help="children of the root (with --children)")
    p.add_argument("--slots", type=int, required=True, help="the job's window (slots per point)")
    p.add_argument("--children",
                   help='JSON list of {"index": sender index, "address": child IP}')
    p.add_argument("--ranges",
                   help='instead of --fan-in and --children: JSON list of {"start": first slot, '
                        '"end": slot after the last, "children": [...]} covering the window')
    p.add_argument("--k", type=int, default=32, help="values per packet (32 or 64)")
    p.add_argument("--port", type=int, default=AGG_UDP_PORT,
                   help=f"UDP port of every end of the protocol (default {AGG_UDP_PORT})")
    p.add_argument("--progress", type=float, default=10.0,
                   help="seconds between progress lines on stderr (0: none)")
    p.add_argument("--wait-port", type=float, default=0.0,
                   help="seconds to wait for the port while another root server on this host "
                        "still holds it (a re-plan's successor, README.md); 0: fail at once")
    a = p.parse_args(argv)

    def serve() -> dict:
        engine = build_engine(a)
        server = bind_when_free(lambda: RootServer(engine, a.ip, a.port, progress_s=a.progress),
                                a.wait_port)
        signal.signal(signal.SIGTERM, server.stop)
        signal.signal(signal.SIGINT, server.stop)
        return server.serve()

    return serve_and_report(serve, (ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
