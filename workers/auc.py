"""Area under the ROC curve from ranks (the Mann-Whitney U statistic), no scikit-learn.

AUC = P(score of a random positive > score of a random negative), ties counting one half.
With the scores ranked 1..n (tied scores sharing their average rank), the positives' rank
sum R gives it as (R - P (P + 1) / 2) / (P N), P positives and N negatives: one sort
instead of P x N comparisons.
"""
from __future__ import annotations

import numpy as np


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of x, tied values sharing the mean of the ranks they span."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)                       # the highest rank of each distinct value
    return (last - (counts - 1) / 2.0)[inverse.reshape(-1)]


def roc_auc(scores, labels) -> float:
    """AUC of `scores` (higher: more likely positive) for 0/1 `labels` (module doc)."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(labels).reshape(-1)
    if s.shape != y.shape:
        raise ValueError(f"roc_auc: {s.size} scores for {y.size} labels")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("roc_auc: labels must be 0 or 1")
    pos = int(y.sum())
    neg = y.size - pos
    if pos == 0 or neg == 0:
        raise ValueError(f"roc_auc: needs both classes (got {pos} positive, {neg} negative); "
                         f"use a larger test set")
    r = average_ranks(s)
    return float((r[y == 1].sum() - pos * (pos + 1) / 2.0) / (pos * neg))
