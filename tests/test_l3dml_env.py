"""L3DML's gymnasium environment (schemes/l3dml/env.py): the reset/step contract
(gymnasium's env checker), determinism under a seed, policies as actions, refused input."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from schemes.l3dml import flowmodel as F  # noqa: E402
from schemes.l3dml import policies as P  # noqa: E402
from schemes.l3dml.env import L3dmlEnv, RegimeConfig  # noqa: E402


def test_gymnasium_env_checker():
    with warnings.catch_warnings():
        # the checker cannot try render modes without a registered spec; there are none
        warnings.filterwarnings("ignore", message=".*render modes.*")
        check_env(L3dmlEnv(), skip_render_check=True)


def rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    trace = [obs]
    for a in actions:
        obs, r, done, trunc, info = env.step(a)
        trace += [obs, r, info["completion_s"]]
        if done:
            break
    return trace


def test_deterministic_under_a_seed():
    env = L3dmlEnv()
    acts = [np.random.default_rng(0).uniform(0, 1, env.action_space.shape).astype(np.float32)
            for _ in range(env.cfg.iterations)]
    a, b = rollout(L3dmlEnv(), 3, acts), rollout(L3dmlEnv(), 3, acts)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = rollout(L3dmlEnv(), 4, acts)
    assert not np.array_equal(a[0], c[0])


def test_episode_length_and_observation_bounds():
    env = L3dmlEnv(iterations=3)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert 3 <= info["dcs"] <= 6
    done, steps = False, 0
    while not done:
        obs, r, done, trunc, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and not trunc and r < 0
        steps += 1
    assert steps == 3


def test_a_policy_as_an_action_gives_the_policy_outcome():
    env = L3dmlEnv(stragglers=(1, 1))
    env.reset(seed=5)
    for name in ("none", "rule"):
        alloc = P.policy(name)(env.iteration)
        want = F.simulate(env.iteration, alloc)
        got = F.simulate(env.iteration, env.allocation_of(env.action_of(alloc)))
        assert got.completion_s == pytest.approx(want.completion_s, rel=1e-5)
        assert got.spread_s == pytest.approx(want.spread_s, rel=1e-4, abs=1e-6)


def test_rule_earns_more_reward_than_none_with_a_straggler():
    cfg = RegimeConfig(stragglers=(1, 1), iterations=4)
    totals = {}
    for name in ("none", "rule"):
        env, total = L3dmlEnv(cfg), 0.0
        for seed in range(6):
            env.reset(seed=seed)
            done = False
            while not done:
                _, r, done, _, info = env.step(env.action_of(P.policy(name)(env.iteration)))
                total += r
        totals[name] = total
    assert totals["rule"] > totals["none"]


def test_reward_is_spread_and_beta_times_iteration_time():
    env = L3dmlEnv(beta=0.25)
    env.reset(seed=2)
    _, r, _, _, info = env.step(env.action_of(P.none(env.iteration)))
    assert r == pytest.approx(-(info["spread_s"] + 0.25 * info["completion_s"]) / env.regime.ref_s)
    assert info["none_reward"] == pytest.approx(r)


def test_bad_configs_and_calls_are_refused_with_what_to_do():
    with pytest.raises(ValueError, match="at most dcs"):
        RegimeConfig(dcs=(2, 4), stragglers=(0, 2))
    with pytest.raises(ValueError, match="use 'ring' and/or 'full-mesh'"):
        RegimeConfig(topologies=("star",))
    with pytest.raises(ValueError, match="low <= high"):
        RegimeConfig(bandwidth_mbps=(100.0, 10.0))
    with pytest.raises(ValueError, match="unknown RegimeConfig field"):
        L3dmlEnv(bandwith_mbps=(1, 2))
    env = L3dmlEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(env.action_space.sample())
    env.reset(seed=0)
    with pytest.raises(ValueError, match="numbers in"):
        env.step(np.full(env.action_space.shape, np.nan, dtype=np.float32))
