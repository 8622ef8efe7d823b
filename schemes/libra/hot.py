"""Hot-parameter identification of scheme libra (pure): which embedding rows go through the
switch.

Every worker runs the same function on the same seeded data, so all of them arrive at the
same hot set without exchanging a byte (the data set, its sample and the minibatches are
pure functions of the scenario's seed: workers/ctr_data.py, workers/workload.py).

Frequencies are counted either on a seeded sample of the training set (`sample`, the
default: a fraction of the samples, drawn without replacement) or on the minibatches every
worker trains on in the first iterations (`warmup`: what Libra's "update frequency" means
literally, at the cost of knowing the minibatches in advance, which the seeded workload
allows). The hot set is the H most frequent ids; ties are broken by the smaller id so every
worker orders them alike. An id never seen in the count is never hot: it would occupy the
switch and cost its bandwidth every iteration for a row nobody updates.

H is sized to the switch memory the job holds (`hot_rows_for_slots`): slots x k values per
packet, less the dense part (which always goes through the switch), in rows of the
embedding width.
"""
from __future__ import annotations

import numpy as np

_SAMPLE = 40   # seed stream of the sample (workers/workload.py lists the others; 11-19 taken)


def sample_indices(n_train: int, fraction: float, seed: int) -> np.ndarray:
    """Sorted indices of a seeded sample of ceil(fraction x n_train) training samples (at
    least one), drawn without replacement."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"scheme_options.sample_fraction: must be in (0, 1] (got {fraction})")
    if n_train < 1:
        raise ValueError("the training set is empty: raise workload.train")
    n = min(n_train, max(1, int(np.ceil(fraction * n_train))))
    rng = np.random.default_rng([seed, _SAMPLE])
    return np.sort(rng.choice(n_train, size=n, replace=False))


def warmup_ids(x_train: np.ndarray, seed: int, n_workers: int, iterations: int,
               batch_size: int) -> np.ndarray:
    """(samples, F) ids of every worker's minibatches in iterations 0 .. iterations-1, as the
    worker loop draws them (workers.workload.minibatch_indices on shard i = samples i, i+n, ...)."""
    from workers.workload import minibatch_indices
    if iterations < 1:
        raise ValueError(f"scheme_options.warmup_iterations: must be >= 1 (got {iterations})")
    parts = []
    for w in range(n_workers):
        shard = x_train[w::n_workers]
        for it in range(iterations):
            parts.append(shard[minibatch_indices(seed, w, it, len(shard), batch_size)])
    return np.concatenate(parts)


def id_counts(ids: np.ndarray, vocabulary: int) -> np.ndarray:
    """How often each id 0 .. vocabulary-1 occurs in `ids` (any shape)."""
    ids = np.asarray(ids).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= vocabulary):
        raise ValueError(f"ids outside 0..{vocabulary - 1}: the data and the model disagree on "
                         f"workload.vocabulary")
    return np.bincount(ids, minlength=vocabulary)


def top_ids(counts: np.ndarray, h: int) -> np.ndarray:
    """The (at most) h most frequent ids with a count > 0, most frequent first, ties by the
    smaller id."""
    if h < 0:
        raise ValueError(f"scheme_options.hot_rows: must be >= 0 (got {h})")
    seen = np.flatnonzero(counts > 0)
    # lexsort: last key primary; stable on ids, so equal counts keep id order
    order = seen[np.lexsort((seen, -counts[seen]))]
    return order[:h].astype(np.int64)


def hot_rows_for_slots(slots: int, k: int, dense_values: int, width: int, rows: int) -> int:
    """Rows of `width` values that fit in `slots` packets of k values beside the dense part,
    at most the table's `rows` (0 when the dense part alone fills the slots)."""
    if width < 1:
        raise ValueError(f"embedding width must be >= 1 (got {width})")
    return int(min(rows, max(0, (slots * k - dense_values) // width)))


def identify(x_train: np.ndarray, vocabulary: int, h: int, source: str, seed: int, *,
             sample_fraction: float = 0.05, n_workers: int = 1, warmup_iterations: int = 5,
             batch_size: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hot ids, most frequent first; the id counts; the counted samples' ids)."""
    if source == "sample":
        ids = x_train[sample_indices(len(x_train), sample_fraction, seed)]
    elif source == "warmup":
        ids = warmup_ids(x_train, seed, n_workers, warmup_iterations, batch_size)
    else:
        raise ValueError(f"scheme_options.hot_source: {source!r} is not sample or warmup")
    counts = id_counts(ids, vocabulary)
    return top_ids(counts, h), counts, ids
