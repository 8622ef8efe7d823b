"""What workers compute: synthetic gradients and a small real model trained with numpy.

Both are pure functions of (seed, worker index, iteration, model parameters), so every
worker can regenerate every other worker's gradient: that gives each worker the float
reference of the aggregated sum without any extra traffic (tests check the switches'
sums against it).

Synthetic: N float32 values per iteration, N(0, scale^2), seeded per worker and
iteration. No model, no accuracy: it sets the communication volume.

Model: softmax regression (`logreg`) or a one-hidden-layer tanh MLP (`mlp`) on a seeded
Gaussian-mixture classification set (C = 8 classes in D = 16 dimensions; class centres drawn
from the seed close enough that the classes overlap, so accuracy rises from chance
(12.5 %) to about 70-75 % over tens of iterations). The training set is split across workers round-robin
(shard i = samples i, i+n, ...); each iteration a worker draws a minibatch from its
shard, computes the mean cross-entropy gradient and clips it elementwise to +-clip
(so the quantization bound holds and every worker agrees on the exponent). The
aggregated sum, divided by the number of workers, updates the parameters identically
on every worker (BSP): p <- p - lr * sum / n.

The synthetic workload also trains the model: its first P values are the model's
gradient and the rest synthetic filler, so a run sized for the network (N values) still
reports loss and accuracy. `Workload.gradient` returns the full N-value tensor.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_CLIP = 4.0
_DATA, _INIT, _BATCH, _SYNTH = 11, 12, 13, 14


@dataclass(frozen=True)
class DataSpec:
    classes: int = 8
    dims: int = 16
    train: int = 4096
    test: int = 1024
    spread: float = 0.6       # class centre scale relative to unit noise; lower = harder


@dataclass
class Dataset:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int

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
    return Dataset(xtr, ytr, xte, yte, spec.classes)


# ---------------------------------------------------------------- models
def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class Model:
    """Parameters as one flat float64 vector (what is aggregated), views per layer."""

    def __init__(self, kind: str, dims: int, classes: int, hidden: int = 32, seed: int = 0):
        if kind not in ("logreg", "mlp"):
            raise ValueError(f"workload.name: unknown model {kind!r} (use logreg or mlp)")
        self.kind, self.dims, self.classes, self.hidden = kind, dims, classes, hidden
        shapes = [(dims, classes), (classes,)] if kind == "logreg" else \
            [(dims, hidden), (hidden,), (hidden, classes), (classes,)]
        self.shapes = shapes
        self.size = int(sum(np.prod(s) for s in shapes))
        rng = np.random.default_rng([seed, _INIT])
        self.params = np.zeros(self.size)
        if kind == "mlp":   # symmetric weights would never learn: small random start
            for (off, shape), v in zip(self._slices(), self.unpack(self.params)):
                if len(shape) == 2:
                    v[...] = rng.normal(0, 1 / np.sqrt(shape[0]), shape)

    def _slices(self):
        off = 0
        for s in self.shapes:
            yield off, s
            off += int(np.prod(s))

    def unpack(self, flat: np.ndarray) -> list[np.ndarray]:
        return [flat[off:off + int(np.prod(s))].reshape(s) for off, s in self._slices()]

    def forward(self, x: np.ndarray, params: np.ndarray | None = None):
        p = self.unpack(self.params if params is None else params)
        if self.kind == "logreg":
            return _softmax(x @ p[0] + p[1]), None
        h = np.tanh(x @ p[0] + p[1])
        return _softmax(h @ p[2] + p[3]), h

    def loss_and_grad(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean cross-entropy over the batch and its gradient (flat, float64)."""
        probs, h = self.forward(x)
        n = len(y)
        loss = float(-np.log(np.clip(probs[np.arange(n), y], 1e-12, None)).mean())
        d = probs.copy()
        d[np.arange(n), y] -= 1.0
        d /= n
        p = self.unpack(self.params)
        if self.kind == "logreg":
            grads = [x.T @ d, d.sum(axis=0)]
        else:
            dh = (d @ p[2].T) * (1.0 - h * h)
            grads = [x.T @ dh, dh.sum(axis=0), h.T @ d, d.sum(axis=0)]
        return loss, np.concatenate([g.reshape(-1) for g in grads])

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """(mean cross-entropy loss, accuracy) on a labelled set."""
        probs, _ = self.forward(x)
        loss = float(-np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, None)).mean())
        return loss, float((probs.argmax(axis=1) == y).mean())


# ---------------------------------------------------------------- the workload a job runs
@dataclass(frozen=True)
class WorkloadSpec:
    kind: str = "synthetic"          # synthetic | model
    parameters: int = 65536          # synthetic: N values per iteration
    model: str = "logreg"            # model kind (also the one synthetic runs carry)
    batch_size: int = 32
    lr: float = 0.1
    clip: float = DEFAULT_CLIP       # elementwise gradient clipping bound (agreed by all)
    synthetic_scale: float = 0.01    # std of the synthetic filler values
    data: DataSpec = DataSpec()

    @classmethod
    def from_scenario(cls, workload: dict) -> "WorkloadSpec":
        """From the scenario's `workload` section (model_dump())."""
        clip = float(workload.get("clip", DEFAULT_CLIP))
        if workload.get("kind", "synthetic") == "synthetic":
            return cls("synthetic", int(workload.get("parameters", 65536)), clip=clip)
        ds = workload.get("dataset", "synthetic")
        if ds != "synthetic":
            raise ValueError(f"workload.dataset: {ds!r} is not available (use 'synthetic': a seeded "
                             "Gaussian-mixture classification set)")
        return cls("model", 0, workload["name"], int(workload.get("batch_size", 32)),
                   float(workload.get("lr", 0.1)), clip=clip)


def parameter_count(workload: dict) -> int:
    """Values a worker aggregates per iteration, from the scenario's `workload` section,
    without building the data set (models of the iteration time need only the size)."""
    spec = WorkloadSpec.from_scenario(workload)
    m = Model(spec.model, spec.data.dims, spec.data.classes)
    return max(spec.parameters, m.size) if spec.kind == "synthetic" else m.size


class Workload:
    """One worker's view of the job: same object (same seed) on every worker."""

    def __init__(self, spec: WorkloadSpec, seed: int, n_workers: int):
        if n_workers < 1:
            raise ValueError(f"n_workers must be >= 1 (got {n_workers})")
        if spec.clip <= 0:
            raise ValueError(f"gradient clip must be > 0 (got {spec.clip})")
        self.spec, self.seed, self.n_workers = spec, seed, n_workers
        self.data = gaussian_mixture(seed, spec.data)
        self.model = Model(spec.model, spec.data.dims, spec.data.classes, seed=seed)
        self.size = max(spec.parameters, self.model.size) if spec.kind == "synthetic" else self.model.size

    def gradient(self, worker: int, iteration: int) -> tuple[np.ndarray, float]:
        """(clipped float64 gradient of `size` values, minibatch loss) of `worker` now."""
        x, y = self.data.shard(worker, self.n_workers)
        rng = np.random.default_rng([self.seed, _BATCH, worker, iteration])
        idx = rng.choice(len(y), size=min(self.spec.batch_size, len(y)), replace=False)
        loss, g = self.model.loss_and_grad(x[idx], y[idx])
        if self.size > len(g):
            filler = np.random.default_rng([self.seed, _SYNTH, worker, iteration]) \
                .standard_normal(self.size - len(g)).astype(np.float32) * self.spec.synthetic_scale
            g = np.concatenate([g, filler])
        return np.clip(g, -self.spec.clip, self.spec.clip), loss

    def all_gradients(self, iteration: int, params: np.ndarray | None = None) -> list[np.ndarray]:
        """Every worker's gradient this iteration, at `params` (default: the current model;
        the verify check passes the model before the update)."""
        saved = self.model.params
        if params is not None:
            self.model.params = params
        try:
            return [self.gradient(w, iteration)[0] for w in range(self.n_workers)]
        finally:
            self.model.params = saved

    def reference_sum(self, iteration: int) -> np.ndarray:
        """The exact float sum of every worker's gradient this iteration (same model state)."""
        return np.sum(self.all_gradients(iteration), axis=0)

    def apply(self, aggregated_sum: np.ndarray) -> None:
        """BSP update with the aggregated (summed) gradient: mean over workers, one SGD step."""
        g = np.asarray(aggregated_sum, dtype=np.float64)[:self.model.size]
        self.model.params = self.model.params - self.spec.lr * g / self.n_workers

    def evaluate(self) -> tuple[float, float]:
        """(test loss, test accuracy) of the current model."""
        return self.model.evaluate(self.data.x_test, self.data.y_test)
