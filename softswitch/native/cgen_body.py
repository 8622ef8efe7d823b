"""P4 expressions and statements to C: controls, actions, table applies, v1model externs.

Width rules are the Python code generator's (softswitch/compiler/codegen_expr.py): values
are uint64_t within their type's range, and `+ - * << ~ unary-` wrap where computed; a
shift by an amount >= the width gives 0. Expressions here have no side effects (calls and
table applies in expressions are refused, except `t.apply().hit/.miss` as a whole `if`
condition), so C's unspecified operand order cannot differ from P4's left to right.

Generated shapes (x: the switch context, c: the packet):

    static void gen_ingress(ss_ctx *x, ss_pkt *c) { ...; L_exit: ; }
    static int a3(ss_ctx *x, ss_pkt *c, const uint64_t *args)   // an action: 1 = exit ran
    { uint64_t p_port = args[0]; ...; return 0; }

A table apply looks the key up in the table's C copy and switches on the action index.
"""
from __future__ import annotations

import dataclasses

import softswitch.frontend.p4ast as A
from softswitch.compiler.codegen_v1model import flatten
from softswitch.frontend.p4types import wrap as const_wrap
from softswitch.native.cgen_types import Unsupported, is_aggregate, scalar_width, type_name

MASK64 = (1 << 64) - 1
# v1model HashAlgorithm -> the C function (ssrt.h). `random` stays on the Python path: a
# hash of random bits cannot give the same answer on both paths. The _custom ones use
# the default parameters on the Python path too (set_crc*_parameters is not supported).
HASH_C = {"crc16": "ss_crc16", "crc32": "ss_crc32", "csum16": "ss_csum16", "xor16": "ss_xor16",
          "identity": "ss_identity", "crc16_custom": "ss_crc16", "crc32_custom": "ss_crc32"}


def cmask(w: int) -> str:
    return f"{(1 << w) - 1:#x}ULL"


def wrap(expr: str, t) -> str:
    w = scalar_width(t)
    return expr if w == 64 else f"(({expr}) & {cmask(w)})"


def has_apply(e) -> bool:
    """Whether expression e contains a table apply."""
    if isinstance(e, A.MethodCall) and e.method == "apply":
        return True
    if isinstance(e, list):
        return any(has_apply(x) for x in e)
    if not dataclasses.is_dataclass(e) or isinstance(e, A.Type):
        return False
    return any(has_apply(getattr(e, f.name)) for f in dataclasses.fields(e)
               if f.name not in ("type", "decl", "loc"))


def hit_condition(cond):
    """(apply MethodCall, C condition template on the hit variable) for `t.apply().hit`,
    `.miss` and their negations; None for any other condition."""
    neg = False
    while isinstance(cond, A.Unary) and cond.op == "!":
        neg, cond = not neg, cond.expr
    if isinstance(cond, A.Member) and cond.name in ("hit", "miss") and \
            isinstance(cond.expr, A.MethodCall) and cond.expr.method == "apply":
        hit = (cond.name == "hit") != neg
        return cond.expr, ("{}" if hit else "!{}")
    return None


class CBody:
    """Generates one C function body. `params` maps P4 parameter names to C expressions;
    `exit_code` is what `exit` becomes (goto in a control, return 1 in an action)."""

    def __init__(self, prog, ctl, params: dict, exit_code: str, return_code: str):
        self.prog = prog                 # cgen_program.ProgramGen: types, tables, actions, errors
        self.ctl = ctl
        self.params = dict(params)
        self.exit_code = exit_code
        self.return_code = return_code
        self.block_locals: set[str] = set()
        self.ctl_locals: dict[str, str] = {}   # control-level variable -> C lvalue
        self.lines: list[str] = []
        self.ind = 1

    # ------------------------------------------------------------ emission
    def line(self, s: str):
        self.lines.append("    " * self.ind + s)

    def tmp(self, prefix="_t") -> str:
        return self.prog.fresh(prefix)

    # ------------------------------------------------------------ expressions
    def expr(self, e) -> str:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(f"expression {type(e).__name__}", e.loc)
        return m(e)

    def x_Literal(self, e):
        v, t = e.value, e.type
        if isinstance(v, bool) or isinstance(t, A.BoolT):
            return "1" if v else "0"
        if isinstance(t, A.ErrorT):
            return str(self.prog.error_code(v))
        if isinstance(t, A.EnumT):
            if t.underlying is None or not t.values:
                raise Unsupported(type_name(t), e.loc)
            v = t.values[t.members.index(v)] if isinstance(v, str) else v
            t = t.underlying
        if isinstance(v, str):
            raise Unsupported("string value", e.loc)
        v = const_wrap(int(v), t)
        if not 0 <= v <= MASK64:
            raise Unsupported(f"constant {v} outside 0..2^64-1", e.loc)
        return f"{v:#x}ULL"

    def x_PathExpr(self, e):
        if e.kind == "param":
            if e.name not in self.params:
                raise Unsupported(f"use of parameter {e.name} here", e.loc)
            return self.params[e.name]
        if e.kind == "local":
            if e.name in self.block_locals or e.name not in self.ctl_locals:
                return "v_" + e.name
            return self.ctl_locals[e.name]
        if e.kind == "instance":
            raise Unsupported(f"extern instance {e.name}", e.loc)
        raise Unsupported(f"use of {e.kind} {e.name} as a value", e.loc)

    def x_Member(self, e):
        bt = e.expr.type
        if isinstance(bt, A.TableApplyResultT) or isinstance(e.expr, A.MethodCall):
            raise Unsupported(f"table apply result .{e.name} inside a larger expression", e.loc)
        if not is_aggregate(bt):
            raise Unsupported(f"member .{e.name} of a {type_name(bt)}", e.loc)
        return f"{self.expr(e.expr)}.f_{e.name}"

    def x_Index(self, e):
        raise Unsupported("header stack", e.loc)

    def x_Slice(self, e):
        base = self.expr(e.expr)
        scalar_width(e.expr.type, e.loc)
        w = e.hi - e.lo + 1
        return f"(({base} >> {e.lo}) & {cmask(w)})" if e.lo else f"({base} & {cmask(w)})"

    def x_Unary(self, e):
        v = self.expr(e.expr)
        if e.op == "!":
            return f"(!{v})"
        if isinstance(e.type, A.BitT):
            if e.op == "~":
                return wrap(f"~{v}", e.type)
            if e.op == "-":
                return wrap(f"0ULL - {v}", e.type)
            if e.op == "+":
                return v
        raise Unsupported(f"unary {e.op} on a {type_name(e.type)}", e.loc)

    def x_Ternary(self, e):
        return f"({self.expr(e.cond)} ? {self.expr(e.then)} : {self.expr(e.other)})"

    def x_Binary(self, e):
        op, t, lt = e.op, e.type, e.left.type
        if op in ("&&", "||"):
            return f"({self.expr(e.left)} {op} {self.expr(e.right)})"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if is_aggregate(lt):
                raise Unsupported(f"{op} on headers or structs", e.loc)
            scalar_width(lt, e.loc)
            return f"({self.expr(e.left)} {op} {self.expr(e.right)})"
        if not isinstance(t, A.BitT):
            raise Unsupported(f"operator {op} on a {type_name(t)}", e.loc)
        w = scalar_width(t, e.loc)
        a = self.expr(e.left)
        if op in ("+", "-", "*"):
            return wrap(f"{a} {op} {self.expr(e.right)}", t)
        if op in ("&", "|", "^"):
            return f"({a} {op} {self.expr(e.right)})"
        if op in ("<<", ">>"):
            if isinstance(e.right, A.Literal):
                s = int(e.right.value)
                if s < 0:
                    raise Unsupported("shift by a negative amount", e.loc)
                if s >= w:
                    return "0ULL"
                return wrap(f"{a} << {s}", t) if op == "<<" else f"({a} >> {s})"
            scalar_width(e.right.type, e.loc)
            b = self.expr(e.right)
            return f"ss_shl({a}, {b}, {w})" if op == "<<" else f"ss_shr({a}, {b})"
        if op == "|+|":
            return f"ss_sat_add({a}, {self.expr(e.right)}, {w})"
        if op == "|-|":
            return f"ss_sat_sub({a}, {self.expr(e.right)})"
        if op == "++":
            rw = scalar_width(e.right.type, e.loc)
            return f"(({a} << {rw}) | {self.expr(e.right)})"
        raise Unsupported(f"operator {op}", e.loc)

    def x_Cast(self, e):
        src, dst = e.expr.type, e.type
        if isinstance(e.expr, A.Literal) and isinstance(e.expr.value, int) \
                and not isinstance(e.expr.value, bool) and isinstance(dst, A.BitT):
            return self.x_Literal(A.Literal(e.expr.value, type=dst, loc=e.loc))
        v = self.expr(e.expr)
        if isinstance(dst, A.BoolT):
            return v if isinstance(src, A.BoolT) else f"({v} != 0)"
        dw = scalar_width(dst, e.loc)
        if isinstance(src, A.InfIntT):
            raise Unsupported(type_name(src), e.loc)
        sw = scalar_width(src, e.loc)
        return v if sw <= dw else f"({v} & {cmask(dw)})"

    def x_MethodCall(self, e):
        if e.method == "isValid" and isinstance(e.target.type, A.HeaderT):
            return f"{self.expr(e.target)}._v"
        raise Unsupported(f"{e.method}() in an expression", e.loc)

    def x_Call(self, e):
        raise Unsupported(f"call of {e.func.name} in an expression", e.loc)

    def x_ListExpr(self, e):
        raise Unsupported("list expression as a value", e.loc)

    # ------------------------------------------------------------ statements
    def block(self, b):
        for s in (b.stmts if isinstance(b, A.Block) else ([] if b is None else [b])):
            self.stmt(s)

    def stmt(self, s):
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise Unsupported(f"statement {type(s).__name__}", s.loc)
        try:
            m(s)
        except Unsupported as e:
            if not e.loc.line and s.loc.line:
                raise Unsupported(e.construct, s.loc) from None
            raise

    def s_Block(self, s):
        self.line("{")
        self.ind += 1
        self.block(s)
        self.ind -= 1
        self.line("}")

    def s_Empty(self, s):
        pass

    def assign(self, lhs, rhs: str):
        if isinstance(lhs, A.Slice):
            # the whole of what is sliced, with the slice's bits replaced; a slice of a
            # slice recurses until the base is a true lvalue
            base = self.expr(lhs.expr)
            bw = scalar_width(lhs.expr.type, lhs.loc)
            w = lhs.hi - lhs.lo + 1
            keep = ((1 << bw) - 1) ^ (((1 << w) - 1) << lhs.lo)
            self.assign(lhs.expr, f"({base} & {keep:#x}ULL) | ((({rhs}) & {cmask(w)}) << {lhs.lo})")
            return
        self.line(f"{self.expr(lhs)} = {rhs};")

    def s_Assign(self, s):
        if has_apply(s.rhs):
            raise Unsupported("table apply inside an expression", s.loc)
        if isinstance(s.rhs, A.ListExpr):
            raise Unsupported("assignment of a list expression", s.loc)
        if not is_aggregate(s.lhs.type):
            scalar_width(s.lhs.type, s.loc)
        self.prog.types.cname(s.lhs.type, s.loc)
        self.assign(s.lhs, self.expr(s.rhs))

    def s_VarDecl(self, s):
        self.block_locals.add(s.name)
        ct = self.prog.types.cname(s.type, s.loc)
        if is_aggregate(s.type):
            self.line(f"{ct} v_{s.name};")
            self.line(f"memset(&v_{s.name}, 0, sizeof v_{s.name});")
            if s.init is not None:
                if isinstance(s.init, A.ListExpr):
                    raise Unsupported("initialisation from a list expression", s.loc)
                self.line(f"v_{s.name} = {self.expr(s.init)};")
        else:
            init = "0" if s.init is None else self.expr(s.init)
            self.line(f"uint64_t v_{s.name} = {init};")

    def s_If(self, s):
        hc = hit_condition(s.cond)
        if hc is not None:
            mc, template = hc
            self.line("{")
            self.ind += 1
            hit = self.table_apply(mc)
            self.line(f"if ({template.format(hit)}) {{")
        else:
            if has_apply(s.cond):
                raise Unsupported("table apply inside a larger condition", s.loc)
            self.line(f"if ({self.expr(s.cond)}) {{")
        self.ind += 1
        self.block(s.then)
        self.ind -= 1
        if s.other is not None:
            self.line("} else {")
            self.ind += 1
            self.block(s.other)
            self.ind -= 1
        self.line("}")
        if hc is not None:
            self.ind -= 1
            self.line("}")

    def s_Exit(self, s):
        self.line(self.exit_code)

    def s_Return(self, s):
        if s.value is not None:
            raise Unsupported("return with a value", s.loc)
        self.line(self.return_code)

    def s_Switch(self, s):
        e = s.expr
        if isinstance(e, A.Member) and e.name == "action_run" and isinstance(e.expr, A.MethodCall):
            self.line("{")
            self.ind += 1
            _, action = self.table_apply(e.expr, want_action=True)
            tdecl = self.prog.table_decl(self.ctl, e.expr.target)
            self.line(f"switch ({action}) {{")
            for case in s.cases:
                for label in case.labels:
                    if isinstance(label, A.Default) or label == "default":
                        self.line("default:")
                    else:
                        self.line(f"case {self.prog.action_index(tdecl, label, s.loc)}:")
                if case.body is not None:
                    self.ind += 1
                    self.line("{")
                    self.ind += 1
                    self.block(case.body)
                    self.ind -= 1
                    self.line("}")
                    self.line("break;")
                    self.ind -= 1
            self.line("}")
            self.ind -= 1
            self.line("}")
            return
        if has_apply(e):
            raise Unsupported("table apply inside a switch expression", s.loc)
        scalar_width(e.type, s.loc)
        subject = self.tmp()
        self.line("{")
        self.ind += 1
        self.line(f"uint64_t {subject} = {self.expr(e)};")
        pending, first, default_body = [], True, None
        for case in s.cases:
            pending += list(case.labels)
            if case.body is None:
                continue
            if any(isinstance(x, A.Default) or x == "default" for x in pending):
                default_body, pending = case.body, []
                continue
            cond = " || ".join(f"{subject} == {self.expr(x)}" for x in pending)
            self.line(("if" if first else "} else if") + f" ({cond}) {{")
            first = False
            self.ind += 1
            self.block(case.body)
            self.ind -= 1
            pending = []
        if default_body is not None:
            self.line("{" if first else "} else {")
            self.ind += 1
            self.block(default_body)
            self.ind -= 1
        if default_body is not None or not first:
            self.line("}")
        self.ind -= 1
        self.line("}")

    def s_ExprStmt(self, s):
        e = s.expr
        if isinstance(e, A.MethodCall):
            if e.method == "apply" and isinstance(e.target, A.PathExpr) and e.target.kind == "table":
                self.line("{")
                self.ind += 1
                self.table_apply(e)
                self.ind -= 1
                self.line("}")
                return
            if e.method in ("setValid", "setInvalid") and isinstance(e.target.type, A.HeaderT):
                self.line(f"{self.expr(e.target)}._v = {int(e.method == 'setValid')};")
                return
            if e.method == "isValid":
                return
            return self.method_stmt(e)
        if isinstance(e, A.Call):
            if e.func.kind == "action":
                return self.call_action(e.func.decl, e.args, e.loc)
            if e.func.kind == "function":
                raise Unsupported(f"user function {e.func.name}", e.loc)
            m = getattr(self, "f_" + e.func.name, None)
            if m is None:
                raise Unsupported(f"extern function {e.func.name}", e.loc)
            return m(e, *e.args)
        raise Unsupported(f"statement expression {type(e).__name__}", s.loc)

    def method_stmt(self, e):
        tt = e.target.type
        owner = tt.name if isinstance(tt, A.ExternT) else type_name(tt)
        if owner == "register" and e.method in ("read", "write"):
            return self.register_access(e)
        if owner == "counter" and e.method == "count":
            return self.counter_count(e)
        if owner == "direct_counter" and e.method == "count":
            return      # the table apply counted the hit, as on the Python path and in BMv2
        if owner == "meter" and e.method == "execute_meter":
            return self.meter_execute(e)
        if owner == "direct_meter" and e.method == "read":
            return self.assign(e.args[0], "c->_dmeter")
        raise Unsupported(f"{owner}.{e.method}()", e.loc)

    # ------------------------------------------------------------ registers and counters
    # The index rule is the Python path's (codegen_v1model.py) and BMv2's: an index at or
    # beyond the declared size reads 0, and a write or count there does nothing. Indexes
    # are unsigned (scalar_width refuses int<W>), so one comparison decides.
    def _index(self, ix) -> str:
        if has_apply(ix):
            raise Unsupported("table apply inside an extern index", ix.loc)
        if isinstance(ix, A.Literal) and isinstance(ix.value, int) and not isinstance(ix.value, bool):
            if not 0 <= ix.value <= MASK64:
                raise Unsupported(f"extern index {ix.value}", ix.loc)
            return f"{ix.value:#x}ULL"      # gcc folds the range check away
        scalar_width(ix.type, ix.loc)
        v = self.tmp("_i")
        self.line(f"uint64_t {v} = {self.expr(ix)};")
        return v

    def register_access(self, e):
        info = self.prog.extern(self.ctl, e.target)
        cells = f"(({info.ctype} *)x->ext[{info.slot}])"
        self.line("{")
        self.ind += 1
        if e.method == "read":
            out, ix = e.args
            i = self._index(ix)
            self.assign(out, f"({i} < {info.size}ULL ? (uint64_t){cells}[{i}] : 0)")
        else:
            ix, val = e.args
            i = self._index(ix)
            self.line(f"if ({i} < {info.size}ULL) {cells}[{i}] = ({info.ctype})({self.expr(val)});")
        self.ind -= 1
        self.line("}")

    def counter_count(self, e):
        info = self.prog.extern(self.ctl, e.target)
        self.line("{")
        self.ind += 1
        i = self._index(e.args[0])
        self.line(f"if ({i} < {info.size}ULL) {{ ((uint64_t *)x->ext[{info.slot}])[{i}]++; "
                  f"((uint64_t *)x->ext[{info.slot + 1}])[{i}] += c->_plen; }}")
        self.ind -= 1
        self.line("}")

    def meter_execute(self, e):
        """The color, or 0 (green) for an index beyond the size (the Python path's rule);
        a packets meter takes 1 unit, a bytes meter the frame's length at ingress."""
        info = self.prog.extern(self.ctl, e.target)
        amount = "1" if info.obj.type == "packets" else "c->_plen"
        self.line("{")
        self.ind += 1
        i = self._index(e.args[0])
        self.assign(e.args[1], f"({i} < {info.size}ULL ? ss_meter_execute(&((ss_meter *)x->ext[{info.slot}])[{i}], "
                               f"{amount}, x->now) : 0)")
        self.ind -= 1
        self.line("}")

    # ------------------------------------------------------------ actions and tables
    def call_action(self, decl: A.ActionDecl, args, loc):
        fn = self.prog.action_fn(self.ctl, decl, loc)
        data = [a for p, a in zip(decl.params, args)]
        if not data:
            self.line(f"if ({fn}(x, c, NULL)) {self.exit_code}")
            return
        arr = self.tmp("_a")
        self.line("{")
        self.ind += 1
        self.line(f"uint64_t {arr}[{len(data)}] = {{{', '.join(self.expr(a) for a in data)}}};")
        self.line(f"if ({fn}(x, c, {arr})) {self.exit_code}")
        self.ind -= 1
        self.line("}")

    def table_apply(self, mc, want_action=False):
        """Emit the lookup and the action call; returns the C name of the hit flag (and of
        the action index with want_action). Must be inside a `{ }` block of its own."""
        tdecl = self.prog.table_decl(self.ctl, mc.target)
        info = self.prog.table_info(self.ctl, tdecl)
        keys = []
        for k in tdecl.keys:
            if has_apply(k.expr):
                raise Unsupported("table apply inside a key", k.expr.loc)
            scalar_width(k.expr.type, k.expr.loc)
            keys.append(self.expr(k.expr))
        kv, r, hit, act = self.tmp("_k"), self.tmp("_r"), self.tmp("_hit"), self.tmp("_act")
        self.line(f"uint64_t {kv}[{max(1, len(keys))}] = {{{', '.join(keys) or '0'}}};")
        self.line(f"const ss_result *{r} = ss_lookup(&x->tables[{info.index}], {kv});")
        self.line(f"int {hit} = {r}->hit;")
        self.line(f"int {act} = {r}->action;")
        self.line(f"(void){hit}; (void){act};")
        if info.meter_slot >= 0:        # metered before the action runs; a miss reads green
            amount = "1" if info.meter_packets else "c->_plen"
            self.line(f"c->_dmeter = {r}->slot >= 0 ? ss_meter_execute(&((ss_meter *)x->ext[{info.meter_slot}])"
                      f"[{r}->slot], {amount}, x->now) : 0;")
        if info.counter_slot >= 0:      # counted before the action runs, as on the Python path
            s = info.counter_slot
            self.line(f"if ({r}->slot >= 0) {{ ((uint64_t *)x->ext[{s}])[{r}->slot]++; "
                      f"((uint64_t *)x->ext[{s + 1}])[{r}->slot] += c->_plen; }}")
        self.line(f"switch ({act}) {{")
        for i, ref in enumerate(tdecl.actions):
            fn = self.prog.action_fn(self.ctl, ref.action, mc.loc)
            self.line(f"case {i}: if ({fn}(x, c, {r}->args)) {self.exit_code} break;")
        self.line("default: break;")
        self.line("}")
        return (hit, act) if want_action else hit

    # ------------------------------------------------------------ v1model externs
    def f_mark_to_drop(self, e, sm=None):
        s = self.expr(sm) if sm is not None else "c->sm"
        self.line(f"{s}.f_egress_spec = 511; {s}.f_mcast_grp = 0;")

    # Requests to the traffic manager: recorded in the packet, served by ss_switch.c after
    # the control, in the Python path's order. A field list index of all ones (the forms
    # without a list, and clone) keeps nothing.
    def f_clone(self, e, ctype, session):
        self._clone(session, "~0ULL")

    def f_clone_preserving_field_list(self, e, ctype, session, index):
        self._clone(session, self.expr(index))

    def _clone(self, session, fl: str):
        self.prog.uses.add("clone")
        self.line(f"c->_clone = 1; c->_clone_sess = {self.expr(session)}; c->_clone_fl = {fl};")

    def f_resubmit_preserving_field_list(self, e, index):
        self._request("resubmit", "_resub", self.expr(index))

    def f_recirculate_preserving_field_list(self, e, index):
        self._request("recirc", "_recirc", self.expr(index))

    def f_resubmit(self, e, *args):
        self._request("resubmit", "_resub", "~0ULL")

    def f_recirculate(self, e, *args):
        self._request("recirc", "_recirc", "~0ULL")

    def _request(self, use: str, member: str, fl: str):
        self.prog.uses.add(use)
        self.line(f"c->{member} = 1; c->{member}_fl = {fl};")

    def f_truncate(self, e, length):
        self.prog.uses.add("truncate")
        self.line(f"c->_trunc = 1; c->_trunc_len = {self.expr(length)};")

    # log_msg and digest: the values go to a queue in the context (ss_event) that the
    # Python side drains after each frame or batch and turns into what the Python path
    # does: log_msg lines in the log, digests in Switch.digests and the log. Only bit<W>
    # values (and enums over bit<W>), whose Python values are plain ints.
    def f_log_msg(self, e, msg, data=None):
        if not (isinstance(msg, A.Literal) and isinstance(msg.value, str)):
            raise Unsupported("log_msg with a message that is not a string constant", e.loc)
        self._event(e, "log", msg.value, [] if data is None else flatten(data))

    def f_digest(self, e, receiver, data):
        self._event(e, "digest", getattr(data.type, "name", "digest"), flatten(data))

    def _event(self, e, kind: str, text: str, leaves):
        what = "digest" if kind == "digest" else "log_msg"
        for x in leaves:
            if isinstance(x.type, (A.BoolT, A.ErrorT)):   # Python prints True / a name-less code
                raise Unsupported(f"a {'bool' if isinstance(x.type, A.BoolT) else 'error'} value in {what}", x.loc)
            if not isinstance(x.type, (A.BitT, A.EnumT)):
                raise Unsupported(f"a {type_name(x.type)} in {what}", x.loc)
            scalar_width(x.type, x.loc)
        ev = self.tmp("_ev")
        self.line("{")
        self.ind += 1
        if kind == "digest":
            self.line("x->stats.digests++;")
        self.line(f"ss_event *{ev} = ss_event_push(x, {self.prog.add_event(kind, text, len(leaves))});")
        if leaves:
            self.line(f"if ({ev}) {{")
            for i, x in enumerate(leaves):
                self.line(f"    {ev}->vals[{i}] = {self.expr(x)};")
            self.line("}")
        else:
            self.line(f"(void){ev};")
        self.ind -= 1
        self.line("}")

    def f_assert(self, e, cond):
        """A false condition drops the whole frame (ss_assert_fail), as on the Python path;
        the call site is logged by the Python side."""
        self.prog.uses.add("assert")
        self.line(f"if (!({self.expr(cond)})) ss_assert_fail(x, {self.prog.add_event('assert', str(e.loc), 0)});")

    f_assume = f_assert

    def data_hash(self, e, data, algo, with_payload=False) -> str:
        """C name of a variable holding hash `algo` of the data list (emitted here): the
        leaves packed MSB-first into bytes, zero bits padding the last one, then (with
        payload) the unparsed payload, as the Python path's _data_bytes does."""
        alg = algo.value if isinstance(algo, A.Literal) else getattr(algo, "name", "?")
        fn = HASH_C.get(alg)
        if fn is None:
            raise Unsupported(f"hash algorithm {alg}", e.loc)
        leaves = flatten(data)
        total = sum(scalar_width(x.type, x.loc) for x in leaves)
        nbytes = (total + 7) // 8
        buf, h = self.tmp("_hb"), self.tmp("_h")
        if with_payload:
            # the payload can be a whole frame: it goes to the context's scratch buffer
            self.prog.scratch = max(self.prog.scratch, nbytes)
            self.line(f"uint8_t *{buf} = x->scratch;")
            self.line(f"memset({buf}, 0, {nbytes});")
        else:
            self.line(f"uint8_t {buf}[{max(1, nbytes)}] = {{0}};")
        off = 0
        for x in leaves:
            w = scalar_width(x.type, x.loc)
            self.line(f"ss_put({buf}, {off}, {w}, {self.expr(x)});")
            off += w
        n = str(nbytes)
        if with_payload:
            self.line(f"memcpy({buf} + {nbytes}, c->_pay, c->_paylen);")
            n = f"{nbytes} + (size_t)c->_paylen"
        self.line(f"uint64_t {h} = {fn}({buf}, {n});")
        return h

    def f_hash(self, e, result, algo, base, data, maxv):
        """v1model hash as the Python path (and BMv2): base + (h % max), wrapped to the
        result's width; max 0 gives base + h (BMv2 would divide by zero)."""
        scalar_width(result.type, e.loc)
        self.line("{")
        self.ind += 1
        h = self.data_hash(e, data, algo)
        m = self.tmp("_m")
        self.line(f"uint64_t {m} = {self.expr(maxv)};")
        self.assign(result, wrap(f"{self.expr(base)} + ({m} ? {h} % {m} : {h})", result.type))
        self.ind -= 1
        self.line("}")

    def f_verify_checksum(self, e, cond, data, cksum, algo, with_payload=False):
        w = scalar_width(cksum.type, e.loc)
        self.line("{")
        self.ind += 1
        cs = self.data_hash(e, data, algo, with_payload)
        self.line(f"if (({self.expr(cond)}) && ({cs} & {cmask(w)}) != {self.expr(cksum)}) "
                  f"c->sm.f_checksum_error = 1;")
        self.ind -= 1
        self.line("}")

    def f_update_checksum(self, e, cond, data, cksum, algo, with_payload=False):
        w = scalar_width(cksum.type, e.loc)
        self.line("{")
        self.ind += 1
        cs = self.data_hash(e, data, algo, with_payload)
        self.line(f"if ({self.expr(cond)}) {{")
        self.ind += 1
        self.assign(cksum, f"{cs} & {cmask(w)}")
        self.ind -= 1
        self.line("}")
        self.ind -= 1
        self.line("}")

    def f_verify_checksum_with_payload(self, e, *args):
        self.f_verify_checksum(e, *args, with_payload=True)

    def f_update_checksum_with_payload(self, e, *args):
        self.f_update_checksum(e, *args, with_payload=True)
