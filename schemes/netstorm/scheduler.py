"""NetStorm's scheduler: holds the throughput matrix, plans, and runs the per-iteration
barrier at which trees and shards change (the authors' van.cc scheduler role).

    python3 -m schemes.netstorm.scheduler --config JSON

`SchedulerCore` is the pure part (no sockets, explicit events); `main` is the I/O shell:
one TCP connection per datacenter server, a reader thread each, one loop that also wakes
every check period.

The barrier (seeds.md 2.8): every server checks in when its workers start iteration t;
when all have, the scheduler answers every server with the policy for t (a new one if it
re-planned since the last release, else GO: keep the current). Paths are sent at once
when a re-plan changes them (ROUTES): they only change forwarding.
"""
from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time

import schemes.netstorm.policy as pol
from schemes.netstorm.awareness import ThroughputMatrix
from schemes.netstorm.wire import (CHECKIN, DONE, FAIL, GO, POLICY, ROUTES, SPEED, STOP, ProtocolError,
                                   decode_json, encode_json)
from workers import framing as fr
from workers.process import serve_and_report


class SchedulerCore:
    """The scheduler's decisions. `adj`: overlay adjacency; `tps`: the starting matrix."""

    def __init__(self, adj: dict, tps: dict, *, total: int, block: int, roots: int | None,
                 multipath: bool, update_rate: float, awareness: bool = True):
        self.adj, self.n = adj, len(adj)
        self.total, self.block, self.multipath = total, block, multipath
        self.roots = roots or self.n
        self.awareness = awareness
        self.matrix = ThroughputMatrix(tps, update_rate=update_rate)
        self.policy = self._decide(self.matrix.mark_planned(), version=0)
        self.released: int | None = None          # version last sent with a POLICY
        self.checkins: dict[int, set[int]] = {}
        self.released_at: dict[int, int] = {}     # iteration -> version in force
        self.replans = 0

    def _decide(self, tps: dict, version: int):
        return pol.decide(self.adj, tps, n_roots=self.roots, block=self.block,
                          total=self.total, multipath=self.multipath, version=version)

    def checkin(self, dc: int, t: int) -> tuple[str, object] | None:
        """Server `dc` started iteration t. When every server has: ("policy", Policy) or
        ("go", None) for all of them."""
        if not 0 <= dc < self.n:
            raise ProtocolError(f"scheduler: check-in from unknown datacenter {dc}")
        if self.released_at and t <= max(self.released_at):
            raise ProtocolError(f"scheduler: datacenter {dc} checked in for iteration {t}, "
                                f"which was released already")
        got = self.checkins.setdefault(t, set())
        if dc in got:
            raise ProtocolError(f"scheduler: datacenter {dc} checked in twice for iteration {t}")
        got.add(dc)
        if len(got) < self.n:
            return None
        del self.checkins[t]
        self.released_at[t] = self.policy.version
        if self.released != self.policy.version:
            self.released = self.policy.version
            return "policy", self.policy
        return "go", None

    def speed(self, i: int, j: int, mbps: float) -> None:
        """A server measured its link towards neighbour j."""
        if j not in self.adj.get(i, ()):
            raise ProtocolError(f"scheduler: speed report for {i}->{j}, not an overlay link")
        self.matrix.report(i, j, mbps)

    def tick(self):
        """The periodic check: re-plan when the matrix changed enough. Returns the new routes
        (to send at once) or None; trees and shards wait for the next barrier."""
        if not self.awareness or not self.matrix.should_replan():
            return None
        self.policy = self._decide(self.matrix.mark_planned(), version=self.policy.version + 1)
        self.replans += 1
        return self.policy.routes


def _failure_report(events: queue.Queue, dc: int, kind, tag, arr, grace_s: float = 0.5) -> str:
    """Which servers failed and why. A server that fails says why first (FAIL); one whose
    connection just closed was killed or crashed: that one is where the failure started.
    Failures follow each other within milliseconds, so wait `grace_s` to see them all."""
    seen: dict[int, str] = {}

    def note(kind, dc, tag, arr):   # an event as the readers queue it
        if kind == FAIL:
            seen[dc] = f"datacenter {dc}'s server failed: {decode_json(arr)}"
        elif kind == "error":
            seen.setdefault(dc, f"datacenter {dc}'s server vanished without a reason (killed or "
                                f"crashed? see its log): {tag}")

    note(kind, dc, tag, arr)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            note(*events.get(timeout=max(0.0, deadline - time.monotonic())))
        except queue.Empty:
            break
    first = [m for m in seen.values() if "vanished" in m] or list(seen.values())
    rest = [m for m in seen.values() if m not in first]
    return "scheduler: " + "; ".join(first) + (f" (then: {'; '.join(rest)})" if rest else "")


def _initial_tps(cfg: dict, adj: dict) -> dict:
    configured = {(int(i), int(j)): float(v) for i, j, v in cfg["configured_mbps"]}
    return pol.initial_tps(adj, cfg["options"]["initial_throughput"],
                           seed=cfg["options"]["uninformed_seed"], configured=configured)


def serve(cfg: dict) -> dict:
    o = cfg["options"]
    adj = {int(k): frozenset(int(x) for x in v) for k, v in cfg["adj"].items()}
    core = SchedulerCore(adj, _initial_tps(cfg, adj), total=cfg["total"], block=o["block_values"],
                         roots=o["roots"], multipath=o["multipath"], update_rate=o["update_rate"],
                         awareness=o["awareness"])
    period = o["check_period_s"] * cfg["time_dilation"]
    lsock = fr.listen(cfg["ip"], cfg["port"])
    chans: dict[int, fr.Channel] = {}
    events: queue.Queue = queue.Queue()
    stopping = threading.Event()
    try:
        deadline = time.monotonic() + cfg["timeout_s"]
        while len(chans) < core.n:
            missing = sorted(set(range(core.n)) - set(chans))
            ch = fr.accept(lsock, max(0.1, deadline - time.monotonic()),
                           f"the servers of datacenters {missing}", None)
            _, dc, _ = ch.recv(fr.HELLO, what="HELLO")
            if dc in chans or not 0 <= dc < core.n:
                raise ProtocolError(f"scheduler: server of datacenter {dc} is unknown or connected twice")
            ch.peer = f"scheduler: server of datacenter {dc}"
            chans[dc] = ch

        def reader(dc: int, ch: fr.Channel) -> None:
            try:
                while True:
                    kind, tag, arr = ch.recv(what="a check-in, speed report or DONE")
                    events.put((kind, dc, tag, arr))
                    if kind == DONE:
                        return
            except BaseException as e:
                if not stopping.is_set():
                    events.put(("error", dc, e, None))

        for dc, ch in chans.items():
            threading.Thread(target=reader, args=(dc, ch), daemon=True).start()
        done: set[int] = set()
        speeds = 0
        next_check = time.monotonic() + period
        while len(done) < core.n:
            try:
                kind, dc, tag, arr = events.get(timeout=max(0.0, next_check - time.monotonic()))
            except queue.Empty:
                kind = None
            if time.monotonic() >= next_check:
                next_check += period
                routes = core.tick()
                if routes is not None:
                    msg = encode_json(pol.routes_to_json(routes))
                    for ch in chans.values():
                        ch.send(ROUTES, core.policy.version, msg)
            if kind is None:
                continue
            if kind in ("error", FAIL):
                raise fr.PeerError(_failure_report(events, dc, kind, tag, arr))
            if kind == CHECKIN:
                answer = core.checkin(dc, int(tag))
                if answer is not None:
                    what, p = answer
                    body = encode_json(p.to_json()) if what == "policy" else None
                    for ch in chans.values():
                        ch.send(POLICY if what == "policy" else GO, int(tag), body)
            elif kind == SPEED:
                j, mbps = int(arr[0]), float(arr[1])
                core.speed(dc, j, mbps)
                speeds += 1
            elif kind == DONE:
                done.add(dc)
            else:
                raise ProtocolError(f"scheduler: unexpected frame kind {kind} from datacenter {dc}")
        stopping.set()
        for ch in chans.values():
            ch.send(STOP, 0)
        return {"server": "scheduler", "replans": core.replans, "speed_reports": speeds,
                "policy_by_iteration": core.released_at, "final_version": core.policy.version,
                "final_roots": {str(k): v for k, v in core.policy.roots.items()},
                "final_primary": {f"{i}-{j}": list(p[0]) for (i, j), p in core.policy.routes.items()},
                "final_tps_mbps": {f"{i}-{j}": round(v, 3) for (i, j), v in core.matrix.tps.items()},
                "final_plan_tps_mbps": {f"{i}-{j}": v for (i, j), v in core.matrix.planned.items()}}
    finally:
        stopping.set()
        lsock.close()
        for ch in chans.values():
            ch.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m schemes.netstorm.scheduler",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="JSON written by schemes/netstorm/plan.py")
    a = ap.parse_args(argv)
    return serve_and_report(lambda: serve(json.loads(a.config)), (fr.PeerError, ProtocolError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
