"""The P4Info of a compiled program, with p4c's names and ids.

A controller written against p4c's P4Info (``p4c --p4runtime-files``) must find the same
resources under the same numbers here, so ids follow p4c's control-plane rules
(p4c: control-plane/p4RuntimeSymbolTable.cpp):

* an id is ``type prefix << 24 | low 24 bits of the Jenkins one-at-a-time hash of the name``;
  an ``@id(N)`` annotation wins (its prefix is added when missing);
* names get ids in sorted order, a taken id probing linearly to the next one, so collisions
  resolve the way p4c resolves them;
* match fields and action parameters are numbered 1, 2, ... in declaration order;
* an alias is the name's shortest dot-suffix no other resource's name ends with.

Pure: ``build_p4info(state)`` reads a SwitchState (names, widths, sizes the compiler put
there) and returns a ``p4.config.v1.P4Info`` message.
"""
from __future__ import annotations

from softswitch.p4runtime.proto import p4info as P
from softswitch.runtime.state import DirectMeter

# P4Runtime's id prefixes (p4info.proto, P4Ids.Prefix)
ACTION, TABLE, COUNTER, DIRECT_COUNTER, METER, DIRECT_METER, REGISTER = 0x01, 0x02, 0x12, 0x13, 0x14, 0x15, 0x16

_MATCH = {"exact": P.MatchField.EXACT, "lpm": P.MatchField.LPM, "ternary": P.MatchField.TERNARY,
          "range": P.MatchField.RANGE, "optional": P.MatchField.OPTIONAL}
_COUNTER_UNIT = {"packets": P.CounterSpec.PACKETS, "bytes": P.CounterSpec.BYTES,
                 "packets_and_bytes": P.CounterSpec.BOTH}
_METER_UNIT = {"packets": P.MeterSpec.PACKETS, "bytes": P.MeterSpec.BYTES}


def jenkins_one_at_a_time(data: bytes) -> int:
    h = 0
    for b in data:
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


def assign_ids(names_by_prefix: dict[int, list[str]], declared: dict[str, int] | None = None) -> dict[tuple[int, str], int]:
    """{(prefix, name): id} as p4c assigns them: declared ids first, then hashed, in sorted
    name order per prefix, linear probing past taken ids."""
    declared = declared or {}
    taken: set[int] = set()
    ids: dict[tuple[int, str], int] = {}
    for prefix, names in names_by_prefix.items():
        for name in names:
            if name in declared:
                i = declared[name]
                if i >> 24 and i >> 24 != prefix:
                    raise ValueError(f"{name}: @id({i:#x}) has the wrong 8-bit prefix (expected {prefix:#04x})")
                i |= prefix << 24
                if i in taken:
                    raise ValueError(f"@id {i} is assigned to multiple declarations ({name})")
                taken.add(i)
                ids[(prefix, name)] = i
    for prefix, names in names_by_prefix.items():
        for name in sorted(set(names)):
            if (prefix, name) in ids:
                continue
            start = jenkins_one_at_a_time(name.encode())
            value = start
            while (prefix << 24) | (value & 0xFFFFFF) in taken:
                value = (value + 1) & 0xFFFFFFFF
                if value == start:
                    raise ValueError(f"no P4Runtime id left for {name}")
            i = (prefix << 24) | (value & 0xFFFFFF)
            taken.add(i)
            ids[(prefix, name)] = i
    return ids


def shortest_unique_suffixes(names) -> dict[str, str]:
    """{name: alias}: the fewest trailing dot-components that no other name ends with."""
    names = sorted(set(names))
    out = {}
    for n in names:
        parts = n.split(".")
        for k in range(1, len(parts) + 1):
            suffix = ".".join(parts[-k:])
            if not any(o != n and (o == suffix or o.endswith("." + suffix)) for o in names):
                break
        out[n] = suffix
    return out


def _preamble(msg, id_: int, name: str, alias: str):
    msg.preamble.id, msg.preamble.name, msg.preamble.alias = id_, name, alias


def build_p4info(state):
    """P4Info of a SwitchState; ``state.declared_ids`` holds the program's @id annotations."""
    tables = list(state.tables.values())
    # actions in the order p4c lists them does not matter to clients; ids and names do
    actions = dict(state.actions)
    counters = [c for c in state.counters.values() if not c.direct]
    dcounters = [c for c in state.counters.values() if c.direct]
    meters = [m for m in state.meters.values() if not isinstance(m, DirectMeter)]
    dmeters = [m for m in state.meters.values() if isinstance(m, DirectMeter)]
    registers = list(state.registers.values())
    by_prefix = {ACTION: list(actions), TABLE: [t.name for t in tables], COUNTER: [c.name for c in counters],
                 DIRECT_COUNTER: [c.name for c in dcounters], METER: [m.name for m in meters],
                 DIRECT_METER: [m.name for m in dmeters], REGISTER: [r.name for r in registers]}
    ids = assign_ids(by_prefix, state.declared_ids)
    alias = shortest_unique_suffixes(n for names in by_prefix.values() for n in names)

    info = P.P4Info()
    info.pkg_info.arch = "v1model"
    for t in tables:
        m = info.tables.add()
        _preamble(m, ids[(TABLE, t.name)], t.name, alias[t.name])
        for i, k in enumerate(t.keys, start=1):
            f = m.match_fields.add()
            f.id, f.name, f.bitwidth, f.match_type = i, k.name, k.width, _MATCH[k.match_kind]
        refs = list(t.actions)
        if t.default_action.name not in t.actions:
            refs.append(t.default_action.name)
        for a in refs:
            r = m.action_refs.add()
            r.id = ids[(ACTION, a)]
            if a in t.default_only or a not in t.actions:
                r.scope = P.ActionRef.DEFAULT_ONLY
            elif a in t.table_only:
                r.scope = P.ActionRef.TABLE_ONLY
        if t.const_default:
            m.const_default_action_id = ids[(ACTION, t.default_action.name)]
        for c in dcounters:
            if c.table is t:
                m.direct_resource_ids.append(ids[(DIRECT_COUNTER, c.name)])
        for d in dmeters:
            if d.table is t:
                m.direct_resource_ids.append(ids[(DIRECT_METER, d.name)])
        m.size = t.size
        m.is_const_table = bool(t.const_entries)
    in_tables = {a for t in tables for a in list(t.actions) + [t.default_action.name]}
    for name, a in actions.items():
        m = info.actions.add()
        _preamble(m, ids[(ACTION, name)], name, alias[name])
        # an action only called from an apply block has its arguments bound at the call
        # (p4c: RemoveActionParameters): the control plane sees no parameters
        for i, (pname, width) in enumerate(a.params if name in in_tables else (), start=1):
            p = m.params.add()
            p.id, p.name, p.bitwidth = i, pname, width
    # counters and meters, indirect (a size) and direct (a table)
    for objs, out, prefix, units in ((counters, info.counters, COUNTER, _COUNTER_UNIT),
                                     (dcounters, info.direct_counters, DIRECT_COUNTER, _COUNTER_UNIT),
                                     (meters, info.meters, METER, _METER_UNIT),
                                     (dmeters, info.direct_meters, DIRECT_METER, _METER_UNIT)):
        for x in objs:
            m = out.add()
            _preamble(m, ids[(prefix, x.name)], x.name, alias[x.name])
            m.spec.unit = units[x.type]
            if prefix in (COUNTER, METER):
                m.size = x.size
            elif x.table is not None:
                m.direct_table_id = ids[(TABLE, x.table.name)]
    for r in registers:
        m = info.registers.add()
        _preamble(m, ids[(REGISTER, r.name)], r.name, alias[r.name])
        m.size = r.size
        if r.signed:
            m.type_spec.bitstring.int.bitwidth = r.width
        else:
            m.type_spec.bitstring.bit.bitwidth = r.width
    return info
