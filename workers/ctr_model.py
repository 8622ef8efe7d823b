"""The sparse workload's model: embeddings of categorical ids + a small MLP, in numpy.

    ids (n, F) -> E[ids] (n, F, d) -> concatenated (n, F d) -> tanh(. W1 + b1) (n, H)
               -> . w2 + b2 -> sigmoid: P(click)

One embedding table E (V x d) is shared by the F fields (workers/ctr_data.py: the fields
share one id space); the dense part (W1, b1, w2, b2) is Libra's "DenseNet", the table its
"SparseNet". Loss: mean binary cross-entropy over the batch.

The flat parameter vector (what workers aggregate) is the table first, row by row, then
the dense part, so the row-sparse block is values 0 .. V d - 1 (`ctr_row_block`). In a
gradient only the rows of ids in the minibatch are non-zero; every other row is exactly
0.0 (the gradient is built by scattering into zeros). tanh, not ReLU: a touched row's
gradient is never exactly zero because a unit went dead.
"""
from __future__ import annotations

import numpy as np

from workers.auc import roc_auc
from workers.ctr_data import CtrSpec
from workers.models import Model

_EMBED = 19              # seed stream of the initial embeddings
EMBED_INIT_STD = 0.01    # small random rows: an id not trained yet adds almost nothing


def ctr_tensors(spec: CtrSpec) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of the model's tensors, in the flat vector's order."""
    width = spec.fields * spec.embedding_dim
    return [("embedding.weight", (spec.vocabulary, spec.embedding_dim)),
            ("hidden.weight", (width, spec.hidden)), ("hidden.bias", (spec.hidden,)),
            ("out.weight", (spec.hidden, 1)), ("out.bias", (1,))]


def ctr_layers(spec: CtrSpec) -> list[tuple[str, int]]:
    """(name, values) of the gradient's parts without building the model."""
    return [(name, int(np.prod(shape))) for name, shape in ctr_tensors(spec)]


def ctr_row_block(spec: CtrSpec) -> tuple[int, int, int]:
    """(offset, rows, width) of the embedding table in the flat vector."""
    return 0, spec.vocabulary, spec.embedding_dim


def _softplus(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def binary_cross_entropy(logit: np.ndarray, y: np.ndarray) -> float:
    """Mean of -y log sigmoid(z) - (1 - y) log(1 - sigmoid(z)), stable for large |z|."""
    return float(np.mean(_softplus(logit) - y * logit))


class CtrModel(Model):
    name = "ctr"

    def __init__(self, spec: CtrSpec, seed: int = 0):
        self.spec = spec
        super().__init__(ctr_tensors(spec), seed)   # dense matrices: N(0, 1/fan_in)
        table = self.unpack(self.params)[0]
        table[...] = np.random.default_rng([seed, _EMBED]).normal(0.0, EMBED_INIT_STD, table.shape)

    def logits(self, ids: np.ndarray, params: np.ndarray | None = None):
        """(logit per sample, what the backward pass needs)."""
        table, w1, b1, w2, b2 = self.unpack(self.params if params is None else params)
        x = table[ids].reshape(len(ids), -1)
        h = np.tanh(x @ w1 + b1)
        return (h @ w2)[:, 0] + b2[0], (x, h)

    def loss_and_grad(self, ids: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean binary cross-entropy and its gradient (flat float64; untouched rows 0.0)."""
        table, w1, _, w2, _ = self.unpack(self.params)
        z, (x, h) = self.logits(ids)
        n = len(y)
        dz = (1.0 / (1.0 + np.exp(-z)) - y) / n          # d loss / d logit
        dh = np.outer(dz, w2[:, 0]) * (1.0 - h * h)
        dx = (dh @ w1.T).reshape(n, self.spec.fields, self.spec.embedding_dim)
        g_table = np.zeros_like(table)
        np.add.at(g_table, ids.reshape(-1), dx.reshape(-1, self.spec.embedding_dim))
        grads = [g_table, x.T @ dh, dh.sum(axis=0), h.T @ dz[:, None], np.array([dz.sum()])]
        return binary_cross_entropy(z, y), np.concatenate([g.reshape(-1) for g in grads])

    def test_metrics(self, ids: np.ndarray, y: np.ndarray) -> dict:
        """{loss, accuracy (threshold 0.5), auc} on a labelled set."""
        z, _ = self.logits(ids)
        return {"loss": binary_cross_entropy(z, y), "accuracy": float(((z > 0) == (y == 1)).mean()),
                "auc": roc_auc(z, y)}

    def evaluate(self, ids: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        m = self.test_metrics(ids, y)
        return m["loss"], m["accuracy"]
