"""Compute-time models and stragglers: moments against the formulas, seeding, stragglers."""
import math

import numpy as np
import pytest

from testbed.scenario import parse_scenario
from workers.compute_time import (WorkerIdentity, compute_sample, draw_base_ms, model_mean_ms,
                                  persistent_factor, rng_for)

W0 = WorkerIdentity(0, "h1r1w1", "a")
N = 20000


def draws(spec, n=N, worker=W0, stragglers=None, seed=1):
    return np.array([compute_sample(spec, stragglers, worker, i, seed).real_ms for i in range(n)])


def test_constant():
    assert set(draws({"model": "constant", "value_ms": 42.0}, 50)) == {42.0}


def test_normal_moments():
    x = draws({"model": "normal", "mean_ms": 200.0, "std_ms": 20.0})
    assert abs(x.mean() - 200) < 4 * 20 / math.sqrt(N)
    assert abs(x.std() - 20) < 1.0


def test_normal_is_truncated_at_zero():
    x = draws({"model": "normal", "mean_ms": 1.0, "std_ms": 10.0}, 2000)
    assert x.min() == 0.0 and (x == 0).mean() > 0.3


def test_shifted_exponential_moments():
    x = draws({"model": "shifted_exp", "shift_ms": 50.0, "scale_ms": 30.0})
    assert x.min() >= 50.0
    assert abs(x.mean() - 80.0) < 4 * 30 / math.sqrt(N)
    assert abs(x.std() - 30.0) < 1.5          # exponential: std = mean


def test_pareto_minimum_mean_and_tail():
    spec = {"model": "pareto", "scale_ms": 10.0, "shape": 3.0}
    x = draws(spec)
    assert x.min() >= 10.0
    assert abs(x.mean() - model_mean_ms(spec)) < 0.3     # 15 ms
    # P(X > 20) = (10/20)^3 = 0.125
    assert abs((x > 20).mean() - 0.125) < 4 * math.sqrt(0.125 * 0.875 / N)
    assert model_mean_ms({"model": "pareto", "scale_ms": 1, "shape": 1.0}) == float("inf")


def test_seeded_and_reproducible_per_worker_and_iteration():
    spec = {"model": "normal", "mean_ms": 100.0, "std_ms": 10.0}
    a = compute_sample(spec, None, W0, 5, seed=3)
    assert a == compute_sample(spec, None, W0, 5, seed=3)
    assert a.base_ms != compute_sample(spec, None, W0, 6, seed=3).base_ms
    assert a.base_ms != compute_sample(spec, None, W0, 5, seed=4).base_ms
    other = WorkerIdentity(1, "h1r1w2", "a")
    assert a.base_ms != compute_sample(spec, None, other, 5, seed=3).base_ms


def test_stragglers_do_not_change_base_draws():
    spec = {"model": "normal", "mean_ms": 100.0, "std_ms": 10.0}
    st = {"transient": {"probability": 0.5, "distribution": "constant", "factor": 3.0}}
    for i in range(20):
        assert compute_sample(spec, st, W0, i, 1).base_ms == compute_sample(spec, None, W0, i, 1).base_ms


def test_persistent_by_index_host_id_and_datacenter():
    rules = [{"worker": 0, "factor": 2.0}, {"worker": "h2r1w1", "factor": 3.0}, {"dc": "b", "factor": 5.0}]
    assert persistent_factor(rules, W0)[0] == 2.0
    assert persistent_factor(rules, WorkerIdentity(4, "h2r1w1", "b"))[0] == 15.0
    assert persistent_factor(rules, WorkerIdentity(5, "h2r1w2", "b"))[0] == 5.0
    assert persistent_factor(rules, WorkerIdentity(1, "h1r1w2", "a")) == (1.0, [])
    s = compute_sample({"value_ms": 10.0}, {"persistent": rules}, W0, 0, 1)
    assert s.real_ms == 20.0 and s.reasons == ("persistent worker 0 x2",)


def test_transient_probability_and_factor_distributions():
    spec = {"model": "constant", "value_ms": 10.0}
    x = draws(spec, stragglers={"transient": {"probability": 0.1, "distribution": "constant", "factor": 3.0}})
    assert set(np.unique(x)) == {10.0, 30.0}
    assert abs((x == 30).mean() - 0.1) < 4 * math.sqrt(0.09 / N)
    u = draws(spec, stragglers={"transient": {"probability": 1.0, "distribution": "uniform",
                                              "low": 1.5, "high": 3.0}}) / 10.0
    assert u.min() >= 1.5 and u.max() <= 3.0 and abs(u.mean() - 2.25) < 0.02
    p = draws(spec, stragglers={"transient": {"probability": 1.0, "distribution": "pareto",
                                              "factor": 2.0, "shape": 4.0}}) / 10.0
    assert p.min() >= 2.0 and abs(p.mean() - 2.0 * 4 / 3) < 0.05


def test_compute_speed_and_dilation():
    fast = WorkerIdentity(0, "h1r1w1", "a", compute_speed=2.0)
    s = compute_sample({"value_ms": 100.0}, None, fast, 0, 1, dilation=4.0)
    assert s.real_ms == 50.0 and s.emulated_ms == 200.0
    with pytest.raises(ValueError, match="dilation"):
        compute_sample({"value_ms": 1.0}, None, W0, 0, 1, dilation=0.5)


def test_unknown_model_names_the_field():
    with pytest.raises(ValueError, match="compute_time.model"):
        draw_base_ms({"model": "gamma"}, rng_for(0, 0, 0, 1))


def test_scenario_sections_are_accepted_as_dicts():
    scn = parse_scenario("""
name: ct
datacenters:
  - {name: a, lat: 0, lon: 0}
  - {name: b, lat: 0, lon: 10}
scheme: ina
iterations: 1
compute_time: {model: shifted_exp, shift_ms: 5, scale_ms: 5}
stragglers:
  persistent: [{dc: b, factor: 2}]
  transient: {probability: 0.2, distribution: uniform, low: 1.5, high: 2}
""", "<ct>")
    s = compute_sample(scn.compute_time.model_dump(), scn.stragglers.model_dump(),
                       WorkerIdentity(1, "h2r1w1", "b"), 0, scn.seed)
    assert s.factor >= 2.0 and s.base_ms >= 5.0
