"""The parts of a scenario that passed the schema, when the whole did not.

The whole-scenario checks (testbed/scenario_checks.py) still run on a file with schema
problems, on the parts that are valid, so that one run reports every problem. Their inputs
are named at two levels: a top-level field (`stragglers`), or a field of a top-level model
(`wan.edges`) or of every entry of a top-level list of models (`datacenters.name`: the
name of every datacenter). An input is valid when no schema error lies inside it; the
partial scenario holds the valid inputs, validated again on their own (the same type and
constraints they just passed inside the whole), and defaults where fields failed: no check
may read those, which is what the gate in scenario_checks ensures.
"""
from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from testbed.schema_models import Scenario


def valid_part(raw: dict, errors: list[dict]) -> tuple[Scenario, set[str]]:
    """A partial Scenario (built without validation) and the names of its valid inputs."""
    if any(not err["loc"] for err in errors):   # the scenario as a whole failed: nothing is known good
        return Scenario.model_construct(), set()
    whole_bad: set[str] = set()                 # top-level fields with an error not in one sub-field
    broken: dict[str, set[str]] = {}            # top-level field -> its sub-fields with errors
    for err in errors:
        top = err["loc"][0]
        if top not in Scenario.model_fields:    # an unknown top-level field breaks no other
            continue
        sub = _sub_field(Scenario.model_fields[top].annotation, err["loc"][1:])
        if sub is None:
            whole_bad.add(top)
        else:
            broken.setdefault(top, set()).add(sub)
    values: dict[str, Any] = {}
    valid: set[str] = set()
    for name, info in Scenario.model_fields.items():
        if name in whole_bad:
            continue
        if name in broken:
            part = _partial(info.annotation, raw.get(name), broken[name])
            if part is not None:
                values[name], subs = part
                valid |= {f"{name}.{s}" for s in subs}
            continue
        if name in raw:   # absent: model_construct fills the default
            try:
                values[name] = _validate(info, raw[name])
            except ValidationError:
                continue
        valid.add(name)
    return Scenario.model_construct(**values), valid


def is_valid(name: str, valid: set[str]) -> bool:
    """Whether an input (`wan`, `wan.edges`, `datacenters.name`) passed the schema."""
    return name in valid or name.split(".", 1)[0] in valid


def _validate(info, value):
    return TypeAdapter(typing.Annotated[info.annotation, info]).validate_python(value)


def _item_model(annotation) -> tuple[type[BaseModel], bool] | None:
    """(model, is a list of it) for a field holding a model or a list of models, else None
    (scalars, mappings and unions are valid or not as a whole)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item, True
    return None


def _sub_field(annotation, rest: tuple) -> str | None:
    """The sub-field an error inside a top-level field lies in; None when it concerns the
    field (or a list entry) as a whole, or a member of a union."""
    shape = _item_model(annotation)
    if shape is None:
        return None
    model, many = shape
    if many:
        if not rest or not isinstance(rest[0], int):
            return None
        rest = rest[1:]
    if not rest or not isinstance(rest[0], str) or rest[0].startswith("<"):
        return None
    return rest[0]   # may be an unknown field of the model: then it breaks no known one


def _partial(annotation, value, broken: set[str]):
    """The top-level field with only its valid sub-fields (per entry for a list), and their
    names; None when a part cannot be rebuilt (then the field counts as invalid)."""
    model, many = _item_model(annotation)
    good = [f for f in model.model_fields if f not in broken]
    entries = value if many else [value]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return None
    built = []
    for entry in entries:
        try:
            fields = {f: _validate(model.model_fields[f], entry[f]) for f in good if f in entry}
        except ValidationError:
            return None
        built.append(model.model_construct(**fields))
    return (built if many else built[0]), good
