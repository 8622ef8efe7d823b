"""The sparse workload's data: a seeded click-through-rate (CTR) set with Zipf feature ids.

Each sample has F categorical fields. Every field's id is drawn from a bounded Zipf law
over a vocabulary of V ids: P(rank r) = r^-s / H(V, s), r = 1..V (H the generalized
harmonic number), then mapped to an id by a seeded permutation per field, so the hot ids
are neither 0..K nor the same rows for every field. All fields share one id space (one
embedding table, as a hashed feature space shares one key space in a parameter server).

Labels come from a seeded "teacher": a hidden weight per id, N(0, 1); a sample's logit is
the sum of its F ids' weights scaled by 1/sqrt(F) (unit variance whatever F), and its label
is drawn as Bernoulli(sigmoid(TEACHER_GAIN x logit)). Frequent ids are seen often enough
to learn their weights, so a student's test AUC rises well above 0.5; rare ids stay noise.

Worker i of n trains on samples i, i+n, ... of the training set (`CtrDataset.shard`), as
the other data sets do (workers/datasets.py).

Pure helpers for the law itself (`zipf_probabilities`, `zipf_ranks`) and for the volume
a sparse push carries (`expected_distinct`, `expected_touched_rows`: schemes/ps/model.py)
are here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_CTR_DATA, _CTR_PERM, _CTR_TEACHER = 16, 17, 18   # seed streams (workload.py holds the list)
TEACHER_GAIN = 2.0     # steepness of the teacher's sigmoid: the teacher's own test AUC (the
                       # best any model reaches) is 0.85-0.88 (seeds 0-2)


@dataclass(frozen=True)
class CtrSpec:
    """Sizes of the CTR set and of the model that trains on it (workers/ctr_model.py)."""
    fields: int = 8                 # F categorical fields per sample
    vocabulary: int = 20000         # V ids, shared by the fields
    zipf_exponent: float = 1.1      # s of the bounded Zipf law
    embedding_dim: int = 8          # d: one embedding row of d values per id
    hidden: int = 16                # H tanh units of the dense part
    train: int = 16384              # training samples (split across workers)
    test: int = 4096                # test samples (AUC, accuracy, loss)


@dataclass
class CtrDataset:
    x_train: np.ndarray       # (samples, F) int64 ids
    y_train: np.ndarray       # (samples,) int64 labels 0/1
    x_test: np.ndarray
    y_test: np.ndarray

    def shard(self, worker: int, n_workers: int) -> tuple[np.ndarray, np.ndarray]:
        return self.x_train[worker::n_workers], self.y_train[worker::n_workers]


# ---------------------------------------------------------------- the law
def zipf_probabilities(vocabulary: int, exponent: float) -> np.ndarray:
    """P(rank r) for r = 1..V (index r - 1), proportional to r^-s; sums to 1."""
    if vocabulary < 1:
        raise ValueError(f"workload.vocabulary: must be >= 1 (got {vocabulary})")
    w = np.arange(1, vocabulary + 1, dtype=np.float64) ** -float(exponent)
    return w / w.sum()


def zipf_ranks(rng: np.random.Generator, vocabulary: int, exponent: float, size) -> np.ndarray:
    """Ranks 0..V-1 (0 the most frequent) drawn from the bounded Zipf law by inverting its
    CDF (exact for any s, unlike numpy's unbounded zipf, which needs s > 1 and a cut)."""
    cdf = np.cumsum(zipf_probabilities(vocabulary, exponent))
    r = np.searchsorted(cdf, rng.random(size), side="right")
    return np.minimum(r, vocabulary - 1)       # u above cdf[-1] (rounding of the sum)


def expected_distinct(p: np.ndarray, draws: float) -> float:
    """Expected number of distinct outcomes in `draws` independent draws from p:
    sum over outcomes of 1 - (1 - p)^draws."""
    return float(np.sum(-np.expm1(draws * np.log1p(-np.minimum(p, 1.0 - 1e-16)))))


def expected_touched_rows(spec: CtrSpec, samples: float) -> float:
    """Expected embedding rows touched by `samples` samples (a worker's minibatch, or every
    worker's together): F times the distinct ids of one field. Fields have independent
    permutations, so their hot ids rarely coincide; counting them apart overestimates by
    the few rows two fields share (measured within 3 % at the defaults: tests)."""
    return spec.fields * expected_distinct(zipf_probabilities(spec.vocabulary, spec.zipf_exponent),
                                           samples)


def expected_touched_ids(spec: CtrSpec, seed: int, samples: float, excluded=()) -> float:
    """Expected distinct ids touched by `samples` samples, the F fields counted together
    (an id is untouched when no field draws it: prod over fields of (1 - p_f(id))^samples,
    through the seed's permutations), ids in `excluded` left out: what a sparse push carries
    besides a hot set (schemes/libra/model.py). Without exclusions it is
    expected_touched_rows less the rows two fields share."""
    p = zipf_probabilities(spec.vocabulary, spec.zipf_exponent)
    log_untouched_by_rank = samples * np.log1p(-np.minimum(p, 1.0 - 1e-16))
    log_untouched = np.zeros(spec.vocabulary)
    for perm in field_permutations(seed, spec):
        log_untouched[perm] += log_untouched_by_rank
    touched = -np.expm1(log_untouched)
    touched[np.asarray(excluded, dtype=np.int64)] = 0.0
    return float(touched.sum())


# ---------------------------------------------------------------- the data set
def field_permutations(seed: int, spec: CtrSpec) -> np.ndarray:
    """(F, V): row f maps field f's Zipf rank to its id."""
    rng = np.random.default_rng([seed, _CTR_PERM])
    return np.stack([rng.permutation(spec.vocabulary) for _ in range(spec.fields)])


def teacher_weights(seed: int, spec: CtrSpec) -> np.ndarray:
    """The hidden weight of every id, N(0, 1)."""
    return np.random.default_rng([seed, _CTR_TEACHER]).standard_normal(spec.vocabulary)


def ctr_dataset(seed: int, spec: CtrSpec = CtrSpec()) -> CtrDataset:
    """The seeded CTR set (module doc): ids by field, labels from the teacher."""
    rng = np.random.default_rng([seed, _CTR_DATA])
    perms, w = field_permutations(seed, spec), teacher_weights(seed, spec)

    def draw(n):
        ranks = zipf_ranks(rng, spec.vocabulary, spec.zipf_exponent, (n, spec.fields))
        ids = perms[np.arange(spec.fields), ranks]           # field f's rank -> its id
        logit = TEACHER_GAIN * w[ids].sum(axis=1) / np.sqrt(spec.fields)
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
        return ids.astype(np.int64), y
    xtr, ytr = draw(spec.train)
    xte, yte = draw(spec.test)
    return CtrDataset(xtr, ytr, xte, yte)
