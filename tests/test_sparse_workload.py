"""The sparse (CTR) workload: the Zipf sampler against its law, gradients against finite
differences and exactly zero off the minibatch's rows, AUC against a pair count, BSP
training raising the test AUC, the row-sparse block a plan sees, the schema's errors."""
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tests.gradcheck import finite_difference_gradient
from testbed.scenario import ScenarioError, parse_scenario
from workers import ctr_data as cd
from workers.auc import average_ranks, roc_auc
from workers.ctr_model import CtrModel, ctr_layers
from workers.workload import (Workload, WorkloadSpec, gradient_layers, parameter_count,
                              row_blocks)

QUICKSTART = (Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.yaml").read_text()
SPARSE = {"kind": "sparse"}


def sparse_workload(n_workers=4, seed=1, **section):
    return Workload(WorkloadSpec.from_scenario({**SPARSE, **section}), seed=seed, n_workers=n_workers)


# ---------------------------------------------------------------- the Zipf law
def law_counts(ranks, vocabulary):
    return np.bincount(ranks.reshape(-1), minlength=vocabulary)


def test_zipf_sampler_frequencies_match_the_law():
    """Chi-square goodness of fit, one bin per rank (V = 1000: every expected count >= 18).
    Tolerance: p > 0.001, i.e. a correct sampler fails for 1 seed in 1000; the seed is
    fixed, so the test is deterministic. Its power: the same draws are rejected against
    the law of an exponent 0.02 off (p < 1e-6), so a wrong CDF or an off-by-one rank fails."""
    v, s, n = 1000, 1.1, 200_000
    ranks = cd.zipf_ranks(np.random.default_rng(7), v, s, n)
    assert ranks.min() >= 0 and ranks.max() <= v - 1
    observed = law_counts(ranks, v)
    p = stats.chisquare(observed, n * cd.zipf_probabilities(v, s)).pvalue
    assert p > 1e-3, p
    for wrong in (s - 0.02, s + 0.02):
        assert stats.chisquare(observed, n * cd.zipf_probabilities(v, wrong)).pvalue < 1e-6, wrong
    law = cd.zipf_probabilities(v, s)
    off_by_one = np.append(law[1:], law[-1])               # rank r drawn with P(r + 1)
    assert stats.chisquare(observed, n * off_by_one / off_by_one.sum()).pvalue < 1e-6


def test_zipf_probabilities_are_the_bounded_law():
    p = cd.zipf_probabilities(5, 1.0)
    h = 1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5
    np.testing.assert_allclose(p, [1 / h, 1 / (2 * h), 1 / (3 * h), 1 / (4 * h), 1 / (5 * h)])
    np.testing.assert_allclose(cd.zipf_probabilities(4, 0.0), 0.25)    # s = 0: uniform
    with pytest.raises(ValueError, match="workload.vocabulary: must be >= 1"):
        cd.zipf_probabilities(0, 1.1)


def test_data_set_ids_follow_the_law_through_a_per_field_permutation():
    spec = cd.CtrSpec(fields=3, vocabulary=500, train=50_000, test=100)   # expected counts >= 10
    d = cd.ctr_dataset(4, spec)
    perms = cd.field_permutations(4, spec)
    p = cd.zipf_probabilities(spec.vocabulary, spec.zipf_exponent)
    for f in range(spec.fields):
        inverse = np.argsort(perms[f])                  # id -> field f's rank
        observed = law_counts(inverse[d.x_train[:, f]], spec.vocabulary)
        assert stats.chisquare(observed, len(d.y_train) * p).pvalue > 1e-3, f   # as above
    hot = [set(perms[f, :10]) for f in range(spec.fields)]
    assert hot[0] != set(range(10)) and hot[0] != hot[1]    # hot ids: not 0..9, not shared
    assert d.x_train.dtype == np.int64 and d.x_train.shape == (50_000, 3)


def test_data_set_is_seeded_balanced_and_sharded():
    a, b, c = cd.ctr_dataset(2), cd.ctr_dataset(2), cd.ctr_dataset(3)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.x_train, c.x_train)
    assert 0.35 < a.y_train.mean() < 0.65 and set(np.unique(a.y_test)) == {0, 1}
    x, y = a.shard(1, 3)
    assert np.array_equal(x, a.x_train[1::3]) and len(y) == len(x)
    # the teacher's own scores: the task is learnable (Bayes AUC well above 0.5)
    w = cd.teacher_weights(2, cd.CtrSpec())
    assert roc_auc(w[a.x_test].sum(axis=1), a.y_test) > 0.8


def test_expected_distinct_ids_match_a_monte_carlo_count():
    p = cd.zipf_probabilities(1000, 1.1)
    rng = np.random.default_rng(0)
    for draws in (1, 10, 300, 5000):
        mc = np.mean([len(np.unique(rng.choice(1000, draws, p=p))) for _ in range(400)])
        assert cd.expected_distinct(p, draws) == pytest.approx(mc, rel=0.02), draws
    assert cd.expected_distinct(p, 0) == 0.0
    assert cd.expected_distinct(np.full(4, 0.25), 1e6) == pytest.approx(4.0)


def test_expected_touched_rows_match_the_workloads_gradients():
    """F x distinct ids of one field: the fields' overlap is small at the defaults."""
    w = sparse_workload(n_workers=4)
    touched = [np.count_nonzero(np.any(w.gradient(k, it)[0][:20000 * 8].reshape(-1, 8) != 0, axis=1))
               for k in range(4) for it in range(5)]
    assert np.mean(touched) == pytest.approx(cd.expected_touched_rows(w.spec.ctr, 64), rel=0.03)


# ---------------------------------------------------------------- the model's gradient
def test_gradient_matches_finite_differences_and_is_zero_off_the_batch():
    spec = cd.CtrSpec(fields=3, vocabulary=30, embedding_dim=3, hidden=4)
    m = CtrModel(spec, seed=3)
    rng = np.random.default_rng(1)
    m.params = m.params + rng.normal(0, 0.3, m.size)
    ids = np.array([[0, 5, 5], [7, 0, 29], [5, 12, 7]])     # ids repeat within and across samples
    y = np.array([1, 0, 1])
    _, g = m.loss_and_grad(ids, y)
    np.testing.assert_allclose(g, finite_difference_gradient(m, ids, y), atol=1e-7)
    rows = g[:30 * 3].reshape(30, 3)
    touched = sorted(set(ids.reshape(-1)))
    assert sorted(np.flatnonzero(np.any(rows != 0, axis=1))) == touched
    assert np.all(rows[np.setdiff1d(np.arange(30), touched)] == 0.0)
    assert np.all(g[30 * 3:] != 0)                          # the dense part is dense


def test_full_size_gradient_touches_exactly_the_batch_ids():
    spec = cd.CtrSpec()
    m, d = CtrModel(spec, seed=0), cd.ctr_dataset(0, spec)
    ids, y = d.x_train[:64], d.y_train[:64]
    loss, g = m.loss_and_grad(ids, y)
    rows = g[:spec.vocabulary * spec.embedding_dim].reshape(spec.vocabulary, -1)
    nz = np.flatnonzero(np.any(rows != 0, axis=1))
    assert np.array_equal(nz, np.unique(ids))
    # a few touched coordinates and dense weights against central differences
    base = m.params.copy()
    for i in [int(nz[0]) * 8, int(nz[-1]) * 8 + 7, spec.vocabulary * 8 + 5, m.size - 1]:
        m.params = base.copy()
        m.params[i] += 1e-6
        up = m.loss_and_grad(ids, y)[0]
        m.params[i] -= 2e-6
        down = m.loss_and_grad(ids, y)[0]
        assert g[i] == pytest.approx((up - down) / 2e-6, abs=1e-8), i
    m.params = base
    assert loss == pytest.approx(m.test_metrics(ids, y)["loss"])


def test_sparse_gradient_is_a_pure_function_and_clipped():
    a, b = sparse_workload(), sparse_workload()
    ga, la = a.gradient(2, 5)
    assert np.array_equal(ga, b.gradient(2, 5)[0]) and la == b.gradient(2, 5)[1]
    assert not np.array_equal(ga, a.gradient(1, 5)[0])
    assert ga.size == a.size == parameter_count(SPARSE)
    c = sparse_workload(clip=1e-4)
    assert np.abs(c.gradient(0, 0)[0]).max() == pytest.approx(1e-4)


# ---------------------------------------------------------------- AUC
def test_auc_equals_the_pair_count_with_ties():
    rng = np.random.default_rng(5)
    for n in (2, 7, 200):
        s = rng.integers(0, 5, n).astype(float)              # many ties
        y = rng.integers(0, 2, n)
        y[0], y[1] = 0, 1
        pos, neg = s[y == 1], s[y == 0]
        pairs = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
        assert roc_auc(s, y) == pytest.approx(pairs / (len(pos) * len(neg)))
    assert roc_auc([0.1, 0.9], [0, 1]) == 1.0 and roc_auc([0.9, 0.1], [0, 1]) == 0.0
    assert roc_auc([3, 3, 3], [0, 1, 1]) == 0.5
    assert list(average_ranks(np.array([10.0, 20.0, 10.0, 5.0]))) == [2.5, 4.0, 2.5, 1.0]


def test_auc_refuses_what_it_cannot_measure():
    with pytest.raises(ValueError, match="needs both classes .*use a larger test set"):
        roc_auc([0.2, 0.3], [1, 1])
    with pytest.raises(ValueError, match="3 scores for 2 labels"):
        roc_auc([1, 2, 3], [0, 1])
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        roc_auc([1, 2], [0, 2])


# ---------------------------------------------------------------- training
def test_bsp_training_raises_test_auc_identically_on_every_worker():
    """4 workers, default sizes (V = 20000, d = 8), 30 BSP iterations. Measured (seeds 0-4):
    test AUC 0.49-0.52 before, 0.65-0.74 after (seed 0: 0.74); threshold 0.6 with margin."""
    n = 4
    workers = [sparse_workload(n_workers=n, seed=0) for _ in range(n)]
    before = workers[0].test_metrics()
    assert abs(before["auc"] - 0.5) < 0.05 and set(before) == {"loss", "accuracy", "auc"}
    for it in range(30):
        total = workers[0].reference_sum(it)
        for w in workers:
            w.apply(total)
    after = [w.test_metrics() for w in workers]
    assert all(a == after[0] for a in after)              # same update everywhere
    assert after[0]["auc"] > 0.6 and after[0]["loss"] < before["loss"]


# ---------------------------------------------------------------- what plans see
def test_layers_and_row_blocks_come_from_the_section_alone():
    section = {"kind": "sparse", "vocabulary": 1000, "embedding_dim": 4, "fields": 3, "hidden": 5}
    spec = cd.CtrSpec(fields=3, vocabulary=1000, embedding_dim=4, hidden=5)
    assert gradient_layers(section) == ctr_layers(spec) == [
        ("embedding.weight", 4000), ("hidden.weight", 60), ("hidden.bias", 5), ("out.weight", 5),
        ("out.bias", 1)]
    assert row_blocks(section) == [(0, 1000, 4)]
    assert parameter_count(SPARSE) == 20000 * 8 + 64 * 16 + 16 + 16 + 1
    assert row_blocks({"kind": "synthetic", "parameters": 100}) == []
    assert row_blocks({"kind": "model", "name": "mlp"}) == []
    w = Workload(WorkloadSpec.from_scenario(section), seed=0, n_workers=2)
    assert w.layers == gradient_layers(section) and w.size == 4000 + 71


@pytest.mark.parametrize("override,message", [
    ("workload={kind: sparse, zipf_exponent: 0}", "workload.zipf_exponent: must be > 0 (got 0)"),
    ("workload={kind: sparse, vocabulary: 1}", "workload.vocabulary: must be >= 2 (got 1)"),
    ("workload={kind: sparse, fields: 0}", "workload.fields: must be >= 1 (got 0)"),
    ("workload={kind: sparse, embedding_dim: 0}", "workload.embedding_dim: must be >= 1 (got 0)"),
    ("workload={kind: sparse, vocabulary: 4000000, embedding_dim: 8}",
     "workload.embedding_dim: 4000000 ids x embedding_dim 8 = 32,000,000 values exceed 16,777,216; "
     "lower vocabulary or embedding_dim"),
    ("workload={kind: sparse, name: mlp}", "workload.name: unknown field"),
])
def test_schema_errors_name_their_field(override, message):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(QUICKSTART, "x.yaml", [override])
    assert f"x.yaml: {message}" in str(e.value)


def test_scenario_defaults_are_the_documented_ones():
    s = parse_scenario(QUICKSTART, "x.yaml", ["workload={kind: sparse}"])
    assert s.workload.model_dump() == {"kind": "sparse", "fields": 8, "vocabulary": 20000,
                                       "zipf_exponent": 1.1, "embedding_dim": 8, "hidden": 16,
                                       "batch_size": 64, "lr": 2.0, "clip": 4.0}
    spec = WorkloadSpec.from_scenario(s.workload.model_dump())
    assert (spec.kind, spec.batch_size, spec.lr, spec.ctr) == ("sparse", 64, 2.0, cd.CtrSpec())
