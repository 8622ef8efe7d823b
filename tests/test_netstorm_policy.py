"""NetStorm's decision logic (schemes/netstorm/policy.py, awareness.py, multipath.py).

Hand-worked cases on small graphs and on the authors' 9-node graph, the authors' exact
starting numbers, and properties on random connected overlays.
"""
import json
import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemes.netstorm.awareness import LinkMeter, ThroughputMatrix
from schemes.netstorm.multipath import choose_path
from schemes.netstorm.policy import (MIN_TP, GlibcRandom, Policy, children, choose_roots,
                                     decide, depths, initial_tps, path_cost, perf, routes,
                                     shard_blocks, shard_caps, shard_tensors, simple_paths,
                                     tree_parents)


def overlay(edges):
    adj = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in adj.items()}


def uniform(adj, tp=100.0, **override):
    """tp on every directed link, except override {"ij": tp} for link i->j."""
    tps = {(i, j): tp for i in adj for j in adj[i]}
    for key, value in override.items():
        tps[(int(key[0]), int(key[1]))] = value
    return tps


def both(tps, a, b, value):
    tps[(a, b)] = tps[(b, a)] = value
    return tps


def held(blocks):
    out = {}
    for r, lo, hi in blocks:
        out[r] = out.get(r, 0) + hi - lo
    return out


TRIANGLE = overlay([(0, 1), (0, 2), (1, 2)])
LINE = overlay([(0, 1), (1, 2), (2, 3)])
SQUARE = overlay([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])      # with the diagonal 0-2
# the authors' overlay (van.h links/tps, klonet_deploy_topo.py), 0-indexed
NINE = {0: {1, 2}, 1: {0, 2, 4}, 2: {0, 1, 3}, 3: {2, 4, 5}, 4: {1, 3, 6}, 5: {3, 6, 7, 8},
        6: {4, 5, 7}, 7: {5, 6, 8}, 8: {5, 7}}
NINE = {k: frozenset(v) for k, v in NINE.items()}


# ---- small graphs, by hand ----------------------------------------------------------------

def test_triangle_with_one_slow_link():
    tps = both(uniform(TRIANGLE), 0, 1, 10.0)
    rts = routes(TRIANGLE, tps)
    # 0->1: direct 1/10 = 0.1 s, via 2: 0.01 + 0.01 = 0.02 s; the direct link has no interior
    # node, so it is an auxiliary route
    assert rts[(0, 1)] == ((0, 2, 1), (0, 1))
    assert rts[(0, 2)] == ((0, 2), (0, 1, 2))
    assert rts[(1, 0)] == ((1, 2, 0), (1, 0))
    assert routes(TRIANGLE, tps, multipath=False)[(0, 1)] == ((0, 2, 1),)
    # root 0's tree: 1 reaches 0 via 2
    parents = tree_parents(rts, 0, TRIANGLE)
    assert parents == {0: None, 1: 2, 2: 0}
    assert children(parents) == {0: (2,), 1: (), 2: (1,)}
    assert depths(parents, 0) == {0: 0, 1: 2, 2: 1}
    # metric: root 0 has layers {0->2} and {2->1}: 1/(1/100 + 1/100) = 50; root 2 one layer
    assert perf(rts, tps, 0, TRIANGLE) == pytest.approx(50)
    assert perf(rts, tps, 1, TRIANGLE) == pytest.approx(50)
    assert perf(rts, tps, 2, TRIANGLE) == pytest.approx(100)


def test_triangle_roots_and_shards():
    perfs = {0: 50.0, 1: 50.0, 2: 100.0}
    assert choose_roots(perfs, 1) == {0: 0.0, 1: 0.0, 2: 100.0}
    # a tie at 50: the authors drop the first minimum (lowest id) first, so 1 survives
    assert choose_roots(perfs, 2) == {0: 0.0, 1: 50.0, 2: 100.0}
    assert choose_roots(perfs, 5) == perfs
    # caps: ceil(50/150*10) = 4, ceil(100/150*10) = 7; blocks of 3 dealt 1,2,1,2: root 1 is
    # still below its cap (3 < 4) at its second turn, so it gets 6 elements and root 2 gets 4
    assert shard_caps(10, {1: 50.0, 2: 100.0}) == {1: 4, 2: 7}
    assert shard_blocks(10, 3, {0: 0.0, 1: 50.0, 2: 100.0}) == \
        [(1, 0, 3), (2, 3, 6), (1, 6, 9), (2, 9, 10)]
    # with smaller blocks the shares follow the weights
    assert held(shard_blocks(300, 10, {1: 50.0, 2: 100.0})) == {1: 100, 2: 200}


def test_line_uses_links_away_from_the_root():
    tps = uniform(LINE, **{"01": 10.0, "10": 20.0, "12": 30.0, "21": 40.0, "23": 50.0,
                           "32": 60.0})
    rts = routes(LINE, tps)
    assert rts[(0, 3)] == ((0, 1, 2, 3),)
    assert rts[(3, 0)] == ((3, 2, 1, 0),)
    assert tree_parents(rts, 0, LINE) == {0: None, 1: 0, 2: 1, 3: 2}
    assert depths(tree_parents(rts, 0, LINE), 0) == {0: 0, 1: 1, 2: 2, 3: 3}
    # compute_performance: links of the routes FROM the root, in that direction
    assert perf(rts, tps, 0, LINE) == pytest.approx(1 / (1 / 10 + 1 / 30 + 1 / 50))
    assert perf(rts, tps, 3, LINE) == pytest.approx(1 / (1 / 60 + 1 / 40 + 1 / 20))
    # root 1: depth 0 holds 1->0 (20) and 1->2 (30): b0 = 20; depth 1 holds 2->3 (50)
    assert perf(rts, tps, 1, LINE) == pytest.approx(1 / (1 / 20 + 1 / 50))
    assert perf(rts, tps, 2, LINE) == pytest.approx(1 / (1 / 40 + 1 / 20))
    assert path_cost((0, 1, 2, 3), tps) == pytest.approx(1 / 10 + 1 / 30 + 1 / 50)
    assert path_cost((3, 2, 1, 0), tps) == pytest.approx(1 / 60 + 1 / 40 + 1 / 20)


def test_square_dfs_order_and_ties():
    # DFS from 1, neighbours ascending: 1-0-2-3, 1-0-3, 1-2-0-3, 1-2-3
    assert simple_paths(SQUARE, 1, 3) == [(1, 0, 2, 3), (1, 0, 3), (1, 2, 0, 3), (1, 2, 3)]
    rts = routes(SQUARE, uniform(SQUARE))
    # 1-0-3 and 1-2-3 cost the same: the first in DFS order is primary; the other avoids
    # node 0 and becomes auxiliary; both 3-hop paths cross 0 or 2 and are dropped
    assert rts[(1, 3)] == ((1, 0, 3), (1, 2, 3))
    # three routes with pairwise disjoint interiors
    assert rts[(0, 2)] == ((0, 2), (0, 1, 2), (0, 3, 2))
    assert tree_parents(rts, 1, SQUARE) == {0: 1, 1: None, 2: 1, 3: 0}
    assert [perf(rts, uniform(SQUARE), r, SQUARE) for r in range(4)] == \
        pytest.approx([100, 50, 100, 50])


def test_square_slow_diagonal():
    tps = both(uniform(SQUARE), 0, 2, 25.0)         # 0.04 s against 0.02 s around
    rts = routes(SQUARE, tps)
    assert rts[(0, 2)] == ((0, 1, 2), (0, 3, 2), (0, 2))
    assert rts[(2, 0)] == ((2, 1, 0), (2, 3, 0), (2, 0))


def test_no_route_to_itself_and_disconnected_overlay():
    with pytest.raises(ValueError):
        simple_paths(LINE, 1, 1)
    with pytest.raises(ValueError, match="not connected"):
        routes(overlay([(0, 1), (2, 3)]), uniform(overlay([(0, 1), (2, 3)])))
    with pytest.raises(ValueError, match="no throughput"):
        routes(LINE, {(0, 1): 1.0})


def test_zero_throughput_is_guarded_not_removed():
    # van.cc treats tps == 0 as "no link" (pair 0-1 would have no route on this line);
    # here it costs 1/MIN_TP and still connects
    tps = both(uniform(LINE), 0, 1, 0.0)
    rts = routes(LINE, tps)
    assert rts[(0, 3)] == ((0, 1, 2, 3),)
    assert path_cost((0, 1), tps) == pytest.approx(1 / MIN_TP)
    assert perf(rts, tps, 0, LINE) == pytest.approx(1 / (1 / MIN_TP + 2 / 100))
    # a slow link is avoided whenever there is another way
    tps = both(uniform(TRIANGLE), 0, 1, 0.0)
    assert routes(TRIANGLE, tps)[(0, 1)] == ((0, 2, 1), (0, 1))
    tps[(1, 2)] = float("nan")
    assert path_cost((1, 2), tps) == pytest.approx(1 / MIN_TP)


def test_lone_datacenter():
    adj = {0: frozenset()}
    p = decide(adj, {}, n_roots=1, block=4, total=10)
    assert p.roots == {0: math.inf}
    assert p.parents == {0: {0: None}}
    assert p.blocks == [(0, 0, 4), (0, 4, 8), (0, 8, 10)]
    assert Policy.from_json(json.loads(json.dumps(p.to_json()))) == p


# ---- the authors' 9-node graph ------------------------------------------------------------

def test_nine_uniform_by_hand():
    tps = uniform(NINE)
    rts = routes(NINE, tps)
    # with equal rates the metric is 100 / (tree depth): eccentricities 4 4 3 2 3 3 3 4 4
    expected = [25, 25, 100 / 3, 50, 100 / 3, 100 / 3, 100 / 3, 25, 25]
    assert [perf(rts, tps, r, NINE) for r in range(9)] == pytest.approx(expected)
    # root 3's tree: shortest hops, ties to the smaller next hop (1 via 2, 6 via 4)
    assert tree_parents(rts, 3, NINE) == \
        {0: 2, 1: 2, 2: 3, 3: None, 4: 3, 5: 3, 6: 4, 7: 5, 8: 5}
    assert children(tree_parents(rts, 3, NINE)) == \
        {0: (), 1: (), 2: (0, 1), 3: (2, 4, 5), 4: (6,), 5: (7, 8), 6: (), 7: (), 8: ()}
    # 0->3: 0-2-3, then 0-1-4-3 (0-1-2-3 is as cheap but shares node 2)
    assert rts[(0, 3)] == ((0, 2, 3), (0, 1, 4, 3))
    # R = 3: 3, then the four at 100/3 tie and the two highest ids (5, 6) survive
    p = decide(NINE, tps, n_roots=3, block=1_000_000, total=10_000_000)
    assert set(p.roots) == {3, 5, 6}
    # caps 4_285_715 / 2_857_143 / 2_857_143: dealt 3,5,6,3,5,6,3,5,6 then 3 again
    assert held(p.blocks) == {3: 4_000_000, 5: 3_000_000, 6: 3_000_000}
    assert [b[0] for b in p.blocks] == [3, 5, 6, 3, 5, 6, 3, 5, 6, 3]


def test_nine_metric_uses_broadcast_direction():
    # 3->5 slow, 5->3 fast: the metric (routes from 3) detours 3-4-6-5, four layers deep,
    # while the aggregation tree (routes towards 3) keeps 5 -> 3 and is two deep
    tps = uniform(NINE, **{"35": 10.0})
    rts = routes(NINE, tps)
    assert rts[(3, 5)][0] == (3, 4, 6, 5)
    assert rts[(5, 3)][0] == (5, 3)
    assert rts[(3, 8)][0] == (3, 4, 6, 5, 8)
    assert perf(rts, tps, 3, NINE) == pytest.approx(25)
    parents = tree_parents(rts, 3, NINE)
    assert parents[5] == 3 and max(depths(parents, 3).values()) == 2


def test_nine_authors_uninformed_start():
    # the numbers van.cc Start draws with srand(2) (checked against glibc)
    gen = GlibcRandom(2)
    assert [gen.rand() for _ in range(5)] == \
        [1505335290, 1738766719, 190686788, 260874575, 747983061]
    tps = initial_tps(NINE, "uninformed")
    assert {k: v for k, v in tps.items() if k[0] < k[1]} == {
        (0, 1): 78.8, (0, 2): 49.8, (1, 2): 86.4, (1, 4): 17.9, (2, 3): 74.5, (3, 4): 14.9,
        (3, 5): 3.7, (4, 6): 36.7, (5, 6): 73.0, (5, 7): 57.2, (5, 8): 76.7, (6, 7): 56.9,
        (7, 8): 39.1}
    assert all(tps[(i, j)] == tps[(j, i)] for i, j in tps)
    # by hand: 3->5 direct is 1/3.7 = 0.270 s; 3-4-6-5 is 1/14.9 + 1/36.7 + 1/73 = 0.108 s;
    # every other way from 3 to 5 crosses 4 or 6, so only the direct link is auxiliary
    rts = routes(NINE, tps)
    assert rts[(3, 5)] == ((3, 4, 6, 5), (3, 5))
    # the authors' functions (van.cc add_route/compute_performance/PolicyDecision and
    # kvstore_dist.h EncodeDefaultKey, compiled) give on these numbers:
    p = decide(NINE, tps, n_roots=3, block=1_000_000, total=25_557_032)
    assert [p.perfs[r] for r in range(9)] == pytest.approx(
        [7.47346687, 8.79303455, 7.47346687, 8.00162888, 10.2326298, 8.02987576, 9.34121895,
         7.53989506, 6.83403349], rel=1e-6)
    assert set(p.roots) == {1, 4, 6}
    assert p.parents[4] == {0: 1, 1: 4, 2: 1, 3: 4, 4: None, 5: 6, 6: 4, 7: 6, 8: 5}
    assert held(p.blocks) == {1: 8_000_000, 4: 9_000_000, 6: 8_557_032}
    assert rts[(0, 5)] == ((0, 1, 4, 6, 5), (0, 2, 3, 5))
    assert rts[(0, 8)] == ((0, 1, 4, 6, 5, 8),)
    every = decide(NINE, tps, n_roots=9, block=1_000_000, total=25_557_032)
    assert held(every.blocks) == {0: 3_000_000, 1: 3_000_000, 2: 3_000_000, 3: 3_000_000,
                                  4: 3_000_000, 5: 3_000_000, 6: 3_000_000, 7: 2_557_032,
                                  8: 2_000_000}


def test_initial_tps_configured_and_modes():
    rates = {(0, 1): 10.0, (1, 0): 20.0, (1, 2): 30.0}
    tps = initial_tps(overlay([(0, 1), (1, 2)]), "configured", configured=rates)
    assert tps == {(0, 1): 10.0, (1, 0): 20.0, (1, 2): 30.0, (2, 1): 30.0}
    with pytest.raises(ValueError, match="no configured rate"):
        initial_tps(LINE, "configured", configured=rates)
    with pytest.raises(ValueError):
        initial_tps(LINE, "configured")
    with pytest.raises(ValueError, match="unknown mode"):
        initial_tps(LINE, "random")
    values = initial_tps(NINE, "uninformed", seed=7).values()
    assert all(0 <= v < 100 and round(v * 10) == v * 10 for v in values)


def test_glibc_zero_seed_is_seed_one():
    a, b = GlibcRandom(0), GlibcRandom(1)
    assert [a.rand() for _ in range(3)] == [b.rand() for _ in range(3)] == \
        [1804289383, 846930886, 1681692777]


# ---- shards -------------------------------------------------------------------------------

def test_shards_edge_cases():
    assert shard_blocks(0, 5, {0: 1.0}) == []
    assert shard_blocks(7, 10, {2: 1.0, 5: 3.0}) == [(2, 0, 7)]
    with pytest.raises(ValueError):
        shard_blocks(10, 0, {0: 1.0})
    with pytest.raises(ValueError):
        shard_blocks(10, 2, {0: 0.0, 1: 0.0})
    with pytest.raises(ValueError):
        shard_blocks(10, 2, {0: -1.0, 1: 1.0})
    with pytest.raises(ValueError):
        shard_blocks(10, 2, {0: float("nan")})


def test_shards_per_tensor_pointer_carries_over():
    # two tensors of 5 and 3 elements, blocks of 2: 2+2+1 | 2+1, dealt in turn across them
    assert shard_tensors([5, 3], 2, {0: 1.0, 1: 1.0, 2: 1.0}) == \
        [(0, 0, 2), (1, 2, 4), (2, 4, 5), (0, 5, 7), (1, 7, 8)]


def test_shards_all_capped_goes_on_in_turn():
    # caps whose rounding sums below the total cannot come from float64 ceil of exact
    # shares, so force them: EncodeDefaultKey would spin forever here
    import schemes.netstorm.policy as policy
    original = policy.shard_caps
    policy.shard_caps = lambda total, weights: {0: 2, 1: 2}
    try:
        assert shard_blocks(7, 2, {0: 1.0, 1: 1.0}) == \
            [(0, 0, 2), (1, 2, 4), (0, 4, 6), (1, 6, 7)]
    finally:
        policy.shard_caps = original


# ---- properties on random overlays --------------------------------------------------------

@st.composite
def overlays(draw, max_nodes=7):
    n = draw(st.integers(2, max_nodes))
    edges = {(draw(st.integers(0, i - 1)), i) for i in range(1, n)}       # a spanning tree
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n))
    edges |= {(min(a, b), max(a, b)) for a, b in extra if a != b}
    adj = overlay(edges)
    rate = st.one_of(st.sampled_from([10.0, 20.0, 50.0, 100.0]),
                     st.floats(0.5, 1000.0), st.just(0.0))
    tps = {(i, j): draw(rate) for i in adj for j in adj[i]}
    return adj, tps


@settings(max_examples=100, deadline=None)
@given(overlays())
def test_routes_properties(case):
    adj, tps = case
    rts = routes(adj, tps)
    g = nx.DiGraph()
    for (i, j) in tps:
        g.add_edge(i, j, cost=path_cost((i, j), tps))
    for (i, j), paths in rts.items():
        every = simple_paths(adj, i, j)
        for p in paths:
            assert p[0] == i and p[-1] == j and len(set(p)) == len(p)
            assert all(b in adj[a] for a, b in zip(p, p[1:]))
            assert p in every
        cheapest = min(path_cost(p, tps) for p in every)
        assert path_cost(paths[0], tps) == cheapest
        assert path_cost(paths[0], tps) == pytest.approx(
            nx.shortest_path_length(g, i, j, weight="cost"), rel=1e-9)
        # the primary is the first cheapest path in DFS order
        assert paths[0] == next(p for p in every if path_cost(p, tps) == cheapest)
        interiors = [set(p[1:-1]) for p in paths]
        for a in range(len(interiors)):
            for b in range(a + 1, len(interiors)):
                assert not interiors[a] & interiors[b]
        costs = [path_cost(p, tps) for p in paths]
        assert costs == sorted(costs)
        # maximal: every path left out shares an interior node with a chosen one
        chosen_inner = set().union(*interiors)
        for p in every:
            if p not in paths:
                assert set(p[1:-1]) & chosen_inner


@settings(max_examples=100, deadline=None)
@given(overlays(), st.integers(1, 8), st.integers(0, 5000), st.integers(1, 700))
def test_policy_properties(case, n_roots, total, block):
    adj, tps = case
    p = decide(adj, tps, n_roots=n_roots, block=block, total=total)
    nodes = set(adj)
    assert 1 <= len(p.roots) == min(n_roots, len(nodes))
    assert all(v > 0 for v in p.roots.values())
    assert set(p.perfs) == nodes
    assert sorted(p.perfs.values(), reverse=True)[len(p.roots) - 1] <= min(p.roots.values())
    for root, parents in p.parents.items():
        assert set(parents) == nodes and parents[root] is None
        for n, parent in parents.items():
            if n != root:
                assert parent in adj[n]
        d = depths(parents, root)                   # raises on a cycle
        assert set(d) == nodes
        assert sum(len(c) for c in children(parents).values()) == len(nodes) - 1
    # blocks cover 0..total exactly, in order, each at most `block` long
    assert [lo for _, lo, _ in p.blocks] == list(range(0, total, block))
    assert all(hi - lo == min(block, total - lo) for _, lo, hi in p.blocks)
    assert (p.blocks[-1][2] if p.blocks else 0) == total
    assert {r for r, _, _ in p.blocks} <= set(p.roots)
    assert Policy.from_json(json.loads(json.dumps(p.to_json()))) == p


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 9), st.one_of(st.just(0.0), st.floats(0.01, 100.0)),
                       min_size=1, max_size=6),
       st.integers(0, 3000), st.integers(1, 400))
def test_shard_properties(weights, total, block):
    if not any(w > 0 for w in weights.values()):
        weights[max(weights) + 1] = 1.0
    blocks = shard_blocks(total, block, weights)
    covered = [i for _, lo, hi in blocks for i in range(lo, hi)]
    assert covered == list(range(total))
    got = held(blocks)
    assert all(weights[r] > 0 for r in got)
    caps = shard_caps(total, weights)
    whole = sum(w for w in weights.values() if w > 0)
    k = len(caps)
    for r, w in weights.items():
        if w <= 0:
            continue
        share = w / whole * total
        assert caps[r] >= share - 1e-6 * total
        # never a whole block past its cap (it takes a block only while below the cap)...
        assert got.get(r, 0) < caps[r] + block
        # ...so it falls short of its share by at most what the others overshoot
        assert got.get(r, 0) > share - (k - 1) * block - k
    if len(set(w for w in weights.values() if w > 0)) == 1:
        # equal weights: plain turns, everyone within one block of each other
        sizes = [got.get(r, 0) for r in caps]
        assert max(sizes) - min(sizes) <= block


# ---- awareness ----------------------------------------------------------------------------

def test_link_meter_reports_after_four_samples_and_resets():
    m = LinkMeter()                  # 4 MB threshold, 4 samples, report on any change
    assert not m.sent(1, "small", 3_999_999, 0.0)
    assert m.replied(1, "small", 1.0) is None
    for k in range(3):
        assert m.sent(1, k, 5_000_000, float(k))
        assert m.replied(1, k, k + 0.5) is None
    assert m.sent(1, 3, 5_000_000, 3.0)
    # 20 MB in 2 s = 80 Mbps; the first speed is always reported
    assert m.replied(1, 3, 3.5) == pytest.approx(80.0)
    # a fresh window: the same speed again is not reported (no change), a new one is
    for k in range(4, 8):
        m.sent(1, k, 5_000_000, float(k))
        assert m.replied(1, k, k + 0.5) is None
    for k in range(8, 12):
        m.sent(1, k, 5_000_000, float(k))
        speed = m.replied(1, k, k + 1.0)
    assert speed == pytest.approx(40.0)
    assert m.last_reported(1) == pytest.approx(40.0)
    assert m.in_flight() == 0


def test_link_meter_windows_sum_bytes_over_sum_times():
    m = LinkMeter(size_threshold=1, samples=2)
    m.sent(2, "a", 1_000_000, 0.0)
    m.sent(2, "b", 3_000_000, 0.0)
    assert m.replied(2, "a", 1.0) is None
    # (1 + 3) MB over (1 + 3) s = 1 MB/s = 8 Mbps, not the mean of 8 and 8 per message
    assert m.replied(2, "b", 3.0) == pytest.approx(8.0)


def test_link_meter_per_neighbour_and_report_rate():
    m = LinkMeter(size_threshold=1, samples=1, report_rate=0.1)
    m.sent(1, 0, 1_000_000, 0.0)
    m.sent(2, 0, 1_000_000, 0.0)
    assert m.replied(1, 0, 0.08) == pytest.approx(100.0)
    assert m.replied(2, 0, 0.16) == pytest.approx(50.0)
    # 105 is 5% off the last REPORTED 100: not reported, and 100 stays the reference...
    m.sent(1, 1, 1_050_000, 0.0)
    assert m.replied(1, 1, 0.08) is None
    assert m.last_reported(1) == pytest.approx(100.0)
    # ...so 111 (11% off 100, 6% off 105) is
    m.sent(1, 2, 1_110_000, 0.0)
    assert m.replied(1, 2, 0.08) == pytest.approx(111.0)


def test_link_meter_edge_cases():
    m = LinkMeter(size_threshold=1, samples=1)
    assert m.replied(1, "never sent", 1.0) is None
    m.sent(1, "x", 10, 5.0)
    assert m.replied(1, "x", 5.0) is None          # no time elapsed: not a sample
    assert m.replied(1, "x", 6.0) is None          # a repeated reply is ignored
    m.sent(1, "y", 10, 5.0)
    assert m.replied(2, "y", 6.0) is None          # the id belongs to neighbour 1
    assert m.in_flight() == 1
    assert not LinkMeter(size_threshold=0).sent(1, "z", 0, 0.0)
    with pytest.raises(ValueError):
        LinkMeter(samples=0)


def test_throughput_matrix_check_change():
    t = ThroughputMatrix({(0, 1): 100.0, (1, 0): 100.0, (1, 2): 50.0, (2, 1): 50.0},
                         update_rate=0.15)
    assert t.mean_change() is None and not t.should_replan()
    assert t.report(0, 1, 110.0)                   # +10%
    assert t.mean_change() == pytest.approx(0.10)
    assert not t.should_replan()
    assert t.report(1, 2, 65.0)                    # +30%: mean over the 2 changed = 20%
    assert t.mean_change() == pytest.approx(0.20)
    assert t.should_replan()
    assert t.report(1, 2, 50.0)                    # changed back: no longer counted
    assert t.mean_change() == pytest.approx(0.10)
    t.report(1, 2, 65.0)
    planned = t.mark_planned()
    assert planned == t.tps and planned[(0, 1)] == 110.0
    assert t.mean_change() is None and not t.should_replan()
    t.report(1, 0, 100.0)                          # reported, but the same value
    assert not t.should_replan()


def test_throughput_matrix_guards():
    t = ThroughputMatrix({(0, 1): 0.0, (1, 0): 10.0})
    assert not t.report(1, 0, 0.0)
    assert not t.report(1, 0, float("nan"))
    assert not t.report(1, 0, float("inf"))
    assert not t.should_replan()
    with pytest.raises(ValueError):
        t.report(0, 2, 5.0)
    assert t.report(0, 1, 5.0)                     # from a planned 0: an infinite change
    assert t.mean_change() == math.inf and t.should_replan()
    # the authors' default update rate 0: any change re-plans
    d = ThroughputMatrix({(0, 1): 10.0})
    d.report(0, 1, 10.001)
    assert d.should_replan()


def test_throughput_matrix_does_not_alias_its_input():
    initial = {(0, 1): 10.0}
    t = ThroughputMatrix(initial)
    t.report(0, 1, 20.0)
    assert initial == {(0, 1): 10.0}
    t.tps[(0, 1)] = 99.0
    assert t.tps == {(0, 1): 20.0}


# ---- multipath ----------------------------------------------------------------------------

PATHS = ((0, 1, 3), (0, 2, 3), (0, 4, 5, 3))


def test_choose_path_primary_unless_busy():
    assert choose_path(PATHS, {}) == (0, 1, 3)
    assert choose_path(PATHS, {1: 2, 2: 0}) == (0, 1, 3)       # 2 is not > 2
    assert choose_path(PATHS, {1: 3, 2: 0}) == (0, 2, 3)
    assert choose_path(PATHS, {1: 3}) == (0, 2, 3)             # no entry: empty queue
    assert choose_path(PATHS, {1: 3, 2: 1, 4: 0}) == (0, 4, 5, 3)   # 1 is not < 1
    assert choose_path(PATHS, {1: 9, 2: 1, 4: 5}) == (0, 1, 3)  # no idle auxiliary
    assert choose_path(PATHS[:1], {1: 100}) == (0, 1, 3)        # no auxiliary at all
    assert choose_path([list(p) for p in PATHS], {1: 3}) == (0, 2, 3)


def test_choose_path_bounds_and_errors():
    assert choose_path(PATHS, {1: 5, 2: 2}, busy_bound=4, idle_bound=3) == (0, 2, 3)
    assert choose_path(PATHS, {1: 4, 2: 0}, busy_bound=4, idle_bound=3) == (0, 1, 3)
    with pytest.raises(ValueError):
        choose_path((), {})
    with pytest.raises(ValueError):
        choose_path(((0,),), {})


def test_path_enumeration_is_refused_where_it_would_not_finish():
    from schemes.netstorm.policy import check_enumerable
    nine = {0: {1, 2}, 1: {0, 2, 4}, 2: {0, 1, 3}, 3: {2, 4, 5}, 4: {1, 3, 6}, 5: {3, 6, 7, 8},
            6: {4, 5, 7}, 7: {5, 6, 8}, 8: {5, 7}}
    assert 0 < check_enumerable({k: frozenset(v) for k, v in nine.items()}) < 5000
    mesh = {i: frozenset(set(range(12)) - {i}) for i in range(12)}
    with pytest.raises(ValueError, match="sparser WAN"):
        check_enumerable(mesh)


def test_the_model_plans_with_each_directions_rate():
    import networkx as nx
    from schemes.netstorm.plan import overlay
    g = nx.Graph(dilated=1.0)
    for d in (1, 2, 3):
        g.add_node(f"g{d}", role="gateway", dc_index=d)
        g.add_node(f"h{d}", role="host", dc_index=d, worker_index=d - 1, ip=f"10.{d}.1.1")
        g.add_edge(f"h{d}", f"g{d}", kind="access", bandwidth_mbps=1000)
    g.add_edge("g1", "g2", kind="wan", bandwidth_mbps=100, direction_mbps={"g1": 20})
    g.add_edge("g2", "g3", kind="wan", bandwidth_mbps=50)
    dcs, adj, rates = overlay(g)
    assert dcs == [1, 2, 3] and adj == {0: frozenset({1}), 1: frozenset({0, 2}), 2: frozenset({1})}
    assert sorted(rates) == [(0, 1, 20.0), (1, 0, 100.0), (1, 2, 50.0), (2, 1, 50.0)]
