"""What workers compute: synthetic gradients and a small real model trained with numpy.

Both are pure functions of (seed, worker index, iteration, model parameters), so every
worker can regenerate every other worker's gradient: that gives each worker the float
reference of the aggregated sum without any extra traffic (tests check the switches'
sums against it).

Synthetic: N float32 values per iteration, N(0, scale^2), seeded per worker and
iteration. No model, no accuracy: it sets the communication volume. N is given, or comes
from a preset: the parameter tensors of a published model (workers/presets.py), optionally
shrunk by `scale`, which are then the gradient's layers.

Model: a classifier (workers/models.py: logreg, mlp, cnn) on a data set
(workers/datasets.py: a seeded Gaussian mixture, or scikit-learn's 8x8 digits). The
training set is split across workers round-robin (shard i = samples i, i+n, ...); each
iteration a worker draws a minibatch from its shard, computes the mean cross-entropy
gradient and clips it elementwise to +-clip (so the quantization bound holds and every
worker agrees on the exponent). The aggregated sum, divided by the number of workers,
updates the parameters identically on every worker (BSP): p <- p - lr * sum / n.

The synthetic workload also trains the model (logreg on the Gaussian mixture): its first P
values are the model's gradient and the rest synthetic filler, so a run sized for the
network (N values) still reports loss and accuracy. `Workload.gradient` returns the full
N-value tensor; `Workload.layers` names its parts, (name, values) in order: the model's
tensors, a preset's tensors, or one tensor `gradient` for a plain synthetic size.

Sparse: a CTR model (workers/ctr_model.py: an embedding table shared by F categorical
fields, then a small MLP) on a seeded data set whose ids follow a Zipf law
(workers/ctr_data.py); trained like the model workload (shards, minibatch, clip, BSP), and
it also reports the test AUC. Only the embedding rows of ids in a worker's minibatch are
non-zero in its gradient. `row_blocks` names the row-sparse parts of the flat vector, for
communicators that send only touched rows (schemes/ps: push touched_rows).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workers import presets
from workers.ctr_data import CtrSpec, ctr_dataset, expected_touched_rows
from workers.ctr_model import CtrModel, ctr_layers, ctr_row_block
from workers.datasets import NAMES as DATASETS, DataSpec, data_shape, load_dataset, missing_dependency
from workers.models import build_model

DEFAULT_CLIP = 4.0
_BATCH, _SYNTH = 13, 14         # seed streams (workers/datasets.py, models.py, ctr_data.py and
                                # ctr_model.py hold the others)
# The largest sparse model: vocabulary x embedding_dim values in the gradient (64 MB of
# float32). Far above what this machine's emulated links carry per iteration; it keeps a
# typo (a vocabulary of 10^9) from allocating gigabytes in every worker.
MAX_SPARSE_VALUES = 1 << 24
# The sparse workload's training defaults. Measured with 4 workers (the update averages 256
# samples), seeds 0-4: test AUC 0.49-0.52 before training, 0.60-0.72 after 10 iterations,
# 0.65-0.74 after 30 (tests/test_sparse_workload.py)
SPARSE_BATCH, SPARSE_LR = 64, 2.0


# ---------------------------------------------------------------- the workload a job runs
@dataclass(frozen=True)
class WorkloadSpec:
    kind: str = "synthetic"          # synthetic | model | sparse
    parameters: int = 65536          # synthetic: N values per iteration (a preset sets it)
    model: str = "logreg"            # model kind (also the one synthetic runs carry)
    batch_size: int = 32
    lr: float = 0.1
    clip: float = DEFAULT_CLIP       # elementwise gradient clipping bound (agreed by all)
    synthetic_scale: float = 0.01    # std of the synthetic filler values
    data: DataSpec = DataSpec()      # sizes of the Gaussian mixture (dataset synthetic)
    dataset: str = "synthetic"       # what the model trains on (synthetic runs: always synthetic)
    preset: str | None = None        # synthetic: the layer structure of a published model
    scale: float = 1.0               # synthetic with a preset: every layer shrunk by this
    ctr: CtrSpec = CtrSpec()         # sparse: the data set's and the model's sizes

    @classmethod
    def from_scenario(cls, workload: dict) -> "WorkloadSpec":
        """From the scenario's `workload` section (model_dump())."""
        clip = float(workload.get("clip", DEFAULT_CLIP))
        if workload.get("kind", "synthetic") == "synthetic":
            preset, scale = workload.get("preset"), float(workload.get("scale", 1.0))
            n = synthetic_size(preset, scale, workload.get("parameters"))
            return cls("synthetic", n, clip=clip, preset=preset, scale=scale)
        if workload["kind"] == "sparse":
            ctr = CtrSpec(**{k: workload[k] for k in SPARSE_SIZES if k in workload})
            return cls("sparse", 0, "ctr", int(workload.get("batch_size", SPARSE_BATCH)),
                       float(workload.get("lr", SPARSE_LR)), clip=clip, dataset="zipf-ctr", ctr=ctr)
        ds = workload.get("dataset", "synthetic")
        if ds not in DATASETS:
            raise ValueError(f"workload.dataset: unknown data set {ds!r} (known: {', '.join(DATASETS)})")
        return cls("model", 0, workload["name"], int(workload.get("batch_size", 32)),
                   float(workload.get("lr", 0.1)), clip=clip, dataset=ds)


# the sparse section's fields that size the data set and the model (CtrSpec's)
SPARSE_SIZES = ("fields", "vocabulary", "zipf_exponent", "embedding_dim", "hidden")


def check_sparse_size(vocabulary: int, embedding_dim: int | None) -> int:
    """The sparse model's table must fit (MAX_SPARSE_VALUES); schema_models.py calls it."""
    if embedding_dim is not None and vocabulary * embedding_dim > MAX_SPARSE_VALUES:
        raise ValueError(f"{vocabulary} ids x embedding_dim {embedding_dim} = "
                         f"{vocabulary * embedding_dim:,} values exceed {MAX_SPARSE_VALUES:,}; "
                         f"lower vocabulary or embedding_dim")
    return vocabulary


def preset_problem(preset: str, scale: float) -> str | None:
    """Why a synthetic run cannot use `preset` at `scale`, or None: the gradient must hold at
    least the model every synthetic run trains (its first values)."""
    floor = build_model("logreg", data_shape("synthetic")).size
    n = presets.size(preset, scale)
    if n < floor:
        return (f"{preset} at scale {scale:g} has {n} values, fewer than the {floor} of the model "
                f"a synthetic run trains; raise scale")
    return None


# Checks of the scenario's workload section (testbed/schema_models.py calls them, field by
# field, so an error names its field; messages without the field path, pydantic adds it).
def check_scale(preset: str | None, scale: float) -> float:
    if preset is None and scale != 1.0:
        raise ValueError(f"only applies to a preset's layers: set preset (known: "
                         f"{', '.join(presets.NAMES)}) or drop scale")
    problem = preset and preset_problem(preset, scale)
    if problem:
        raise ValueError(problem)
    return scale


def synthetic_size(preset: str | None, scale: float | None, parameters: int | None) -> int | None:
    """`parameters` as the resolved scenario records it: given (default 65536), or the
    preset's size at `scale` (scale None: it was rejected, nothing to add)."""
    if preset is None:
        return 65536 if parameters is None else parameters
    if scale is None:
        return parameters
    size = presets.size(preset, scale)
    if parameters is not None and parameters != size:
        raise ValueError(f"{parameters} disagrees with preset {preset} at scale {scale:g} ({size} "
                         f"values); drop parameters, the preset sets it")
    return size


def check_dataset(model: str | None, dataset: str) -> str:
    if model == "cnn" and data_shape(dataset).image is None:
        raise ValueError(f"cnn needs an image data set: use digits (got {dataset!r})")
    problem = missing_dependency(dataset)
    if problem:
        raise ValueError(problem)
    return dataset


def _layers(spec: WorkloadSpec, model_layers: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """(name, values) of each part of the gradient, in order (module doc)."""
    if spec.kind in ("model", "sparse"):
        return list(model_layers)
    if spec.preset is None:
        return [("gradient", max(spec.parameters, sum(n for _, n in model_layers)))]
    problem = preset_problem(spec.preset, spec.scale)
    if problem:
        raise ValueError(f"workload.scale: {problem}")
    return presets.layers(spec.preset, spec.scale)


def gradient_layers(workload: dict) -> list[tuple[str, int]]:
    """The gradient's layers, (name, values), from the scenario's `workload` section without
    loading the data set (a plan needs only the sizes)."""
    spec = WorkloadSpec.from_scenario(workload)
    if spec.kind == "sparse":
        return ctr_layers(spec.ctr)
    return _layers(spec, build_model(spec.model, data_shape(spec.dataset, spec.data)).layers)


def row_blocks(workload: dict) -> list[tuple[int, int, int]]:
    """The row-sparse parts of the flat gradient, (offset, rows, width) each, from the
    scenario's `workload` section without building the data set (a plan calls it): in a
    worker's gradient, a row of such a block is either all exactly 0.0 or touched by its
    minibatch. The sparse workload: its embedding table; [] for dense workloads."""
    spec = WorkloadSpec.from_scenario(workload)
    return [ctr_row_block(spec.ctr)] if spec.kind == "sparse" else []


def parameter_count(workload: dict) -> int:
    """Values a worker aggregates per iteration, from the scenario's `workload` section,
    without building the data set (models of the iteration time need only the size)."""
    return sum(n for _, n in gradient_layers(workload))


def expected_rows_touched(workload: dict, workers: int = 1) -> float:
    """Expected rows of the row blocks (row_blocks) with a non-zero value in the sum of
    `workers` workers' gradients: what one worker pushes (workers = 1) and what a server
    returns (all of them) with ps's push touched_rows. 0 for dense workloads."""
    spec = WorkloadSpec.from_scenario(workload)
    if spec.kind != "sparse":
        return 0.0
    return expected_touched_rows(spec.ctr, workers * spec.batch_size)


def minibatch_indices(seed: int, worker: int, iteration: int, shard_size: int,
                      batch_size: int) -> np.ndarray:
    """Indices into `worker`'s shard of its minibatch at `iteration` (seeded: any process can
    tell which samples a worker trains on, e.g. schemes/libra counting ids of the warm-up)."""
    rng = np.random.default_rng([seed, _BATCH, worker, iteration])
    return rng.choice(shard_size, size=min(batch_size, shard_size), replace=False)


class Workload:
    """One worker's view of the job: same object (same seed) on every worker."""

    def __init__(self, spec: WorkloadSpec, seed: int, n_workers: int):
        if n_workers < 1:
            raise ValueError(f"n_workers must be >= 1 (got {n_workers})")
        if spec.clip <= 0:
            raise ValueError(f"gradient clip must be > 0 (got {spec.clip})")
        self.spec, self.seed, self.n_workers = spec, seed, n_workers
        if spec.kind == "sparse":
            self.data = ctr_dataset(seed, spec.ctr)
            self.model = CtrModel(spec.ctr, seed=seed)
        else:
            self.data = load_dataset(spec.dataset, seed, spec.data)
            self.model = build_model(spec.model, self.data.shape, seed=seed)
        self.layers = _layers(spec, self.model.layers)
        self.size = sum(n for _, n in self.layers)
        self._draw = self._filler = self._out = None     # gradient()'s buffers

    def gradient(self, worker: int, iteration: int, reuse: bool = False) -> tuple[np.ndarray, float]:
        """(clipped float64 gradient of `size` values, minibatch loss) of `worker` now.
        reuse: written into one array kept for such calls (the worker loop's, whose
        gradient is consumed within the iteration), overwritten by the next of them."""
        x, y = self.data.shard(worker, self.n_workers)
        idx = minibatch_indices(self.seed, worker, iteration, len(y), self.spec.batch_size)
        loss, g = self.model.loss_and_grad(x[idx], y[idx])
        size = max(self.size, len(g))
        if not reuse:
            out = np.empty(size)
        elif self._out is None or len(self._out) != size:
            out = self._out = np.empty(size)
        else:
            out = self._out
        out[:len(g)] = g
        if self.size > len(g):
            # float32 N(0, 1) values times the scale in float32, as a float32 gradient
            # would hold them; drawn into buffers kept between calls: at tens of millions
            # of values, fresh temporaries cost more (page faults) than the drawing
            m = self.size - len(g)
            draw, filler = self._scratch(m)
            np.random.default_rng([self.seed, _SYNTH, worker, iteration]).standard_normal(out=draw)
            np.copyto(filler, draw, casting="same_kind")
            np.multiply(filler, self.spec.synthetic_scale, out=filler)
            out[len(g):] = filler
        return np.clip(out, -self.spec.clip, self.spec.clip, out=out), loss

    def _scratch(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """float64 and float32 buffers of m values, the same ones on every call."""
        if self._draw is None or len(self._draw) != m:
            self._draw, self._filler = np.empty(m), np.empty(m, dtype=np.float32)
        return self._draw, self._filler

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

    def model_vector(self) -> np.ndarray:
        """The model as an asynchronous server holds it: float32, padded with zeros to the
        gradient's `size` (the synthetic filler's values are a model nobody evaluates)."""
        out = np.zeros(self.size, dtype=np.float32)
        out[:self.model.size] = self.model.params
        return out

    def load_model(self, vector: np.ndarray) -> None:
        """Take the model from an asynchronous server's vector (model_vector's layout)."""
        if len(vector) != self.size:
            raise ValueError(f"model vector has {len(vector)} values, expected {self.size}: the "
                             f"server was set up for another workload; same scenario everywhere?")
        self.model.params = np.asarray(vector[:self.model.size], dtype=np.float64)

    def evaluate(self) -> tuple[float, float]:
        """(test loss, test accuracy) of the current model."""
        return self.model.evaluate(self.data.x_test, self.data.y_test)

    def test_metrics(self) -> dict:
        """{loss, accuracy} of the current model on the test set, plus auc for the sparse
        workload: what the worker logs after every update."""
        return self.model.test_metrics(self.data.x_test, self.data.y_test)
