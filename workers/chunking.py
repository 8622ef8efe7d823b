"""Tensors <-> chunks of exactly k int32 values (one aggregation packet each).

A chunk is named by its offset, the index of its first value in the flattened
tensor; the last chunk is padded with zeros, which add nothing to the sum.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def num_chunks(length: int, k: int) -> int:
    if k <= 0:
        raise ValueError(f"k must be positive (got {k})")
    return -(-length // k)


def split(values: np.ndarray, k: int) -> list[tuple[int, np.ndarray]]:
    """Flattened int32 tensor -> [(offset, k values)], the last one zero padded."""
    flat = np.asarray(values).reshape(-1)
    if flat.dtype != np.int32:
        raise TypeError(f"chunks carry int32 values; quantize first (got {flat.dtype})")
    n = num_chunks(len(flat), k)
    padded = np.zeros(n * k, dtype=np.int32)
    padded[:len(flat)] = flat
    return [(i * k, padded[i * k:(i + 1) * k]) for i in range(n)]


def reassemble(chunks: Mapping[int, np.ndarray], length: int, k: int) -> np.ndarray:
    """{offset: k values} -> flat tensor of `length` values; every chunk must be present."""
    n = num_chunks(length, k)
    expected = {i * k for i in range(n)}
    missing = sorted(expected - set(chunks))
    extra = sorted(set(chunks) - expected)
    if missing or extra:
        raise ValueError(f"cannot reassemble {length} values: missing offsets {missing[:5]}"
                         f"{'...' if len(missing) > 5 else ''}, unexpected offsets {extra[:5]}")
    out = np.zeros(n * k, dtype=np.int32)
    for off, vals in chunks.items():
        vals = np.asarray(vals)
        if vals.shape != (k,):
            raise ValueError(f"chunk at offset {off} has {vals.shape} values, expected ({k},)")
        out[off:off + k] = vals
    return out[:length]
