"""NetStorm's server data path (schemes/netstorm/engine.py) on an in-memory overlay: sums
against numpy under any interleaving of FIFO links, policies that change between
iterations, auxiliary paths through relays, and the protocol errors."""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

import networkx as nx
import numpy as np
import pytest

from schemes.netstorm.engine import CheckIn, DcEngine, Deliver, Send
from schemes.netstorm.wire import Header, ProtocolError


@dataclass(frozen=True)
class P:
    """A policy as the engine reads it (policy.Policy has the same fields)."""
    version: int
    parents: dict
    blocks: list
    routes: dict


def bfs_policy(g: nx.Graph, roots: list[int], total: int, block: int, version: int) -> P:
    parents = {}
    for r in roots:
        pred = dict(nx.bfs_predecessors(g, r))
        parents[r] = {n: (None if n == r else pred[n]) for n in g.nodes}
    blocks, lo, i = [], 0, 0
    while lo < total:
        hi = min(lo + block, total)
        blocks.append((roots[i % len(roots)], lo, hi))
        lo, i = hi, i + 1
    routes = {}
    for a in g.nodes:
        for b in g.nodes:
            if a == b:
                continue
            paths = sorted(nx.all_simple_paths(g, a, b), key=lambda p: (len(p), p))
            chosen, inner = [], set()
            for p in paths:                    # auxiliaries with disjoint interiors
                if not set(p[1:-1]) & inner:
                    chosen.append(tuple(p))
                    inner |= set(p[1:-1])
            routes[(a, b)] = tuple(chosen)
    return P(version, parents, blocks, routes)


def run_overlay(g, workers, total, chunk, policies, iterations, seed, choose=None, data_seed=0):
    """Drive one engine per datacenter until every worker has every result; returns
    {(dc, t): result vector} and the engines. Links are FIFO; which link moves next is random."""
    rng = random.Random(seed)
    engines = {d: DcEngine(d, workers[d], total, chunk,
                           choose or (lambda paths: paths[0])) for d in g.nodes}
    grads = {(d, w, t): np.random.default_rng([data_seed, d, w, t])
             .standard_normal(total).astype(np.float32)
             for d in g.nodes for w in range(workers[d]) for t in range(iterations)}
    chans: dict = {}                    # channel -> deque of thunks

    def put(ch, fn):
        chans.setdefault(ch, deque()).append(fn)

    results = {(d, t): np.full(total, np.nan, np.float32) for d in g.nodes for t in range(iterations)}
    delivered = {(d, t): 0 for d in g.nodes for t in range(iterations)}
    checkins: dict = {}
    nchunks = len(engines[0].chunks)

    def start(d, w, t):                 # worker w of d pushes all of iteration t's chunks
        for c, (lo, hi) in enumerate(engines[d].chunks):
            put(("w", d, w), lambda d=d, w=w, t=t, c=c, lo=lo, hi=hi:
                act(d, engines[d].on_local(w, t, c, grads[(d, w, t)][lo:hi])))

    def act(d, actions):
        for a in actions:
            if isinstance(a, Send):
                assert a.hop in g[d], "sends only to overlay neighbours"
                h = Header.unpack(a.header.pack(), a.hop, d)   # through the wire format
                put(("l", d, a.hop), lambda d=d, a=a, h=h:
                    act(a.hop, engines[a.hop].on_message(d, h, a.values.copy())))
            elif isinstance(a, CheckIn):
                checkins.setdefault(a.iteration, set()).add(d)
                if len(checkins[a.iteration]) == len(g):
                    pol = policies[a.iteration]
                    for e in g.nodes:
                        put(("s", e), lambda e=e, t=a.iteration, pol=pol:
                            act(e, engines[e].on_policy(t, pol)))
            elif isinstance(a, Deliver):
                lo, hi = engines[d].chunks[a.chunk]
                results[(d, a.iteration)][lo:hi] = a.values
                delivered[(d, a.iteration)] += 1
                if delivered[(d, a.iteration)] == nchunks and a.iteration + 1 < iterations:
                    for w in range(workers[d]):     # BSP: the next iteration starts
                        start(d, w, a.iteration + 1)

    for d in g.nodes:
        for w in range(workers[d]):
            start(d, w, 0)
    while True:
        busy = [c for c, q in chans.items() if q]
        if not busy:
            break
        chans[rng.choice(busy)].popleft()()
    exact = {t: sum(grads[(d, w, t)].astype(np.float64) for d in g.nodes for w in range(workers[d]))
             for t in range(iterations)}
    return results, exact, engines


def nine_dc() -> nx.Graph:
    adj = {0: {1, 2}, 1: {0, 2, 4}, 2: {0, 1, 3}, 3: {2, 4, 5}, 4: {1, 3, 6}, 5: {3, 6, 7, 8},
           6: {4, 5, 7}, 7: {5, 6, 8}, 8: {5, 7}}
    return nx.Graph([(a, b) for a, bs in adj.items() for b in bs])


@pytest.mark.parametrize("seed", range(6))
def test_sums_match_numpy_with_policy_changes_and_any_interleaving(seed):
    g = nine_dc()
    workers = {d: 1 + d % 3 for d in g.nodes}
    total, its = 10_000, 4
    pols = [bfs_policy(g, [0, 5], total, 3000, 1), bfs_policy(g, [0, 5], total, 3000, 1),
            bfs_policy(g, [3, 8, 1], total, 1700, 2), bfs_policy(g, list(g.nodes), total, 999, 3)]
    rng = random.Random(seed)
    results, exact, engines = run_overlay(g, workers, total, 1024, pols, its, seed,
                                          choose=lambda paths: rng.choice(paths))
    for (d, t), got in results.items():
        np.testing.assert_allclose(got, exact[t], rtol=1e-5, atol=1e-4, err_msg=f"dc {d} it {t}")
    for e in engines.values():
        assert e.finished == its and not e.iters
        assert e.stats["policy_versions"] == {0: 1, 1: 1, 2: 2, 3: 3}
    assert sum(e.stats["sent_auxiliary"] for e in engines.values()) > 0
    assert sum(e.stats["relayed"] for e in engines.values()) > 0


def test_same_inputs_same_bits_whatever_the_interleaving():
    g = nx.cycle_graph(4)
    pols = [bfs_policy(g, [0, 2], 5000, 800, 0)] * 2
    a, _, _ = run_overlay(g, {d: 2 for d in g}, 5000, 512, pols, 2, seed=1)
    b, _, _ = run_overlay(g, {d: 2 for d in g}, 5000, 512, pols, 2, seed=2)
    for k in a:
        assert a[k].tobytes() == b[k].tobytes()


def test_blocks_need_not_align_with_chunks_and_one_chunk_spans_roots():
    g = nx.path_graph(3)
    pols = [bfs_policy(g, [0, 1, 2], 100, 7, 0)]
    results, exact, _ = run_overlay(g, {0: 1, 1: 1, 2: 3}, 100, 64, pols, 1, seed=0)
    for (d, t), got in results.items():
        np.testing.assert_allclose(got, exact[t], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- protocol errors
def two_dc_engine(total=8):
    g = nx.path_graph(2)
    pol = bfs_policy(g, [0], total, total, 7)
    e = DcEngine(0, 1, total, 4)
    assert e.on_local(0, 0, 0, np.ones(4, np.float32)) == [CheckIn(0)]
    e.on_policy(0, pol)
    return e, pol


def up(version=7, src=1, dst=0, block=0, values=8, it=0, root=0, down=False):
    return Header(it, block, root, down, version, 0, values, (src, dst))


def test_a_message_with_another_policy_version_is_refused():
    e, _ = two_dc_engine()
    with pytest.raises(ProtocolError, match="mixes policies"):
        e.on_message(1, up(version=8), np.ones(8, np.float32))


def test_duplicate_partial_and_non_child_sender_are_refused():
    e, _ = two_dc_engine()
    e.on_message(1, up(), np.ones(8, np.float32))
    with pytest.raises(ProtocolError, match="twice"):
        e.on_message(1, up(), np.ones(8, np.float32))
    e2, _ = two_dc_engine()
    with pytest.raises(ProtocolError, match="not its parent"):
        e2.on_message(1, up(down=True), np.ones(8, np.float32))


def test_body_size_and_block_range_are_checked():
    e, _ = two_dc_engine()
    with pytest.raises(ProtocolError, match="header says"):
        e.on_message(1, up(), np.ones(5, np.float32))
    with pytest.raises(ProtocolError, match="out of range"):
        e.on_message(1, up(block=3), np.ones(8, np.float32))
    with pytest.raises(ProtocolError, match="says root"):
        e.on_message(1, up(root=1), np.ones(8, np.float32))


def test_a_late_message_for_a_finished_iteration_is_refused():
    e, _ = two_dc_engine()
    e.on_local(0, 0, 1, np.ones(4, np.float32))
    out = e.on_message(1, up(), np.full(8, 2, np.float32))
    assert [type(a) for a in out] == [Send, Deliver, Deliver]
    assert e.finished == 1
    with pytest.raises(ProtocolError, match="already finished"):
        e.on_message(1, up(), np.ones(8, np.float32))


def test_worker_errors():
    e = DcEngine(0, 2, 8, 4)
    with pytest.raises(ProtocolError, match="rank 2"):
        e.on_local(2, 0, 0, np.ones(4, np.float32))
    with pytest.raises(ProtocolError, match="expected 4"):
        e.on_local(0, 0, 0, np.ones(3, np.float32))
    e.on_local(0, 0, 0, np.ones(4, np.float32))
    with pytest.raises(ProtocolError, match="twice"):
        e.on_local(0, 0, 0, np.ones(4, np.float32))


def test_header_unpack_rejects_malformed_and_misrouted():
    good = up().pack()
    assert Header.unpack(good, 0, 1) == up()
    with pytest.raises(ProtocolError, match="malformed"):
        Header.unpack(good[:5], 0, 1)
    with pytest.raises(ProtocolError, match="malformed"):
        Header.unpack(good.astype(np.float64), 0, 1)
    with pytest.raises(ProtocolError, match="does not reach"):
        Header.unpack(good, 0, 2)          # came from a datacenter not before me on the path
    bad = good.copy()
    bad[7] = 5                              # path length disagrees with the array
    with pytest.raises(ProtocolError, match="bad path"):
        Header.unpack(bad, 0, 1)
    loop = Header(0, 0, 0, False, 0, 0, 1, (1, 0, 1)).pack()
    with pytest.raises(ProtocolError, match="bad path"):
        Header.unpack(loop, 0, 1)


def test_relay_forwards_without_a_policy():
    e = DcEngine(1, 1, 8, 4)
    h = Header(3, 0, 2, False, 9, 5, 8, (0, 1, 2))
    out = e.on_message(0, h, np.ones(8, np.float32))
    assert out[0].hop == 2 and out[0].header == h and e.stats["relayed"] == 1
