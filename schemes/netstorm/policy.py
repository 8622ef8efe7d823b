"""NetStorm's scheduler decisions, as plain functions on plain data (no I/O, no threads).

Reimplements the decision logic of NetStorm (arXiv 2404.11352, IEEE/ACM ToN 2024) from the
authors' code (github.com/fengwenjiao/netstorm @3eaeba1): routes (`van.cc add_route`,
`find_trace`), the multi-root FAPT metric and root choice (`compute_performance`), the
aggregation trees (`PolicyDecision`), the model sharding over roots (`kvstore_dist.h
EncodeDefaultKey`) and the uninformed start (`van.cc Start`). README_policy.md lists every
place where the authors' code was ambiguous or buggy and what was decided.

Data:
  datacenters   ints 0..n-1
  adj           {dc: frozenset(neighbours)}: the undirected overlay (the WAN's edges)
  tps           {(i, j): throughput of i sending to j}: one entry per DIRECTED overlay link,
                any consistent unit (Mbps in this testbed)
  path          tuple of dcs, source first, destination last
  routes        {(i, j): (primary, aux1, aux2, ...)} for every ordered pair i != j
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Sequence

Path = tuple[int, ...]
Adjacency = Mapping[int, frozenset[int]]
Throughputs = Mapping[tuple[int, int], float]
Routes = dict[tuple[int, int], tuple[Path, ...]]
Block = tuple[int, int, int]          # (root, lo, hi): elements lo..hi-1 belong to root

# Defaults: the authors' values.
BLOCK_ELEMENTS = 1_000_000   # MXNET_KVSTORE_BIGARRAY_BOUND: scripts/demo/muti_server_resnet.sh,
                             # scripts/klonet-netstorm/klonet_run_start.py, kvstore_dist.h default
MULTIPATH = True             # ENABLE_MUTI_TRACE=1 in scripts/demo/muti_server_resnet.sh
                             # (0 in klonet_run_start.py)
INITIAL_SEED = 2             # van.cc Start: srand(2) before drawing the initial tps
# NUM_ENABLE_SERVER is 9 = every datacenter in both scripts: pass n_roots=len(adj) for that.

# The authors' code treats tps == 0 as "no link" (find_trace skips it), so a link measured or
# drawn at 0 silently disappears and a pair can lose every route (then route[i][j][0] is read
# out of bounds). Here the overlay comes from `adj`, and a throughput that is zero, negative
# or NaN is floored to MIN_TP: such a link costs 1e6 per hop, so it carries traffic only when
# nothing else connects the pair, and every pair of a connected overlay always has a route.
MIN_TP = 1e-6


# ---- throughputs -------------------------------------------------------------------------

def link_tp(tps: Throughputs, u: int, v: int) -> float:
    """Throughput of u sending to v, floored to MIN_TP (see MIN_TP); a missing entry is an error."""
    try:
        tp = float(tps[(u, v)])
    except KeyError:
        raise ValueError(f"no throughput for overlay link {u}->{v}") from None
    if not tp > MIN_TP:          # also catches NaN
        return MIN_TP
    return tp


def path_cost(path: Sequence[int], tps: Throughputs) -> float:
    """Sum of 1/tp over the path's directed hops (seconds per unit of data, store and forward).

    Summed from the source onward, the order find_trace accumulates in (ties depend on it).
    """
    cost = 0.0
    for u, v in zip(path, path[1:]):
        cost += 1.0 / link_tp(tps, u, v)
    return cost


# ---- simple paths ------------------------------------------------------------------------

def _paths_from(adj: Adjacency, src: int) -> Iterator[Path]:
    """Every simple path starting at src (length >= 1 hop), in DFS preorder, neighbours ascending.

    Restricted to one destination this is exactly find_trace's order: find_trace prunes the
    same DFS tree at the destination, which removes no path ending there.
    """
    path = [src]
    on_path = {src}

    def extend(u: int) -> Iterator[Path]:
        for v in sorted(adj[u]):
            if v in on_path:
                continue
            path.append(v)
            on_path.add(v)
            yield tuple(path)
            yield from extend(v)
            path.pop()
            on_path.discard(v)

    yield from extend(src)


def simple_paths(adj: Adjacency, src: int, dst: int) -> list[Path]:
    """All simple paths src -> dst (DFS, neighbours in ascending order: find_trace's order)."""
    if src == dst:
        raise ValueError(f"no route from a datacenter to itself ({src})")
    return [p for p in _paths_from(adj, src) if p[-1] == dst]


MAX_SIMPLE_PATHS = 200_000   # the scheduler enumerates every simple path at each plan (as
                             # the authors' find_trace); 200,000 take ~1 s in Python


def check_enumerable(adj: Adjacency, limit: int = MAX_SIMPLE_PATHS) -> int:
    """The number of simple paths the scheduler will enumerate (from every source), or a
    ValueError saying what to do when there are more than `limit` (a full mesh of 9
    datacenters has ~1M, of 12 about 10^9: the authors' WAN, 9 nodes and 13 links, ~900)."""
    n = 0
    for src in sorted(adj):
        for _ in _paths_from(adj, src):
            n += 1
            if n > limit:
                raise ValueError(
                    f"netstorm enumerates every simple path between datacenters, as the authors' "
                    f"scheduler does, and this WAN has more than {limit:,} ({len(adj)} datacenters, "
                    f"{sum(len(v) for v in adj.values()) // 2} links): give a sparser WAN "
                    f"(wan.topology: edges, ring or star) or fewer datacenters")
    return n


# ---- routes ------------------------------------------------------------------------------

def _interior(path: Path) -> frozenset[int]:
    return frozenset(path[1:-1])


def pick_routes(ranked: Sequence[Path], multipath: bool = True) -> tuple[Path, ...]:
    """Primary = first of `ranked` (cheapest first); auxiliaries = the following paths whose
    interior nodes avoid the interiors of every path chosen before (add_route's greedy scan)."""
    if not ranked:
        raise ValueError("no path")
    chosen = [ranked[0]]
    if multipath:
        used = set(_interior(ranked[0]))
        for p in ranked[1:]:
            inner = _interior(p)
            if used.isdisjoint(inner):
                chosen.append(p)
                used |= inner
    return tuple(chosen)


def routes(adj: Adjacency, tps: Throughputs, multipath: bool = MULTIPATH) -> Routes:
    """(primary, aux1, ...) for every ordered pair, as add_route computes them.

    Ties: add_route takes the first minimum (`min` uses `<`) in find_trace's DFS order, i.e.
    among equal costs the lexicographically smallest node sequence; a stable sort by cost of
    the DFS-ordered paths gives the same ranking. Costs are float64 here (float32 in van.cc),
    so exact float32 near-ties may break differently. ENABLE_RANDOM (random paths, an ablation
    switch at 0 in both scripts) is not reproduced.
    """
    out: Routes = {}
    for src in sorted(adj):
        by_dst: dict[int, list[Path]] = {}
        for p in _paths_from(adj, src):
            by_dst.setdefault(p[-1], []).append(p)
        for dst in sorted(adj):
            if dst == src:
                continue
            paths = by_dst.get(dst)
            if not paths:
                raise ValueError(f"overlay is not connected: no path {src}->{dst}")
            ranked = sorted(paths, key=lambda p: path_cost(p, tps))   # stable: DFS order on ties
            out[(src, dst)] = pick_routes(ranked, multipath)
    return out


# ---- trees -------------------------------------------------------------------------------

def tree_parents(routes: Mapping[tuple[int, int], Sequence[Path]], root: int,
                 nodes: Iterable[int]) -> dict[int, int | None]:
    """Parent of each node in root's aggregation tree: the next hop of its primary route
    TOWARDS root (PolicyDecision: next_hop_list[j][root] = route[j][root][0][1]); root -> None."""
    parents: dict[int, int | None] = {}
    for j in sorted(nodes):
        parents[j] = None if j == root else routes[(j, root)][0][1]
    return parents


def children(parents: Mapping[int, int | None]) -> dict[int, tuple[int, ...]]:
    """Children of every node (leaves: ()), sorted. The authors also make each server's own
    worker a child (ProcessRouteReleaseCommand); that is the runtime's business."""
    kids: dict[int, list[int]] = {n: [] for n in parents}
    for n, p in parents.items():
        if p is not None:
            kids.setdefault(p, []).append(n)
    return {n: tuple(sorted(c)) for n, c in sorted(kids.items())}


def depths(parents: Mapping[int, int | None], root: int) -> dict[int, int]:
    """Hops from each node up to root; ValueError if a parent chain loops or misses root."""
    out: dict[int, int] = {root: 0}
    for start in parents:
        chain = []
        n = start
        while n not in out:
            if n in chain or n not in parents or parents[n] is None:
                raise ValueError(f"parents of {start} do not lead to root {root}: {chain + [n]}")
            chain.append(n)
            n = parents[n]
        for d, m in enumerate(reversed(chain), start=out[n] + 1):
            out[m] = d
    return dict(sorted(out.items()))


# ---- the FAPT metric and the roots -------------------------------------------------------

def perf(routes: Mapping[tuple[int, int], Sequence[Path]], tps: Throughputs, root: int,
         nodes: Iterable[int]) -> float:
    """The multi-root FAPT metric of `root`, as compute_performance computes it.

    Uses the primary routes FROM root to every other node (route[root][j][0], the broadcast
    direction) and the throughputs of their links in that direction (tps[u][v] for the hop
    u->v away from root). Note: the aggregation tree (tree_parents) uses the routes j->root
    instead, so with asymmetric rates (or ties) the metric judges a slightly different tree;
    that is the authors' choice, kept. Each directed link counts once, at the depth (hop
    index from root) where it is first met scanning destinations in ascending order;
    b_k = the slowest link at depth k; perf = 1 / sum_k 1/b_k. A lone node has no links:
    perf = inf (van.cc computes 1/0 in float, also inf).
    """
    layers: list[list[float]] = []
    seen: set[tuple[int, int]] = set()
    for j in sorted(nodes):
        if j == root:
            continue
        path = routes[(root, j)][0]
        for k, hop in enumerate(zip(path, path[1:])):
            if hop in seen:
                continue
            seen.add(hop)
            while len(layers) <= k:
                layers.append([])
            layers[k].append(link_tp(tps, *hop))
    seconds = sum(1.0 / min(layer) for layer in layers if layer)
    return math.inf if seconds == 0 else 1.0 / seconds


def choose_roots(perfs: Mapping[int, float], R: int) -> dict[int, float]:
    """The R best nodes keep their perf, the others get 0 (compute_performance's tail).

    The authors drop the n-R smallest one at a time, each time the first (lowest id) minimum;
    so among equal perfs the HIGHER ids survive. Same here: drop the n-R smallest by (perf, id).
    (Their `min` starts from 1e8, so a perf above 1e8 could never be dropped and could make it
    index -1; here perfs of any magnitude are ranked.)
    """
    if R < 1:
        raise ValueError(f"need at least one root (R={R})")
    for n, p in perfs.items():
        if math.isnan(p) or p < 0:
            raise ValueError(f"perf of {n} must be a number >= 0, not {p}")
    ranked = sorted(perfs, key=lambda n: (perfs[n], n))
    dropped = set(ranked[:max(0, len(ranked) - R)])
    return {n: (0.0 if n in dropped else float(perfs[n])) for n in sorted(perfs)}


# ---- sharding ----------------------------------------------------------------------------

def _positive_weights(weights: Mapping[int, float]) -> dict[int, float]:
    """Roots with weight > 0; infinite weights (a lone node's perf) share equally."""
    for r, w in weights.items():
        if math.isnan(w) or w < 0:
            raise ValueError(f"weight of root {r} must be a number >= 0, not {w}")
    if any(math.isinf(w) for w in weights.values()):
        return {r: 1.0 for r, w in sorted(weights.items()) if math.isinf(w)}
    positive = {r: float(w) for r, w in sorted(weights.items()) if w > 0}
    if not positive:
        raise ValueError("no root has a positive weight")
    return positive


def shard_caps(total: int, weights: Mapping[int, float]) -> dict[int, int]:
    """Elements each root may reach before it stops receiving blocks: ceil(w_r / sum w * total)
    (EncodeDefaultKey; computed in float64 there float32, which is inexact above 2^24)."""
    positive = _positive_weights(weights)
    whole = sum(positive.values())
    return {r: math.ceil(w / whole * total) for r, w in positive.items()}


def shard_tensors(sizes: Sequence[int], block: int,
                  weights: Mapping[int, float]) -> list[Block]:
    """EncodeDefaultKey's dealing for a model of several tensors laid end to end.

    Each tensor is cut into blocks of `block` elements (its last block shorter); blocks go to
    the roots in turn (ascending ids, one pointer carried across tensors, starting at the
    lowest root), skipping a root once it holds >= its cap (shard_caps). A root below its cap
    takes a whole block, so it may end up to block-1 elements above the cap, and others below
    their ceil share by the same amounts. Roots of weight 0 get nothing.

    If every root is at its cap while elements remain (possible only when the caps' rounding
    sums below the total, e.g. float32 in the authors' code), EncodeDefaultKey's skip loop
    never ends; here the dealing then goes on in turn, ignoring the caps, so every element is
    always covered.
    """
    if block < 1:
        raise ValueError(f"block must be >= 1 element, not {block}")
    if any(s < 0 for s in sizes):
        raise ValueError(f"tensor sizes must be >= 0: {list(sizes)}")
    caps = shard_caps(sum(sizes), weights)
    order = list(caps)                     # ascending root ids
    held = {r: 0 for r in order}
    turn = 0                               # EncodeDefaultKey's server_log, over `order`
    out: list[Block] = []
    offset = 0
    for size in sizes:
        for lo in range(offset, offset + size, block):
            hi = min(lo + block, offset + size)
            turn = _next_turn(order, caps, held, turn)
            root = order[turn % len(order)]
            out.append((root, lo, hi))
            held[root] += hi - lo
            turn += 1
        offset += size
    return out


def _next_turn(order: list[int], caps: Mapping[int, int], held: Mapping[int, int],
               turn: int) -> int:
    """First turn from `turn` whose root is below its cap; `turn` itself if all are capped."""
    for step in range(len(order)):
        root = order[(turn + step) % len(order)]
        if held[root] < caps[root]:
            return turn + step
    return turn


def shard_blocks(total: int, block: int, weights: Mapping[int, float]) -> list[Block]:
    """(root, lo, hi) ranges covering elements 0..total-1 exactly, for one flat vector of
    `total` elements: shard_tensors with one tensor."""
    return shard_tensors([total], block, weights)


# ---- the policy --------------------------------------------------------------------------

@dataclass(frozen=True)
class Policy:
    """One plan of the scheduler: what it releases to the servers (route_update /
    route_update2 / PolicyDecision in van.cc), as one object."""
    version: int
    roots: dict[int, float]                        # chosen root -> perf (> 0)
    parents: dict[int, dict[int, int | None]]      # root -> {node: parent, root: None}
    blocks: list[Block]                            # (root, lo, hi), ascending lo
    routes: Routes                                 # (i, j) -> (primary, aux1, ...)
    perfs: dict[int, float] = field(default_factory=dict)   # every node's metric (for logs)

    def to_json(self) -> dict:
        """A JSON-serializable dict (int keys become lists of pairs); from_json inverts it.
        perf may be inf for a one-datacenter overlay (json writes Infinity, reads it back)."""
        return {
            "version": self.version,
            "roots": [[r, p] for r, p in sorted(self.roots.items())],
            "perfs": [[n, p] for n, p in sorted(self.perfs.items())],
            "parents": [[r, [[n, p] for n, p in sorted(ps.items())]]
                        for r, ps in sorted(self.parents.items())],
            "blocks": [list(b) for b in self.blocks],
            "routes": routes_to_json(self.routes),
        }

    @classmethod
    def from_json(cls, data: Mapping) -> "Policy":
        return cls(
            version=int(data["version"]),
            roots={int(r): float(p) for r, p in data["roots"]},
            perfs={int(n): float(p) for n, p in data.get("perfs", [])},
            parents={int(r): {int(n): (None if p is None else int(p)) for n, p in ps}
                     for r, ps in data["parents"]},
            blocks=[(int(r), int(lo), int(hi)) for r, lo, hi in data["blocks"]],
            routes=routes_from_json(data["routes"]),
        )

    def children(self, root: int) -> dict[int, tuple[int, ...]]:
        return children(self.parents[root])


def routes_to_json(rts: Routes) -> list:
    """Routes alone (the scheduler sends them at once when a re-plan changes them)."""
    return [[i, j, [list(p) for p in paths]] for (i, j), paths in sorted(rts.items())]


def routes_from_json(data) -> Routes:
    return {(int(i), int(j)): tuple(tuple(int(n) for n in p) for p in paths) for i, j, paths in data}


def decide(adj: Adjacency, tps: Throughputs, *, n_roots: int, block: int, total: int,
           multipath: bool = MULTIPATH, version: int = 0) -> Policy:
    """The whole plan: routes, every node's metric, the n_roots best as roots, their trees
    and the model's blocks (`total` elements) dealt by perf."""
    nodes = sorted(adj)
    rts = routes(adj, tps, multipath)
    perfs = {n: perf(rts, tps, n, nodes) for n in nodes}
    roots = {r: p for r, p in choose_roots(perfs, n_roots).items() if p > 0}
    parents = {}
    for r in roots:
        parents[r] = tree_parents(rts, r, nodes)
        depths(parents[r], r)              # raises if not a tree (cannot happen: costs > 0)
    return Policy(version=version, roots=roots, parents=parents,
                  blocks=shard_blocks(total, block, roots), routes=rts, perfs=perfs)


# ---- the starting throughputs ------------------------------------------------------------

class GlibcRandom:
    """glibc's rand() after srand(seed) (the TYPE_3 additive feedback generator), so the
    uninformed start can be the authors' exact numbers."""

    def __init__(self, seed: int):
        word = seed & 0xFFFFFFFF
        word = word - (1 << 32) if word >= (1 << 31) else word   # glibc keeps it as int32
        if word == 0:
            word = 1
        r = [word]
        for _ in range(1, 31):
            # 16807 * word mod (2^31 - 1), by Schrage's method as glibc does (C division)
            hi, lo = int(word / 127773), word - int(word / 127773) * 127773
            word = 16807 * lo - 2836 * hi
            if word < 0:
                word += 2147483647
            r.append(word)
        r.extend(r[0:3])                   # r[31..33] = r[0..2]
        self._state = [x & 0xFFFFFFFF for x in r]
        for _ in range(34, 344):           # glibc discards the first 310 outputs
            self._step()

    def _step(self) -> int:
        s = self._state
        value = (s[-31] + s[-3]) & 0xFFFFFFFF
        s.append(value)
        del s[0]
        return value

    def rand(self) -> int:
        return self._step() >> 1


def initial_tps(adj: Adjacency, mode: str, seed: int = INITIAL_SEED,
                configured: Mapping[tuple[int, int], float] | None = None
                ) -> dict[tuple[int, int], float]:
    """The throughputs the scheduler plans with before any measurement.

    "uninformed": van.cc Start: srand(seed); for every (i, j) in row-major order that is a link
        with a nonzero entry, tps[i][j] = tps[j][i] = (rand() % 1000) / 10. Each link is thus
        drawn twice (at (i, j) and again at (j, i)); the second draw wins and both directions
        are equal, values in {0.0, 0.1, ..., 99.9}. A first draw of 0 zeroes both entries, so
        the second is skipped and the link stays 0 (there: the link vanishes; here: MIN_TP).
        Uses glibc's generator, so on the authors' 9-node graph the numbers are theirs.
    "configured": the given rates; configured[(i, j)] for i->j, else configured[(j, i)].
    """
    links = [(i, j) for i in sorted(adj) for j in sorted(adj[i])]
    if mode == "uninformed":
        tps = {link: 1.0 for link in links}
        gen = GlibcRandom(seed)
        for i, j in links:                 # row-major, as the loop over tps[9][9]
            if tps[(i, j)] != 0:
                tps[(i, j)] = tps[(j, i)] = (gen.rand() % 1000) / 10
        return tps
    if mode == "configured":
        if configured is None:
            raise ValueError("mode 'configured' needs the configured rates")
        out = {}
        for i, j in links:
            rate = configured.get((i, j), configured.get((j, i)))
            if rate is None:
                raise ValueError(f"no configured rate for overlay link {i}-{j}")
            out[(i, j)] = float(rate)
        return out
    raise ValueError(f"unknown mode {mode!r} (uninformed, configured)")
