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
                                          # (default: scheme, unless the axes have a label)
    exclude: [{scheme: ina, wan.default.bandwidth_mbps: 25}]   # combinations not run
    repetitions: 3
    seeds: {policy: per-repetition, base: 1}   # or {policy: fixed[, base: N]}
    quick: {axes: {...}, repetitions: 1, set: [...]}   # what --quick changes
    figures: [{kind: speedup, x: wan.default.bandwidth_mbps, baseline: ps}, ...]
    target_accuracy: 0.8                  # time_to_accuracy_s in the table
    output: results                       # results/<name>[-quick]/

A zipped axis `label` (mode zip only) names each zipped row's series, e.g. two variants of
one scheme: `label: [inart, inart-sp]` beside `scheme: [inart, inart]` and their
`scheme_options`. It is no scenario field: it is recorded with the point (params, the
table's `label` column) and never applied as an override; analysis/report.py draws one
series per label instead of per scheme, and a figure's `baseline` then names a label.

`exclude` leaves out every combination that has all the values of one of its entries
(axis -> value; a label too), e.g. the points a baseline would take hours on: they are not
run and not in the table, and the figures have no bar or marker there. Under --quick the
same entries apply to the quick axes.

Every problem of the file is collected and raised at once as one SweepError, one line per
problem naming the file and the field, like ScenarioError (testbed/problems.py); the
points' scenarios are checked only once the sweep file itself is valid.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from testbed.problems import FileProblems, Problem, yaml_problem

SEED_POLICIES = ("fixed", "per-repetition")
LABEL_AXIS = "label"          # names a zipped row's series; recorded, never a scenario override
MODES = ("product", "zip")
FIGURE_KINDS = ("speedup", "metric", "wan_bytes", "scaling", "cdf", "goodput_time", "accuracy_time",
                "fidelity", "bars")
KNOWN_KEYS = {"name", "base", "set", "axes", "mode", "cross", "exclude", "repetitions", "seeds", "quick",
              "figures", "output", "description", "target_accuracy", "warmup_iterations"}
QUICK_KEYS = {"axes", "repetitions", "set"}


LABEL_RULE = "letters, digits, '_', '.' and '-'"


def _is_name(v) -> bool:
    """The rule of sweep names and series labels: a non-empty string of LABEL_RULE."""
    return isinstance(v, str) and v.replace("-", "").replace("_", "").replace(".", "").isalnum()


class SweepError(FileProblems):
    """Every problem of a sweep file and of its points' scenarios: `problems` (one line each,
    field path or point first), str() one line per problem naming the file, then the count."""


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
        """`--set` strings: the axis values but the series label (JSON is valid YAML flow syntax, so lists and
        mappings pass unchanged), then the seed; repetitions are the sweep's, so each
        point is exactly one run."""
        out = [f"{k}={json.dumps(v)}" for k, v in self.params.items() if k != LABEL_AXIS]
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
    exclude: list[dict] = field(default_factory=list)   # combinations left out

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
            return [c for c in (dict(zip(names, vals)) for vals in itertools.product(*self.axes.values()))
                    if not self.excluded(c)]
        crossed = [n for n in names if n in self.cross]
        zipped = [n for n in names if n not in self.cross]
        rows = [dict(zip(zipped, vals)) for vals in zip(*(self.axes[n] for n in zipped))] or [{}]
        out = []
        for cvals in itertools.product(*(self.axes[n] for n in crossed)):
            for r in rows:
                combo = dict(zip(crossed, cvals))
                combo.update(r)
                out.append({n: combo[n] for n in names})   # keep the file's axis order
        return [c for c in out if not self.excluded(c)]

    def excluded(self, combo: dict) -> bool:
        return any(all(combo.get(k) == v for k, v in e.items()) for e in self.exclude)

    def points(self, scenario_seed: int = 0) -> list[Point]:
        """Run order: for each repetition, every combination (so a partial sweep already has
        one full repetition to plot)."""
        combos = self.combinations()
        pts = []
        for rep in range(self.repetitions):
            for c in combos:
                pts.append(Point(len(pts), c, rep, self.seed_for(rep, scenario_seed)))
        return pts


class _Found:
    """The problems found so far in one sweep file."""

    def __init__(self):
        self.problems: list[Problem] = []

    def need(self, cond, field_: str, problem: str) -> bool:
        if not cond:
            self.problems.append(Problem(field_, problem))
        return bool(cond)


def _check_set(value, found: _Found, where: str) -> list[str]:
    ok = found.need(isinstance(value, list) and all(isinstance(s, str) and "=" in s for s in value),
                    where, "must be a list of 'field.path=value' strings, e.g. [iterations=20]")
    return list(value) if ok else []


def _check_axes(axes, found: _Found, where: str) -> dict[str, list] | None:
    """The axes, or None when they are not valid (then nothing that names an axis is judged:
    which names are axes is not known)."""
    if not found.need(isinstance(axes, dict) and axes, where, "must be a mapping of field path -> "
                      "list of values, e.g. {scheme: [ps, geo-ina]}"):
        return None
    ok = True
    for k, v in axes.items():
        ok &= found.need(isinstance(k, str) and k, where, f"axis name {k!r} must be a field path string")
        ok &= found.need(isinstance(v, list) and len(v) > 0, f"{where}.{k}",
                         f"must be a non-empty list of values (got {v!r})")
    return {k: list(v) for k, v in axes.items()} if ok else None


def _repetitions(value, found: _Found, where: str) -> None:
    found.need(isinstance(value, int) and not isinstance(value, bool) and value >= 1, where,
               f"must be an integer >= 1 (got {value!r})")


def parse_sweep(raw: Any, source: str, quick: bool = False) -> Sweep:
    if not isinstance(raw, dict):
        raise SweepError(source, "", "the top level must be a mapping (name, base, axes, ...)")
    found = _Found()
    for key in sorted(set(raw) - KNOWN_KEYS, key=str):
        found.need(False, str(key), f"unknown field (known: {', '.join(sorted(KNOWN_KEYS))})")
    for key in ("name", "base", "axes"):
        found.need(key in raw, key, "required field is missing")
    name = raw.get("name")
    if "name" in raw:
        found.need(_is_name(name), "name", f"use only {LABEL_RULE} (got {name!r})")
    base = None
    if "base" in raw:
        base = Path(str(raw["base"]))
        if not base.is_absolute():
            here = Path(source).parent / base
            base = here if here.exists() or not base.exists() else base
        found.need(base.exists(), "base", f"scenario file {str(base)!r} not found; give a path "
                   f"relative to the sweep file")
    axes = _check_axes(raw["axes"], found, "axes") if "axes" in raw else None
    mode = raw.get("mode", "product")
    found.need(mode in MODES, "mode", f"must be one of {', '.join(MODES)} (got {mode!r})")
    # a label names zipped rows that include the scheme: crossing the scheme by default
    # would give one label to several schemes
    cross = raw.get("cross", [a for a in ("scheme",) if a in (axes or {}) and LABEL_AXIS not in axes])
    if found.need(isinstance(cross, list), "cross", "must be a list of axis names") and axes is not None:
        for c in cross:
            found.need(c in axes, "cross", f"{c!r} is not an axis (axes: {', '.join(axes)})")
    exclude = raw.get("exclude", []) or []
    if found.need(isinstance(exclude, list), "exclude", "must be a list of {axis: value} entries"):
        for i, e in enumerate(exclude):
            if found.need(isinstance(e, dict) and e, f"exclude.{i}",
                          "must be a non-empty mapping {axis: value}, e.g. {scheme: ina}") and axes is not None:
                for k in e:
                    found.need(k in axes, f"exclude.{i}.{k}", f"not an axis of the sweep (axes: "
                               f"{', '.join(axes)})")
    reps = raw.get("repetitions", 1)
    _repetitions(reps, found, "repetitions")
    seeds = raw.get("seeds", {}) or {}
    policy, seed_base = "fixed", None
    if found.need(isinstance(seeds, dict) and set(seeds) <= {"policy", "base"}, "seeds",
                  "must be a mapping {policy: fixed | per-repetition, base: N}"):
        policy = seeds.get("policy", "fixed")
        found.need(policy in SEED_POLICIES, "seeds.policy",
                   f"must be one of {', '.join(SEED_POLICIES)} (got {policy!r})")
        seed_base = seeds.get("base")
        found.need(seed_base is None or (isinstance(seed_base, int) and not isinstance(seed_base, bool)),
                   "seeds.base", f"must be an integer (got {seed_base!r})")
    fixed = _check_set(raw.get("set", []), found, "set")
    figures = raw.get("figures", []) or []
    if found.need(isinstance(figures, list), "figures", "must be a list of figure specs"):
        for i, f in enumerate(figures):
            found.need(isinstance(f, dict) and f.get("kind") in FIGURE_KINDS, f"figures.{i}.kind",
                       f"must be one of {', '.join(FIGURE_KINDS)}")
    q = raw.get("quick", {}) or {}
    if found.need(isinstance(q, dict), "quick", "must be a mapping of what --quick changes"):
        _check_quick(q, axes, found)
    ta = raw.get("target_accuracy")
    found.need(ta is None or (isinstance(ta, (int, float)) and not isinstance(ta, bool) and 0 < ta <= 1),
               "target_accuracy", f"must be a fraction in (0, 1] (got {ta!r})")
    # the warm-up is one rule for every table, summary and figure (analysis/measure.py);
    # older sweep files that state it are fine, another value cannot be applied
    from analysis.measure import WARMUP_ITERATIONS
    wu = raw.get("warmup_iterations", WARMUP_ITERATIONS)
    found.need(wu == WARMUP_ITERATIONS and not isinstance(wu, bool), "warmup_iterations",
               f"the warm-up is fixed at {WARMUP_ITERATIONS} iteration(s) for every metric (README, "
               f"Metrics); remove this field (got {wu!r})")
    if found.problems:
        raise SweepError(source, problems=found.problems)
    sw = Sweep(name=name, source=source, base=base, axes=axes, mode=mode, cross=list(cross),
               repetitions=reps, seed_policy=policy, seed_base=seed_base, fixed=fixed,
               figures=figures, output=str(raw.get("output", "results")), quick=q,
               target_accuracy=ta, exclude=list(exclude))
    if quick:
        sw = apply_quick(sw)
    shape = _shape_problems(sw)
    if shape:
        raise SweepError(source, problems=shape)
    return sw


def _check_quick(q: dict, axes: dict | None, found: _Found) -> None:
    """The quick block, whether or not --quick is given: it is part of the file."""
    found.need(set(q) <= QUICK_KEYS, "quick", f"may only change {', '.join(sorted(QUICK_KEYS))}")
    if "axes" in q:
        quick_axes = _check_axes(q["axes"], found, "quick.axes")
        if quick_axes is not None and axes is not None:
            for k in quick_axes:
                found.need(k in axes, f"quick.axes.{k}", f"not an axis of the sweep (axes: "
                           f"{', '.join(axes)})")
    if "repetitions" in q:
        _repetitions(q["repetitions"], found, "quick.repetitions")
    _check_set(q.get("set", []), found, "quick.set")


def apply_quick(sw: Sweep) -> Sweep:
    """The --quick variant (parse_sweep checked the quick block): quick.axes replace those
    axes' values, quick.repetitions the count, quick.set is appended to set."""
    q = sw.quick
    axes = {**sw.axes, **{k: list(v) for k, v in q.get("axes", {}).items()}}
    return replace(sw, axes=axes, repetitions=q.get("repetitions", sw.repetitions),
                   fixed=sw.fixed + list(q.get("set", [])), is_quick=True)


def _shape_problems(sw: Sweep) -> list[Problem]:
    axes_field = "quick.axes" if sw.is_quick else "axes"
    found = _zip_problems(sw, axes_field)
    if not found and sw.exclude and not sw.combinations():
        found = [Problem("exclude", f"leaves no point of {axes_field} to run")]
    return found


def _zip_problems(sw: Sweep, axes_field: str) -> list[Problem]:
    if sw.mode == "zip":
        lens = {k: len(v) for k, v in sw.axes.items() if k not in sw.cross}
        if len(set(lens.values())) > 1:
            rows = {n for k, n in lens.items() if k != LABEL_AXIS}
            if LABEL_AXIS in lens and len(rows) == 1:
                return [Problem(f"{axes_field}.{LABEL_AXIS}", f"needs one label per zipped row: got "
                                f"{lens[LABEL_AXIS]} label(s) for {rows.pop()} rows of "
                                f"{', '.join(k for k in lens if k != LABEL_AXIS)}")]
            return [Problem(axes_field,
                            f"mode zip needs equal-length axes (got {lens}); use mode: product or "
                            f"list the axes to cross in `cross`")]
    if LABEL_AXIS in sw.axes:
        return label_problems(sw)
    return []


def label_problems(sw: Sweep) -> list[Problem]:
    """A label axis (equal lengths already checked): zip mode, not crossed, nor the scheme
    crossed beside it (a label would then name several schemes' series); names by the
    sweep name's rule, one per zipped row; a label named like another row's scheme, or a
    figure's baseline that is no label, would draw a misleading series."""
    quick_labels = sw.is_quick and LABEL_AXIS in (sw.quick.get("axes") or {})
    where = f"{'quick.axes' if quick_labels else 'axes'}.{LABEL_AXIS}"
    if sw.mode != "zip":
        return [Problem(where, "a series label names a zipped row: use mode: zip (the label "
                        "zipped with scheme and its scheme_options)")]
    if LABEL_AXIS in sw.cross:
        return [Problem("cross", f"{LABEL_AXIS!r} cannot be crossed: a label names one zipped row")]
    if "scheme" in sw.cross:
        return [Problem("cross", "'scheme' is crossed but a label names a zipped row: zip the "
                        "scheme with the labels (remove it from cross)")]
    if not [a for a in sw.axes if a not in sw.cross and a != LABEL_AXIS]:
        return [Problem(where, "labels name the rows of the zipped axes, and no other axis is "
                        "zipped: zip them with scheme (and scheme_options)")]
    labels = sw.axes[LABEL_AXIS]
    out = [Problem(f"{where}.{i}", f"use only {LABEL_RULE} (got {v!r})")
           for i, v in enumerate(labels) if not _is_name(v)]
    if out:
        return out
    seen: dict[str, int] = {}
    for i, v in enumerate(labels):
        if v in seen:
            out.append(Problem(f"{where}.{i}", f"{v!r} already names row {seen[v]}: give every "
                               f"zipped row its own label"))
        seen.setdefault(v, i)
    schemes = sw.axes.get("scheme")
    if schemes is not None and len(schemes) == len(labels):
        for i, (v, s) in enumerate(zip(labels, schemes)):
            if v in schemes and v != s:
                out.append(Problem(f"{where}.{i}", f"{v!r} is the name of a scheme of this sweep "
                                   f"but its row runs {s!r}: name it after what it runs"))
    for i, f in enumerate(sw.figures):
        base = f.get("baseline") if isinstance(f, dict) else None
        if base is not None and base not in labels:
            out.append(Problem(f"figures.{i}.baseline", f"{base!r} is no label of the sweep"
                               f"{' --quick' if sw.is_quick else ''}: with labels, the baseline "
                               f"names one (labels: {', '.join(map(str, labels))})"))
    return out


def load_sweep(path, quick: bool = False) -> Sweep:
    source = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise SweepError(source, "", f"cannot read the file ({e.strerror})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SweepError(source, "", yaml_problem(e)) from None
    return parse_sweep(raw, source, quick=quick)


# ---------------------------------------------------------------- the points' scenarios
def point_problems(sw: Sweep, points: list[Point], topology: bool = False,
                   seen: set[str] | None = None) -> list[tuple[Point, list[str]]]:
    """Each distinct point (repetitions differ only by seed) with its scenario's problems,
    each naming the base scenario file; with `topology`, the graph build's too (only of a
    scenario that loads: the build reads every field). seen: scenarios already checked
    (shared across calls: the quick variant repeats the full sweep's points)."""
    from testbed.scenario import ScenarioError, load_scenario
    out, seen = [], set() if seen is None else seen
    for p in points:
        k = json.dumps([sw.fixed, p.params], sort_keys=True)
        if k in seen:
            continue
        seen.add(k)
        try:
            scn = load_scenario(sw.base, sw.fixed + p.overrides())
        except ScenarioError as e:
            out.append((p, [f"{e.source}: {line}" for line in e.problems]))
            continue
        problems = []
        if topology:
            from topologies.graph import build_graph
            try:
                build_graph(scn)
            except ValueError as e:
                problems.append(f"{sw.base}: {e}")
        out.append((p, problems))
    return out


MAX_POINTS_NAMED = 5


def grouped_problems(checked: list[tuple[str, Point, list[str]]]) -> list[str]:
    """One line per distinct problem of the points (label, point, problems): `every point:`
    when all share it (a problem of the base scenario, or of `set`), else the point, or the
    points with the axis values they have in common (most likely its cause)."""
    where: dict[str, list[tuple[str, Point]]] = {}
    for label, p, problems in checked:
        for line in problems:
            where.setdefault(line, []).append((label, p))
    lines = []
    for line, having in where.items():
        if len(having) == len(checked) > 1:
            lines.append(f"every point: {line}")
        elif len(having) == 1:
            label, p = having[0]
            lines.append(f"point {label} {p.params}: {line}")
        else:
            first = having[0][1].params
            common = {k: v for k, v in first.items() if all(p.params.get(k) == v for _, p in having)}
            names = ", ".join(label for label, _ in having[:MAX_POINTS_NAMED])
            if len(having) > MAX_POINTS_NAMED:
                names += f" and {len(having) - MAX_POINTS_NAMED} more"
            lines.append(f"points {names}{f' {common}' if common else ''}: {line}")
    return lines


def check_points_valid(sw: Sweep, points: list[Point], topology: bool = False) -> None:
    """Every point's scenario must load (and with `topology`, its graph build) before the
    first run starts (a typo in an axis should not surface an hour in): SweepError with
    every problem of every point."""
    lines = grouped_problems([(p.point_id, p, found) for p, found in point_problems(sw, points, topology)])
    if lines:
        raise SweepError(sw.source, problems=lines)


def is_sweep_file(path) -> bool:
    """A YAML mapping with `axes` and `base` is a sweep, not a scenario."""
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(raw, dict) and "axes" in raw and "base" in raw


def validate_sweep(path) -> None:
    """The sweep file, its quick variant and every point's scenario (and topology) load:
    SweepError with every problem of them all."""
    sweeps, problems = [], []
    for quick in (False, True):
        try:
            sweeps.append(load_sweep(path, quick=quick))
        except SweepError as e:
            problems += e.problems
    if problems:
        # the points are made from the sweep file: while it has problems, they are not judged
        raise SweepError(str(path), problems=problems)
    checked, seen = [], set()
    for sw in sweeps:
        for p, found in point_problems(sw, sw.points(_base_seed(sw)), True, seen):
            checked.append(("quick " * sw.is_quick + p.point_id, p, found))
    lines = grouped_problems(checked)
    if lines:
        raise SweepError(str(path), problems=lines)


def _base_seed(sw: Sweep) -> int:
    """The base scenario's seed (the points' seeds derive from it). A base that does not
    load shows in every point's problems; the seed changes none of them, so 0 stands in."""
    from testbed.scenario import ScenarioError, load_scenario
    try:
        return load_scenario(sw.base, sw.fixed).seed
    except ScenarioError:
        return 0
