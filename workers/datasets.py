"""Classification data sets of the model workload, seeded, split into train and test.

- `synthetic`: one Gaussian blob per class (C = 8 classes in D = 16 dimensions, 4096
  training and 1024 test samples), class centres drawn from the seed close enough that the
  classes overlap: accuracy rises from chance (12.5 %) to about 70-79 %.
- `digits`: scikit-learn's 8x8 handwritten digits (a copy of the UCI test set: 1797 images,
  10 classes, pixels 0..16), shipped inside the scikit-learn package, so no download. Split
  per class (stratified) 80/20 by the seed, pixels scaled to [0, 1], the training set
  shuffled by the seed so that every round-robin shard holds every class.

Worker i of n trains on samples i, i+n, ... of the training set (`Dataset.shard`).
`data_shape` gives a set's sizes without loading it (models of the iteration time need
only the parameter count).
"""
from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass

import numpy as np

_DATA, _SPLIT = 11, 15           # seed streams (workers/workload.py holds the others)
NAMES = ("synthetic", "digits")
DIGITS_TEST_FRACTION = 0.2
DIGITS_MAX_PIXEL = 16.0
INSTALL_HINT = "pip install scikit-learn (into the testbed's venv: .venv/bin/python -m pip install scikit-learn)"


@dataclass(frozen=True)
class DataSpec:
    """The Gaussian mixture's sizes."""
    classes: int = 8
    dims: int = 16
    train: int = 4096
    test: int = 1024
    spread: float = 0.6       # class centre scale relative to unit noise; lower = harder


@dataclass(frozen=True)
class DataShape:
    dims: int                              # features per sample
    classes: int
    image: tuple[int, int] | None = None   # (height, width) when a sample is an image


@dataclass
class Dataset:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    shape: DataShape

    @property
    def classes(self) -> int:
        return self.shape.classes

    def shard(self, worker: int, n_workers: int) -> tuple[np.ndarray, np.ndarray]:
        return self.x_train[worker::n_workers], self.y_train[worker::n_workers]


def gaussian_mixture(seed: int, spec: DataSpec = DataSpec()) -> Dataset:
    """A seeded classification set: one Gaussian blob per class."""
    rng = np.random.default_rng([seed, _DATA])
    centres = rng.normal(0.0, spec.spread, (spec.classes, spec.dims))

    def draw(n):
        y = rng.integers(0, spec.classes, n)
        return centres[y] + rng.normal(0.0, 1.0, (n, spec.dims)), y
    xtr, ytr = draw(spec.train)
    xte, yte = draw(spec.test)
    return Dataset(xtr, ytr, xte, yte, DataShape(spec.dims, spec.classes))


def missing_dependency(name: str) -> str | None:
    """What keeps data set `name` from loading here, or None (cheap: nothing is imported)."""
    if name == "digits" and importlib.util.find_spec("sklearn") is None:
        return f"digits needs scikit-learn, which is not installed: {INSTALL_HINT}"
    return None


@functools.lru_cache(maxsize=1)
def _digits_raw() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise RuntimeError(f"workload.dataset: digits needs scikit-learn ({e}): {INSTALL_HINT}") from None
    d = load_digits()
    return np.asarray(d.data, dtype=np.float64), np.asarray(d.target, dtype=np.int64)


def stratified_split(y: np.ndarray, test_fraction: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, test indices): each class contributes round(test_fraction x its
    count) samples to the test set; the training indices come back shuffled."""
    test = []
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        test.append(members[:int(round(test_fraction * len(members)))])
    test_idx = np.sort(np.concatenate(test))
    train_mask = np.ones(len(y), dtype=bool)
    train_mask[test_idx] = False
    return rng.permutation(np.flatnonzero(train_mask)), test_idx


def digits(seed: int, test_fraction: float = DIGITS_TEST_FRACTION) -> Dataset:
    """scikit-learn's digits, split and shuffled by the seed, pixels in [0, 1]."""
    x, y = _digits_raw()
    train, test = stratified_split(y, test_fraction, np.random.default_rng([seed, _SPLIT]))
    x = x / DIGITS_MAX_PIXEL
    return Dataset(x[train], y[train], x[test], y[test], data_shape("digits"))


def data_shape(name: str, spec: DataSpec = DataSpec()) -> DataShape:
    if name == "synthetic":
        return DataShape(spec.dims, spec.classes)
    if name == "digits":
        return DataShape(64, 10, (8, 8))
    raise ValueError(f"workload.dataset: unknown data set {name!r} (known: {', '.join(NAMES)})")


def load_dataset(name: str, seed: int, spec: DataSpec = DataSpec()) -> Dataset:
    if name == "synthetic":
        return gaussian_mixture(seed, spec)
    if name == "digits":
        return digits(seed)
    raise ValueError(f"workload.dataset: unknown data set {name!r} (known: {', '.join(NAMES)})")
