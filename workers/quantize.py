"""float32 gradients <-> int32 values that switches can add without overflow.

A value x is sent as q = round(x * 2**e) with a shared exponent e. Every worker
of a job uses the same e for the same block (agreed out of band: a configured
clipping bound, or the previous iteration's aggregated max), so the switch can
add integers and the result dequantizes with the same e.

e is the largest exponent for which n_workers values of magnitude <= max_abs
cannot overflow int32 when summed: n * max|q| <= 2**31 - 1. Values beyond the
agreed max_abs are clipped (saturated) and reported, so the OVERFLOW flag can
tell the receivers that the sum is clipped rather than silently wrong.

Error: each worker's rounding error is at most 2**-(e+1) per element, so the
aggregated sum is within n * 2**-(e+1) of the exact sum of the float inputs
(`sum_error_bound`). Pure functions, numpy only.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MAX = 2**31 - 1
MAX_WORKERS = 1024
EXP_MIN, EXP_MAX = -128, 127   # the header carries e as a signed byte


def choose_exponent(max_abs: float, n_workers: int) -> int:
    """Largest e with n_workers * round(max_abs * 2**e) <= INT32_MAX (clamped to int8)."""
    if not 1 <= n_workers <= MAX_WORKERS:
        raise ValueError(f"n_workers must be in 1..{MAX_WORKERS} (got {n_workers}); "
                         "aggregate larger jobs hierarchically in groups of at most 1024")
    if not math.isfinite(max_abs) or max_abs < 0:
        raise ValueError(f"max_abs must be a finite number >= 0 (got {max_abs}); "
                         "replace NaN/inf gradients before quantizing")
    limit = INT32_MAX // n_workers
    if max_abs == 0:
        return EXP_MAX if limit >= 1 else 0
    e = math.floor(math.log2(limit / max_abs))
    # log2 is inexact near powers of two: step down until the bound really holds.
    while e > EXP_MIN and max_abs * 2.0**e > limit:
        e -= 1
    return max(EXP_MIN, min(EXP_MAX, e))


def quantize(x: np.ndarray, exponent: int, n_workers: int,
             scratch: "Scratch | None" = None) -> tuple[np.ndarray, bool]:
    """float array -> (int32 array, saturated). Values are clipped to the per-worker limit.
    scratch: buffers kept between calls by a caller that quantizes every iteration (a
    fresh temporary of tens of MB costs its page faults each time); the int32 array
    returned is then one of them, valid until the next call with the same scratch."""
    if not EXP_MIN <= exponent <= EXP_MAX:
        raise ValueError(f"exponent must fit a signed byte ({EXP_MIN}..{EXP_MAX}), got {exponent}")
    x = np.asarray(x, dtype=np.float64)
    # min and max propagate NaN and inf: two passes without temporaries, where
    # isfinite/abs would allocate one per element (a worker quantizes every iteration).
    if x.size and not (np.isfinite(x.min()) and np.isfinite(x.max())):
        raise ValueError("cannot quantize NaN or inf; clip or zero them first")
    limit = INT32_MAX // n_workers
    # x * 2**e is x scaled exactly as ldexp does (a power of two in -128..127 is exact),
    # at a fraction of its cost; then rounded and clipped in place
    scaled = np.multiply(x, 2.0**exponent, out=None if scratch is None else scratch.float64_like(x))
    np.rint(scaled, out=scaled)
    saturated = bool(scaled.size and (scaled.min() < -limit or scaled.max() > limit))
    np.clip(scaled, -limit, limit, out=scaled)
    if scratch is None:
        return scaled.astype(np.int32), saturated
    out = scratch.int32_like(scaled)
    np.copyto(out, scaled, casting="unsafe")
    return out, saturated


class Scratch:
    """quantize's buffers, kept between calls and remade when the size changes:
    `scratch = Scratch(); quantize(x, e, n, scratch)`."""

    def __init__(self):
        self._bufs: dict = {}

    def _like(self, x: np.ndarray, dtype) -> np.ndarray:
        buf = self._bufs.get(np.dtype(dtype))
        if buf is None or buf.shape != np.shape(x):
            buf = self._bufs[np.dtype(dtype)] = np.empty(np.shape(x), dtype=dtype)
        return buf

    def float64_like(self, x: np.ndarray) -> np.ndarray:
        return self._like(x, np.float64)

    def int32_like(self, x: np.ndarray) -> np.ndarray:
        return self._like(x, np.int32)


def dequantize(q: np.ndarray, exponent: int, out: np.ndarray | None = None) -> np.ndarray:
    """int32 (or int64) sums -> float64 values: q * 2**-e, exact in float64 (into `out`,
    a float64 array of q's shape, when given)."""
    return np.multiply(q, 2.0**-exponent, dtype=np.float64, out=out)     # exact: a power of two


def sum_error_bound(exponent: int, n_workers: int) -> float:
    """Max |dequantized aggregate - exact sum of the float inputs| per element, unclipped inputs."""
    return n_workers * 2.0 ** (-exponent - 1)


def block_exponents(x: np.ndarray, block: int, n_workers: int) -> np.ndarray:
    """One exponent per block of `block` values from this array's own block maxima.

    Workers must agree on the exponents, so in a job this runs on agreed maxima
    (for example the elementwise max over workers of the previous iteration)."""
    x = np.asarray(x, dtype=np.float64)
    nblocks = -(-len(x) // block)
    padded = np.zeros(nblocks * block)
    padded[:len(x)] = np.abs(x)
    maxima = padded.reshape(nblocks, block).max(axis=1)
    return np.array([choose_exponent(float(m), n_workers) for m in maxima], dtype=np.int64)
