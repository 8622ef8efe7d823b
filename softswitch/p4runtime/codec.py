"""P4Runtime's byte strings and match fields <-> the softswitch's integers and match tuples.

P4Runtime carries every value as a big-endian byte string; the spec (8.3) asks for the
canonical form (no leading zero bytes) but servers accept padded values as long as the number
fits the field's width. A value wider than its field is refused (OUT_OF_RANGE), as BMv2's PI
server does. Match fields missing from an entry are "don't care" (ternary, range, optional,
lpm), or an error (exact).

Priorities: P4Runtime's highest priority wins; BMv2 (and the softswitch, as simple_switch_CLI
takes it) picks the numerically lowest. BMv2's PI server converts with p' = 2^24 - 1 - p; so
does this module, so an entry has the same priority here and on simple_switch_grpc.
"""
from __future__ import annotations

from softswitch.p4runtime.errors import P4RuntimeError

MAX_PRIORITY = (1 << 24) - 1


def to_int(data: bytes, width: int, what: str) -> int:
    v = int.from_bytes(data, "big")
    if not data:
        raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: empty byte string (a value needs at least one byte)")
    if v >> width:
        raise P4RuntimeError("OUT_OF_RANGE", f"{what}: value {v:#x} does not fit in {width} bits")
    return v


def to_bytes(value: int, width: int | None = None) -> bytes:
    """Canonical form: the fewest bytes, at least one."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def bmv2_priority(p4rt_priority: int) -> int:
    if not 1 <= p4rt_priority <= MAX_PRIORITY:
        raise P4RuntimeError("INVALID_ARGUMENT", f"priority {p4rt_priority} is not within 1..{MAX_PRIORITY} "
                                                 f"(a ternary, range or optional table needs one)")
    return MAX_PRIORITY - p4rt_priority


def p4rt_priority(bmv2: int) -> int:
    return MAX_PRIORITY - bmv2


def decode_match(table, fields) -> tuple:
    """A P4Runtime FieldMatch list -> the softswitch's match tuple for ``table``."""
    by_id = {}
    for f in fields:
        if not 1 <= f.field_id <= len(table.keys):
            raise P4RuntimeError("INVALID_ARGUMENT", f"table {table.name} has no match field {f.field_id} "
                                                     f"(it has {len(table.keys)})")
        if f.field_id in by_id:
            raise P4RuntimeError("INVALID_ARGUMENT", f"table {table.name}: match field {f.field_id} given twice")
        by_id[f.field_id] = f
    out = []
    for i, k in enumerate(table.keys, start=1):
        f = by_id.get(i)
        what = f"table {table.name}, match field {k.name}"
        full = (1 << k.width) - 1
        kind = f.WhichOneof("field_match_type") if f is not None else None
        if f is None:
            if k.match_kind == "exact":
                raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: an exact field cannot be omitted")
            out.append({"lpm": (0, 0), "range": (0, full)}.get(k.match_kind, (0, 0)))
            continue
        expected = {"exact": "exact", "lpm": "lpm", "ternary": "ternary", "range": "range",
                    "optional": "optional"}[k.match_kind]
        if kind != expected:
            raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: is {k.match_kind}, got a {kind} match")
        if kind == "exact":
            out.append(to_int(f.exact.value, k.width, what))
        elif kind == "lpm":
            v, plen = to_int(f.lpm.value, k.width, what), f.lpm.prefix_len
            if not 1 <= plen <= k.width:   # P4Runtime: a /0 is expressed by omitting the field
                raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: prefix length {plen} is not within 1..{k.width}")
            if v & ~(((1 << plen) - 1) << (k.width - plen)) & full:
                raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: value has bits set past the /{plen} prefix")
            out.append((v, plen))
        elif kind == "ternary":
            v, m = to_int(f.ternary.value, k.width, what), to_int(f.ternary.mask, k.width, what + " mask")
            if m == 0:
                raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: an all-zero mask must be expressed by omitting the field")
            if v & ~m:
                raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: value has bits set outside the mask")
            out.append((v, m))
        elif kind == "range":
            lo, hi = to_int(f.range.low, k.width, what + " low"), to_int(f.range.high, k.width, what + " high")
            if (lo, hi) == (0, full):
                raise P4RuntimeError("INVALID_ARGUMENT", f"{what}: a full range must be expressed by omitting the field")
            out.append((lo, hi))
        else:
            out.append((to_int(f.optional.value, k.width, what), full))
    return tuple(out)


def encode_match(table, match, msg_fields) -> None:
    """The softswitch's match tuple -> FieldMatch messages appended to ``msg_fields``
    (don't-care fields omitted, as P4Runtime reads them back)."""
    for i, (k, m) in enumerate(zip(table.keys, match), start=1):
        full = (1 << k.width) - 1
        if k.match_kind == "exact":
            f = msg_fields.add(field_id=i)
            f.exact.value = to_bytes(m)
        elif k.match_kind == "lpm":
            v, plen = m
            if plen:
                f = msg_fields.add(field_id=i)
                f.lpm.value, f.lpm.prefix_len = to_bytes(v), plen
        elif k.match_kind == "ternary":
            v, mask = m
            if mask:
                f = msg_fields.add(field_id=i)
                f.ternary.value, f.ternary.mask = to_bytes(v), to_bytes(mask)
        elif k.match_kind == "range":
            lo, hi = m
            if (lo, hi) != (0, full):
                f = msg_fields.add(field_id=i)
                f.range.low, f.range.high = to_bytes(lo), to_bytes(hi)
        else:   # optional
            v, mask = m
            if mask:
                f = msg_fields.add(field_id=i)
                f.optional.value = to_bytes(v)
