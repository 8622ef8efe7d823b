"""What the switches' repair of losses between aggregation points costs a job (pure; l3dml,
docs/protocol.md "Lossless links between aggregation points", docs/model.md).

A repaired loss delays its chunk's result by the timer loop's passes, not by a round trip
more: the point re-sends on pass 1, 2, 4, 8, 16 and then every `backoff_mask + 1` passes
(a pass is one timeout T after the partial sum went up), and the repair's round trip
replaces the lost copy's. So a chunk whose r-th attempt gets through comes
pass(r) x T late.

A worker's slot carries its chunks one after the other (chunk j + W goes when chunk j's
result is back), so a tensor of C chunks on W slots is W chains of C / W chunks each, and
the iteration waits for the slowest chain: the expected maximum over the slots of a chain's
summed delays, not the mean delay per chunk (at bench schemes' 4 MB point, 32 chunks a
slot, 3.9 % of them repaired: the slowest of 1024 slots waits 6.4 passes, the mean one 1.3)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Repair:
    """Links between aggregation points whose losses the switches repair: `points` are the
    ids of the points that re-send to their parent; a loss there (the partial sum up or the
    result down) delays the chunk by the timer loop's passes of `timeout_s` (real s), and
    the workers neither see nor answer it (they wait for the switches' attempts: l3dml's
    `worker_waits_repairs`)."""
    points: frozenset
    timeout_s: float
    backoff_mask: int = 7


def repair_pass(attempt: int, backoff_mask: int) -> int:
    """The timer-loop pass on which the attempt-th repair (1, 2, ...) of a copy goes."""
    if attempt <= 5:
        return 2 ** (attempt - 1)
    return 16 + (attempt - 5) * (backoff_mask + 1)


def chunk_passes(p_first: float, p_again: float, backoff_mask: int, eps: float = 1e-12) -> np.ndarray:
    """Distribution of one chunk's delay in timer passes: index d holds P(delay = d passes).
    0 without a repair; pass(r) when it needs one (p_first) and its r-th attempt is the first
    that gets through (each attempt lost again with p_again)."""
    if p_first <= 0:
        return np.array([1.0])
    probs = {0: 1.0 - p_first}
    r, reach = 1, p_first
    while reach > eps and r < 200:
        d = repair_pass(r, backoff_mask)
        probs[d] = probs.get(d, 0.0) + reach * (1.0 - p_again)
        reach *= p_again
        r += 1
    out = np.zeros(max(probs) + 1)
    for d, p in probs.items():
        out[d] += p
    return out


def _power(dist: np.ndarray, n: int, cap: int) -> np.ndarray:
    """The distribution of the sum of n independent draws of `dist` (truncated at cap)."""
    result, base = np.array([1.0]), dist
    while n:
        if n & 1:
            result = np.convolve(result, base)[:cap]
        n >>= 1
        if n:
            base = np.convolve(base, base)[:cap]
    return result


def slowest_chain_passes(chunks: int, slots: int, p_first: float, p_again: float,
                         backoff_mask: int) -> float:
    """Expected timer passes the slowest slot's chain waits: `chunks` chunks on `slots` slots
    (chains of ceil(chunks / slots), the last ones a chunk shorter), each chunk delayed as
    chunk_passes. E[max] = sum over k >= 1 of 1 - prod over chains of P(chain < k)."""
    if p_first <= 0 or chunks <= 0:
        return 0.0
    slots = max(1, min(slots, chunks))
    long_n = math.ceil(chunks / slots)
    n_long = chunks - (long_n - 1) * slots          # chains of long_n chunks; the rest long_n - 1
    one = chunk_passes(p_first, p_again, backoff_mask)
    d = np.arange(len(one))
    mean, var = float(one @ d), float(one @ d ** 2) - float(one @ d) ** 2
    cap = int(long_n * mean + 12 * math.sqrt(long_n * var) + 4 * len(one) + 64)
    total = 0.0
    cdfs = [(np.minimum(np.cumsum(_power(one, n, cap)), 1.0), count)
            for n, count in ((long_n, n_long), (long_n - 1, slots - n_long)) if count > 0]
    for k in range(1, cap):
        below = 1.0
        for cdf, count in cdfs:
            below *= cdf[min(k - 1, len(cdf) - 1)] ** count
        total += 1.0 - below
        if 1.0 - below < 1e-12:
            break
    return total
