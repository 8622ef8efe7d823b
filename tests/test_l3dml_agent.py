"""L3DML's compact numpy agent (schemes/l3dml/agent.py) learns, at toy size, to do better
than `none` in the flow model (pure, a few seconds)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from schemes.l3dml import agent as A  # noqa: E402
from schemes.l3dml import policies as P  # noqa: E402
from schemes.l3dml.env import L3dmlEnv, RegimeConfig  # noqa: E402

# 4 datacenters in a full mesh, one persistent straggler, 3 iterations per episode
TOY = RegimeConfig(dcs=(4, 4), topologies=("full-mesh",), stragglers=(1, 1), iterations=3)
HELD_OUT = range(1000, 1010)      # regimes never seen in training


def policy_return(env, name, seeds) -> float:
    total = []
    for s in seeds:
        env.reset(seed=s)
        done, r_sum = False, 0.0
        while not done:
            _, r, done, _, _ = env.step(env.action_of(P.policy(name)(env.iteration)))
            r_sum += r
        total.append(r_sum)
    return float(np.mean(total))


def test_the_untrained_policy_is_none():
    env = L3dmlEnv(TOY)
    assert A.mean_return(env, A.LinearPolicy.like_none(env), HELD_OUT) == \
        pytest.approx(policy_return(env, "none", HELD_OUT), rel=0.02)


def test_cem_beats_none_on_held_out_regimes():
    env = L3dmlEnv(TOY)
    policy, history = A.train_cem(env, seed=0)
    assert len(history) == 15
    learned = A.mean_return(env, policy, HELD_OUT)
    none = policy_return(env, "none", HELD_OUT)
    assert learned > none * 0.95          # returns are negative: at least 5 % better
    # the rule (rate synchronization with the flow model in the loop) is still better:
    # the bar the DRL model set has to reach
    assert policy_return(env, "rule", HELD_OUT) > learned


def test_bad_training_settings_are_refused():
    with pytest.raises(ValueError, match="1..population"):
        A.train_cem(L3dmlEnv(TOY), population=4, elite=5)
