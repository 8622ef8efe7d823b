"""Declarations and statements: turn the lark parse tree into a checked `p4ast.Program`.

Names are resolved in declaration order (P4 requires declare-before-use) with
nested scopes; expressions are handled by `ExprMixin`; tables and parsers by
`TableMixin`. Every error is a `P4Error` at the offending source position.
"""
from __future__ import annotations

import re

from lark import Token, Tree

import softswitch.frontend.p4ast as A
from softswitch.frontend.errors import P4Error
from softswitch.frontend.callcheck import CallMixin
from softswitch.frontend.exprcheck import ExprMixin, is_const
from softswitch.frontend.p4types import BlockTypeT, ExternInfo, Signature, Sym, TypeVar, type_name
from softswitch.frontend.preprocess import Source
from softswitch.frontend.stmtcheck import StmtMixin
from softswitch.frontend.subcontrol import SubControlMixin
from softswitch.frontend.tablecheck import TableMixin

V1SWITCH_SLOTS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
V1SWITCH_ARITY = (4, 2, 3, 3, 2, 2)
HEADER_FIELD_TYPES = (A.BitT, A.IntT, A.VarbitT, A.BoolT)
_FIELD_ANNOTATIONS = "annotations" in A.FieldDef.__dataclass_fields__  # additive p4ast field


class Checker(ExprMixin, CallMixin, StmtMixin, TableMixin, SubControlMixin):
    def __init__(self, source: Source):
        self.source = source
        self.scopes: list[dict] = [{}]
        self.types: dict = {}
        self.externs: dict = {}
        self.errors: list = []
        self.match_kinds: list = []
        self.typevars: list = []
        self.in_parser = False
        self.prefix = ""          # enclosing control name, for runtime names
        self.return_type = None   # inside functions
        self.control_trees = {}   # control name -> parse tree, for inlined instances
        self.program = A.Program(main={}, parsers={}, controls={}, types=self.types, errors=self.errors,
                                 defines=dict(source.defines), source_files=list(source.files))

    # ---------------------------------------------------------------- positions
    def loc(self, node) -> A.Loc:
        if node is None:
            return A.NOLOC
        if isinstance(node, Token):
            return self.source.loc(node.line or 0, node.column or 0)
        meta = node.meta
        if getattr(meta, "empty", True):
            for child in node.children:
                if isinstance(child, (Token, Tree)):
                    loc = self.loc(child)
                    if loc.line:
                        return loc
            return A.NOLOC
        return self.source.loc(meta.line, meta.column)

    def error(self, node, message: str) -> P4Error:
        return self.error_at(self.loc(node), message)

    def error_at(self, loc: A.Loc, message: str) -> P4Error:
        return P4Error(loc, message, self.source.line_text(loc))

    def text_of(self, tree) -> str:
        """Source text of a tree with whitespace normalized, as p4c prints key names."""
        if isinstance(tree, Token):
            return str(tree)
        text = self.source.text[tree.meta.start_pos:tree.meta.end_pos]
        text = re.sub(r"\s+", " ", text).strip()
        return re.sub(r"\s*([.\[\]():])\s*", r"\1", text)

    # ---------------------------------------------------------------- scopes
    def declare(self, name: str, sym: Sym, node) -> None:
        scope = self.scopes[-1]
        if name in scope:
            raise self.error(node, f"'{name}' is already declared in this scope")
        scope[name] = sym

    def lookup(self, name: str, node) -> Sym:
        for scope in reversed(self.scopes):
            sym = scope.get(name)
            if sym is not None:
                return sym
        raise self.error(node, f"undeclared name '{name}'")

    def is_declared(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def push(self):
        self.scopes.append({})

    def pop(self):
        self.scopes.pop()

    # ---------------------------------------------------------------- annotations
    def annotations(self, annos) -> dict:
        out = {}
        for a in annos.children:
            name = str(a.children[0])[1:]
            values = []
            if len(a.children) > 1:
                for arg in a.children[1].children:
                    if isinstance(arg, Tree) and arg.data == "string":
                        values.append(str(arg.children[0])[1:-1])
                    elif isinstance(arg, Tree) and arg.data == "number":
                        values.append(self.x_number(arg).value)
                    else:
                        values.append(self.text_of(arg))
            out[name] = "" if not values else values[0] if len(values) == 1 else values
        return out

    def runtime_name(self, annos: dict, local: str) -> str:
        """p4c's control-plane name: @name("x") is relative to the enclosing
        control unless it starts with '.'; otherwise Control.local."""
        name = annos.get("name")
        if isinstance(name, str) and name:
            if name.startswith("."):
                return name[1:]
            local = name
        return f"{self.prefix}.{local}" if self.prefix else local

    # ---------------------------------------------------------------- types
    def named_type(self, name: str, node):
        for tv in reversed(self.typevars):
            if name in tv:
                return TypeVar(name)
        if name in self.types:
            return self.types[name]
        if name in self.externs:
            return A.ExternT(name)
        sym = self.scopes[0].get(name)
        if sym is not None and sym.kind in ("blocktype", "control", "parser"):
            return sym.type
        raise self.error(node, f"unknown type '{name}'")

    def resolve_type(self, tree):
        d = tree.data
        simple = {"bool_t": A.BoolT, "error_t": A.ErrorT, "string_t": A.StringT, "void_t": A.VoidT,
                  "match_kind_t": A.MatchKindT, "int_inf_t": A.InfIntT}
        if d in simple:
            return simple[d]()
        if d == "bit1_t":
            return A.BitT(1)
        if d in ("bit_t", "int_t", "varbit_t"):
            w = self.type_width(tree.children[1])
            if w <= 0 and d != "varbit_t" or w < 0:
                raise self.error(tree, f"type width must be positive, not {w}")
            return {"bit_t": A.BitT, "int_t": A.IntT, "varbit_t": A.VarbitT}[d](w)
        if d == "type_name":
            return self.named_type(str(tree.children[0]), tree)
        if d == "specialized_t":
            name = str(tree.children[0])
            args = tuple(self.resolve_type(t) for t in tree.children[2].children)
            base = self.named_type(name, tree)
            if isinstance(base, A.ExternT):
                info = self.externs[name]
                if len(args) > len(info.type_params):
                    raise self.error(tree, f"too many type arguments for {name}: expected at most "
                                           f"{len(info.type_params)}, got {len(args)}")
                return A.ExternT(name, args)
            if isinstance(base, BlockTypeT):
                return base
            raise self.error(tree, f"type {name} takes no type arguments")
        if d == "tuple_t":
            return A.TupleT(tuple(self.resolve_type(t) for t in tree.children[1].children))
        if d == "stack_t":
            elem = self.resolve_type(tree.children[0])
            if not isinstance(elem, (A.HeaderT, A.HeaderUnionT)):
                raise self.error(tree, f"header stack elements must be headers, not {type_name(elem)}")
            size = self.const_int(tree.children[1], "header stack size")
            if size <= 0:
                raise self.error(tree.children[1], f"header stack size must be positive, not {size}")
            return A.StackT(elem, size)
        raise self.error(tree, f"unsupported: type '{self.text_of(tree)}'")

    def type_width(self, tree) -> int:
        if isinstance(tree, Tree) and tree.data == "width_num":
            return self.x_number(Tree("number", tree.children, tree.meta)).value
        if isinstance(tree, Tree) and tree.data == "width_name":
            return self.const_int(Tree("path", tree.children, tree.meta), "type width")
        return self.const_int(tree, "type width")

    # ---------------------------------------------------------------- program
    def check(self, tree) -> A.Program:
        for decl in tree.children:
            handler = getattr(self, "d_" + decl.data, None)
            if handler is None:
                raise self.error(decl, f"unsupported: top-level {decl.data.replace('_', ' ')}")
            handler(decl)
        if not self.program.main:
            raise self.error_at(self.end_of_main_file(),
                          "no 'main' package: end the program with V1Switch(MyParser(), "
                          "MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), "
                          "MyDeparser()) main;")
        return self.program

    def end_of_main_file(self) -> A.Loc:
        main_file = self.source.line_map[-1][0] if self.source.line_map else "<input>"
        lines = self.source.files.get(main_file, [])
        last = max((i for i, text in enumerate(lines, 1) if text.strip()), default=1)
        return A.Loc(main_file, last, 1)

    def d_empty_decl(self, tree):
        pass

    def d_const_decl(self, tree):
        annos, _, typ, name, value = tree.children
        sym = self.const_decl(tree)
        self.program.consts[str(name.children[0])] = sym.value

    def const_decl(self, tree) -> Sym:
        _, _, typ, name, value = tree.children
        t = self.resolve_type(typ)
        e = self.coerce(self.expr(value, t), t, "constant initializer", value)
        if not is_const(e):
            raise self.error(value, f"initializer of const '{name.children[0]}' is not a compile-time constant")
        sym = Sym("const", t, value=e)
        self.declare(str(name.children[0]), sym, name)
        return sym

    def d_typedef_decl(self, tree):
        typ, name = [c for c in tree.children if isinstance(c, Tree)][-2:]
        self.add_type(str(name.children[0]), self.resolve_type(typ), name)

    d_newtype_decl = d_typedef_decl

    def add_type(self, name, t, node):
        if name in self.types or name in self.externs:
            raise self.error(node, f"type '{name}' is already declared")
        self.types[name] = t

    def fields(self, field_trees, what, header: bool):
        out, seen = [], set()
        for f in field_trees:
            _, typ, fname = f.children
            name = str(fname.children[0])
            t = self.resolve_type(typ)
            if name in seen:
                raise self.error(fname, f"duplicate field '{name}' in {what}")
            seen.add(name)
            if header and not (isinstance(t, HEADER_FIELD_TYPES) or
                               (isinstance(t, A.EnumT) and t.underlying is not None)):
                raise self.error(typ, f"header field '{name}' must be bit<>, int<>, varbit<>, bool "
                                      f"or a serializable enum, not {type_name(t)}")
            annos = self.annotations(f.children[0])
            if annos and _FIELD_ANNOTATIONS:
                # e.g. @field_list(1) on metadata fields, for clone/resubmit field lists
                pairs = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in annos.items())
                out.append(A.FieldDef(name, t, annotations=pairs))
            else:
                out.append(A.FieldDef(name, t))
        return tuple(out)

    def d_header_decl(self, tree):
        name = str(tree.children[1].children[0])
        self.add_type(name, A.HeaderT(name, self.fields(tree.children[2:], f"header {name}", True)),
                      tree.children[1])

    def d_struct_decl(self, tree):
        name = str(tree.children[1].children[0])
        self.add_type(name, A.StructT(name, self.fields(tree.children[2:], f"struct {name}", False)),
                      tree.children[1])

    def d_union_decl(self, tree):
        name = str(tree.children[1].children[0])
        fields = self.fields(tree.children[2:], f"header_union {name}", False)
        for f, ft in zip(fields, tree.children[2:]):
            if not isinstance(f.type, A.HeaderT):
                raise self.error(ft.children[1], f"header_union member '{f.name}' must be a header, "
                                                 f"not {type_name(f.type)}")
        self.add_type(name, A.HeaderUnionT(name, fields), tree.children[1])

    def d_enum_decl(self, tree):
        name = str(tree.children[1].children[0])
        members = tuple(str(m.children[0]) for m in tree.children[2:])
        self.add_type(name, A.EnumT(name, members), tree.children[1])

    def d_ser_enum_decl(self, tree):
        _, typ, name_tree, *members = tree.children
        under = self.resolve_type(typ)
        if not isinstance(under, (A.BitT, A.IntT)):
            raise self.error(typ, f"serializable enum needs bit<W> or int<W>, not {type_name(under)}")
        names, values = [], []
        for m in members:
            mname, value = m.children
            e = self.coerce(self.expr(value), under, "enum member value", value)
            if not is_const(e):
                raise self.error(value, "enum member value must be a compile-time constant")
            names.append(str(mname.children[0]))
            values.append(e.value)
        name = str(name_tree.children[0])
        self.add_type(name, A.EnumT(name, tuple(names), under, tuple(values)), name_tree)

    def d_error_decl(self, tree):
        for m in tree.children:
            name = str(m.children[0])
            if name in self.errors:
                raise self.error(m, f"error '{name}' is already declared")
            self.errors.append(name)

    def d_match_kind_decl(self, tree):
        for m in tree.children:
            self.match_kinds.append(str(m.children[0]))

    # ---------------------------------------------------------------- externs
    def type_params(self, tree) -> tuple:
        return tuple(str(n.children[0]) for n in tree.children if isinstance(n, Tree) and n.data == "name")

    def signature(self, name, tparams_tree, params_tree, ret_tree, outer=()) -> Signature:
        tparams = self.type_params(tparams_tree) if tparams_tree is not None else ()
        self.typevars.append(set(tparams) | set(outer))
        try:
            ret = self.resolve_type(ret_tree) if ret_tree is not None else A.VoidT()
            params = self.params(params_tree)
        finally:
            self.typevars.pop()
        return Signature(name, tparams, params, ret)

    def d_extern_obj_decl(self, tree):
        name = str(tree.children[1])
        rest = tree.children[2:]
        tparams = ()
        if rest and isinstance(rest[0], Tree) and rest[0].data == "type_params":
            tparams, rest = self.type_params(rest[0]), rest[1:]
        info = ExternInfo(name, tparams)
        self.externs[name] = info
        for m in rest:
            if m.data == "extern_ctor":
                info.ctors.append(self.signature(name, None, m.children[2], None, tparams))
            else:
                _, ret, mname, *more = m.children
                tp = more[0] if len(more) == 2 else None
                sig = self.signature(str(mname.children[0]), tp, more[-1], ret, tparams)
                info.methods.setdefault(sig.name, []).append(sig)

    def d_extern_func_decl(self, tree):
        _, ret, name, *more = tree.children
        tp = more[0] if len(more) == 2 else None
        sig = self.signature(str(name.children[0]), tp, more[-1], ret)
        sym = self.scopes[0].get(sig.name)
        if sym is None:
            sym = Sym("extern_function", A.VoidT(), decl=[])
            self.scopes[0][sig.name] = sym
        sym.decl.append(sig)

    def params(self, tree) -> list:
        out = []
        for p in tree.children:
            _, direction, typ, pname, *default = p.children
            if default:
                raise self.error(default[0], "unsupported: default parameter values")
            d = str(direction.children[0]) if direction.children else ""
            out.append(A.Param(str(pname.children[0]), d, self.resolve_type(typ)))
        return out

    def block_type(self, tree, kind):
        name = str(tree.children[1])
        rest = [c for c in tree.children[2:] if isinstance(c, Tree)]
        params = next(c for c in rest if c.data == "params")
        names = tuple(str(p.children[3].children[0]) for p in params.children)
        bt = BlockTypeT(name, kind, len(params.children), names)
        self.declare(name, Sym("blocktype", bt), tree.children[1])

    def d_parser_type_decl(self, tree):
        self.block_type(tree, "parser")

    def d_control_type_decl(self, tree):
        self.block_type(tree, "control")

    def d_package_decl(self, tree):
        self.block_type(tree, "package")

    # ---------------------------------------------------------------- blocks
    def block_params(self, tree):
        """(name, params tree, body children) of a parser/control declaration."""
        name = str(tree.children[1])
        rest = list(tree.children[2:])
        if rest and isinstance(rest[0], Tree) and rest[0].data == "type_params":
            raise self.error(rest[0], f"unsupported: type parameters on '{name}'")
        return name, rest[0], rest[1:]

    def enter_params(self, params):
        for p in params:
            self.declare(p.name, Sym("param", p.type, decl=p), None)

    def d_parser_decl(self, tree):
        name, params_tree, body = self.block_params(tree)
        params = self.params(params_tree)
        decl = A.ParserDecl(name, params, [], {}, loc=self.loc(tree))
        self.declare(name, Sym("parser", BlockTypeT(name, "parser", len(params)), decl=decl), tree.children[1])
        self.push()
        self.in_parser, self.prefix = True, name
        try:
            self.enter_params(params)
            states = [c for c in body if c.data == "parser_state"]
            for local in body:
                if local.data != "parser_state":
                    self.local_decl(local, decl.locals)
            self.parser_states(decl, states)
        finally:
            self.in_parser, self.prefix = False, ""
            self.pop()
        self.program.parsers[name] = decl

    def d_control_decl(self, tree):
        name, params_tree, body = self.block_params(tree)
        params = self.params(params_tree)
        decl = A.ControlDecl(name, params, [], A.Block([]), loc=self.loc(tree))
        self.declare(name, Sym("control", BlockTypeT(name, "control", len(params)), decl=decl), tree.children[1])
        self.push()
        self.prefix = name
        try:
            self.enter_params(params)
            for local in body[:-2]:
                self.local_decl(local, decl.locals)
            decl.body = self.block(body[-1])
        finally:
            self.prefix = ""
            self.pop()
        self.program.controls[name] = decl
        self.control_trees[name] = tree

    def local_decl(self, tree, out: list):
        d = tree.data
        if d == "const_decl":
            self.const_decl(tree)
        elif d == "var_decl":
            out.append(self.var_decl(tree))
        elif d == "instance_decl" and self.is_subcontrol_instance(tree):
            self.subcontrol_instance(tree, out)
        elif d == "instance_decl":
            out.append(self.instance_decl(tree))
        elif d == "action_decl":
            out.append(self.action_decl(tree))
        elif d == "table_decl":
            out.append(self.table_decl(tree))
        else:
            raise self.error(tree, f"unsupported: {d.replace('_', ' ')} here")

    def var_decl(self, tree) -> A.VarDecl:
        _, typ, name, *init = tree.children
        t = self.resolve_type(typ)
        e = None
        if init:
            e = self.coerce(self.expr(init[0], t), t, "initializer", init[0])
        decl = A.VarDecl(self.local_name(str(name.children[0])), t, e, loc=self.loc(tree))
        self.declare(str(name.children[0]), Sym("local", t, decl=decl), name)
        return decl

    def instance_decl(self, tree) -> A.InstanceDecl:
        annos_tree, typ, args_tree, name = tree.children
        t = self.resolve_type(typ)
        lname = str(name.children[0])
        if isinstance(t, BlockTypeT) or not isinstance(t, A.ExternT):
            raise self.error(typ, f"unsupported: instantiating {type_name(t)} inside a block")
        info = self.externs[t.name]
        if not info.ctors:
            raise self.error(typ, f"extern {t.name} cannot be instantiated")
        arg_trees = list(args_tree.children)
        sig = self.pick_overload(args_tree if arg_trees else tree, info.ctors, len(arg_trees), f"{t.name} constructor")
        binding = dict(zip(info.type_params, t.type_args))
        args, _ = self.check_args(tree, sig, arg_trees, binding, [], f"{t.name} constructor")
        annos = self.annotations(annos_tree)
        decl = A.InstanceDecl(self.local_name(lname), t, args, annos, self.runtime_name(annos, lname),
                              loc=self.loc(tree))
        self.declare(lname, Sym("instance", t, decl=decl), name)
        return decl

    def action_decl(self, tree) -> A.ActionDecl:
        annos_tree, name, params_tree, body = tree.children
        lname = str(name.children[0])
        params = self.params(params_tree)
        annos = self.annotations(annos_tree)
        decl = A.ActionDecl(self.local_name(lname), params, A.Block([]), annos, self.runtime_name(annos, lname),
                            loc=self.loc(tree))
        self.push()
        try:
            self.enter_params(params)
            decl.body = self.block(body)
        finally:
            self.pop()
        self.declare(lname, Sym("action", A.VoidT(), decl=decl), name)
        return decl

    def d_action_decl(self, tree):
        decl = self.action_decl(tree)
        self.program.actions[decl.name] = decl

    def d_function_decl(self, tree):
        _, typ, name, params_tree, body = tree.children
        ret = self.resolve_type(typ)
        params = self.params(params_tree)
        decl = A.FunctionDecl(str(name.children[0]), params, ret, A.Block([]), loc=self.loc(tree))
        self.declare(decl.name, Sym("function", ret, decl=decl), name)
        self.push()
        self.return_type = ret
        try:
            self.enter_params(params)
            decl.body = self.block(body)
        finally:
            self.return_type = None
            self.pop()
        self.program.functions[decl.name] = decl

    def d_instance_decl(self, tree):
        _, typ, args_tree, name = tree.children
        t = self.resolve_type(typ)
        if not (isinstance(t, BlockTypeT) and t.kind == "package"):
            raise self.error(typ, "unsupported: top-level instance other than the V1Switch package")
        if t.name != "V1Switch":
            raise self.error(typ, f"unsupported: package {t.name} (the softswitch runs V1Switch)")
        if str(name.children[0]) != "main":
            raise self.error(name, "the V1Switch instance must be named 'main'")
        args = self.positional_args(args_tree, list(t.param_names), list(args_tree.children), "'V1Switch'")
        if len(args) != len(V1SWITCH_SLOTS):
            raise self.error(args_tree if args else tree, f"wrong number of arguments to 'V1Switch': "
                                                          f"expected 6, got {len(args)}")
        for slot, arity, arg in zip(V1SWITCH_SLOTS, V1SWITCH_ARITY, args):
            if not (isinstance(arg, Tree) and arg.data == "ctor_call" and not arg.children[1].children):
                raise self.error(arg, f"V1Switch {slot}: expected a parser or control instantiation "
                                      f"like MyIngress()")
            bname = str(arg.children[0])
            sym = self.lookup(bname, arg)
            want = "parser" if slot == "parser" else "control"
            if sym.kind != want:
                raise self.error(arg, f"V1Switch {slot}: '{bname}' is not a {want}")
            if len(sym.decl.params) != arity:
                raise self.error(arg, f"V1Switch {slot}: {want} '{bname}' must have {arity} parameters, "
                                      f"has {len(sym.decl.params)}")
            self.program.main[slot] = bname

def check_program(tree, source: Source) -> A.Program:
    return Checker(source).check(tree)
