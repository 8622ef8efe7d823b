"""Workloads: seeded gradients, gradients checked by finite differences, BSP training."""
import numpy as np
import pytest

from tests.gradcheck import finite_difference_gradient
from workers.datasets import DataShape, DataSpec, gaussian_mixture
from workers.models import MLP, LogReg, build_model
from workers.workload import Workload, WorkloadSpec


def test_dataset_is_seeded_and_sharded_without_overlap():
    a, b = gaussian_mixture(3), gaussian_mixture(3)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.x_train, gaussian_mixture(4).x_train)
    shards = [a.shard(w, 3)[1] for w in range(3)]
    assert sum(len(s) for s in shards) == len(a.y_train)
    assert set(np.unique(a.y_train)) == set(range(DataSpec().classes))


@pytest.mark.parametrize("make", [lambda: LogReg(5, 3, seed=1), lambda: MLP(5, 3, hidden=4, seed=1)],
                         ids=["logreg", "mlp"])
def test_gradient_matches_finite_differences(make):
    rng = np.random.default_rng(0)
    m = make()
    m.params = m.params + rng.normal(0, 0.3, m.size)
    x, y = rng.normal(size=(7, 5)), rng.integers(0, 3, 7)
    _, g = m.loss_and_grad(x, y)
    np.testing.assert_allclose(g, finite_difference_gradient(m, x, y), atol=1e-6)


def test_synthetic_gradients_are_seeded_per_worker_and_iteration():
    w = Workload(WorkloadSpec("synthetic", 5000), seed=1, n_workers=4)
    g, _ = w.gradient(2, 7)
    assert g.shape == (5000,)
    assert np.array_equal(g, Workload(WorkloadSpec("synthetic", 5000), 1, 4).gradient(2, 7)[0])
    assert not np.array_equal(g, w.gradient(3, 7)[0])
    assert not np.array_equal(g, w.gradient(2, 8)[0])
    assert np.abs(g).max() <= w.spec.clip
    # the synthetic filler after the model's parameters has the configured scale
    assert abs(g[w.model.size:].std() - 0.01) < 0.001


def test_gradient_is_clipped_to_the_agreed_bound():
    w = Workload(WorkloadSpec("model", 0, "logreg", clip=0.01), seed=1, n_workers=2)
    g, _ = w.gradient(0, 0)
    assert np.abs(g).max() == pytest.approx(0.01)


def test_reference_sum_is_the_sum_of_every_workers_gradient():
    w = Workload(WorkloadSpec("model", 0, "mlp"), seed=2, n_workers=3)
    ref = w.reference_sum(4)
    np.testing.assert_array_equal(ref, w.gradient(0, 4)[0] + w.gradient(1, 4)[0] + w.gradient(2, 4)[0])


@pytest.mark.parametrize("kind", ["logreg", "mlp"])
def test_bsp_training_raises_accuracy_identically_on_every_worker(kind):
    n = 4
    workers = [Workload(WorkloadSpec("model", 0, kind, lr=0.1), seed=5, n_workers=n) for _ in range(n)]
    acc0 = workers[0].evaluate()[1]
    for it in range(30):
        total = workers[0].reference_sum(it)
        for w in workers:
            w.apply(total)
    accs = [w.evaluate() for w in workers]
    assert all(a == accs[0] for a in accs)              # same update everywhere
    assert accs[0][1] > acc0 + 0.3 and accs[0][1] > 0.5  # chance is 1/8


def test_unknown_model_and_dataset_say_what_to_use():
    with pytest.raises(ValueError, match="workload.name: unknown model 'resnet' "
                                         r"\(use logreg, mlp or cnn\)"):
        build_model("resnet", DataShape(2, 2))
    with pytest.raises(ValueError, match=r"workload.name: cnn needs an image data set \(use dataset: digits\)"):
        build_model("cnn", DataShape(16, 8))
    with pytest.raises(ValueError, match=r"workload.dataset: unknown data set 'imagenet' \(known: synthetic, digits\)"):
        WorkloadSpec.from_scenario({"kind": "model", "name": "logreg", "dataset": "imagenet"})


def test_spec_from_scenario_sections():
    s = WorkloadSpec.from_scenario({"kind": "synthetic", "parameters": 1000})
    assert (s.kind, s.parameters) == ("synthetic", 1000)
    m = WorkloadSpec.from_scenario({"kind": "model", "name": "mlp", "dataset": "synthetic",
                                    "batch_size": 16, "lr": 0.05})
    assert (m.kind, m.model, m.batch_size, m.lr) == ("model", "mlp", 16, 0.05)


def test_a_reused_gradient_buffer_holds_the_same_values_and_is_overwritten():
    w = Workload(WorkloadSpec("synthetic", 5000), seed=1, n_workers=4)
    fresh = [w.gradient(1, it)[0] for it in range(2)]
    a, _ = w.gradient(1, 0, reuse=True)
    assert np.array_equal(a, fresh[0])
    b, _ = w.gradient(1, 1, reuse=True)
    assert b is a and np.array_equal(b, fresh[1])      # the one buffer, now iteration 1
    assert np.array_equal(w.gradient(1, 0)[0], fresh[0]) and b is not fresh[0]
