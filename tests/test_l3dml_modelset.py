"""L3DML's DRL model set (schemes/l3dml/modelset.py, training.py) and the `drl` policy:
the selector, the file's round trip and refusals, toy-size training, decisions on a flow
model iteration (pure, a few seconds)."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from schemes.l3dml import agent as A  # noqa: E402
from schemes.l3dml import flowmodel as F  # noqa: E402
from schemes.l3dml import modelset as M  # noqa: E402
from schemes.l3dml import policies as P  # noqa: E402
from schemes.l3dml import training as T  # noqa: E402
from schemes.l3dml.env import L3dmlEnv  # noqa: E402
from tests.test_l3dml_flowmodel import scenario  # noqa: E402
from topologies.graph import build_graph  # noqa: E402

NAMES = [r.name for r in M.REGIMES]


def centre(r: M.NamedRegime) -> M.Measured:
    return M.Measured(round(sum(r.dcs) / 2), math.sqrt(r.straggler_ratio[0] * r.straggler_ratio[1]),
                      math.sqrt(r.bandwidth_mbps[0] * r.bandwidth_mbps[1]))


# ---------------------------------------------------------------- regimes and selector
def test_regimes_cover_the_default_config_space_once():
    assert len(NAMES) == len(set(NAMES)) == 8
    cfgs = [M.config_of(r) for r in M.REGIMES]
    assert {c.dcs for c in cfgs} == {(3, 4), (5, 6)}
    assert {c.bandwidth_mbps for c in cfgs} == {(20.0, 60.0), (60.0, 200.0)}
    # mild: at most one straggler at x2; heavy: at least one at x2..3
    assert {(c.stragglers, c.straggler_factor) for c in cfgs} == {((0, 1), (1.5, 2.0)), ((1, 2), (2.0, 3.0))}


def test_the_selector_picks_the_regime_that_contains_the_measure():
    for i, r in enumerate(M.REGIMES):
        m = centre(r)
        assert M.distance(r, m) == 0.0
        assert M.select(M.REGIMES, m) == i, r.name
        assert all(M.distance(o, m) > 0 for o in M.REGIMES if o is not r)


def test_outside_every_regime_the_nearest_is_picked():
    pick = lambda *m: NAMES[M.select(M.REGIMES, M.Measured(*m))]  # noqa: E731
    assert pick(9, 1.2, 30.0) == "dc5-6-mild-low"          # more datacenters than any
    assert pick(2, 6.0, 900.0) == "dc3-4-heavy-high"       # fewer, slower, faster
    assert pick(4, 0.8, 10.0) == "dc3-4-mild-low"          # a ratio below 1 counts as 1
    assert pick(6, 2.5, 5000.0) == "dc5-6-heavy-high"
    # a shared boundary goes to the first in order (low before high, mild before heavy)
    assert pick(4, 2.0, 60.0) == "dc3-4-mild-low"
    # the distance is in regime widths: 1 datacenter beyond counts as half a width
    assert M.distance(M.REGIMES[0], M.Measured(5, 1.5, 30.0)) == pytest.approx(0.5)
    assert M.distance(M.REGIMES[0], M.Measured(4, 4.0, 30.0)) == pytest.approx(1.0)


def test_measure_reads_datacenters_stragglers_and_the_median_rate():
    sc = scenario(4, "full-mesh", mbps=50.0, compute=100,
                  extra="stragglers: {persistent: [{worker: h3r1w1, factor: 3}, {worker: h3r1w2, factor: 3}]}")
    it = F.iteration_for(build_graph(sc), sc)
    m = M.measure(it)
    assert m.dcs == 4 and m.bandwidth_mbps == pytest.approx(50.0)
    assert m.straggler_ratio == pytest.approx(3.0, rel=0.01)    # + a worker -> gateway delay
    assert NAMES[M.select(M.REGIMES, m)] == "dc3-4-heavy-low"


def test_an_episode_of_a_regime_measures_inside_it_mostly():
    inside = 0
    for r in M.REGIMES:
        env = L3dmlEnv(M.config_of(r, iterations=1))
        for seed in range(3):
            env.reset(seed=seed)
            inside += M.select(M.REGIMES, M.measure(env.iteration)) == M.REGIMES.index(r)
    assert inside >= 0.75 * 3 * len(M.REGIMES)    # jitter moves a few across a boundary


# ---------------------------------------------------------------- the file
def toy_set(regimes=M.REGIMES[:2], seed=0) -> M.ModelSet:
    agents = []
    rng = np.random.default_rng(seed)
    for r in regimes:
        env = L3dmlEnv(M.config_of(r))
        w = rng.standard_normal((1 + env.k, A.features(env.per_dc)))
        agents.append(M.Agent(r, env.cfg, env.layout, w, {"generations": 1, "train_s": 0.5},
                              {"agent": -1.0, "none": -2.0, "rule": -1.5}))
    return M.ModelSet(agents, {"command": "test"})


def test_save_then_load_gives_the_same_set(tmp_path):
    ms = toy_set()
    path = M.save(ms, tmp_path / "sub" / "set.json")
    back = M.load(path)
    assert M.to_dict(back) == M.to_dict(ms)
    for a, b in zip(ms.agents, back.agents):
        assert np.array_equal(a.weights, b.weights)
        assert (a.regime, a.config, a.layout) == (b.regime, b.config, b.layout)
    assert json.loads(path.read_text())["version"] == M.VERSION


@pytest.mark.parametrize("damage,message", [
    (None, "no model set here"),
    (lambda t: t[: len(t) // 2], "cannot read it as JSON"),
    (lambda t: t.replace('"version": 1', '"version": 99'), "version 99, this code reads version 1"),
    (lambda t: t.replace('"format": "l3dml-model-set"', '"format": "other"'), "not an l3dml-model-set"),
    (lambda t: t.replace(f'"features": "{M.FEATURES}"', '"features": "old"'), "feature map 'old'"),
    (lambda t: json.dumps({**json.loads(t), "agents": [{**json.loads(t)["agents"][0], "weights": [[1.0]]}]}),
     "weights of shape"),
    (lambda t: json.dumps({**json.loads(t), "agents": [{"regime": {}}]}), "malformed model set"),
])
def test_a_bad_file_is_refused_saying_how_to_make_one(tmp_path, damage, message):
    path = tmp_path / "set.json"
    if damage:
        M.save(toy_set(), path)
        path.write_text(damage(path.read_text()))
    with pytest.raises(M.ModelSetError, match=message) as e:
        M.load(path)
    assert f"python3 run.py train l3dml --out {path}" in str(e.value)


# ---------------------------------------------------------------- training
def test_toy_training_gives_a_loadable_reproducible_set(tmp_path):
    settings = replace(T.QUICK, seed=3)
    log = []
    ms = T.train_set(settings, regimes=M.REGIMES[:2], log=log.append)
    back = M.load(M.save(ms, tmp_path / "toy.json"))
    assert [a.regime.name for a in back.agents] == NAMES[:2]
    for a in back.agents:
        t = a.training
        assert (t["generations"], t["population"], t["episodes"], t["iterations"], t["seed"]) == (2, 4, 1, 2, 3)
        assert t["train_s"] > 0 and len(t["history"]) == 2
        e = a.evaluation
        assert len(e["seeds"]) == settings.held_out
        assert all(math.isfinite(e[k]) and e[k] < 0 for k in ("agent", "set", "start", "none", "rule"))
    assert sum("generation   2/2" in line for line in log) == 2      # progress per generation
    again = T.train_set(settings, regimes=M.REGIMES[:2], log=lambda _: None)
    assert all(np.array_equal(a.weights, b.weights) for a, b in zip(ms.agents, again.agents))


def test_cem_with_validation_never_returns_worse_than_its_start():
    env = L3dmlEnv(M.config_of(M.REGIMES[2], iterations=2))
    val = [11, 12]
    start = A.mean_return(env, A.LinearPolicy.like_none(env), val)
    policy, hist = A.train_cem(env, generations=2, population=4, elite=2, episodes=1,
                               start="none", validation=val)
    assert A.mean_return(env, policy, val) >= start
    assert [h["generation"] for h in hist] == [1, 2]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="population of at least the elite"):
        T.train_set(replace(T.QUICK, elite=5), regimes=M.REGIMES[:1])
    with pytest.raises(ValueError, match="generations"):
        T.main(out=None, generations=0, quick=True, log=lambda _: None)


# ---------------------------------------------------------------- the drl policy
def valid(it: F.Iteration, alloc) -> None:
    assert set(alloc) == {s.dc for s in it.streams}
    for s in it.streams:
        a = alloc[s.dc]
        assert len(a.split) == len(s.paths) and min(a.split) >= 0
        assert sum(a.split) == pytest.approx(1.0)
        assert a.rate_bps is None or a.rate_bps > 0
    F.simulate(it, alloc)      # refuses an invalid allocation


@pytest.mark.parametrize("model_set", ["toy", "default"])
def test_drl_gives_valid_allocations_on_a_flow_model_iteration(tmp_path, model_set):
    path = M.save(toy_set(M.REGIMES), tmp_path / "toy.json") if model_set == "toy" else None
    if path is None and not M.DEFAULT_PATH.is_file():
        pytest.fail(f"the committed default set {M.DEFAULT_PATH} is missing: "
                    "python3 run.py train l3dml --out schemes/l3dml/models/default.json")
    sc = scenario(4, "full-mesh", compute=100,
                  extra="stragglers: {persistent: [{worker: h3r1w1, factor: 3}, {worker: h3r1w2, factor: 3}]}")
    it = F.iteration_for(build_graph(sc), sc)
    decide = P.policy("drl", model_set=path) if path else P.policy("drl")
    valid(it, decide(it))
    # more datacenters than any regime: the nearest agent, still one decision per stream
    env = L3dmlEnv(dcs=(7, 7), stragglers=(1, 1), iterations=1)
    env.reset(seed=4)
    valid(env.iteration, decide(env.iteration))


def test_drl_acts_as_the_selected_agent():
    ms = toy_set(M.REGIMES)
    env = L3dmlEnv(M.config_of(M.REGIMES[5]))
    env.reset(seed=1)
    assert ms.agent_for(env.iteration) is ms.agents[M.select(M.REGIMES, M.measure(env.iteration))]
    # an agent whose every output is 0 but the route's: route only, no cap = `none`
    for a in ms.agents:
        a.weights = np.zeros_like(a.weights)
        a.weights[:, -1] = -30.0
        a.weights[0, -1] = a.weights[1, -1] = 30.0
    assert ms.allocation(env.iteration) == P.none(env.iteration)


def test_drl_with_a_missing_set_says_how_to_train_one(tmp_path):
    it = L3dmlEnv(iterations=1)
    it.reset(seed=0)
    with pytest.raises(M.ModelSetError, match="run.py train l3dml"):
        P.policy("drl", model_set=tmp_path / "none.json")(it.iteration)
    with pytest.raises(ValueError, match="option of the drl policy"):
        P.policy("rule", model_set=tmp_path / "none.json")
