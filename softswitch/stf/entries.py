"""STF `add`/`setdefault` -> simple_switch_CLI commands, from what the target says the program has.

An STF file names tables, key fields and actions loosely (a suffix of the runtime name, `h$0`
for the stack element `h[0]`, `valid` or `.valid` for an isValid() key), gives ternary values
as hex with `*` don't-care digits and lpm values with or without a prefix length, and omits
keys it does not care about. Resolving that needs the program's tables: each target describes
them as a `ProgramInfo` (BMv2 from p4c's JSON, the softswitch from its loaded tables).

The rules follow p4c's BMv2 STF runner so a test means the same thing on both targets:
- a ternary value's mask covers the digits written (F per hex digit, 0 per `*`): `0x**01` on a
  32-bit key matches the low 16 bits against 0x0001 and ignores the rest;
- an lpm value without `/LEN` gets a prefix of its written digits (`*` digits excluded);
- keys not mentioned match anything (ternary 0&&&0, lpm 0/0; exact 0, range full);
- an STF priority p becomes BMv2 priority 10000 - p (STF: higher wins; BMv2: lower wins) and is
  sent only to tables that take priorities;
- action arguments are sent in the action's parameter order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from softswitch.stf.grammar import Add, SetDefault

PRIORITY_BASE = 10000


class EntryError(ValueError):
    """An STF entry that cannot be built from the target's tables (names the thing not found)."""


@dataclass(frozen=True)
class KeyInfo:
    name: str
    match_kind: str        # exact, lpm, ternary, range, optional, valid
    width: int | None = None


@dataclass(frozen=True)
class ActionInfo:
    name: str
    params: tuple = ()     # (name, width), in order


@dataclass
class TableInfo:
    name: str
    keys: list
    actions: list          # ActionInfo
    needs_priority: bool
    const_entries: bool = False


@dataclass
class ProgramInfo:
    tables: list = field(default_factory=list)

    def table(self, name: str) -> TableInfo:
        return _resolve(name, self.tables, "table", "the program's tables")


def _resolve(name, items, kind, where):
    exact = [x for x in items if x.name == name]
    if exact:
        return exact[0]
    found = [x for x in items if x.name.endswith("." + name)]
    if not found:   # p4c's runner also accepts any plain suffix
        found = [x for x in items if x.name.endswith(name)]
    if len(found) == 1:
        return found[0]
    names = ", ".join(sorted(x.name for x in (found or items))) or "none"
    if found:
        raise EntryError(f"{kind} {name!r} is ambiguous: {names}")
    raise EntryError(f"no {kind} {name!r} among {where}: {names}")


def _canonical(name: str) -> str:
    """One spelling for the forms a key name takes: `h$0`/`h[0]`, `x.valid`/`x.$valid$`/`x.isValid()`."""
    name = name.strip('"')
    name = re.sub(r"\$([0-9]+)", r"[\1]", name)
    name = re.sub(r"\.isValid\(\)$", ".$valid$", name)
    name = re.sub(r"(^|\.)valid$", r"\1$valid$", name)
    return name.removesuffix("$") if name.endswith("$") and not name.endswith("$valid$") else name


def resolve_key(table: TableInfo, name: str) -> int:
    """Index of the key STF calls `name`: its full name, or a dot-suffix of it."""
    want = _canonical(name)
    names = [_canonical(k.name) for k in table.keys]
    hits = [i for i, n in enumerate(names) if n == want]
    if not hits:
        hits = [i for i, n in enumerate(names) if n.endswith("." + want)]
    if not hits and want == "$valid$":
        hits = [i for i, n in enumerate(names) if n.endswith("$valid$")]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(k.name for k in table.keys) or "none"
    if hits:
        raise EntryError(f"table {table.name}: key {name!r} is ambiguous among its keys: {known}")
    raise EntryError(f"table {table.name}: no key {name!r} among its keys: {known}")


def _radix(value: str) -> tuple[str, str, int]:
    """-> (prefix, digits, bits per digit) of a written number."""
    low = value.lower()
    for prefix, bits in (("0x", 4), ("0b", 1), ("0o", 3)):
        if low.startswith(prefix):
            return value[:2], value[2:], bits
    return "", value, 0


def ternary_value(value: str, width: int | None) -> str:
    prefix, digits, bits = _radix(value)
    if not bits:   # decimal: the whole key
        if "*" in value:
            raise EntryError(f"decimal value {value!r} cannot hold '*' digits")
        if width is None:
            raise EntryError(f"decimal ternary value {value!r} needs the key's width, which the target does not give")
        return f"{int(value)}&&&{hex((1 << width) - 1)}"
    full = {4: "F", 1: "1", 3: "7"}[bits]
    mask = "".join("0" if d == "*" else full for d in digits)
    return f"{prefix}{digits.replace('*', '0')}&&&{prefix}{mask}"


def lpm_value(value: str, width: int | None) -> str:
    if "/" in value:
        return value
    prefix, digits, bits = _radix(value)
    if not bits:
        if width is None:
            raise EntryError(f"decimal lpm value {value!r} needs /LEN or the key's width")
        return f"{int(value)}/{width}"
    return f"{prefix}{digits.replace('*', '0')}/{(len(digits) - digits.count('*')) * bits}"


def plain_value(value: str, kind: str) -> str:
    if "*" in value or "/" in value:
        raise EntryError(f"{kind} key value {value!r} cannot hold '*' digits or a prefix length")
    return value


def key_value(key: KeyInfo, value: str | None) -> str:
    """The CLI text for one key; value None: the key was not mentioned (match anything)."""
    kind = key.match_kind
    if value is None:
        if kind == "ternary":
            return "0&&&0"
        if kind == "lpm":
            return "0/0"
        if kind == "range":
            return f"0->{(1 << key.width) - 1}" if key.width else "0->0"
        if kind == "optional":
            return "0&&&0"
        return "0"
    if kind == "ternary":
        return ternary_value(value, key.width)
    if kind == "lpm":
        return lpm_value(value, key.width)
    if kind == "range":
        v = plain_value(value, kind)
        return f"{v}->{v}"
    return plain_value(value, kind)


def _action(table: TableInfo, name: str) -> ActionInfo:
    return _resolve(name, table.actions, f"action (table {table.name})", f"table {table.name}'s actions")


def action_args(action: ActionInfo, args: tuple) -> list[str]:
    given = dict(args)
    names = [p for p, _ in action.params]
    extra = [a for a in given if a not in names]
    if extra:
        raise EntryError(f"action {action.name} has no parameter {extra[0]!r}; its parameters: "
                         f"{', '.join(names) or 'none'}")
    missing = [p for p in names if p not in given]
    if missing:
        raise EntryError(f"action {action.name}: parameter {missing[0]!r} not given")
    return [given[p] for p in names]


def add_command(info: ProgramInfo, step: Add) -> str:
    table = info.table(step.table)
    values: list = [None] * len(table.keys)
    for name, value in step.keys:
        values[resolve_key(table, name)] = value
    keys = [key_value(k, v) for k, v in zip(table.keys, values)]
    action = _action(table, step.action)
    words = ["table_add", table.name, action.name, *keys, "=>", *action_args(action, step.args)]
    if table.needs_priority:
        if step.priority is None:
            raise EntryError(f"table {table.name} takes priorities: give one after the table name")
        words.append(str(PRIORITY_BASE - step.priority))
    return " ".join(words)


def setdefault_command(info: ProgramInfo, step: SetDefault) -> str:
    table = info.table(step.table)
    action = _action(table, step.action)
    return " ".join(["table_set_default", table.name, action.name, *action_args(action, step.args)])


def clear_commands(info: ProgramInfo) -> list[str]:
    """`remove all`: every table that can be changed loses its entries."""
    return [f"table_clear {t.name}" for t in info.tables if not t.const_entries]
