"""Data sets: scikit-learn's digits split by the seed (stratified, scaled, sharded), and
what the user is told when scikit-learn is missing."""
import sys
from pathlib import Path

import numpy as np
import pytest

from testbed.scenario import ScenarioError, parse_scenario
from workers import datasets
from workers.workload import Workload, WorkloadSpec

QUICKSTART = (Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.yaml").read_text()


def test_digits_split_is_seeded_stratified_and_scaled():
    a, b, c = datasets.digits(3), datasets.digits(3), datasets.digits(4)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_train, c.y_train)
    assert len(a.y_train) + len(a.y_test) == 1797 and a.x_train.shape[1] == 64
    train_counts, test_counts = np.bincount(a.y_train), np.bincount(a.y_test)
    assert len(test_counts) == 10
    for tr, te in zip(train_counts, test_counts):      # 20 % of every class, rounded
        assert te == round(0.2 * (tr + te))
    assert a.x_train.min() == 0.0 and a.x_train.max() == 1.0 and a.x_test.max() <= 1.0
    assert a.shape == datasets.data_shape("digits") and a.shape.image == (8, 8)


def test_stratified_split_partitions_the_samples():
    y = np.repeat(np.arange(3), [10, 20, 7])
    train, test = datasets.stratified_split(y, 0.2, np.random.default_rng(0))
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(len(y)))   # each once
    assert np.bincount(y[test]).tolist() == [2, 4, 1]
    assert not np.array_equal(train, np.sort(train))            # shuffled for the shards


def test_round_robin_shards_cover_the_training_set_and_hold_every_class():
    d = datasets.digits(1)
    shards = [d.shard(w, 6) for w in range(6)]
    assert sum(len(y) for _, y in shards) == len(d.y_train)
    assert np.array_equal(shards[2][1], d.y_train[2::6])
    assert all(set(np.unique(y)) == set(range(10)) for _, y in shards)


def test_missing_scikit_learn_is_one_line_saying_how_to_install(monkeypatch):
    datasets._digits_raw.cache_clear()
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)    # import fails as if absent
    with pytest.raises(RuntimeError, match=r"^workload.dataset: digits needs scikit-learn .*"
                                           r"pip install scikit-learn"):
        Workload(WorkloadSpec("model", 0, "mlp", dataset="digits"), seed=0, n_workers=2)
    datasets._digits_raw.cache_clear()


def test_scenario_with_digits_is_refused_before_the_run_without_scikit_learn(monkeypatch):
    monkeypatch.setattr(datasets.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(QUICKSTART, "x.yaml", ["workload={kind: model, name: mlp, dataset: digits}"])
    assert str(ei.value).startswith("x.yaml: workload.dataset: digits needs scikit-learn, which is "
                                    "not installed: pip install scikit-learn")
    # the synthetic data set needs nothing
    assert parse_scenario(QUICKSTART, "x.yaml", ["workload={kind: model, name: mlp}"]).workload.dataset == "synthetic"


def test_unknown_data_set_names_the_known_ones():
    with pytest.raises(ValueError, match=r"workload.dataset: unknown data set 'mnist' \(known: synthetic, digits\)"):
        datasets.load_dataset("mnist", 0)
    with pytest.raises(ValueError, match="workload.dataset: unknown data set 'mnist'"):
        datasets.data_shape("mnist")


@pytest.mark.parametrize("ov,expected", [
    ("workload={kind: model, name: cnn}", "workload.dataset: cnn needs an image data set: use digits "
                                          "(got 'synthetic')"),
    ("workload={kind: model, name: mlp, dataset: mnist}",
     "workload.dataset: unknown dataset 'mnist' (known: synthetic, digits)"),
])
def test_scenario_data_set_errors_name_the_field(ov, expected):
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(QUICKSTART, "x.yaml", [ov])
    assert str(ei.value) == f"x.yaml: {expected}"
    ok = parse_scenario(QUICKSTART, "x.yaml", ["workload={kind: model, name: cnn, dataset: digits}"])
    assert (ok.workload.name, ok.workload.dataset) == ("cnn", "digits")
