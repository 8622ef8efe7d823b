"""Load, override, check and dump scenario files.

`load_scenario(path, overrides)` is the one entry point: YAML -> `--set a.b.c=value`
overrides -> pydantic schema (testbed/schema_models.py) -> whole-scenario checks
(testbed/scenario_checks.py). Every problem the file has is collected and raised at once
as one ScenarioError: one line per problem naming the file, the field path and what to do,
e.g. `scenarios/x.yaml: wan.default.bandwidth_mbps: must be > 0 (got -5)`, then the count
(testbed/problems.py).
"""
from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import BaseModel, ValidationError

from testbed.problems import FileProblems, Problem, yaml_problem
from testbed.scenario_checks import check_scenario
from testbed.schema_models import Scenario
from testbed.schema_partial import valid_part
from topologies.graph import wan_edge_pairs   # pure graph logic, re-exported

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario", "dump_scenario",
           "wan_edge_pairs", "apply_overrides"]


class ScenarioError(FileProblems):
    """Every problem of a scenario: `problems` (one `field.path: problem` line each), str()
    one line per problem naming the file, then the count (testbed/problems.py)."""


# ---------------------------------------------------------------- loading
def load_scenario(path, overrides: Iterable[str] = (), emulation_limits: bool = True,
                  scheme: str | None = None) -> Scenario:
    """A validated scenario. emulation_limits=False (run.py predict only) skips the checks
    that protect this machine's emulation (at most MAX_DATACENTERS datacenters and
    MAX_WORKERS_TOTAL workers, htb's rate ceiling), never the others. scheme: the same
    scenario with another scheme (its scheme_options dropped unless it is the file's)."""
    source = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ScenarioError(source, "", f"cannot read the file ({e.strerror})") from None
    return parse_scenario(text, source, overrides, emulation_limits, scheme)


def parse_scenario(text: str, source: str = "<string>", overrides: Iterable[str] = (),
                   emulation_limits: bool = True, scheme: str | None = None) -> Scenario:
    raw = _parse_yaml(text, source)
    raw = apply_overrides(raw, overrides, source)
    if scheme is not None and scheme != raw.get("scheme"):
        raw = {k: v for k, v in raw.items() if k != "scheme_options"}
        raw["scheme"] = scheme
    try:
        scn = Scenario.model_validate(raw)
    except ValidationError as e:
        # The schema's problems, then those the whole-scenario checks find in the parts
        # that did validate (testbed/schema_partial.py; a check reading an invalid part is
        # skipped: testbed/scenario_checks.py).
        part, valid = valid_part(raw, e.errors(include_url=False))
        problems = schema_problems(e, raw) + check_scenario(part, emulation_limits, valid)
        raise ScenarioError(source, problems=problems) from None
    problems = check_scenario(scn, emulation_limits)
    if problems:
        raise ScenarioError(source, problems=problems)
    return scn


def _parse_yaml(text: str, source: str) -> dict:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ScenarioError(source, "", yaml_problem(e)) from None
    if raw is None:
        raise ScenarioError(source, "", "the file is empty; a scenario needs at least name, "
                                        "datacenters and scheme")
    if not isinstance(raw, dict):
        raise ScenarioError(source, "", f"the top level must be a mapping of fields "
                                        f"(got {type(raw).__name__})")
    return raw


def dump_scenario(scn: Scenario) -> str:
    """The resolved scenario (defaults filled in) as YAML; load_scenario reads it back."""
    return yaml.safe_dump(scn.model_dump(mode="json"), sort_keys=False, default_flow_style=None)


# ---------------------------------------------------------------- --set overrides
def apply_overrides(raw: dict, overrides: Iterable[str], source: str) -> dict:
    """Apply `a.b.c=value` overrides (value parsed as a YAML scalar/flow value) to a copy
    of the raw mapping. Paths are checked against the schema, so a typo is an error
    rather than a silently ignored field."""
    import copy
    raw = copy.deepcopy(raw)
    problems = []
    for ov in overrides:
        if "=" not in ov:
            problems.append(Problem(f"--set {ov}", "expected key=value, e.g. wan.default.bandwidth_mbps=50"))
            continue
        key, text = ov.split("=", 1)
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text
        try:
            _set_path(raw, key.strip(), value, source, ov)
        except ScenarioError as e:
            problems.append(Problem(e.field, e.problem))
    if problems:
        # Every bad override is reported, and the scenario is not validated: without the
        # values the command line meant to set, its problems may be ones those would fix.
        raise ScenarioError(source, problems=problems)
    return raw


def _set_path(raw: dict, key: str, value: Any, source: str, ov: str) -> None:
    parts = key.split(".")
    node: Any = raw
    shape: Any = Scenario
    for depth, part in enumerate(parts):
        here = ".".join(parts[:depth]) or "the scenario"
        last = depth == len(parts) - 1
        if isinstance(shape, type) and issubclass(shape, BaseModel):
            fields = shape.model_fields
            if part not in fields:
                raise ScenarioError(source, f"--set {ov}",
                                    f"no field {part!r} in {here} (fields: {', '.join(fields)})")
            if not isinstance(node, dict):
                raise ScenarioError(source, f"--set {ov}", f"{here} is not a mapping in the file")
            if last:
                node[part] = value
                return
            child = node.get(part)
            shape = _shape_of(fields[part].annotation, child)
            if child is None:
                child = [] if shape == "list" else {}
                node[part] = child
            node = child
        elif isinstance(shape, tuple) and shape[0] == "list":
            if not part.isdigit():
                raise ScenarioError(source, f"--set {ov}", f"{here} is a list: use an index, e.g. {here}.0")
            idx = int(part)
            if not isinstance(node, list) or idx >= len(node):
                n = len(node) if isinstance(node, list) else 0
                raise ScenarioError(source, f"--set {ov}",
                                    f"{here} has {n} entries (indices 0..{n - 1}); no index {idx}")
            if last:
                node[idx] = value
                return
            child = node[idx]
            shape = _shape_of(shape[1], child)
            node = child
        elif shape == "dict":
            if not isinstance(node, dict):
                raise ScenarioError(source, f"--set {ov}", f"{here} is not a mapping in the file")
            if last:
                node[part] = value
                return
            node = node.setdefault(part, {})
        else:
            raise ScenarioError(source, f"--set {ov}", f"{here} is a value, it has no field {part!r}")


def _shape_of(annotation: Any, current: Any):
    """What a field holds: a model class, ('list', item annotation), 'dict' or 'scalar'.
    Unions (optional fields, tagged unions) resolve by the value present in the file."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _shape_of(typing.get_args(annotation)[0], current)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        shapes = [_shape_of(a, current) for a in options]
        models = [s for s in shapes if isinstance(s, type)]
        for m in models:   # a tagged union: pick the member whose tag field matches the file
            for tag_field in ("kind", "model"):
                lit = m.model_fields.get(tag_field)
                if lit is not None and isinstance(current, dict) and \
                        current.get(tag_field) in typing.get_args(lit.annotation):
                    return m
        if isinstance(current, list):
            for s in shapes:
                if isinstance(s, tuple):
                    return s
        if models:
            return models[0] if len(models) == 1 or not isinstance(current, dict) else \
                next((m for m in models if set(current) <= set(m.model_fields)), models[0])
        return next((s for s in shapes if s != "scalar"), "scalar")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if origin is list:
        return ("list", typing.get_args(annotation)[0])
    if origin is dict:
        return "dict"
    return "scalar"


# ---------------------------------------------------------------- pydantic errors -> problems
_UNIT_WORDS = {"mbps": "Mbps", "ms": "ms", "pct": "percent", "s": "seconds", "bytes": "bytes"}


def _format_loc(loc) -> str:
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and p.startswith("<")))


MISSING = "required field is missing"


def schema_problems(e: ValidationError, raw: dict) -> list[Problem]:
    """Every problem pydantic found (it checks every field in one pass), one per field path:
    a value that fits no member of a union fails once per member, and the first says it.
    A misspelled required field is reported once, as the unknown field (whose line names the
    field it meant), not a second time as missing."""
    problems, paths, meant = [], set(), set()
    for err in e.errors(include_url=False):
        loc = _clean_loc(err)
        if err["type"] == "extra_forbidden":
            close, _ = _close_field(loc, raw)
            if close:
                meant.add(_format_loc(loc[:-1] + [close]))
        p = _schema_problem(err, loc, raw)
        if p.path not in paths:
            paths.add(p.path)
            problems.append(p)
    return [p for p in problems if not (p.text == MISSING and p.path in meant)]


def _clean_loc(err: dict) -> list:
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("<"))]
    # Pydantic appends the failing member type to locations inside unions (e.g. 'int').
    return [p for p in loc if p not in ("int", "str", "float", "list[SchedulePoint]")]


def _close_field(loc: list, raw: dict) -> tuple[str | None, list[str]]:
    """For an unknown field at loc: the known field it most likely meant, and the known ones."""
    fields = _model_fields_at(loc[:-1], raw)
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.5) if loc else []
    return (close[0] if close else None), fields


def _schema_problem(err: dict, loc: list, raw: dict) -> Problem:
    path = _format_loc(loc)
    typ, given = err["type"], err.get("input")
    ctx = err.get("ctx") or {}
    field = str(loc[-1]) if loc else ""
    if typ == "missing":
        return Problem(path, MISSING)
    if typ == "extra_forbidden":
        parent = _format_loc(loc[:-1]) or "the scenario"
        close, fields = _close_field(loc, raw)
        hint = ""
        if close:
            hint = f"; did you mean {close!r}?"
            if close.startswith(field + "_"):
                hint += " (units are part of field names)"
        return Problem(path, f"unknown field {field!r} in {parent}{hint} "
                       f"(fields: {', '.join(fields)})")
    if field == "worker" and typ in ("int_type", "string_type", "int_from_float"):
        return Problem(path, f"must be a worker index (from 0) or a host id like "
                       f"h1r1w2 (got {given!r})")
    if typ == "string_type":
        return Problem(path, f"must be a string (got {given!r}); quote it in YAML")
    if typ in ("float_parsing", "int_parsing", "float_type", "int_type", "int_from_float"):
        want = "an integer" if typ.startswith("int") else "a number"
        msg = f"must be {want} (got {given!r})"
        unit = field.rsplit("_", 1)[-1] if "_" in field else ""
        if isinstance(given, str) and unit in _UNIT_WORDS:
            msg += f"; the unit ({_UNIT_WORDS[unit]}) is in the field name, write the number alone"
        return Problem(path, msg)
    if typ in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
              "less_than_equal": "<="}[typ]
        bound = next(iter(ctx.values()))
        bound = f"{bound:g}" if isinstance(bound, (int, float)) else bound
        return Problem(path, f"must be {op} {bound} (got {given!r})")
    if typ == "literal_error":
        known = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return Problem(path, f"unknown {field} {given!r} (known: {known})")
    if typ == "unknown_choice":
        key = ctx.get("key", field)
        value = given.get(key) if isinstance(given, dict) else given
        return Problem(f"{path}.{key}" if path else key,
                       f"unknown {key} {value!r} (known: {ctx.get('known')})")
    if typ == "value_error":
        return Problem(path, str(ctx.get("error", err["msg"])))
    if typ in ("list_type", "dict_type", "model_type", "model_attributes_type"):
        kind = "a list" if typ == "list_type" else "a mapping"
        return Problem(path, f"must be {kind} (got {given!r})")
    if typ == "string_pattern_mismatch" and field == "name":
        return Problem(path, f"use only letters, digits, '_', '.' and '-' "
                       f"(it names the results folder; got {given!r})")
    if typ == "string_too_long" or typ == "string_too_short" or typ == "string_pattern_mismatch":
        return Problem(path, f"{err['msg'].lower()} (got {given!r})")
    msg = err["msg"]
    return Problem(path, f"{msg[0].lower()}{msg[1:]} (got {given!r})")


def _model_fields_at(loc, raw) -> list[str]:
    shape: Any = Scenario
    node: Any = raw
    for part in loc:
        if isinstance(shape, type) and issubclass(shape, BaseModel):
            node = node.get(part) if isinstance(node, dict) else None
            shape = _shape_of(shape.model_fields[part].annotation, node)
        elif isinstance(shape, tuple):
            node = node[part] if isinstance(node, list) and isinstance(part, int) and part < len(node) else None
            shape = _shape_of(shape[1], node)
        else:
            return []
    return list(shape.model_fields) if isinstance(shape, type) else []
