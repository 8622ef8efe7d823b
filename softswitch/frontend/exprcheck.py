"""Expression checking: resolve names, give every expression its type, fold constants.

A mixin of `typecheck.Checker`, which provides `lookup`, `loc`, `error`,
`resolve_type` and the program-wide tables (externs, errors). Width rules are
P4-16's: an infinite-precision literal takes the type of the other operand,
operands of binary operators must otherwise have the same type.
"""
from __future__ import annotations

import re

from lark import Token

import softswitch.frontend.p4ast as A
from softswitch.frontend.p4types import TypeVar, bit_width, fold_binary, is_fixed_int, is_int, type_name, wrap

_NUMBER = re.compile(r"(?:(\d+)([ws])(-?))?(.*)", re.S)
_ARITH = {"+", "-", "*", "/", "%", "|+|", "|-|"}
_BITWISE = {"&", "|", "^"}
_ORDER = {"<", "<=", ">", ">="}


def parse_number(text: str):
    """(value, type) of a P4 integer literal: 8w5, 4s1, 0x1F, 0b101, 1_000."""
    m = _NUMBER.fullmatch(text)
    width, kind, neg, body = m.group(1), m.group(2), m.group(3), m.group(4).replace("_", "")
    prefix = body[:2].lower()
    base = {"0x": 16, "0b": 2, "0o": 8, "0d": 10}.get(prefix)
    value = int(body[2:], base) if base else int(body, 10)
    if neg:
        value = -value
    if width is None:
        return value, A.InfIntT()
    w = int(width)
    t = A.BitT(w) if kind == "w" else A.IntT(w)
    return wrap(value, t), t


def is_const(e) -> bool:
    return isinstance(e, A.Literal)


class ExprMixin:
    # ---------------------------------------------------------------- entry
    def expr(self, tree, expected=None) -> A.Expr:
        """Check one expression tree; `expected` guides `{...}` lists only."""
        if isinstance(tree, Token):
            raise self.error(tree, f"syntax error: unexpected '{tree}'")
        handler = getattr(self, "x_" + tree.data, None)
        if handler is None:
            raise self.error(tree, f"unsupported: expression '{self.text_of(tree)}'")
        return handler(tree, expected) if tree.data == "list_expr" else handler(tree)

    # ---------------------------------------------------------------- leaves
    def x_number(self, tree):
        value, t = parse_number(str(tree.children[0]))
        return A.Literal(value, type=t, loc=self.loc(tree))

    def x_string(self, tree):
        raw = str(tree.children[0])[1:-1]
        return A.Literal(bytes(raw, "utf-8").decode("unicode_escape"), type=A.StringT(), loc=self.loc(tree))

    def x_true(self, tree):
        return A.Literal(True, type=A.BoolT(), loc=self.loc(tree))

    def x_false(self, tree):
        return A.Literal(False, type=A.BoolT(), loc=self.loc(tree))

    def x_path(self, tree):
        name = str(tree.children[0])
        sym = self.lookup(name, tree)
        loc = self.loc(tree)
        if sym.kind == "const":
            lit = sym.value
            return A.Literal(lit.value, type=lit.type, loc=loc)
        if sym.kind in ("param", "local"):
            return A.PathExpr(sym.decl.name, sym.kind, sym.decl, type=sym.type, loc=loc)
        if sym.kind == "instance":
            return A.PathExpr(sym.decl.name, "instance", sym.decl, type=sym.decl.type, loc=loc)
        if sym.kind in ("table", "action", "function"):
            # Declared names: mangled inside inlined control instances (see subcontrol.py).
            return A.PathExpr(sym.decl.name, sym.kind, sym.decl, type=sym.type, loc=loc)
        if sym.kind == "extern_function":
            return A.PathExpr(name, sym.kind, sym.decl, type=sym.type, loc=loc)
        raise self.error(tree, f"'{name}' is a {sym.kind}, not a value")

    def x_error_member(self, tree):
        name = str(tree.children[0].children[0])
        if name not in self.errors:
            raise self.error(tree, f"unknown error '{name}' (declare it with error {{ {name} }})")
        return A.Literal(name, type=A.ErrorT(), loc=self.loc(tree))

    def x_type_member(self, tree):
        tname, member = str(tree.children[0]), str(tree.children[1].children[0])
        t = self.named_type(tname, tree)
        if isinstance(t, A.EnumT):
            if member not in t.members:
                raise self.error(tree.children[1], f"enum {t.name} has no member '{member}'")
            return A.Literal(member, type=t, loc=self.loc(tree))
        raise self.error(tree, f"'{tname}.{member}': only enum members can be accessed on a type")

    def x_ctor_call(self, tree):
        raise self.error(tree, "unsupported: constructor call inside an expression "
                               "(instantiate externs as control locals)")

    def x_type_name(self, tree):
        raise self.error(tree, f"type '{self.text_of(tree)}' cannot be used as a value")

    def x_dontcare_arg(self, tree):
        raise self.error(tree, "unsupported: '_' (don't care) as an argument")

    def x_list_expr(self, tree, expected=None):
        elems_t = None
        if isinstance(expected, (A.StructT, A.HeaderT)) and len(tree.children) == len(expected.fields):
            elems_t = [f.type for f in expected.fields]
        elif isinstance(expected, A.TupleT) and len(tree.children) == len(expected.elems):
            elems_t = list(expected.elems)
        if elems_t is None:
            elems = [self.expr(c) for c in tree.children]
            return A.ListExpr(elems, type=A.TupleT(tuple(e.type for e in elems)), loc=self.loc(tree))
        elems = [self.coerce(self.expr(c, t), t, "initializer") for c, t in zip(tree.children, elems_t)]
        return A.ListExpr(elems, type=expected, loc=self.loc(tree))

    # ---------------------------------------------------------------- access
    def x_member(self, tree):
        base_tree, name = tree.children[0], str(tree.children[1].children[0])
        base = self.expr(base_tree)
        t, loc = base.type, self.loc(tree)
        if isinstance(t, (A.HeaderT, A.StructT, A.HeaderUnionT)):
            for f in t.fields:
                if f.name == name:
                    return A.Member(base, name, type=f.type, loc=loc)
            kind = {A.HeaderT: "header", A.StructT: "struct", A.HeaderUnionT: "header_union"}[type(t)]
            raise self.error(tree.children[1], f"{kind} {t.name} has no field '{name}'")
        if isinstance(t, A.StackT):
            if name in ("next", "last"):
                return A.Member(base, name, type=t.elem, loc=loc)
            if name == "lastIndex":
                return A.Member(base, name, type=A.BitT(32), loc=loc)
            if name == "size":
                return A.Literal(t.size, type=A.BitT(32), loc=loc)
            raise self.error(tree.children[1], f"header stack {type_name(t)} has no member '{name}' "
                                               f"(next, last, lastIndex, size)")
        if isinstance(t, A.TableApplyResultT):
            if name in ("hit", "miss"):
                return A.Member(base, name, type=A.BoolT(), loc=loc)
            if name == "action_run":
                return A.Member(base, name, type=A.ActionEnumT(t.table), loc=loc)
            raise self.error(tree.children[1], f"table apply result has no member '{name}' "
                                               f"(hit, miss, action_run)")
        if isinstance(t, A.ExternT) and name in self.externs[t.name].methods:
            raise self.error(tree.children[1], f"method '{name}' of {type_name(t)} must be called")
        raise self.error(tree.children[1], f"type {type_name(t)} has no member '{name}'")

    def x_index(self, tree):
        base = self.expr(tree.children[0])
        if not isinstance(base.type, A.StackT):
            raise self.error(tree, f"cannot index a value of type {type_name(base.type)} "
                                   f"(only header stacks; use [hi:lo] for bit slices)")
        index = self.expr(tree.children[1])
        if not is_int(index.type):
            raise self.error(tree.children[1], f"stack index must be an integer, not {type_name(index.type)}")
        if is_const(index):
            if not 0 <= index.value < base.type.size:
                raise self.error(tree.children[1], f"index {index.value} out of bounds for "
                                                   f"{type_name(base.type)}")
            index = A.Literal(index.value, type=A.BitT(32), loc=index.loc)
        return A.Index(base, index, type=base.type.elem, loc=self.loc(tree))

    def x_slice(self, tree):
        base = self.expr(tree.children[0])
        hi, lo = (self.const_int(c, "slice bound") for c in tree.children[1:3])
        t = base.type
        if isinstance(t, A.InfIntT) and is_const(base):
            if hi < lo or lo < 0:
                raise self.error(tree, f"bad slice [{hi}:{lo}]")
            return A.Literal((base.value >> lo) & ((1 << (hi - lo + 1)) - 1), type=A.BitT(hi - lo + 1),
                             loc=self.loc(tree))
        if not is_fixed_int(t):
            raise self.error(tree, f"cannot slice a value of type {type_name(t)}")
        if not (0 <= lo <= hi < t.width):
            raise self.error(tree, f"slice [{hi}:{lo}] out of range for {type_name(t)}")
        rt = A.BitT(hi - lo + 1)
        if is_const(base):
            return A.Literal((base.value >> lo) & ((1 << rt.width) - 1), type=rt, loc=self.loc(tree))
        return A.Slice(base, hi, lo, type=rt, loc=self.loc(tree))

    # ---------------------------------------------------------------- operators
    def x_unary(self, tree):
        op = str(tree.children[0])
        e = self.expr(tree.children[1])
        t, loc = e.type, self.loc(tree)
        if op == "!":
            if not isinstance(t, A.BoolT):
                raise self.error(tree, f"'!' needs a bool operand, not {type_name(t)}")
            return A.Literal(not e.value, type=t, loc=loc) if is_const(e) else A.Unary("!", e, type=t, loc=loc)
        if not is_int(t):
            raise self.error(tree, f"'{op}' needs an integer operand, not {type_name(t)}")
        if op == "+":
            return e
        if op == "~" and isinstance(t, A.InfIntT):
            raise self.error(tree, "'~' needs an operand of known width (e.g. 8w5)")
        if is_const(e):
            v = -e.value if op == "-" else ~e.value
            return A.Literal(wrap(v, t), type=t, loc=loc)
        return A.Unary(op, e, type=t, loc=loc)

    def x_binop(self, tree):
        return self.binary(tree, str(tree.children[1]), tree.children[0], tree.children[2])

    def x_lt_op(self, tree):
        return self.binary(tree, "<", *tree.children)

    def x_gt_op(self, tree):
        return self.binary(tree, ">", *tree.children)

    def x_shr(self, tree):
        # SHR_GT only matches a '>' directly followed by '>', so ">>" was written.
        return self.binary(tree, ">>", tree.children[0], tree.children[-1])

    def x_band(self, tree):
        return self.binary(tree, "&", *tree.children)

    def x_bor(self, tree):
        return self.binary(tree, "|", *tree.children)

    def x_bxor(self, tree):
        return self.binary(tree, "^", *tree.children)

    def x_land(self, tree):
        return self.binary(tree, "&&", *tree.children)

    def x_lor(self, tree):
        return self.binary(tree, "||", *tree.children)

    def binary(self, tree, op, ltree, rtree):
        left, right = self.expr(ltree), self.expr(rtree)
        loc = self.loc(tree)
        if op in ("&&", "||"):
            for side in (left, right):
                if not isinstance(side.type, A.BoolT):
                    raise self.error(tree, f"'{op}' needs bool operands, not {type_name(side.type)}")
            t = A.BoolT()
        elif op in ("<<", ">>"):
            return self.shift(tree, op, left, right)
        elif op == "++":
            return self.concat(tree, left, right)
        else:
            left, right, t = self.unify(tree, op, left, right)
            if op in _ARITH or op in _BITWISE or op in _ORDER:
                if not is_int(t):
                    raise self.error(tree, f"'{op}' needs integer operands, not {type_name(t)}")
            if op in ("|+|", "|-|") and not is_fixed_int(t):
                raise self.error(tree, f"'{op}' needs operands of known width")
            if op in ("/", "%") and is_const(right) and right.value == 0:
                raise self.error(rtree, "division by zero")
            if op in ("/", "%") and isinstance(t, A.IntT):
                raise self.error(tree, f"'{op}' is not defined on signed int<{t.width}>")
            if op in ("==", "!=") or op in _ORDER:
                t = A.BoolT()
        if is_const(left) and is_const(right) and not isinstance(left.value, str):
            v = fold_binary(op, left.value, right.value, t)
            if v is not None:
                return A.Literal(v, type=t, loc=loc)
        if op in ("==", "!=") and is_const(left) and is_const(right):
            return A.Literal((left.value == right.value) == (op == "=="), type=t, loc=loc)
        return A.Binary(op, left, right, type=t, loc=loc)

    def unify(self, tree, op, left, right):
        lt, rt = left.type, right.type
        if lt == rt:
            return left, right, lt
        if isinstance(lt, A.InfIntT) and is_fixed_int(rt):
            return self.coerce(left, rt, f"'{op}'"), right, rt
        if isinstance(rt, A.InfIntT) and is_fixed_int(lt):
            return left, self.coerce(right, lt, f"'{op}'"), lt
        hint = "varbits compare only with varbits of the same varbit<N> type" \
            if isinstance(lt, A.VarbitT) or isinstance(rt, A.VarbitT) else "cast one side"
        raise self.error(tree, f"operands of '{op}' have different types: {type_name(lt)} and "
                               f"{type_name(rt)} ({hint})")

    def shift(self, tree, op, left, right):
        if not is_int(left.type) or not is_int(right.type):
            raise self.error(tree, f"'{op}' needs integer operands")
        if isinstance(right.type, A.IntT) or (is_const(right) and right.value < 0):
            raise self.error(tree, f"shift amount of '{op}' must be unsigned")
        loc = self.loc(tree)
        if is_const(left) and is_const(right):
            return A.Literal(fold_binary(op, left.value, right.value, left.type), type=left.type, loc=loc)
        if isinstance(left.type, A.InfIntT):
            raise self.error(tree, f"left operand of '{op}' needs a known width (e.g. 32w1 {op} n)")
        if isinstance(right.type, A.InfIntT):
            right = A.Literal(right.value, type=A.BitT(max(right.value.bit_length(), 1)), loc=right.loc)
        return A.Binary(op, left, right, type=left.type, loc=loc)

    def concat(self, tree, left, right):
        for side in (left, right):
            if not is_fixed_int(side.type):
                raise self.error(tree, f"'++' needs operands of known width, not {type_name(side.type)}")
        t = type(left.type)(left.type.width + right.type.width)
        if is_const(left) and is_const(right):
            v = ((left.value & ((1 << left.type.width) - 1)) << right.type.width) | \
                (right.value & ((1 << right.type.width) - 1))
            return A.Literal(wrap(v, t), type=t, loc=self.loc(tree))
        return A.Binary("++", left, right, type=t, loc=self.loc(tree))

    def x_ternary(self, tree):
        cond = self.expr(tree.children[0])
        if not isinstance(cond.type, A.BoolT):
            raise self.error(tree.children[0], f"condition must be bool, not {type_name(cond.type)}")
        then, other = self.expr(tree.children[1]), self.expr(tree.children[2])
        then, other, t = self.unify(tree, "?:", then, other)
        if is_const(cond):
            return then if cond.value else other
        if isinstance(t, A.InfIntT):
            raise self.error(tree, "'?:' with untyped constants on both sides needs a width (e.g. 8w1)")
        return A.Ternary(cond, then, other, type=t, loc=self.loc(tree))

    def x_cast(self, tree):
        target = self.resolve_type(tree.children[0])
        e = self.expr(tree.children[1])
        return self.cast(tree, e, target)

    def cast(self, tree, e, target):
        src, loc = e.type, self.loc(tree)
        if src == target:
            return e
        ok = (is_int(src) and (is_fixed_int(target) or isinstance(target, A.BoolT) and src != A.IntT(1))) \
            or (isinstance(src, A.BoolT) and target == A.BitT(1)) \
            or (isinstance(target, A.EnumT) and target.underlying is not None and is_int(src)) \
            or (isinstance(src, A.EnumT) and src.underlying is not None and is_fixed_int(target))
        if isinstance(target, A.BoolT) and is_int(src) and bit_width(src) not in (None, 1):
            ok = False
        if not ok:
            raise self.error(tree, f"cannot cast {type_name(src)} to {type_name(target)}")
        if is_const(e):
            v = e.value
            if isinstance(src, A.EnumT):
                v = src.values[src.members.index(v)]
            if isinstance(target, A.BoolT):
                return A.Literal(bool(v), type=target, loc=loc)
            if isinstance(target, A.EnumT):
                uv = wrap(int(v), target.underlying)
                if uv in target.values:
                    return A.Literal(target.members[target.values.index(uv)], type=target, loc=loc)
                return A.Cast(A.Literal(uv, type=target.underlying, loc=loc), type=target, loc=loc)
            return A.Literal(wrap(int(v), target), type=target, loc=loc)
        return A.Cast(e, type=target, loc=loc)

    # ---------------------------------------------------------------- conversions
    def coerce(self, e, target, context: str, tree=None):
        """`e` as a value of `target` (implicit conversions of untyped constants
        and lists only); a precise error otherwise."""
        src = e.type
        if src == target or isinstance(target, TypeVar):
            return e
        if isinstance(src, A.InfIntT) and is_fixed_int(target):
            if is_const(e):
                return A.Literal(wrap(e.value, target), type=target, loc=e.loc)
            return A.Cast(e, type=target, loc=e.loc)
        if isinstance(e, A.ListExpr) and isinstance(target, (A.StructT, A.HeaderT, A.TupleT)):
            n = len(target.elems if isinstance(target, A.TupleT) else target.fields)
            if n == len(e.elems):
                types = target.elems if isinstance(target, A.TupleT) else [f.type for f in target.fields]
                elems = [self.coerce(x, t, context) for x, t in zip(e.elems, types)]
                return A.ListExpr(elems, type=target, loc=e.loc)
        hint = ""
        if is_int(src) and is_fixed_int(target):
            hint = f" (cast with ({type_name(target)})(...))"
        where = e.loc if tree is None else self.loc(tree)
        raise self.error_at(where, f"type mismatch in {context}: expected {type_name(target)}, "
                                   f"got {type_name(src)}{hint}")

    def const_int(self, tree, what: str) -> int:
        e = self.expr(tree)
        if not is_const(e) or not is_int(e.type):
            raise self.error(tree, f"{what} must be a compile-time integer constant")
        return e.value
