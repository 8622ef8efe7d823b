"""C types for the P4 types the compiled path supports, and the refusals for the others.

A header becomes `typedef struct { uint64_t f_<field>...; uint8_t _v; } T_<name>;`, a
struct the same without `_v`. Every scalar (bit<W> with W <= 64, bool, error, a
serializable enum over bit<W>) is a uint64_t holding a value within its width, so C's
struct assignment is P4's header/struct assignment (validity included).
"""
from __future__ import annotations

import softswitch.frontend.p4ast as A
from softswitch.frontend.errors import P4Error


class Unsupported(P4Error):
    """A construct the compiled path does not implement: the program runs on the Python path.
    `construct` names it (the log line says which construct made the program fall back)."""

    def __init__(self, construct: str, loc=None):
        super().__init__(loc, f"unsupported by the compiled data path: {construct}")
        self.construct = construct


def scalar_width(t, loc=None) -> int:
    """Width in bits of a scalar the compiled path holds in a uint64_t; refuses the others."""
    if isinstance(t, A.BitT):
        if t.width > 64:
            raise Unsupported(f"bit<{t.width}> (wider than 64 bits)", loc)
        return t.width
    if isinstance(t, A.BoolT):
        return 1
    if isinstance(t, A.ErrorT):
        return 32
    if isinstance(t, A.EnumT) and isinstance(t.underlying, A.BitT):
        return scalar_width(t.underlying, loc)
    raise Unsupported(type_name(t), loc)


def type_name(t) -> str:
    """How a refused type is named in the fallback message."""
    if isinstance(t, A.IntT):
        return f"int<{t.width}> (signed integers)"
    if isinstance(t, A.VarbitT):
        return f"varbit<{t.max_width}>"
    if isinstance(t, A.StackT):
        return "header stack"
    if isinstance(t, A.HeaderUnionT):
        return f"header_union {t.name}"
    if isinstance(t, A.EnumT):
        return f"enum {t.name} without a bit<W> representation"
    if isinstance(t, A.TupleT):
        return "tuple value"
    if isinstance(t, A.StringT):
        return "string value"
    if isinstance(t, A.InfIntT):
        return "integer constant without a width"
    return f"value of type {type(t).__name__}"


def is_aggregate(t) -> bool:
    return isinstance(t, (A.HeaderT, A.StructT))


def header_bits(t: A.HeaderT, loc=None) -> list[tuple[str, int, int]]:
    """(field, bit offset, width) of each field, and refusal of headers that are not a whole
    number of bytes (BMv2's rule too)."""
    out, off = [], 0
    for f in t.fields:
        w = scalar_width(f.type, loc)
        out.append((f.name, off, w))
        off += w
    if off % 8:
        raise Unsupported(f"header {t.name} of {off} bits (not a whole number of bytes)", loc)
    return out


class CTypes:
    """Emits typedefs on first use, dependencies first; `cname(t)` is the C type of t."""

    def __init__(self):
        self.lines: list[str] = []
        self._done: dict = {}

    def cname(self, t, loc=None) -> str:
        if isinstance(t, A.HeaderT):
            return self._aggregate(t, "T_" + t.name, header=True, loc=loc)
        if isinstance(t, A.StructT):
            return self._aggregate(t, "T_" + t.name, header=False, loc=loc)
        scalar_width(t, loc)
        return "uint64_t"

    def _aggregate(self, t, name, header, loc):
        if name in self._done:
            if self._done[name] != t:
                raise Unsupported(f"two different types named {t.name}", loc)
            return name
        members = []
        for f in t.fields:
            if header:
                scalar_width(f.type, loc)
                members.append(f"    uint64_t f_{f.name};")
            else:
                members.append(f"    {self.cname(f.type, loc)} f_{f.name};")
        if header:
            header_bits(t, loc)
            members.append("    uint8_t _v;")
        self.lines += [f"typedef struct {{  /* {'header' if header else 'struct'} {t.name} */"] + members + \
            [f"}} {name};", ""]
        self._done[name] = t
        return name
