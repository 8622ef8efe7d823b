"""L3DML's DRL model set (pure, no gymnasium): named regimes, the selector that picks the
agent for a measured regime, the set's file, and its use on an iteration.

Regimes cut RegimeConfig's space along what the paper's "DRL model set" is against
(stragglers) and what changes the best pacing most (how many datacenters share the
WAN, how fast it is):
    datacenters        3-4 | 5-6
    straggler ratio    mild 1-2 | heavy 2-3   (slowest expected compute finish / fastest)
    bandwidth          low 20-60 | high 60-200 Mbps (median WAN link rate)
Each regime's agent trains on the RegimeConfig restricted to it (`config_of`). The
selector measures an iteration (`measure`) and takes the agent whose regime contains it,
else the nearest by `distance`; several at distance 0 (a shared boundary): the first in
the set's order.

A set is one JSON file (FORMAT, VERSION): per agent its regime, its training config, its
parameters, its observation layout, training time and held-out evaluation. `load`
checks all of it and says what to do when it cannot be used.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from itertools import product
from pathlib import Path

import numpy as np

import schemes.l3dml.agent as A
import schemes.l3dml.encoding as E
import schemes.l3dml.flowmodel as F
from schemes.l3dml.regime import RegimeConfig

FORMAT = "l3dml-model-set"
VERSION = 1
FEATURES = "pacing-hints-1"     # agent.per_dc_features' columns; a change needs retraining
DEFAULT_PATH = Path(__file__).resolve().parent / "models" / "default.json"
TRAIN_HINT = "python3 run.py train l3dml"

# the distance's unit per measure: one regime's width
SCALE_DCS = 2.0                 # datacenters
SCALE_RATIO = math.log(2.0)     # straggler ratio, in logs: x2
SCALE_RATE = math.log(10 / 3)   # bandwidth, in logs: 20 -> 60 -> 200 Mbps


class ModelSetError(ValueError):
    """A model set file that cannot be used; the message says what to do."""


@dataclass(frozen=True)
class NamedRegime:
    """A named box of measurable conditions (its agent trains on config_of(it); not to be
    confused with regime.Regime, one drawn episode's conditions)."""
    name: str
    dcs: tuple[int, int]
    straggler_ratio: tuple[float, float]
    bandwidth_mbps: tuple[float, float]


@dataclass(frozen=True)
class Measured:
    """What the selector knows of an iteration."""
    dcs: int
    straggler_ratio: float      # latest / earliest start of a stream (compute finish)
    bandwidth_mbps: float       # median directed WAN link rate


def _regimes() -> tuple[NamedRegime, ...]:
    out = []
    for (dn, dcs), (sn, ratio), (bn, bw) in product(
            (("3-4", (3, 4)), ("5-6", (5, 6))),
            (("mild", (1.0, 2.0)), ("heavy", (2.0, 3.0))),
            (("low", (20.0, 60.0)), ("high", (60.0, 200.0)))):
        out.append(NamedRegime(f"dc{dn}-{sn}-{bn}", dcs, ratio, bw))
    return tuple(out)


REGIMES = _regimes()


def config_of(regime: NamedRegime, iterations: int = 8) -> RegimeConfig:
    """The training config of a regime: its datacenters and bandwidth; mild: none or one
    straggler at x1.5..2, heavy: one or two at x2..3 (the ratio's range either way)."""
    lo, hi = regime.straggler_ratio
    stragglers = (0, 1) if lo <= 1.0 else (1, 2)
    factor = (max(1.5, lo), hi) if lo <= 1.0 else (lo, hi)
    return RegimeConfig(dcs=regime.dcs, bandwidth_mbps=regime.bandwidth_mbps,
                        stragglers=stragglers, straggler_factor=factor, iterations=iterations)


# ---------------------------------------------------------------- selector
def measure(it: F.Iteration) -> Measured:
    starts = [s.start_s for s in it.streams]
    rates = [a["rate_bps"] for _, _, a in it.wan.edges(data=True)]
    ratio = max(starts) / min(starts) if min(starts) > 0 else math.inf
    return Measured(len(it.streams), ratio, float(np.median(rates)) / 1e6 if rates else 0.0)


def _gap(x: float, lo: float, hi: float) -> float:
    return max(lo - x, 0.0, x - hi)


def distance(regime: NamedRegime, m: Measured) -> float:
    """0 inside the regime; outside, the Euclidean length of the gaps, each in units of one
    regime's width (SCALE_*): datacenters in counts, the ratio and the rate in logs."""
    ratio = min(max(m.straggler_ratio, 1.0), 1e9)
    rate = max(m.bandwidth_mbps, 1e-9)
    gaps = (_gap(m.dcs, *regime.dcs) / SCALE_DCS,
            _gap(math.log(ratio), *map(math.log, regime.straggler_ratio)) / SCALE_RATIO,
            _gap(math.log(rate), *map(math.log, regime.bandwidth_mbps)) / SCALE_RATE)
    return math.sqrt(sum(g * g for g in gaps))


def select(regimes, m: Measured) -> int:
    """Index of the regime for m: the nearest (0 inside), the first of equals."""
    d = [distance(r, m) for r in regimes]
    return min(range(len(d)), key=lambda i: (d[i], i))


# ---------------------------------------------------------------- the set
@dataclass
class Agent:
    regime: NamedRegime
    config: RegimeConfig                # what it trained on
    layout: E.Layout                    # its observations' layout
    weights: np.ndarray                 # agent.LinearPolicy weights
    training: dict = field(default_factory=dict)     # settings, seconds, history
    evaluation: dict = field(default_factory=dict)   # held-out returns: agent, start, none, rule

    def policy_for(self, slots: int) -> A.LinearPolicy:
        layout = E.Layout(slots, self.layout.paths, self.layout.rate_ref_bps)
        return A.LinearPolicy(self.weights, layout.slots, layout.per_dc)


@dataclass
class ModelSet:
    agents: list[Agent]
    meta: dict = field(default_factory=dict)          # command, created, total seconds

    def agent_for(self, it: F.Iteration) -> Agent:
        return self.agents[select([a.regime for a in self.agents], measure(it))]

    def allocation(self, it: F.Iteration) -> dict[int, F.Allocation]:
        """The selected agent's decision for one iteration, seen as the first of an episode
        (no history): expected compute finishes = the streams' starts, the reference time
        of the iteration itself (encoding.reference_s)."""
        agent = self.agent_for(it)
        slots = max(s.dc for s in it.streams)     # the shared policy takes any number
        layout = E.Layout(slots, agent.layout.paths, agent.layout.rate_ref_bps)
        obs = E.observe(layout, it, {s.dc: s.start_s for s in it.streams}, E.reference_s(it))
        return E.allocation_of(layout, it, agent.policy_for(slots).act(obs))


# ---------------------------------------------------------------- file
def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def to_dict(ms: ModelSet) -> dict:
    return {"format": FORMAT, "version": VERSION, "features": FEATURES, **_jsonable(ms.meta),
            "agents": [{"regime": _jsonable(asdict(a.regime)), "config": _jsonable(asdict(a.config)),
                        "layout": _jsonable(asdict(a.layout)), "weights": a.weights.tolist(),
                        "training": _jsonable(a.training), "evaluation": _jsonable(a.evaluation)}
                       for a in ms.agents]}


def save(ms: ModelSet, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(to_dict(ms), indent=1) + "\n")
    tmp.replace(path)       # a reader never sees half a file
    return path


def _fail(path, why: str) -> ModelSetError:
    return ModelSetError(f"{path}: {why}: train a model set with `{TRAIN_HINT} --out {path}` "
                         f"(a few minutes; `--quick` for a toy one)")


def _tuples(cls, d: dict):
    """A frozen dataclass from JSON, lists back to tuples, unknown keys refused."""
    names = {f.name for f in fields(cls)}
    if set(d) - names:
        raise KeyError(f"unknown {cls.__name__} field(s) {sorted(set(d) - names)}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def from_dict(d: dict, path="<model set>") -> ModelSet:
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise _fail(path, f"not an {FORMAT} file")
    if d.get("version") != VERSION:
        raise _fail(path, f"model set version {d.get('version')!r}, this code reads version {VERSION}")
    if d.get("features") != FEATURES:
        raise _fail(path, f"agents of feature map {d.get('features')!r}, this code has {FEATURES!r}")
    agents = []
    try:
        raw = d["agents"]
        if not isinstance(raw, list) or not raw:
            raise ValueError("no agents")
        for i, a in enumerate(raw):
            regime = _tuples(NamedRegime, a["regime"])
            layout = _tuples(E.Layout, a["layout"])
            w = np.asarray(a["weights"], dtype=np.float64)
            want = (1 + layout.paths, A.features(layout.per_dc))
            if w.shape != want or not np.all(np.isfinite(w)):
                raise ValueError(f"agent {i} ({regime.name}): weights of shape {w.shape}, "
                                 f"finite {want} expected")
            agents.append(Agent(regime, _tuples(RegimeConfig, a["config"]), layout, w,
                                dict(a.get("training", {})), dict(a.get("evaluation", {}))))
    except (KeyError, TypeError, ValueError) as e:
        raise _fail(path, f"malformed model set ({type(e).__name__}: {e})") from None
    return ModelSet(agents, {k: v for k, v in d.items()
                             if k not in ("format", "version", "features", "agents")})


def load(path=DEFAULT_PATH) -> ModelSet:
    path = Path(path)
    if not path.is_file():
        raise _fail(path, "no model set here")
    try:
        d = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _fail(path, f"cannot read it as JSON ({e})") from None
    return from_dict(d, path)


@lru_cache(maxsize=4)
def load_cached(path: str) -> ModelSet:
    """load, once per path and process (the `drl` policy runs every iteration)."""
    return load(path)
