"""Sweep files: what to vary, how often, with which seeds (pure: no runs, no files written).

A sweep file is YAML:

    name: sweep-bandwidth
    base: geo-3dc.yaml                    # scenario, relative to the sweep file
    set: [iterations=30]                  # fixed overrides for every point (optional)
    axes:                                 # field path -> values (scheme included)
      scheme: [ps, ring, ina, geo-ina]
      wan.default.bandwidth_mbps: [25, 50, 100, 200]
    mode: product                         # product (every combination) | zip (i-th with i-th)
    cross: [scheme]                       # zip mode only: axes crossed with the zipped rest
    repetitions: 3
    seeds: {policy: per-repetition, base: 1}   # or {policy: fixed[, base: N]}
    quick: {axes: {...}, repetitions: 1, set: [...]}   # what --quick changes
    figures: [{kind: speedup, x: wan.default.bandwidth_mbps, baseline: ps}, ...]
    target_accuracy: 0.8                  # time_to_accuracy_s in the table
    output: results                       # results/<name>[-quick]/

Every problem raises SweepError naming the file and the field, like ScenarioError.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

SEED_POLICIES = ("fixed", "per-repetition")
MODES = ("product", "zip")
FIGURE_KINDS = ("speedup", "metric", "wan_bytes", "scaling", "cdf", "goodput_time", "accuracy_time",
                "fidelity", "bars")
KNOWN_KEYS = {"name", "base", "set", "axes", "mode", "cross", "repetitions", "seeds", "quick",
              "figures", "output", "description", "target_accuracy", "warmup_iterations"}
QUICK_KEYS = {"axes", "repetitions", "set"}


class SweepError(ValueError):
    """One clear problem with a sweep file: file, field, what to do."""

    def __init__(self, source: str, field_: str, problem: str):
        self.source, self.field, self.problem = source, field_, problem
        super().__init__(f"{source}: {field_ + ': ' if field_ else ''}{problem}")


@dataclass(frozen=True)
class Point:
    """One run of the sweep: the axis values, the repetition and the seed it runs with."""
    index: int                   # position in run order (0-based)
    params: dict[str, Any]       # axis field path -> value
    repetition: int
    seed: int

    @property
    def point_id(self) -> str:
        return f"p{self.index:04d}-r{self.repetition}"

    def overrides(self) -> list[str]:
        """`--set` strings: the axis values (JSON is valid YAML flow syntax, so lists and
        mappings pass unchanged), then the seed; repetitions are the sweep's, so each
        point is exactly one run."""
        out = [f"{k}={json.dumps(v)}" for k, v in self.params.items()]
        return out + [f"seed={self.seed}", "repetitions=1"]

    def key(self) -> str:
        """Identity of the point across resumes (independent of run order)."""
        return json.dumps({"params": self.params, "repetition": self.repetition, "seed": self.seed},
                          sort_keys=True)


@dataclass
class Sweep:
    name: str
    source: str
    base: Path                   # scenario path (resolved against the sweep file's folder)
    axes: dict[str, list]
    mode: str = "product"
    cross: list[str] = field(default_factory=lambda: ["scheme"])
    repetitions: int = 1
    seed_policy: str = "fixed"
    seed_base: int | None = None  # None: the base scenario's seed
    fixed: list[str] = field(default_factory=list)   # `set` overrides for every point
    figures: list[dict] = field(default_factory=list)
    output: str = "results"
    quick: dict = field(default_factory=dict)
    is_quick: bool = False
    target_accuracy: float | None = None   # for time_to_accuracy_s in the table

    def folder_name(self) -> str:
        return self.name + ("-quick" if self.is_quick else "")

    def seed_for(self, repetition: int, scenario_seed: int) -> int:
        """fixed: every run the same seed; per-repetition: base + r, the same for every point
        of a repetition, so schemes meet the same stragglers and schedules (paired runs)."""
        base = scenario_seed if self.seed_base is None else self.seed_base
        return base if self.seed_policy == "fixed" else base + repetition

    def combinations(self) -> list[dict[str, Any]]:
        names = list(self.axes)
        if self.mode == "product":
            return [dict(zip(names, vals)) for vals in itertools.product(*self.axes.values())]
        crossed = [n for n in names if n in self.cross]
        zipped = [n for n in names if n not in self.cross]
        rows = [dict(zip(zipped, vals)) for vals in zip(*(self.axes[n] for n in zipped))] or [{}]
        out = []
        for cvals in itertools.product(*(self.axes[n] for n in crossed)):
            for r in rows:
                combo = dict(zip(crossed, cvals))
                combo.update(r)
                out.append({n: combo[n] for n in names})   # keep the file's axis order
        return out

    def points(self, scenario_seed: int = 0) -> list[Point]:
        """Run order: for each repetition, every combination (so a partial sweep already has
        one full repetition to plot)."""
        combos = self.combinations()
        pts = []
        for rep in range(self.repetitions):
            for c in combos:
                pts.append(Point(len(pts), c, rep, self.seed_for(rep, scenario_seed)))
        return pts


def _need(cond: bool, source: str, field_: str, problem: str) -> None:
    if not cond:
        raise SweepError(source, field_, problem)


def _check_set(value, source: str, where: str) -> list[str]:
    _need(isinstance(value, list) and all(isinstance(s, str) and "=" in s for s in value),
          source, where, "must be a list of 'field.path=value' strings, e.g. [iterations=20]")
    return list(value)


def _check_axes(axes, source: str, where: str) -> dict[str, list]:
    _need(isinstance(axes, dict) and axes, source, where,
          "must be a mapping of field path -> list of values, e.g. {scheme: [ps, geo-ina]}")
    for k, v in axes.items():
        _need(isinstance(k, str) and k, source, where, f"axis name {k!r} must be a field path string")
        _need(isinstance(v, list) and len(v) > 0, source, f"{where}.{k}",
              f"must be a non-empty list of values (got {v!r})")
    return {k: list(v) for k, v in axes.items()}


def parse_sweep(raw: Any, source: str, quick: bool = False) -> Sweep:
    _need(isinstance(raw, dict), source, "", "the top level must be a mapping (name, base, axes, ...)")
    unknown = set(raw) - KNOWN_KEYS
    _need(not unknown, source, sorted(unknown)[0] if unknown else "",
          f"unknown field (known: {', '.join(sorted(KNOWN_KEYS))})")
    for key in ("name", "base", "axes"):
        _need(key in raw, source, key, "required field is missing")
    name = raw["name"]
    _need(isinstance(name, str) and name.replace("-", "").replace("_", "").replace(".", "").isalnum(),
          source, "name", f"use only letters, digits, '_', '.' and '-' (got {name!r})")
    base = Path(str(raw["base"]))
    if not base.is_absolute():
        here = Path(source).parent / base
        base = here if here.exists() or not base.exists() else base
    _need(base.exists(), source, "base", f"scenario file {str(base)!r} not found; give a path "
          f"relative to the sweep file")
    axes = _check_axes(raw["axes"], source, "axes")
    mode = raw.get("mode", "product")
    _need(mode in MODES, source, "mode", f"must be one of {', '.join(MODES)} (got {mode!r})")
    cross = raw.get("cross", [a for a in ("scheme",) if a in axes])
    _need(isinstance(cross, list), source, "cross", "must be a list of axis names")
    for c in cross:
        _need(c in axes, source, "cross", f"{c!r} is not an axis (axes: {', '.join(axes)})")
    reps = raw.get("repetitions", 1)
    _need(isinstance(reps, int) and not isinstance(reps, bool) and reps >= 1, source, "repetitions",
          f"must be an integer >= 1 (got {reps!r})")
    seeds = raw.get("seeds", {}) or {}
    _need(isinstance(seeds, dict) and set(seeds) <= {"policy", "base"}, source, "seeds",
          "must be a mapping {policy: fixed | per-repetition, base: N}")
    policy = seeds.get("policy", "fixed")
    _need(policy in SEED_POLICIES, source, "seeds.policy",
          f"must be one of {', '.join(SEED_POLICIES)} (got {policy!r})")
    seed_base = seeds.get("base")
    _need(seed_base is None or (isinstance(seed_base, int) and not isinstance(seed_base, bool)),
          source, "seeds.base", f"must be an integer (got {seed_base!r})")
    fixed = _check_set(raw.get("set", []), source, "set")
    figures = raw.get("figures", []) or []
    _need(isinstance(figures, list), source, "figures", "must be a list of figure specs")
    for i, f in enumerate(figures):
        _need(isinstance(f, dict) and f.get("kind") in FIGURE_KINDS, source, f"figures.{i}.kind",
              f"must be one of {', '.join(FIGURE_KINDS)}")
    q = raw.get("quick", {}) or {}
    _need(isinstance(q, dict) and set(q) <= QUICK_KEYS, source, "quick",
          f"may only change {', '.join(sorted(QUICK_KEYS))}")
    sw = Sweep(name=name, source=source, base=base, axes=axes, mode=mode, cross=list(cross),
               repetitions=reps, seed_policy=policy, seed_base=seed_base, fixed=fixed,
               figures=figures, output=str(raw.get("output", "results")), quick=q)
    ta = raw.get("target_accuracy")
    _need(ta is None or (isinstance(ta, (int, float)) and 0 < ta <= 1), source, "target_accuracy",
          f"must be a fraction in (0, 1] (got {ta!r})")
    sw.target_accuracy = ta
    # the warm-up is one rule for every table, summary and figure (analysis/measure.py);
    # older sweep files that state it are fine, another value cannot be applied
    from analysis.measure import WARMUP_ITERATIONS
    wu = raw.get("warmup_iterations", WARMUP_ITERATIONS)
    _need(wu == WARMUP_ITERATIONS and not isinstance(wu, bool), source, "warmup_iterations",
          f"the warm-up is fixed at {WARMUP_ITERATIONS} iteration(s) for every metric (README, "
          f"Metrics); remove this field (got {wu!r})")
    if quick:
        sw = apply_quick(sw)
    _check_shape(sw)
    return sw


def apply_quick(sw: Sweep) -> Sweep:
    """The --quick variant: quick.axes replace those axes' values, quick.repetitions the
    count, quick.set is appended to set."""
    q, src = sw.quick, sw.source
    axes = dict(sw.axes)
    if "axes" in q:
        for k, v in _check_axes(q["axes"], src, "quick.axes").items():
            _need(k in axes, src, f"quick.axes.{k}", f"not an axis of the sweep (axes: {', '.join(axes)})")
            axes[k] = v
    reps = q.get("repetitions", sw.repetitions)
    _need(isinstance(reps, int) and not isinstance(reps, bool) and reps >= 1, src, "quick.repetitions",
          f"must be an integer >= 1 (got {reps!r})")
    fixed = sw.fixed + _check_set(q.get("set", []), src, "quick.set")
    return replace(sw, axes=axes, repetitions=reps, fixed=fixed, is_quick=True)


def _check_shape(sw: Sweep) -> None:
    if sw.mode == "zip":
        lens = {k: len(v) for k, v in sw.axes.items() if k not in sw.cross}
        _need(len(set(lens.values())) <= 1, sw.source, "axes",
              f"mode zip needs equal-length axes (got {lens}); use mode: product or list the "
              f"axes to cross in `cross`")


def load_sweep(path, quick: bool = False) -> Sweep:
    source = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise SweepError(source, "", f"cannot read the file ({e.strerror})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SweepError(source, "", f"invalid YAML: {getattr(e, 'problem', e)}") from None
    return parse_sweep(raw, source, quick=quick)


def check_points_valid(sw: Sweep, points: list[Point], topology: bool = False) -> None:
    """Every point's scenario must load (and with `topology`, its graph build) before the
    first run starts (a typo in an axis should not surface an hour in)."""
    from testbed.scenario import ScenarioError, load_scenario
    seen = set()
    for p in points:
        k = json.dumps(p.params, sort_keys=True)
        if k in seen:
            continue
        seen.add(k)
        where = f"point {p.point_id} {p.params}"
        try:
            scn = load_scenario(sw.base, sw.fixed + p.overrides())
        except ScenarioError as e:
            raise SweepError(sw.source, where, str(e)) from None
        if topology:
            from topologies.graph import build_graph
            try:
                build_graph(scn)
            except ValueError as e:
                raise SweepError(sw.source, where, str(e)) from None


def is_sweep_file(path) -> bool:
    """A YAML mapping with `axes` and `base` is a sweep, not a scenario."""
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(raw, dict) and "axes" in raw and "base" in raw


def validate_sweep(path) -> None:
    """The sweep file, its quick variant and every point's scenario (and topology) load."""
    from testbed.scenario import load_scenario
    for quick in (False, True):
        sw = load_sweep(path, quick=quick)
        check_points_valid(sw, sw.points(load_scenario(sw.base, sw.fixed).seed), topology=True)
