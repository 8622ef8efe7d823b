"""What a switch answers a worker's contribution with, well-formed or not: shared by the
tests that drive INA clients over a simulated network (test_ina_batch, test_ina_core)."""
import heapq

import numpy as np

from workers import agg_packet as ap


def result_for(send_payload: bytes, total: np.ndarray, k: int, late: bool = False) -> bytes:
    """The switch's RESULT for a contribution: the job's sum of that chunk, with RETX when
    it answers a re-send or when `late` (another worker's re-send completed the chunk)."""
    f = ap.decode(send_payload)
    flags = ap.RESULT | (f.flags & ap.OVERFLOW) | (ap.RETX if late else f.flags & ap.RETX)
    return ap.encode(f.job, flags, f.slot, f.gen, f.offset, 0, f.fan_in,
                     f.exponent, total[f.offset // k])


def malformed(rng, payload: bytes) -> bytes:
    """One of the packets a client must count as bad or duplicate, never accept."""
    f = ap.decode(payload)
    kind = rng.integers(5)
    if kind == 0:
        return payload[:10]                                          # truncated header
    if kind == 1:
        return payload[:-4]                                          # a value short
    if kind == 2:
        return ap.encode(f.job + 1, ap.RESULT, f.slot, f.gen, f.offset, 0, f.fan_in, 0, f.values)
    if kind == 3:
        return ap.encode(f.job, ap.RESULT, f.slot, f.gen, f.offset + 1, 0, f.fan_in, 0, f.values)
    return ap.encode(f.job, ap.RESULT, f.slot, f.gen + 7, f.offset, 0, f.fan_in, 0, f.values)  # stale/future


def next_batch(net: list) -> tuple[float, list]:
    """(t, payloads): everything due at the earliest time of the heap `net` of
    (time, tie, payload): the results a worker reads in one wake-up."""
    t = net[0][0]
    batch = []
    while net and net[0][0] == t:
        batch.append(heapq.heappop(net)[2])
    return t, batch
