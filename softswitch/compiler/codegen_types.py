"""Python classes for P4 headers, structs and header stacks, generated as source.

Why generated classes: per packet the pipeline creates one `headers` and one
`metadata` object and touches their fields many times; `__slots__` classes with
fields as plain ints are the cheapest mutable records CPython has.

Invariants every generated function relies on:
- a `bit<W>` field holds an int in [0, 2^W); an `int<W>` field holds a Python
  signed int in [-2^(W-1), 2^(W-1)); bool fields hold bool;
- a `varbit<N>` field holds a tuple `(nbits, value)`: its current width in bits (a
  multiple of 8, at most N: only extract sets it) and an int in [0, 2^nbits). A tuple
  is immutable, so assignment shares it, and tuple equality is P4's varbit equality
  (same current width and same value). A fresh varbit is (0, 0), empty, as in BMv2;
- a header has `_v` (validity); a stack has `h` (list of elements) and `nxt`
  (nextIndex); nested headers/structs are objects whose identity never changes
  (assignment copies values with `_set`), so generated code may cache them.

Byte layout: a header is split into *chunks*, maximal runs of fields that start
and end on byte boundaries. Each chunk is read with one `struct` code per
1/2/4/8-byte piece, so extraction is one `unpack_from` per header plus shifts.
"""
from __future__ import annotations

import struct

import softswitch.frontend.p4ast as A
from softswitch.frontend.errors import P4Error


class CodegenError(P4Error):
    """A construct the compiler cannot translate. A P4Error, so users get the same
    `file:line:col: message` as from the front end; gaps start with 'unsupported: '."""

    def __init__(self, message, loc=None):
        super().__init__(loc, message)

_CODES = ((8, "Q"), (4, "I"), (2, "H"), (1, "B"))
_SIGNED_CODES = {8: "q", 4: "i", 2: "h", 1: "b"}


def width_of(t: A.Type) -> int:
    """Bit width of a fixed-width type (bool = 1, serializable enum = its underlying)."""
    if isinstance(t, (A.BitT, A.IntT)):
        return t.width
    if isinstance(t, A.BoolT):
        return 1
    if isinstance(t, A.EnumT) and t.underlying is not None:
        return width_of(t.underlying)
    if isinstance(t, A.ErrorT):
        return 32
    if isinstance(t, A.HeaderT):
        return sum(width_of(f.type) for f in t.fields)
    if isinstance(t, A.StructT):
        return sum(width_of(f.type) for f in t.fields)
    raise CodegenError(f"unsupported: {type(t).__name__} has no fixed bit width here")


def is_signed(t: A.Type) -> bool:
    if isinstance(t, A.EnumT) and t.underlying is not None:
        return is_signed(t.underlying)
    return isinstance(t, A.IntT)


def class_name(t: A.Type) -> str:
    if isinstance(t, A.HeaderT):
        return "H_" + t.name
    if isinstance(t, A.HeaderUnionT):
        return "U_" + t.name
    if isinstance(t, A.StructT):
        return "S_" + t.name
    raise TypeError(t)


def default_value(t: A.Type) -> str:
    if isinstance(t, A.BoolT):
        return "False"
    if isinstance(t, A.EnumT) and t.underlying is None:
        return repr(t.members[0]) if t.members else "None"
    if isinstance(t, (A.HeaderT, A.StructT, A.HeaderUnionT)):
        return class_name(t) + "()"
    if isinstance(t, A.StackT):
        return f"Stack({class_name(t.elem)}, {t.size})"
    if isinstance(t, A.VarbitT):
        return "(0, 0)"
    return "0"


class Stack:
    """A header stack: `h` elements, `nxt` = nextIndex (number of extracted/pushed)."""
    __slots__ = ("h", "nxt", "_cls")

    def __init__(self, cls, size):
        self._cls = cls
        self.h = [cls() for _ in range(size)]
        self.nxt = 0

    def _set(self, o):
        for a, b in zip(self.h, o.h):
            a._set(b)
        self.nxt = o.nxt

    def _clone(self):
        c = Stack(self._cls, len(self.h))
        c._set(self)
        return c

    def _eq(self, o):
        # P4-16: equal stacks have equal elements, pairwise; nextIndex is not compared
        return all(a._eq(b) for a, b in zip(self.h, o.h))

    def push_front(self, n):
        size = len(self.h)
        n = min(n, size)
        for i in range(size - 1, n - 1, -1):
            self.h[i]._set(self.h[i - n])
        for i in range(n):
            self.h[i]._v = False
        self.nxt = min(self.nxt + n, size)

    def pop_front(self, n):
        size = len(self.h)
        n = min(n, size)
        for i in range(size - n):
            self.h[i]._set(self.h[i + n])
        for i in range(size - n, size):
            self.h[i]._v = False
        self.nxt = max(self.nxt - n, 0)


def varbit_field(h: A.HeaderT):
    """The varbit field of header h, or None. p4c's BMv2 back end allows one per header
    (BMv2 stores a header's variable-length part as one field): so does this compiler."""
    vfs = [f for f in h.fields if isinstance(f.type, A.VarbitT)]
    if len(vfs) > 1:
        raise CodegenError(f"header {h.name} has {len(vfs)} varbit fields "
                           f"({', '.join(f.name for f in vfs)}): BMv2 and the softswitch allow one "
                           f"per header; split it into one header per varbit field")
    return vfs[0] if vfs else None


def chunk_layout(h: A.HeaderT):
    """Split a fixed-size header into byte-aligned chunks.

    Returns (fmt, chunks) where fmt is a struct format ('!' + codes) and chunks is
    a list of (nbytes, [struct item indexes], [(field, shift, width, signed)]).
    Raises CodegenError when the header is not a whole number of bytes (BMv2 refuses
    those too)."""
    fields = []
    for f in h.fields:
        fields.append((f.name, width_of(f.type), is_signed(f.type), isinstance(f.type, A.BoolT)))
    total = sum(w for _, w, _, _ in fields)
    if total % 8:
        raise CodegenError(f"header {h.name} is {total} bits wide, not a whole number of bytes "
                           f"(BMv2 refuses such headers too): pad it to a multiple of 8 bits")
    chunks, cur, cur_bits = [], [], 0
    for fld in fields:
        cur.append(fld)
        cur_bits += fld[1]
        if cur_bits % 8 == 0:
            chunks.append((cur_bits // 8, cur))
            cur, cur_bits = [], 0
    fmt, out, item = "!", [], 0
    for nbytes, flds in chunks:
        items, rest = [], nbytes
        if len(flds) == 1 and flds[0][2] and nbytes in _SIGNED_CODES:
            # a lone byte-aligned int<8/16/32/64>: struct reads and writes it signed,
            # no sign extension in Python (the hot path of int32 gradient values)
            fmt += _SIGNED_CODES[nbytes]
            out.append((nbytes, [(item, nbytes)], [(flds[0][0], 0, flds[0][1], False, False)]))
            item += 1
            continue
        for size, code in _CODES:
            while rest >= size:
                fmt += code
                items.append((item, size))
                item += 1
                rest -= size
        shift, placed = nbytes * 8, []
        for name, w, signed, boolean in flds:
            shift -= w
            placed.append((name, shift, w, signed, boolean))
        out.append((nbytes, items, placed))
    return fmt, out


def _chunk_value_expr(items) -> str:
    """Python expression combining struct items (listed MSB first) into one int."""
    expr, after = None, 0
    parts = []
    for idx, size in reversed(items):
        parts.append((idx, after))
        after += size * 8
    terms = [f"_t[{idx}]" if sh == 0 else f"(_t[{idx}] << {sh})" for idx, sh in parts]
    expr = " | ".join(reversed(terms))
    return expr


def gen_header_class(h: A.HeaderT) -> list[str]:
    cname = class_name(h)
    names = [f.name for f in h.fields]
    vf = varbit_field(h)
    L = [f"class {cname}:",
         f"    __slots__ = {tuple(['_v'] + names)!r}"]
    if vf is None:
        L.append(f"    _nbytes = {width_of(h) // 8}")
    L += ["    def __init__(self):",
         "        self._v = False"]
    L += [f"        self.{f.name} = {default_value(f.type)}" for f in h.fields]
    L += ["    def _set(self, o):", "        self._v = o._v"]
    L += [f"        self.{n} = o.{n}" for n in names]
    L += ["    def _clone(self):", f"        c = {cname}.__new__({cname})", "        c._v = self._v"]
    L += [f"        c.{n} = self.{n}" for n in names]
    L += ["        return c"]
    L += ["    def _eq(self, o):",
          "        if self._v != o._v: return False",
          "        if not self._v: return True",
          "        return " + (" and ".join(f"self.{n} == o.{n}" for n in names) or "True")]
    L += _extract_emit_methods(h) if vf is None else _varbit_extract_emit_methods(h, vf)
    return L


def varbit_layout(h: A.HeaderT, vf: A.FieldDef):
    """(fixed fields before the varbit, fixed fields after it, fixed bits in all) as lists
    of (name, width, signed, boolean). Refuses what p4c's BMv2 back end refuses: a header
    whose fixed fields plus the varbit's maximum are not a whole number of bytes; and one
    whose fixed fields alone are not (BMv2 asserts on those at start-up)."""
    before, after, cur = [], [], None
    cur = before
    for f in h.fields:
        if f is vf:
            cur = after
            continue
        cur.append((f.name, width_of(f.type), is_signed(f.type), isinstance(f.type, A.BoolT)))
    fixed = sum(w for _, w, _, _ in before + after)
    if (fixed + vf.type.max_width) % 8 or fixed % 8:
        raise CodegenError(f"header {h.name}: its fixed fields ({fixed} bits) and its varbit's maximum "
                           f"({vf.type.max_width} bits) must each be a whole number of bytes, as "
                           f"BMv2 needs: pad the header or change the varbit's size")
    return before, after, fixed


def _varbit_extract_emit_methods(h: A.HeaderT, vf: A.FieldDef) -> list[str]:
    """`_extract(buf, off, nbits)` with the varbit `nbits` wide (the parser has checked that
    nbits is a multiple of 8, at most the maximum, and that the bytes are there) and
    `_bytes()` with the varbit at its current width. The header is read as one int and cut
    with shifts: varbit headers are rare, and this stays right whatever the alignment."""
    before, after, fixed = varbit_layout(h, vf)
    after_bits = sum(w for _, w, _, _ in after)
    v = vf.name
    L = ["    def _extract(self, buf, off, nbits):",
         f"        _end = off + {fixed // 8} + (nbits >> 3)",
         "        _c = int.from_bytes(buf[off:_end], 'big')",
         "        self._v = True"]

    def unpack(fields, base_shift: str):
        shift_terms = []
        for name, w, signed, boolean in reversed(fields):
            sh = " + ".join([t for t in [base_shift] + shift_terms if t and t != "0"]) or "0"
            e = f"(_c >> ({sh})) & {hex((1 << w) - 1)}" if sh != "0" else f"_c & {hex((1 << w) - 1)}"
            if signed:
                e = f"_sx({e}, {w})"
            if boolean:
                e = f"bool({e})"
            L.append(f"        self.{name} = {e}")
            shift_terms.append(str(w))

    unpack(after, "")
    L.append(f"        self.{v} = (nbits, (_c >> {after_bits}) & ((1 << nbits) - 1))")
    unpack(before, f"{after_bits} + nbits" if after_bits else "nbits")
    L += ["    def _bytes(self):",
          f"        _vn, _vv = self.{v}",
          "        _c = 0"]
    for name, w, signed, boolean in before:
        fe = f"self.{name}"
        if signed or boolean:
            fe = f"({fe} & {hex((1 << w) - 1)})"
        L.append(f"        _c = (_c << {w}) | {fe}")
    L.append("        _c = (_c << _vn) | _vv")
    for name, w, signed, boolean in after:
        fe = f"self.{name}"
        if signed or boolean:
            fe = f"({fe} & {hex((1 << w) - 1)})"
        L.append(f"        _c = (_c << {w}) | {fe}")
    L.append(f"        return _c.to_bytes({fixed // 8} + (_vn >> 3), 'big')")
    return L


def _extract_emit_methods(h: A.HeaderT) -> list[str]:
    """`_extract(buf, off)` fills fields from bytes; `_bytes()` serializes them."""
    fmt, chunks = chunk_layout(h)
    L = [f"    _st = struct.Struct({fmt!r})",
         "    def _extract(self, buf, off):",
         "        _t = self._st.unpack_from(buf, off)",
         "        self._v = True"]
    pack_args = []
    for nbytes, items, placed in chunks:
        single = len(placed) == 1
        val = _chunk_value_expr(items)
        if not single:
            L.append(f"        _c = {val}")
            src = "_c"
        else:
            src = val
        for name, shift, w, signed, boolean in placed:
            e = src if shift == 0 else f"({src} >> {shift})"
            if not single:
                e = f"{e} & {hex((1 << w) - 1)}"
            if signed:
                e = f"_sx({e}, {w})"
            if boolean:
                e = f"bool({e})"
            L.append(f"        self.{name} = {e}")
        # emit: rebuild the chunk value, then split it into struct items
        terms = []
        for name, shift, w, signed, boolean in placed:
            fe = f"self.{name}"
            if signed or boolean:
                fe = f"({fe} & {hex((1 << w) - 1)})"
            terms.append(fe if shift == 0 else f"({fe} << {shift})")
        cval = " | ".join(terms)
        if len(items) == 1:
            pack_args.append(cval)
        else:
            L_emit_var = f"_c{len(pack_args)}"
            pack_args.append((L_emit_var, cval, items, nbytes))
    E = ["    def _bytes(self):"]
    args = []
    for a in pack_args:
        if isinstance(a, str):
            args.append(a)
        else:
            var, cval, items, nbytes = a
            E.append(f"        {var} = {cval}")
            after = nbytes * 8
            for idx, size in items:
                after -= size * 8
                mask = hex((1 << (size * 8)) - 1)
                args.append(f"({var} >> {after}) & {mask}" if after else f"{var} & {mask}")
    E.append(f"        return self._st.pack({', '.join(args)})")
    return L + E


def gen_struct_class(s, cname: str | None = None) -> list[str]:
    cname = cname or class_name(s)
    names = [f.name for f in s.fields]
    L = [f"class {cname}:", f"    __slots__ = {tuple(names)!r}", "    def __init__(self):"]
    L += [f"        self.{f.name} = {default_value(f.type)}" for f in s.fields] or ["        pass"]
    L += ["    def _set(self, o):"]
    for f in s.fields:
        if is_aggregate(f.type):
            L.append(f"        self.{f.name}._set(o.{f.name})")
        else:
            L.append(f"        self.{f.name} = o.{f.name}")
    if not s.fields:
        L.append("        pass")
    # a copy without first building default members (multicast clones hdr/meta per replica)
    L += ["    def _clone(self):", f"        c = {cname}.__new__({cname})"]
    L += [f"        c.{f.name} = self.{f.name}._clone()" if is_aggregate(f.type) else
          f"        c.{f.name} = self.{f.name}" for f in s.fields]
    L += ["        return c"]
    L += ["    def _eq(self, o):"]
    conds = []
    for f in s.fields:
        if is_aggregate(f.type):
            conds.append(f"self.{f.name}._eq(o.{f.name})")
        else:
            conds.append(f"self.{f.name} == o.{f.name}")
    L.append("        return " + (" and ".join(conds) or "True"))
    return L


def gen_union_class(u: A.HeaderUnionT) -> list[str]:
    """A header union is a struct of its member headers plus `_v`, the union's validity: true
    when a member is valid; setting it false invalidates every member (a stack's pop_front).
    The rule that at most one member is valid is kept by the code that makes one valid
    (setValid, extract, assignment: see ExprGen.union_member_valid)."""
    names = [f.name for f in u.fields]
    L = gen_struct_class(u, class_name(u))
    L += ["    @property", "    def _v(self):",
          "        return " + (" or ".join(f"self.{n}._v" for n in names) or "False"),
          "    @_v.setter", "    def _v(self, v):", "        if not v:"]
    L += [f"            self.{n}._v = False" for n in names] or ["            pass"]
    return L


def is_aggregate(t) -> bool:
    return isinstance(t, (A.HeaderT, A.StructT, A.HeaderUnionT, A.StackT))


def collect_types(roots) -> list:
    """All header/struct/union types reachable from `roots`, dependencies first."""
    seen, order = set(), []

    def visit(t):
        if isinstance(t, A.StackT):
            visit(t.elem)
            return
        if not isinstance(t, (A.HeaderT, A.StructT, A.HeaderUnionT)):
            return
        key = class_name(t)
        if key in seen:
            return
        seen.add(key)
        for f in t.fields:
            visit(f.type)
        order.append(t)

    for t in roots:
        visit(t)
    return order


def gen_type_classes(types) -> list[str]:
    L = []
    for t in collect_types(types):
        if isinstance(t, A.HeaderT):
            L += gen_header_class(t)
        elif isinstance(t, A.HeaderUnionT):
            L += gen_union_class(t)
        else:
            L += gen_struct_class(t)
        L.append("")
    return L


def sign_extend(v: int, w: int) -> int:
    """Two's complement value of the low w bits of v."""
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


RUNTIME_NAMES = {"struct": struct, "Stack": Stack, "_sx": sign_extend}
