"""One datacenter's NetStorm server as a pure state machine: events in, actions out.

No sockets, threads or clocks here (schemes/netstorm/server.py is the I/O shell), so the
whole protocol runs in unit tests on an in-memory overlay with any delivery order.

What a server does in iteration t, with the policy the scheduler released for t (trees,
block -> root map; schemes/netstorm/policy.py):
  1. sums its own workers' chunks (float32, in local rank order) into the local partial;
  2. for every block b with root r: once the local partial covers b and every child of this
     datacenter in r's tree has sent its partial of b, adds them (local first, then children
     in ascending order: the order fixes the bits) and sends the sum to its parent in r's
     tree, or, at r, has the block's result;
  3. a result (computed at r, or arriving from the parent) goes on to this datacenter's
     children in r's tree and, chunk by chunk in order, to its own workers;
  4. messages for other datacenters are relayed along the path they carry.
A message to a tree neighbour takes a path chosen when it is sent (the primary route, or an
auxiliary one when the primary's queue is long: `choose`), from the routes in force at that
moment; routes change at once (ROUTES), trees and shards only between iterations.

Policy consistency (the authors' kv_app.h TopoUpdate, seeds.md 2.8): every message carries
its iteration and the policy version its sender used; the receiver holds one policy per
iteration and refuses a message whose version differs, so no iteration mixes two policies.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import schemes.netstorm.policy as pol
from schemes.netstorm.wire import Header, ProtocolError
from workers.framing import chunk_bounds, sum_in_order


@dataclass(frozen=True)
class Send:
    """Put a message on the overlay link towards neighbour `hop`."""
    hop: int
    header: Header
    values: np.ndarray


@dataclass(frozen=True)
class Deliver:
    """Chunk `chunk` of iteration `iteration`'s sum, for every local worker."""
    iteration: int
    chunk: int
    values: np.ndarray


@dataclass(frozen=True)
class CheckIn:
    """This datacenter's workers started `iteration`: tell the scheduler (the barrier)."""
    iteration: int


@dataclass
class _Layout:
    """What a policy means for this server's arrays (computed once per policy version)."""
    blocks: list[tuple[int, int, int]]                 # (root, lo, hi)
    parent: dict[int, int | None]                      # root -> this node's parent there
    kids: dict[int, tuple[int, ...]]                   # root -> this node's children there
    chunk_blocks: list[list[int]]                      # chunk -> blocks overlapping it


@dataclass
class _Iteration:
    local: np.ndarray
    chunk_done: np.ndarray
    parts: dict = field(default_factory=dict)          # chunk -> [array or None per worker]
    policy: object = None
    layout: _Layout | None = None
    block_left: list[int] | None = None                # local chunks still missing per block
    partials: dict = field(default_factory=dict)       # block -> {child: array}
    summed: set = field(default_factory=set)           # blocks summed and sent up (or at root)
    resulted: set = field(default_factory=set)         # blocks whose result is in
    result: np.ndarray | None = None
    filled: np.ndarray | None = None                   # result values in per chunk
    next_chunk: int = 0
    pending: list = field(default_factory=list)        # messages that came before the policy
    checked_in: bool = False


class DcEngine:
    """The server of datacenter `me` with `workers` local workers and `total` parameters,
    its workers sending chunks of `chunk_values` (workers/framing.py chunk_bounds).
    `choose(paths)` picks one of a route's paths (schemes/netstorm/multipath.py)."""

    def __init__(self, me: int, workers: int, total: int, chunk_values: int,
                 choose: Callable[[tuple], tuple] = lambda paths: paths[0]):
        if workers < 1 or total < 1:
            raise ValueError(f"datacenter {me}: needs at least one worker and one parameter")
        self.me, self.workers, self.total, self.choose = me, workers, total, choose
        self.chunks = chunk_bounds(0, total, chunk_values)
        self.chunk_values = chunk_values
        self.routes: dict = {}
        self.iters: dict[int, _Iteration] = {}
        self.finished = 0                      # iterations 0..finished-1 are done here
        self._ids = itertools.count()
        self._layouts: dict[int, _Layout] = {}
        self.stats = {"sent_primary": 0, "sent_auxiliary": 0, "relayed": 0, "policy_versions": {}}

    # ------------------------------------------------------------------ events
    def on_routes(self, routes: dict) -> None:
        """New paths, in force for every message sent from now on (the authors' ROUTE_RELEASE
        with iters = 0)."""
        self.routes = routes

    def on_policy(self, t: int, policy) -> list:
        """The policy (trees, blocks) of iteration t; its routes too if none came yet."""
        it = self._iteration(t)
        if it.policy is not None:
            raise ProtocolError(f"datacenter {self.me}: a second policy for iteration {t}")
        if not self.routes:
            self.routes = policy.routes
        it.policy, it.layout = policy, self._layout(policy)
        self.stats["policy_versions"][t] = policy.version
        it.block_left = [sum(1 for c in self._chunks_of(lo, hi) if not it.chunk_done[c])
                         for _, lo, hi in it.layout.blocks]
        out: list = []
        for b in range(len(it.layout.blocks)):
            self._try_block(t, it, b, out)
        pending, it.pending = it.pending, []
        for header, values in pending:
            self._accept(t, it, header, values, out)
        return out

    def on_local(self, rank: int, t: int, chunk: int, values: np.ndarray) -> list:
        """Chunk `chunk` of iteration t from local worker `rank`."""
        if not 0 <= rank < self.workers:
            raise ProtocolError(f"datacenter {self.me}: worker rank {rank} out of 0..{self.workers - 1}")
        if not 0 <= chunk < len(self.chunks):
            raise ProtocolError(f"datacenter {self.me}: chunk {chunk} out of 0..{len(self.chunks) - 1}")
        lo, hi = self.chunks[chunk]
        if values.size != hi - lo:
            raise ProtocolError(f"datacenter {self.me}: worker {rank} sent {values.size} values for "
                                f"chunk {chunk}, expected {hi - lo} (same scenario everywhere?)")
        it = self._iteration(t)
        out: list = []
        if not it.checked_in:
            it.checked_in = True
            out.append(CheckIn(t))
        parts = it.parts.setdefault(chunk, [None] * self.workers)
        if parts[rank] is not None or it.chunk_done[chunk]:
            raise ProtocolError(f"datacenter {self.me}: worker {rank} sent chunk {chunk} of "
                                f"iteration {t} twice")
        parts[rank] = values
        if any(p is None for p in parts):
            return out
        it.local[lo:hi] = sum_in_order(parts)
        it.chunk_done[chunk] = True
        del it.parts[chunk]
        if it.layout is not None:
            for b in it.layout.chunk_blocks[chunk]:
                it.block_left[b] -= 1
                self._try_block(t, it, b, out)
        return out

    def on_message(self, prev: int, header: Header, values: np.ndarray) -> list:
        """A message from neighbour `prev` (header already checked by Header.unpack)."""
        if values.size != header.values:
            raise ProtocolError(f"datacenter {self.me}: message from {prev} has {values.size} "
                                f"values, its header says {header.values}")
        nxt = header.next_hop(self.me)
        if nxt is not None:                 # a relay: forward along the carried path
            self.stats["relayed"] += 1
            return [Send(nxt, header, values)]
        t = header.iteration
        if t < self.finished:
            raise ProtocolError(f"datacenter {self.me}: message for iteration {t}, which is "
                                f"already finished here (duplicate from {header.src}?)")
        it = self._iteration(t)
        out: list = []
        if it.policy is None:
            it.pending.append((header, values))
        else:
            self._accept(t, it, header, values, out)
        return out

    # ------------------------------------------------------------------ inside
    def _iteration(self, t: int) -> _Iteration:
        if t < self.finished:
            raise ProtocolError(f"datacenter {self.me}: data for iteration {t}, already finished")
        it = self.iters.get(t)
        if it is None:
            it = self.iters[t] = _Iteration(np.zeros(self.total, np.float32),
                                            np.zeros(len(self.chunks), bool))
        return it

    def _chunks_of(self, lo: int, hi: int) -> range:
        return range(lo // self.chunk_values, (hi - 1) // self.chunk_values + 1)

    def _layout(self, policy) -> _Layout:
        lay = self._layouts.get(policy.version)
        if lay is None:
            blocks = [tuple(int(x) for x in b) for b in policy.blocks]
            if sum(hi - lo for _, lo, hi in blocks) != self.total or \
                    any(not 0 <= lo < hi <= self.total for _, lo, hi in blocks):
                raise ProtocolError(f"datacenter {self.me}: policy {policy.version}'s blocks do "
                                    f"not cover the {self.total} parameters")
            parent, kids = {}, {}
            for root, parents in policy.parents.items():
                if self.me not in parents:
                    raise ProtocolError(f"policy {policy.version}: datacenter {self.me} is not in "
                                        f"root {root}'s tree")
                parent[int(root)] = parents[self.me]
                kids[int(root)] = pol.children(parents).get(self.me, ())
            chunk_blocks: list[list[int]] = [[] for _ in self.chunks]
            for b, (root, lo, hi) in enumerate(blocks):
                if root not in parent:
                    raise ProtocolError(f"policy {policy.version}: block {b}'s root {root} has no tree")
                for c in self._chunks_of(lo, hi):
                    chunk_blocks[c].append(b)
            lay = self._layouts[policy.version] = _Layout(blocks, parent, kids, chunk_blocks)
        return lay

    def _accept(self, t: int, it: _Iteration, h: Header, values: np.ndarray, out: list) -> None:
        if h.version != it.policy.version:
            raise ProtocolError(f"datacenter {self.me}: iteration {t} mixes policies: a message "
                                f"from {h.src} used version {h.version}, this server "
                                f"{it.policy.version}")
        if not 0 <= h.block < len(it.layout.blocks):
            raise ProtocolError(f"datacenter {self.me}: block {h.block} out of range")
        root, lo, hi = it.layout.blocks[h.block]
        if h.root != root or h.values != hi - lo:
            raise ProtocolError(f"datacenter {self.me}: block {h.block} from {h.src} says root "
                                f"{h.root} and {h.values} values; the policy says {root} and {hi - lo}")
        if h.down:
            if h.src != it.layout.parent[root]:
                raise ProtocolError(f"datacenter {self.me}: result of block {h.block} from {h.src}, "
                                    f"which is not its parent in root {root}'s tree")
            self._result(t, it, h.block, values, out)
            return
        if h.src not in it.layout.kids[root]:
            raise ProtocolError(f"datacenter {self.me}: partial of block {h.block} from {h.src}, "
                                f"which is not its child in root {root}'s tree")
        got = it.partials.setdefault(h.block, {})
        if h.src in got or h.block in it.summed:
            raise ProtocolError(f"datacenter {self.me}: partial of block {h.block} of iteration "
                                f"{t} from {h.src} twice")
        got[h.src] = values
        self._try_block(t, it, h.block, out)

    def _try_block(self, t: int, it: _Iteration, b: int, out: list) -> None:
        root, lo, hi = it.layout.blocks[b]
        kids = it.layout.kids[root]
        got = it.partials.get(b, {})
        if b in it.summed or it.block_left[b] or len(got) < len(kids):
            return
        total = sum_in_order([it.local[lo:hi]] + [got[k] for k in kids])
        it.summed.add(b)
        it.partials.pop(b, None)
        if root == self.me:
            self._result(t, it, b, total, out)
        else:
            self._send(t, it, b, False, it.layout.parent[root], total, out)

    def _result(self, t: int, it: _Iteration, b: int, values: np.ndarray, out: list) -> None:
        if b in it.resulted:
            raise ProtocolError(f"datacenter {self.me}: result of block {b} of iteration {t} twice")
        it.resulted.add(b)
        root, lo, hi = it.layout.blocks[b]
        for kid in it.layout.kids[root]:
            self._send(t, it, b, True, kid, values, out)
        if it.result is None:
            it.result = np.empty(self.total, np.float32)
            it.filled = np.zeros(len(self.chunks), np.int64)
        it.result[lo:hi] = values
        for c in self._chunks_of(lo, hi):
            clo, chi = self.chunks[c]
            it.filled[c] += min(hi, chi) - max(lo, clo)
        while it.next_chunk < len(self.chunks):
            clo, chi = self.chunks[it.next_chunk]
            if it.filled[it.next_chunk] < chi - clo:
                break
            out.append(Deliver(t, it.next_chunk, it.result[clo:chi]))
            it.next_chunk += 1
        if it.next_chunk == len(self.chunks):
            self._finish(t)

    def _finish(self, t: int) -> None:
        if t != self.finished:
            raise ProtocolError(f"datacenter {self.me}: iteration {t} finished before "
                                f"{self.finished}: workers out of step")
        del self.iters[t]
        self.finished = t + 1

    def _send(self, t: int, it: _Iteration, b: int, down: bool, to: int, values: np.ndarray,
              out: list) -> None:
        paths = self.routes.get((self.me, to))
        if not paths:
            raise ProtocolError(f"datacenter {self.me}: no route to {to} (routes incomplete)")
        path = tuple(self.choose(tuple(paths)))
        self.stats["sent_primary" if path == tuple(paths[0]) else "sent_auxiliary"] += 1
        root = it.layout.blocks[b][0]
        h = Header(t, b, root, down, it.policy.version, next(self._ids), int(values.size), path)
        out.append(Send(path[1], h, values))
