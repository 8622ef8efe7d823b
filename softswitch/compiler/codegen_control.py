"""Statements, actions, tables, controls and user functions to Python source.

Shape of the generated code (why: plain locals and straight-line code are what
CPython runs fastest; nothing here visits the AST per packet):

    def c_MyIngress(_P, p_hdr, p_meta, p_standard_metadata):   # one per control
        L = L_MyIngress()            # control-level variables (only if it has any)
        try:
            ... body ...
        except P4Exit:               # `exit` anywhere, also inside an action
            pass

    def a_MyIngress_fwd(_P, p_hdr, p_meta, p_standard_metadata, L, A):  # one per (control, action)
        p_port, = A                  # directionless parameters: table data or call args
        ...

A table apply is inline: key tuple, `Table.lookup`, and a call through a dict
from the state's ActionSpec object to the generated action function.
`_P` is the per-packet context (v1model.Packet): length, time, clone/resubmit
requests, digests. Registers' value lists are cached in locals at function entry.
"""
from __future__ import annotations

import softswitch.frontend.p4ast as A
from softswitch.compiler.codegen_expr import CodegenError, ExprGen
from softswitch.compiler.codegen_types import default_value, is_aggregate, width_of, is_signed


class FnGen(ExprGen):
    """Generates the body of one Python function."""

    def __init__(self, unit, ctl=None, ctl_params=(), ctl_locals=()):
        self.unit = unit
        self.ctl = ctl                              # ControlDecl / ParserDecl or None
        self.in_control_body = False                # generating a control's apply block
        self.ctl_args = ", ".join("p_" + p.name for p in ctl_params)
        # the control's (parser's) parameters are passed through unchanged to every
        # generated function of it: their nested headers can be cached in locals
        self.stable = {"p_" + p.name for p in ctl_params}
        self.member_alias = {}
        self.ctl_locals = set(ctl_locals)           # names stored in L
        self.py_locals: set[str] = set()
        self.lines: list[str] = []
        self.ind = 1
        self.reg_alias: dict[str, str] = {}         # register global -> local list alias
        self.return_code = "return"
        self.applied: dict[int, tuple[str, str]] = {}

    # ------------------------------------------------------------ emission
    def line(self, s: str):
        self.lines.append("    " * self.ind + s)

    def tmp(self) -> str:
        return self.unit.fresh("_t")

    def header_lines(self) -> list[str]:
        """Loads at function entry: register value lists and cached nested headers
        (in first-use order, so a parent alias precedes its children)."""
        return (["    " + f"{alias} = {g}.values" for g, alias in self.reg_alias.items()] +
                ["    " + f"{alias} = {code}" for code, alias in self.member_alias.items()])

    def reg_values(self, glob_name: str) -> str:
        alias = self.reg_alias.get(glob_name)
        if alias is None:
            alias = self.reg_alias[glob_name] = "_rv_" + glob_name
        return alias

    # ------------------------------------------------------------ names
    def var(self, name, kind, decl):
        if kind == "param":
            return "p_" + name
        if kind == "local":
            if name in self.py_locals or name not in self.ctl_locals:
                return "v_" + name
            return "L." + name
        if kind == "instance":
            return self.unit.instance_glob(self.ctl, name)
        if kind == "raw":  # synthetic path built by the generator itself
            return name
        raise CodegenError(f"unsupported: use of {kind} '{name}' as a value")

    # ------------------------------------------------------------ statements
    def block(self, b):
        stmts = b.stmts if isinstance(b, A.Block) else ([] if b is None else [b])
        n = len(self.lines)
        for s in stmts:
            self.stmt(s)
        if len(self.lines) == n:
            self.line("pass")

    def stmt(self, s):
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise CodegenError(f"unsupported: statement {type(s).__name__}", s.loc)
        try:
            m(s)
        except CodegenError as e:
            if not e.loc.line and s.loc is not None and s.loc.line:
                raise CodegenError(e.message, s.loc) from None
            raise

    def s_Block(self, s):
        self.block(s)

    def s_Empty(self, s):
        pass

    def s_Assign(self, s):
        mark = len(self.lines)
        rhs = self.expr(s.rhs)
        lhs = s.lhs if len(self.lines) == mark else self.pin_indexes(s.lhs, mark)
        self.assign(lhs, rhs, s.rhs)

    def s_VarDecl(self, s):
        self.py_locals.add(s.name)
        self.declare(f"v_{s.name}", s.type, s.init)

    def declare(self, target, t, init):
        if is_aggregate(t):
            self.line(f"{target} = {default_value(t)}")
            if isinstance(init, A.ListExpr):
                tmp_path = A.PathExpr(target, "raw", type=t)
                self.assign_list(tmp_path, target, init)
            elif init is not None:
                self.line(f"{target}._set({self.expr(init)})")
        elif init is not None:
            self.line(f"{target} = {self.expr(init)}")
        else:
            self.line(f"{target} = {default_value(t)}")

    def s_ExprStmt(self, s):
        self.call_stmt(s.expr)

    def s_If(self, s):
        c = self.expr(s.cond)
        self.line(f"if {c}:")
        self.ind += 1
        self.block(s.then)
        self.ind -= 1
        if s.other is not None and (not isinstance(s.other, A.Block) or s.other.stmts):
            self.line("else:")
            self.ind += 1
            self.block(s.other)
            self.ind -= 1

    def s_Exit(self, s):
        self.line("raise P4Exit")

    def s_Return(self, s):
        if s.value is not None:
            v = self.expr(s.value)
            self.line(self.return_code.replace("__RV__", v))
        else:
            self.line(self.return_code)

    def s_Switch(self, s):
        e = s.expr
        is_action_run = isinstance(e, A.Member) and e.name == "action_run"
        if is_action_run:
            _, act = self.table_apply(e.expr)
            subject = act
            table = self.unit.table_decl(self.ctl, e.expr.target)
        else:
            subject = self.tmp()
            self.line(f"{subject} = {self.expr(e)}")
        pending, first, default_body = [], True, None
        for case in s.cases:
            labels = [l for l in case.labels]
            pending += labels
            if case.body is None:
                continue
            if any(isinstance(l, A.Default) or l == "default" for l in pending):
                default_body = case.body
                pending = []
                continue
            if is_action_run:
                specs = [self.unit.action_spec_glob(table, l) for l in pending]
                cond = " or ".join(f"{subject} is {g}" for g in specs)
            else:
                vals = [self.expr(l) for l in pending]
                cond = " or ".join(f"{subject} == {v}" for v in vals)
            self.line(("if " if first else "elif ") + cond + ":")
            first = False
            self.ind += 1
            self.block(case.body)
            self.ind -= 1
            pending = []
        if default_body is not None:
            if first:
                self.block(default_body)
            else:
                self.line("else:")
                self.ind += 1
                self.block(default_body)
                self.ind -= 1

    # ------------------------------------------------------------ calls
    def call_stmt(self, e):
        if isinstance(e, A.MethodCall):
            if e.method == "apply" and (isinstance(e.target, A.PathExpr) and e.target.kind == "table"):
                self.table_apply(e)
                return
            if e.method in ("setValid", "setInvalid"):
                if e.method == "setValid":
                    self.union_member_valid(e.target)
                self.line(f"{self.expr(e.target)}._v = {e.method == 'setValid'}")
                return
            if e.method == "isValid":
                return
            if e.method in ("push_front", "pop_front"):
                self.line(f"{self.expr(e.target)}.{e.method}({self.expr(e.args[0])})")
                return
            self.unit.v1.method_stmt(self, e)
            return
        if isinstance(e, A.Call):
            k = e.func.kind
            if k == "action":
                self.call_action(e.func.decl, e.args)
                return
            if k == "function":
                self.call_function(e, want_value=False)
                return
            self.unit.v1.function_stmt(self, e)
            return
        raise CodegenError(f"unsupported: statement expression {type(e).__name__}", getattr(e, "loc", None))

    def call_expr(self, e):
        if isinstance(e, A.Call) and e.func.kind == "function":
            return self.call_function(e, want_value=True)
        if isinstance(e, A.MethodCall):
            return self.unit.v1.method_expr(self, e)
        raise CodegenError(f"unsupported: call of {getattr(e.func, 'name', '?')} in an expression", e.loc)

    def _bind_args(self, params, args):
        """Directional args (Python exprs) and copy-out pairs (param, lvalue expr)."""
        dir_args, outs, data_args = [], [], []
        read = [(p, a) for p, a in zip(params, args) if p.direction != "out"]
        codes = dict(zip((id(a) for _, a in read), self.ordered([a for _, a in read])))
        for p, a in zip(params, args):
            if p.direction in ("out", "inout"):
                outs.append(a)
            if p.direction == "out":
                dir_args.append("None")
            elif p.direction:
                dir_args.append(codes[id(a)])
            else:
                data_args.append(codes[id(a)])
        return dir_args, data_args, outs

    def call_action(self, decl, args):
        fn = self.unit.action_fn(self.ctl, decl)
        if self.in_control_body:   # p4c lists these in P4Info (an action called from an action is inlined)
            self.unit.called_actions.setdefault(self.unit.action_runtime_name(decl), decl)
        dir_args, data_args, outs = self._bind_args(decl.params, args)
        tup = "(" + "".join(a + ", " for a in data_args) + ")"
        call = f"{fn}(_P, {self.ctl_args}{', ' if self.ctl_args else ''}{self.locals_obj()}, {tup}" + \
            "".join(", " + a for a in dir_args) + ")"
        self._copy_out(call, outs, has_value=False, exits=True)

    def call_function(self, e, want_value):
        decl = e.func.decl
        fn = self.unit.function_fn(decl)
        dir_args, data_args, outs = self._bind_args(decl.params, e.args)
        call = f"{fn}(_P" + "".join(", " + a for a in dir_args + data_args) + ")"
        has_value = not isinstance(decl.return_type, A.VoidT)
        return self._copy_out(call, outs, has_value, want_value)

    def _copy_out(self, call, outs, has_value, want_value=False, exits=False):
        """Emit the call and the copy-out of its out/inout arguments; exits: the callee (an
        action) returns an exit flag after them, and exits here after the copy-out."""
        if not outs:
            if want_value:
                return call
            self.line(call)
            return None
        r = self.tmp()
        self.line(f"{r} = {call}")
        base = 1 if has_value else 0
        for i, lv in enumerate(outs):
            self.assign(lv, f"{r}[{base + i}]")
        if exits:
            self.line(f"if {r}[{base + len(outs)}]:")
            self.line("    raise P4Exit")
        return f"{r}[0]" if has_value else None

    def locals_obj(self) -> str:
        return "L" if self.ctl_locals else "None"

    # ------------------------------------------------------------ tables
    def table_apply(self, mc):
        key = id(mc)
        if key in self.applied:
            return self.applied[key]
        tdecl = self.unit.table_decl(self.ctl, mc.target)
        tg = self.unit.table_glob(self.ctl, tdecl)
        keys = []
        for k in tdecl.keys:
            v = self.expr(k.expr)
            t = k.expr.type
            if isinstance(t, A.BoolT):
                v = f"(1 if {v} else 0)"
            elif is_signed(t):
                v = f"({v} & {hex((1 << width_of(t)) - 1)})"
            keys.append(v)
        hit, act, args, ent = self.tmp(), self.tmp(), self.tmp(), self.tmp()
        ktuple = "(" + "".join(k + ", " for k in keys) + ")"
        self.line(f"{hit}, {act}, {args}, {ent} = {tg}.lookup({ktuple})")
        if tdecl.counters:
            self.line(f"if {ent} is not None:")
            self.line(f"    {ent}.packets += 1; {ent}.bytes += _P.plen")
        if tdecl.meters:
            dm = self.unit.instance_glob(self.ctl, tdecl.meters)
            self.line(f"_P.dmeter = {dm}.execute_entry({ent}, _P.plen, _P.now)")
        fmap = self.unit.table_fn_map(self.ctl, tdecl)
        self.line(f"{fmap}[{act}](_P, {self.ctl_args}{', ' if self.ctl_args else ''}{self.locals_obj()}, {args})")
        self.applied[key] = (hit, act)
        return hit, act


# ---------------------------------------------------------------- whole functions
def gen_action(unit, ctl, decl: A.ActionDecl, fname: str) -> list[str]:
    ctl_params = ctl.params if ctl is not None else ()
    ctl_locals = _control_var_names(ctl)
    g = FnGen(unit, ctl, ctl_params, ctl_locals)
    g.stable -= {"p_" + p.name for p in decl.params}   # copied in: not the caller's objects
    data = [p for p in decl.params if not p.direction]
    directional = [p for p in decl.params if p.direction]
    outs = [p for p in directional if p.direction in ("out", "inout")]
    # with out/inout parameters: returns their values and whether `exit` ran, because an
    # exit still copies them out (P4-16 exit statement; p4c and BMv2 do): the caller copies
    # out, then exits
    outs_code = "".join(f"p_{p.name}, " for p in outs)
    g.return_code = f"return ({outs_code}False)" if outs else "return"
    if data:
        g.line("".join(f"p_{p.name}, " for p in data) + "= A")
    _copy_in(g, directional)
    if outs:
        g.line("try:")
        g.ind += 1
    g.block(decl.body)
    if outs:
        g.ind -= 1
        g.line("except P4Exit:")
        g.line(f"    return ({outs_code}True)")
        g.line(g.return_code)
    sig = ", ".join(["_P"] + (["p_" + p.name for p in ctl_params]) + ["L", "A"] +
                    ["p_" + p.name for p in directional])
    return [f"def {fname}({sig}):  # action {decl.runtime_name or decl.name}"] + g.header_lines() + g.lines


def gen_bound_action(unit, ctl, ref: A.ActionRef, fname: str) -> list[str]:
    """A table's entry for an action whose in/out/inout parameters are bound in the table's
    actions list (`actions = { a(hdr.x); }`): called like any table action, it evaluates the
    bound arguments when the table runs the action, passes the entry's data through, and
    copies out (then exits if the action did)."""
    g = FnGen(unit, ctl, ctl.params, _control_var_names(ctl))
    directional = [p for p in ref.action.params if p.direction]
    dir_args, _, outs = g._bind_args(directional, ref.args)
    call = f"{unit.action_fn(ctl, ref.action)}(_P, {g.ctl_args}{', ' if g.ctl_args else ''}L, A" + \
        "".join(", " + a for a in dir_args) + ")"
    g._copy_out(call, outs, has_value=False, exits=True)
    sig = ", ".join(["_P"] + ["p_" + p.name for p in ctl.params] + ["L", "A"])
    return [f"def {fname}({sig}):  # table action {ref.action.runtime_name or ref.action.name}, bound"] + \
        g.header_lines() + g.lines


def gen_function(unit, decl: A.FunctionDecl, fname: str) -> list[str]:
    g = FnGen(unit, None, (), ())
    directional = list(decl.params)
    outs = [p for p in directional if p.direction in ("out", "inout")]
    has_value = not isinstance(decl.return_type, A.VoidT)
    parts = (["__RV__"] if has_value else []) + [f"p_{p.name}" for p in outs]
    g.return_code = ("return (" + "".join(x + ", " for x in parts) + ")") if outs else \
        ("return __RV__" if has_value else "return")
    _copy_in(g, directional)
    g.block(decl.body)
    if outs and not has_value:
        g.line(g.return_code)
    sig = ", ".join(["_P"] + ["p_" + p.name for p in directional])
    return [f"def {fname}({sig}):  # function {decl.name}"] + g.header_lines() + g.lines


def _copy_in(g: FnGen, params):
    # P4 copy-in/copy-out: an aggregate argument is copied so writes inside the
    # callee reach the caller only through copy-out (returned, then assigned).
    for p in params:
        if p.direction == "out":
            g.line(f"p_{p.name} = {default_value(p.type)}")
        elif is_aggregate(p.type):
            g.line(f"p_{p.name} = p_{p.name}._clone()")


def _control_var_names(ctl):
    if ctl is None or not isinstance(ctl, A.ControlDecl):
        return ()
    return [d.name for d in ctl.locals if isinstance(d, A.VarDecl)]


def gen_locals_class(ctl: A.ControlDecl) -> list[str]:
    names = _control_var_names(ctl)
    if not names:
        return []
    L = [f"class L_{ctl.name}:", f"    __slots__ = {tuple(names)!r}", "    def __init__(self):"]
    for d in ctl.locals:
        if isinstance(d, A.VarDecl):
            L.append(f"        self.{d.name} = {default_value(d.type)}")
    return L


def gen_control(unit, ctl: A.ControlDecl, fname: str) -> list[str]:
    ctl_locals = _control_var_names(ctl)
    g = FnGen(unit, ctl, ctl.params, ctl_locals)
    g.in_control_body = True
    if ctl_locals:
        g.line(f"L = L_{ctl.name}()")
        for d in ctl.locals:
            if isinstance(d, A.VarDecl) and d.init is not None:
                if is_aggregate(d.type) and isinstance(d.init, A.ListExpr):
                    g.assign_list(A.PathExpr(d.name, "local", type=d.type), "L." + d.name, d.init)
                else:
                    g.assign(A.PathExpr(d.name, "local", type=d.type), g.expr(d.init), d.init)
    g.line("try:")
    g.ind += 1
    g.block(ctl.body)
    g.ind -= 1
    g.line("except P4Exit:")
    g.line("    pass")
    sig = ", ".join(["_P"] + ["p_" + p.name for p in ctl.params])
    return [f"def {fname}({sig}):  # control {ctl.name}"] + g.header_lines() + g.lines
