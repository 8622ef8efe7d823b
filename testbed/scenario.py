"""Load, override, check and dump scenario files.

`load_scenario(path, overrides)` is the one entry point: YAML -> `--set a.b.c=value`
overrides -> pydantic schema (testbed/schema_models.py) -> whole-scenario checks. Every
problem raises ScenarioError whose str() is one line naming the file, the field path and
what to do, e.g. `scenarios/x.yaml: wan.default.bandwidth_mbps: must be > 0 (got -5)`.
"""
from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import BaseModel, ValidationError

from testbed.schema_models import (HTB_MAX_MBPS, MAX_DATACENTERS, MAX_WORKERS_TOTAL,
                                   MIN_DATACENTERS, RandomSchedule, Scenario)
from topologies.graph import host_id, wan_edge_pairs   # pure graph logic, re-exported

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario", "dump_scenario",
           "wan_edge_pairs", "apply_overrides"]


class ScenarioError(ValueError):
    """One clear, single-line problem with a scenario: file, field path, problem."""

    def __init__(self, source: str, field: str, problem: str):
        self.source, self.field, self.problem = source, field, problem
        where = f"{field}: " if field else ""
        super().__init__(f"{source}: {where}{problem}")


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
        raise _to_scenario_error(e, raw, source) from None
    check_scenario(scn, source, emulation_limits)
    return scn


def _parse_yaml(text: str, source: str) -> dict:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        ctx_mark = getattr(e, "context_mark", None)
        if ctx_mark is not None and getattr(e, "context", None) and mark is not None \
                and ctx_mark.line != mark.line:
            problem += f" ({e.context} at line {ctx_mark.line + 1})"
        raise ScenarioError(source, "", f"invalid YAML{where}: {problem}") from None
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
    for ov in overrides:
        if "=" not in ov:
            raise ScenarioError(source, f"--set {ov}", "expected key=value, e.g. wan.default.bandwidth_mbps=50")
        key, text = ov.split("=", 1)
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text
        _set_path(raw, key.strip(), value, source, ov)
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


# ---------------------------------------------------------------- pydantic errors -> one line
_UNIT_WORDS = {"mbps": "Mbps", "ms": "ms", "pct": "percent", "s": "seconds", "bytes": "bytes"}


def _format_loc(loc) -> str:
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and p.startswith("<")))


def _to_scenario_error(e: ValidationError, raw: dict, source: str) -> ScenarioError:
    err = e.errors(include_url=False)[0]
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("<"))]
    # Pydantic appends the failing member type to locations inside unions (e.g. 'int').
    loc = [p for p in loc if p not in ("int", "str", "float", "list[SchedulePoint]")]
    path = _format_loc(loc)
    typ, given = err["type"], err.get("input")
    ctx = err.get("ctx") or {}
    field = str(loc[-1]) if loc else ""
    if typ == "missing":
        return ScenarioError(source, path, "required field is missing")
    if typ == "extra_forbidden":
        parent = _format_loc(loc[:-1]) or "the scenario"
        fields = _model_fields_at(loc[:-1], raw)
        hint = ""
        close = difflib.get_close_matches(field, fields, n=1, cutoff=0.5)
        if close:
            hint = f"; did you mean {close[0]!r}?"
            if close[0].startswith(field + "_"):
                hint += " (units are part of field names)"
        return ScenarioError(source, path, f"unknown field {field!r} in {parent}{hint} "
                                           f"(fields: {', '.join(fields)})")
    if field == "worker" and typ in ("int_type", "string_type", "int_from_float"):
        return ScenarioError(source, path, f"must be a worker index (from 0) or a host id like "
                                           f"h1r1w2 (got {given!r})")
    if typ == "string_type":
        return ScenarioError(source, path, f"must be a string (got {given!r}); quote it in YAML")
    if typ in ("float_parsing", "int_parsing", "float_type", "int_type", "int_from_float"):
        want = "an integer" if typ.startswith("int") else "a number"
        msg = f"must be {want} (got {given!r})"
        unit = field.rsplit("_", 1)[-1] if "_" in field else ""
        if isinstance(given, str) and unit in _UNIT_WORDS:
            msg += f"; the unit ({_UNIT_WORDS[unit]}) is in the field name, write the number alone"
        return ScenarioError(source, path, msg)
    if typ in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
              "less_than_equal": "<="}[typ]
        bound = next(iter(ctx.values()))
        bound = f"{bound:g}" if isinstance(bound, (int, float)) else bound
        return ScenarioError(source, path, f"must be {op} {bound} (got {given!r})")
    if typ == "literal_error":
        known = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return ScenarioError(source, path, f"unknown {field} {given!r} (known: {known})")
    if typ == "unknown_choice":
        key = ctx.get("key", field)
        value = given.get(key) if isinstance(given, dict) else given
        return ScenarioError(source, f"{path}.{key}" if path else key,
                             f"unknown {key} {value!r} (known: {ctx.get('known')})")
    if typ == "value_error":
        return ScenarioError(source, path, str(ctx.get("error", err["msg"])))
    if typ in ("list_type", "dict_type", "model_type", "model_attributes_type"):
        kind = "a list" if typ == "list_type" else "a mapping"
        return ScenarioError(source, path, f"must be {kind} (got {given!r})")
    if typ == "string_pattern_mismatch" and field == "name":
        return ScenarioError(source, path, f"use only letters, digits, '_', '.' and '-' "
                                           f"(it names the results folder; got {given!r})")
    if typ == "string_too_long" or typ == "string_too_short" or typ == "string_pattern_mismatch":
        return ScenarioError(source, path, f"{err['msg'].lower()} (got {given!r})")
    msg = err["msg"]
    return ScenarioError(source, path, f"{msg[0].lower()}{msg[1:]} (got {given!r})")


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


# ---------------------------------------------------------------- whole-scenario checks
def check_scenario(scn: Scenario, source: str, emulation_limits: bool = True) -> None:
    """Checks that need more than one field. Raises ScenarioError on the first problem.
    emulation_limits=False skips the limits of this machine's emulation (load_scenario)."""
    def fail(path, problem):
        raise ScenarioError(source, path, problem)

    n = len(scn.datacenters)
    top = MAX_DATACENTERS if emulation_limits else 254   # 10.D.x.x: the addressing plan's limit
    if not MIN_DATACENTERS <= n <= top:
        fail("datacenters", f"{n} datacenter{'' if n == 1 else 's'} given; this testbed supports "
                            f"{MIN_DATACENTERS} to {top}")
    names = [dc.name for dc in scn.datacenters]
    for i, name in enumerate(names):
        if names.index(name) != i:
            fail(f"datacenters.{i}.name", f"duplicate datacenter name {name!r}")
    total = scn.total_workers
    if emulation_limits and total > MAX_WORKERS_TOTAL:
        per = ", ".join(f"{dc.name}: {dc.racks}x{dc.workers_per_rack}" for dc in scn.datacenters)
        fail("datacenters", f"{total} workers in total ({per}); at most {MAX_WORKERS_TOTAL} "
                            f"fit on this machine: lower racks or workers_per_rack")
    if (scn.iterations is None) == (scn.duration_s is None):
        fail("iterations", "set exactly one of iterations or duration_s"
             + (" (both are set)" if scn.iterations is not None else ""))

    known = ", ".join(names)
    if scn.wan.hub is not None:
        if scn.wan.topology != "star":
            fail("wan.hub", f"hub only applies to topology 'star' (topology is {scn.wan.topology!r})")
        if scn.wan.hub not in names:
            fail("wan.hub", f"unknown datacenter {scn.wan.hub!r} (datacenters: {known})")
    seen = set()
    for k, e in enumerate(scn.wan.edges):
        for end in ("a", "b"):
            if getattr(e, end) not in names:
                fail(f"wan.edges.{k}.{end}", f"unknown datacenter {getattr(e, end)!r} (datacenters: {known})")
        if e.a == e.b:
            fail(f"wan.edges.{k}", f"an edge needs two different datacenters (got {e.a!r} twice)")
        pair = frozenset((e.a, e.b))
        if pair in seen:
            fail(f"wan.edges.{k}", f"edge {e.a}-{e.b} is listed twice")
        seen.add(pair)
    if scn.wan.topology == "edges":
        if not scn.wan.edges:
            fail("wan.edges", "topology 'edges' needs a list of edges {a, b}")
        _check_connected(scn, fail)
    else:
        present = set(wan_edge_pairs(scn))
        for k, e in enumerate(scn.wan.edges):
            pair = tuple(sorted((scn.dc_index(e.a), scn.dc_index(e.b))))
            if pair not in present:
                fail(f"wan.edges.{k}", f"edge {e.a}-{e.b} is not in the {scn.wan.topology} topology; "
                                       f"use topology: edges to list edges explicitly")

    for k, s in enumerate(scn.stragglers.persistent):
        if s.dc is not None and s.dc not in names:
            fail(f"stragglers.persistent.{k}.dc", f"unknown datacenter {s.dc!r} (datacenters: {known})")
        if isinstance(s.worker, int) and not 0 <= s.worker < total:
            fail(f"stragglers.persistent.{k}.worker",
                 f"worker index {s.worker} out of range (workers are 0..{total - 1})")
        if isinstance(s.worker, str) and s.worker not in _host_ids(scn):
            fail(f"stragglers.persistent.{k}.worker",
                 f"unknown worker {s.worker!r} (host ids look like h1r1w1; see docs/addressing.md)")

    if emulation_limits:
        _check_rates(scn, fail)
    _check_scheme_options(scn, fail)


def _host_ids(scn: Scenario) -> set[str]:
    return {host_id(d, r, w) for d, dc in enumerate(scn.datacenters, 1)
            for r in range(1, dc.racks + 1) for w in range(1, dc.workers_per_rack + 1)}


def _check_connected(scn: Scenario, fail) -> None:
    import networkx as nx
    n = len(scn.datacenters)
    wan = nx.Graph(wan_edge_pairs(scn))
    wan.add_nodes_from(range(1, n + 1))
    reach = nx.node_connected_component(wan, 1)
    if len(reach) != n:
        cut = [scn.datacenters[i - 1].name for i in range(1, n + 1) if i not in reach]
        fail("wan.edges", f"the WAN is not connected: {', '.join(cut)} cannot reach "
                          f"{scn.datacenters[0].name}; add edges")


def _check_rates(scn: Scenario, fail) -> None:
    """Mininet's htb ignores rates above 1000 Mbps (a log line only): reject them here."""
    s = scn.time_dilation

    def check(path, mbps):
        if mbps is not None and mbps / s > HTB_MAX_MBPS:
            need = mbps / HTB_MAX_MBPS
            fail(path, f"{mbps:g} Mbps / time_dilation {s:g} = {mbps / s:g} Mbps emulated, above "
                       f"the {HTB_MAX_MBPS:g} Mbps Mininet's htb can apply (it would silently ignore "
                       f"it); set time_dilation >= {need:g} to emulate this rate")

    def check_schedule(path, sched):
        if isinstance(sched, RandomSchedule):
            check(f"{path}.max_mbps", sched.max_mbps)
        elif sched:
            for k, p in enumerate(sched):
                check(f"{path}.{k}.mbps", p.mbps)

    check("intra_dc.access.bandwidth_mbps", scn.intra_dc.access.bandwidth_mbps)
    check("intra_dc.uplink.bandwidth_mbps", scn.intra_dc.uplink.bandwidth_mbps)
    check("wan.default.bandwidth_mbps", scn.wan.default.bandwidth_mbps)
    check_schedule("wan.bandwidth_schedule", scn.wan.bandwidth_schedule)
    for k, e in enumerate(scn.wan.edges):
        check(f"wan.edges.{k}.bandwidth_mbps", e.bandwidth_mbps)
        check_schedule(f"wan.edges.{k}.bandwidth_schedule", e.bandwidth_schedule)


def _check_scheme_options(scn: Scenario, fail) -> None:
    """scheme_options against the scheme's own options model (schemes/<name>/options.py)."""
    import schemes
    model = schemes.get(scn.scheme).options
    try:
        model.model_validate(scn.scheme_options)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = [str(p) for p in err["loc"] if not str(p).startswith(("literal[", "function-"))]
        field = loc[0] if loc else ""
        path = ".".join(["scheme_options"] + loc[:1])
        known = ", ".join(model.model_fields)
        if err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(field, list(model.model_fields), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            fail(path, f"unknown option {field!r} for scheme {scn.scheme}{hint} (options: {known})")
        msg = err["msg"].removeprefix("Value error, ")
        fail(path, f"{msg} (got {err.get('input')!r})" if field else f"{msg} (options: {known})")
