"""P4 expressions to Python expressions, with P4's width semantics.

Values are plain Python ints (see codegen_types for the invariants). Every
operator that can leave the type's range wraps right where it is computed:
`bit<W>` with `& (2^W-1)`, `int<W>` with `((x + 2^(W-1)) & (2^W-1)) - 2^(W-1)`.
Shifts by a run-time amount are guarded so a huge amount cannot build a huge int.

`ExprGen` is a mixin: the statement generator supplies `var(name, kind, decl)`,
`glob(obj, hint)` (bind a Python object as a global of the generated module),
`prelude(line)` (emit a line before the current statement) and `unit` (program facts).
"""
from __future__ import annotations

import dataclasses

import softswitch.frontend.p4ast as A
from softswitch.compiler.codegen_types import CodegenError, default_value, is_aggregate, width_of, is_signed  # noqa: F401 (CodegenError re-exported)
from softswitch.frontend.p4types import wrap as const_wrap   # a constant brought into a type's range, as the front end folds it


def mask(w: int) -> str:
    return hex((1 << w) - 1)


def has_call(e) -> bool:
    """Whether expression e contains a function, method or action call."""
    if isinstance(e, (A.Call, A.MethodCall)):
        return True
    if isinstance(e, list):
        return any(has_call(x) for x in e)
    if not dataclasses.is_dataclass(e) or isinstance(e, A.Type):
        return False
    return any(has_call(getattr(e, f.name)) for f in dataclasses.fields(e)
               if f.name not in ("type", "decl", "loc"))


def wrap(expr: str, t) -> str:
    """Wrap a Python int expression into the range of type t."""
    if isinstance(t, A.BitT):
        return f"(({expr}) & {mask(t.width)})"
    if isinstance(t, A.IntT):
        h = 1 << (t.width - 1)
        return f"(((({expr}) + {hex(h)}) & {mask(t.width)}) - {hex(h)})"
    return expr


class ExprGen:
    unit = None  # set by subclasses
    stable: set = frozenset()     # Python names of objects whose identity is fixed in this function
    member_alias: dict = {}       # "p_hdr.ipv4" -> local alias, loaded at function entry

    # ------------------------------------------------------------ literals
    def literal(self, e: A.Literal) -> str:
        v, t = e.value, e.type
        if isinstance(v, bool) or isinstance(t, A.BoolT):
            return "True" if v else "False"
        if isinstance(t, A.ErrorT) or (isinstance(v, str) and isinstance(t, A.ErrorT)):
            return str(self.unit.error_code(v))
        if isinstance(t, A.EnumT):
            if isinstance(v, str):
                if t.underlying is not None and t.values:
                    return str(t.values[t.members.index(v)])
                return repr(v)
            return str(v)
        if isinstance(v, str):
            return repr(v)
        return str(const_wrap(int(v), t))

    # ------------------------------------------------------------ dispatch
    def expr(self, e) -> str:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise CodegenError(f"unsupported: expression {type(e).__name__}", e.loc)
        return m(e)

    def x_Literal(self, e):
        return self.literal(e)

    def x_PathExpr(self, e):
        return self.var(e.name, e.kind, e.decl)

    def x_Member(self, e):
        bt = e.expr.type
        if isinstance(bt, A.TableApplyResultT) or isinstance(e.expr, A.MethodCall) and e.expr.method == "apply":
            hit, act = self.table_apply(e.expr)
            if e.name == "hit":
                return hit
            if e.name == "miss":
                return f"(not {hit})"
            if e.name == "action_run":
                return f"{act}.name"
            raise CodegenError(f"unsupported: table apply result .{e.name}", e.loc)
        base = self.expr(e.expr)
        if isinstance(bt, A.StackT):
            if e.name == "size":
                return str(bt.size)
            if e.name == "lastIndex":
                return f"(({base}.nxt - 1) & 0xffffffff)"
            if e.name == "last":
                return f"{base}.h[{base}.nxt - 1 if {base}.nxt > 0 else 0]"
            if e.name == "next":
                return f"{base}.h[{base}.nxt if {base}.nxt < {bt.size} else {bt.size - 1}]"
            raise CodegenError(f"unsupported: header stack member .{e.name}", e.loc)
        code = f"{base}.{e.name}"
        if base in self.stable and is_aggregate(e.type):
            # Nested headers/structs never change identity (assignment copies into
            # them), so `hdr.vals` can be loaded once per function into a local.
            alias = self.member_alias.get(code)
            if alias is None:
                alias = self.member_alias[code] = f"_m{len(self.member_alias)}_{e.name}"
                self.stable.add(alias)
            return alias
        return code

    def x_Index(self, e):
        base = self.expr(e.expr)
        idx = self.expr(e.index)
        size = e.expr.type.size if isinstance(e.expr.type, A.StackT) else None
        if isinstance(e.index, A.Literal):
            i = int(e.index.value)
            if size is not None and not 0 <= i < size:
                raise CodegenError(f"index {i} out of bounds of a stack of size {size}", e.loc)
            return f"{base}.h[{i}]"
        # Out-of-range run-time index: P4 leaves it undefined; use the last element
        # rather than raising (BMv2 reports an error and stops the packet).
        return f"{base}.h[min({idx}, {size - 1})]"

    def x_Slice(self, e):
        base = self.expr(e.expr)
        w = e.hi - e.lo + 1
        return f"(({base} >> {e.lo}) & {mask(w)})" if e.lo else f"({base} & {mask(w)})"

    def x_Unary(self, e):
        v = self.expr(e.expr)
        t = e.type
        if e.op == "!":
            return f"(not {v})"
        if e.op == "-":
            return wrap(f"-{v}", t)
        if e.op == "~":
            if isinstance(t, A.BitT):
                return f"({v} ^ {mask(t.width)})"
            return f"(~{v})"
        if e.op == "+":
            return v
        raise CodegenError(f"unsupported: unary operator {e.op}", e.loc)

    def x_Ternary(self, e):
        c = self.expr(e.cond)
        mark = len(self.lines)
        a = self.expr(e.then)
        then_lines = self.lines[mark:]
        del self.lines[mark:]
        b = self.expr(e.other)
        other_lines = self.lines[mark:]
        del self.lines[mark:]
        if not then_lines and not other_lines:
            return f"({a} if {c} else {b})"
        # A branch needs statements (a table apply, a call with out parameters):
        # run them only on the branch taken, as P4 evaluates ?: lazily.
        t = self.tmp()
        self.line(f"if {c}:")
        self._nested(then_lines, f"{t} = {a}")
        self.line("else:")
        self._nested(other_lines, f"{t} = {b}")
        return t

    def _nested(self, lines, last):
        self.lines.extend("    " + l for l in lines)
        self.ind += 1
        self.line(last)
        self.ind -= 1

    def _lazy_bool(self, op, a, e_right):
        """`a && b` / `a || b` where b may need statements first: keep short-circuit."""
        mark = len(self.lines)
        b = self.expr(e_right)
        if len(self.lines) == mark:
            return f"({a} {'and' if op == '&&' else 'or'} {b})"
        pre = self.lines[mark:]
        del self.lines[mark:]
        t = self.tmp()
        self.line(f"{t} = {a}")
        self.line(f"if {t}:" if op == "&&" else f"if not {t}:")
        self._nested(pre, f"{t} = {b}")
        return t

    def x_Binary(self, e):
        op, t = e.op, e.type
        lt = e.left.type
        if op in ("&&", "||"):
            return self._lazy_bool(op, self.expr(e.left), e.right)
        a, b = self.ordered([e.left, e.right])
        if op in ("==", "!="):
            if is_aggregate(lt):
                r = f"{a}._eq({b})"
                return r if op == "==" else f"(not {r})"
            return f"({a} {op} {b})"
        if op in ("<", "<=", ">", ">="):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return wrap(f"{a} {op} {b}", t)
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "|+|":
            return self._saturate(f"{a} + {b}", t)
        if op == "|-|":
            return self._saturate(f"{a} - {b}", t)
        if op in ("/", "%"):
            if is_signed(t):
                raise CodegenError("unsupported: division or modulo of signed values (p4c allows it only on bit<W>)", e.loc)
            # Division by zero has no P4 meaning; BMv2 would crash, we give 0.
            pyop = "//" if op == "/" else "%"
            d = self.tmp()
            return f"(({a} {pyop} {d}) if ({d} := {b}) else 0)"
        if op == "<<":
            w = width_of(t) if isinstance(t, (A.BitT, A.IntT)) else None
            if w is None:
                return f"({a} << {b})"
            if isinstance(e.right, A.Literal):
                s = int(e.right.value)
                return "0" if s >= w else wrap(f"{a} << {s}", t)
            sv = self.tmp()
            return f"({wrap(f'{a} << {sv}', t)} if ({sv} := {b}) < {w} else 0)"
        if op == ">>":
            # Python's >> is arithmetic on negative ints: exactly int<W> semantics;
            # on bit<W> it shifts in zeros and any amount >= W gives 0.
            return f"({a} >> {b})"
        if op == "++":
            rw = width_of(e.right.type)
            lv = a if not is_signed(lt) else f"({a} & {mask(width_of(lt))})"
            rv = b if not is_signed(e.right.type) else f"({b} & {mask(rw)})"
            r = f"(({lv} << {rw}) | {rv})"
            if is_signed(t):
                return f"_sx({r}, {width_of(t)})"
            return r
        raise CodegenError(f"unsupported: binary operator {op}", e.loc)

    def _saturate(self, expr, t):
        if isinstance(t, A.BitT):
            return f"min(max({expr}, 0), {mask(t.width)})"
        if isinstance(t, A.IntT):
            h = 1 << (t.width - 1)
            return f"min(max({expr}, {-h}), {h - 1})"
        raise CodegenError("saturating arithmetic needs bit<W> or int<W> operands")

    def x_Cast(self, e):
        src, dst = e.expr.type, e.type
        v = self.expr(e.expr)
        if isinstance(e.expr, A.Literal) and isinstance(e.expr.value, int) and not isinstance(e.expr.value, bool) \
                and isinstance(dst, (A.BitT, A.IntT)):
            return str(const_wrap(e.expr.value, dst))
        if isinstance(dst, A.BoolT):
            return f"({v} != 0)" if not isinstance(src, A.BoolT) else v
        if isinstance(src, A.BoolT):
            return f"(1 if {v} else 0)"
        if isinstance(dst, A.BitT):
            if isinstance(src, A.BitT) and src.width <= dst.width:
                return v
            return f"({v} & {mask(dst.width)})"
        if isinstance(dst, A.IntT):
            if isinstance(src, A.IntT) and src.width <= dst.width:
                return v
            return f"_sx({v}, {dst.width})"
        if isinstance(dst, A.EnumT):
            return v
        return v

    def x_ListExpr(self, e):
        codes = self.ordered(e.elems)
        if isinstance(e.type, (A.HeaderT, A.StructT)):
            # a list as a header or struct value (returned, passed, compared): a new object
            obj = self.tmp()
            self.line(f"{obj} = {default_value(e.type)}")
            self.fill(obj, e.type, codes)
            return obj
        return "(" + "".join(c + ", " for c in codes) + ")"

    def fill(self, obj: str, t, codes):
        """Set the fields of the fresh object obj (of header or struct type t) to codes."""
        if isinstance(t, A.HeaderT):
            self.line(f"{obj}._v = True")
        for f, c in zip(t.fields, codes):
            self.line(f"{obj}.{f.name}._set({c})" if is_aggregate(f.type) else f"{obj}.{f.name} = {c}")

    def union_member_valid(self, member, base: str | None = None):
        """Emit the invalidation of the other members when union member `member` (an
        A.Member of a header_union) becomes valid: a union has at most one valid member."""
        if not (isinstance(member, A.Member) and isinstance(member.expr.type, A.HeaderUnionT)):
            return
        base = base if base is not None else self.expr(member.expr)
        for f in member.expr.type.fields:
            if f.name != member.name:
                self.line(f"{base}.{f.name}._v = False")

    # ------------------------------------------------------------ evaluation order
    def ordered(self, exprs) -> list:
        """Python code of each expression, evaluated left to right as P4 requires (p4c's
        side-effect ordering). Evaluating one may emit statements first (a call with out or
        inout arguments, a table apply); those would run before the earlier operands' code is
        read, so the earlier values are captured into temporaries ahead of them."""
        codes = []
        for x in exprs:
            mark = len(self.lines)
            code = self.expr(x)
            if len(self.lines) > mark:
                codes = [self.capture_at(mark, c, prev.type) for c, prev in zip(codes, exprs)]
            codes.append(code)
        return codes

    def capture_at(self, mark: int, code: str, t) -> str:
        """`code`'s value as of line position mark: a temporary assigned there."""
        if code.lstrip("-").isdigit() or code in ("True", "False"):
            return code
        tmp = self.tmp()
        value = f"{code}._clone()" if is_aggregate(t) else code
        self.lines.insert(mark, "    " * self.ind + f"{tmp} = {value}")
        return tmp

    def pin_indexes(self, lv, mark: int):
        """The lvalue lv with its stack indexes that contain a call evaluated at line
        position mark, i.e. before the right side. That is p4c's order (its side-effect
        pass hoists only such indexes, first), so BMv2's: an index without a call is read
        when the assignment happens, after the right side."""
        if isinstance(lv, A.Index):
            base = self.pin_indexes(lv.expr, mark)
            idx = lv.index
            if has_call(idx):
                start = len(self.lines)
                code = self.expr(idx)
                moved = self.lines[start:]
                del self.lines[start:]
                self.lines[mark:mark] = moved
                tmp = self.capture_at(mark + len(moved), code, idx.type)
                idx = A.PathExpr(tmp, "raw", type=idx.type, loc=idx.loc)
            return dataclasses.replace(lv, expr=base, index=idx)
        if isinstance(lv, (A.Member, A.Slice)):
            return dataclasses.replace(lv, expr=self.pin_indexes(lv.expr, mark))
        return lv

    def x_MethodCall(self, e):
        if e.method == "isValid":
            return f"{self.expr(e.target)}._v"
        if e.method == "apply":
            hit, _ = self.table_apply(e)
            return hit
        return self.call_expr(e)

    def x_Call(self, e):
        return self.call_expr(e)

    # ------------------------------------------------------------ lvalues
    def assign(self, lhs, rhs_code: str, rhs_expr=None):
        """Emit the assignment of Python expression rhs_code to the P4 lvalue lhs."""
        t = lhs.type
        if isinstance(lhs, A.Slice):
            base = self.expr(lhs.expr)
            bt = lhs.expr.type
            w = lhs.hi - lhs.lo + 1
            m = (1 << w) - 1
            bw = width_of(bt)
            clear = ((1 << bw) - 1) ^ (m << lhs.lo)
            new = f"(({base} & {hex(clear)}) | ((({rhs_code}) & {hex(m)}) << {lhs.lo}))"
            if is_signed(bt):
                new = f"_sx({new}, {bw})"
            self.assign(lhs.expr, new)
            return
        target = self.expr(lhs)
        if is_aggregate(t):
            self.line(f"{target}._set({rhs_code})")
            if isinstance(lhs, A.Member) and isinstance(lhs.expr.type, A.HeaderUnionT):
                self.line(f"if {target}._v:")
                self.ind += 1
                self.union_member_valid(lhs)
                self.ind -= 1
            return
        self.line(f"{target} = {rhs_code}")

    def assign_list(self, lhs, target, lst: A.ListExpr):
        """Initialize a variable that is being declared (so no element can read it) from a
        list, field by field, without building a temporary object."""
        t = lhs.type
        if isinstance(t, A.HeaderT):
            self.line(f"{target}._v = True")
        codes = self.ordered(lst.elems)
        for f, x, c in zip(t.fields, lst.elems, codes):
            if isinstance(x, A.ListExpr) and is_aggregate(f.type):
                # the nested object was built by ordered(): copy it
                self.line(f"{target}.{f.name}._set({c})")
            else:
                self.assign(A.Member(lhs, f.name, type=f.type, loc=lhs.loc), c, x)
