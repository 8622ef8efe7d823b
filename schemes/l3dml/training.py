"""Training L3DML's DRL model set (`gdml train l3dml`): one agent per regime of
modelset.REGIMES, trained by agent.train_cem in env.L3dmlEnv restricted to that regime,
then evaluated on held-out seeds against `none`, `rule` and its own starting point, and the
whole set (selector + agents, as the `drl` policy runs it) on the same episodes.

Seeds: a regime's CEM draws its training seeds from seed x 1000 + the regime's index;
validation seeds are VALIDATION_BASE + ..., held-out seeds HELD_OUT_BASE + ...: the three
never meet (training seeds are drawn below 2^31 at random: a collision is possible,
at odds of about 1 in 10^7 per episode). Everything but the timings is a function of the
settings: the same command writes the same parameters.
"""
from __future__ import annotations

import platform
import sys
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import schemes.l3dml.agent as A
import schemes.l3dml.modelset as M
import schemes.l3dml.policies as P
from schemes.l3dml.env import L3dmlEnv

VALIDATION_BASE = 3_000_000_000
HELD_OUT_BASE = 4_000_000_000
DEFAULT_OUT = Path("results") / "l3dml" / "model-set.json"


@dataclass(frozen=True)
class TrainSettings:
    generations: int = 40
    population: int = 16
    elite: int = 4
    sigma: float = 0.5          # CEM's initial standard deviation around the start
    episodes: int = 6           # per candidate per generation
    iterations: int = 8         # per episode
    validation: int = 16        # seeds that pick which generation's mean is kept
    held_out: int = 20          # seeds of the final evaluation
    start: str = "pacing"       # agent.STARTS
    seed: int = 0

    def check(self) -> None:
        for name in ("generations", "population", "elite", "episodes", "iterations", "held_out"):
            if getattr(self, name) < 1:
                raise ValueError(f"training setting {name} = {getattr(self, name)}: give >= 1")
        if self.validation < 0 or self.sigma <= 0:
            raise ValueError("training settings: validation >= 0 seeds, sigma > 0")
        if self.elite > self.population:
            raise ValueError(f"elite {self.elite} > population {self.population}: "
                             "give a population of at least the elite")
        if self.start not in A.STARTS:
            raise ValueError(f"start {self.start!r}: use one of {sorted(A.STARTS)}")


# toy size: seconds, for tests and a first look (`--quick`)
QUICK = TrainSettings(generations=2, population=4, elite=2, episodes=1, iterations=2,
                      validation=2, held_out=2)


def seeds(base: int, settings: TrainSettings, n: int) -> list[int]:
    return [base + settings.seed * 1000 + i for i in range(n)]


def _episode(env, seed: int, decide) -> float:
    """One episode's return; decide(obs, env) -> action."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, r, done, _, _ = env.step(decide(obs, env))
        total += r
    return total


def returns(env, decide, held_out) -> float:
    return float(np.mean([_episode(env, s, decide) for s in held_out]))


def named(name: str):
    return lambda obs, env: env.action_of(P.policy(name)(env.iteration))


def evaluate(env, policy: A.LinearPolicy, start: A.LinearPolicy, held_out) -> dict:
    """Mean held-out return per episode of the agent, its starting policy, none and rule."""
    return {"seeds": list(held_out),
            "agent": returns(env, lambda obs, e: policy.act(obs), held_out),
            "start": returns(env, lambda obs, e: start.act(obs), held_out),
            "none": returns(env, named("none"), held_out),
            "rule": returns(env, named("rule"), held_out)}


def train_agent(regime: M.NamedRegime, index: int, settings: TrainSettings, log=print) -> M.Agent:
    env = L3dmlEnv(M.config_of(regime, settings.iterations))

    def progress(rec):
        val = "" if rec["validation"] is None else f"  validation {rec['validation']:8.3f}"
        log(f"  {regime.name}  generation {rec['generation']:3d}/{settings.generations}  "
            f"best {rec['best']:8.3f}  mean {rec['mean']:8.3f}{val}  {rec['elapsed_s']:6.1f} s")

    t0 = time.monotonic()
    policy, history = A.train_cem(
        env, settings.generations, settings.population, settings.elite, settings.sigma,
        settings.episodes, seed=settings.seed * 1000 + index, start=settings.start,
        validation=seeds(VALIDATION_BASE, settings, settings.validation), progress=progress)
    train_s = time.monotonic() - t0
    held = seeds(HELD_OUT_BASE, settings, settings.held_out)
    return M.Agent(regime, env.cfg, env.layout, policy.weights,
                   {**asdict(settings), "train_s": round(train_s, 2),
                    "history": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in h.items()}
                                for h in history]},
                   evaluate(env, policy, A.STARTS[settings.start](env), held))


def evaluate_set(ms: M.ModelSet, settings: TrainSettings) -> None:
    """Per regime, the whole set on that regime's held-out episodes: the selector may pick
    another regime's agent where an episode's iteration measures outside (jitter)."""
    for a in ms.agents:
        env = L3dmlEnv(a.config)
        a.evaluation["set"] = returns(env, lambda obs, e: e.action_of(ms.allocation(e.iteration)),
                                      a.evaluation["seeds"])


def train_set(settings: TrainSettings = TrainSettings(), regimes=M.REGIMES, log=print,
              command: str = "") -> M.ModelSet:
    settings.check()
    t0 = time.monotonic()
    agents = []
    for i, r in enumerate(regimes):
        log(f"{r.name} ({i + 1}/{len(regimes)}): {r.dcs[0]}-{r.dcs[1]} datacenters, straggler ratio "
            f"{r.straggler_ratio[0]:g}-{r.straggler_ratio[1]:g}, {r.bandwidth_mbps[0]:g}-"
            f"{r.bandwidth_mbps[1]:g} Mbps")
        agents.append(train_agent(r, i, settings, log))
    ms = M.ModelSet(agents, {
        "command": command, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "total_s": 0.0, "settings": asdict(settings),
        "python": platform.python_version(), "numpy": np.__version__})
    evaluate_set(ms, settings)
    ms.meta["total_s"] = round(time.monotonic() - t0, 1)
    return ms


def table(ms: M.ModelSet) -> list[str]:
    """Per regime: held-out mean return per episode (higher is better; returns are
    negative) of the agent, the whole set, the starting policy, none and rule."""
    head = f"{'regime':<20} {'train s':>8} {'agent':>8} {'set':>8} {'start':>8} {'none':>8} " \
           f"{'rule':>8}  {'agent vs rule':>13}"
    lines = [head]
    for a in ms.agents:
        e = a.evaluation
        gain = (e["agent"] - e["rule"]) / abs(e["rule"]) * 100 if e["rule"] else float("nan")
        lines.append(f"{a.regime.name:<20} {a.training.get('train_s', float('nan')):8.1f} "
                     f"{e['agent']:8.3f} {e.get('set', float('nan')):8.3f} {e.get('start', float('nan')):8.3f} "
                     f"{e['none']:8.3f} {e['rule']:8.3f}  {gain:+12.1f}%")
    return lines


def main(out=None, generations=None, population=None, quick=False, seed=0, log=print) -> int:
    """`gdml train l3dml`: train the set, write it, print the table."""
    settings = replace(QUICK if quick else TrainSettings(), seed=seed)
    if generations is not None:
        settings = replace(settings, generations=generations)
    if population is not None:
        settings = replace(settings, population=population,
                           elite=min(settings.elite, population))
    settings.check()
    out = Path(out) if out else DEFAULT_OUT
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder: give a file name, e.g. {out / 'model-set.json'}")
    command = " ".join(["python3 run.py"] + sys.argv[1:]) if sys.argv[1:2] == ["train"] else ""
    log(f"training the l3dml model set: {len(M.REGIMES)} regimes, {settings.generations} generations "
        f"x {settings.population} candidates x {settings.episodes} episodes of {settings.iterations} "
        f"iterations (seed {settings.seed})")
    ms = train_set(settings, log=log, command=command)
    path = M.save(ms, out)
    log("")
    log("held-out mean return per episode (higher is better): agent on its regime, the set "
        "(selector + agents), the agent's start, none, rule")
    for line in table(ms):
        log(line)
    log(f"model set: {path} ({ms.meta['total_s']:.0f} s); use it with policy('drl', model_set='{path}')")
    return 0
