"""Calls: extern functions and methods (overloads, type variables, named
arguments), actions, functions, table apply, header and stack methods, sizes.

A mixin of `typecheck.Checker`, next to `ExprMixin`.
"""
from __future__ import annotations

from lark import Tree

import softswitch.frontend.p4ast as A
from softswitch.frontend.p4types import Signature, TypeVar, bit_width, substitute, type_name

_LVALUE_KINDS = {"param", "local"}
_TYPE_TREES = ("type_name", "bit_t", "int_t", "bit1_t", "bool_t", "varbit_t")
_SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


class CallMixin:
    def x_call(self, tree):
        callee = tree.children[0]
        type_args = []
        if len(tree.children) > 2:  # callee GENERIC_LT type_list gt args
            type_args = [self.resolve_type(t) for t in tree.children[2].children]
        arg_trees = list(tree.children[-1].children)
        loc = self.loc(tree)
        if isinstance(callee, Tree) and callee.data == "member":
            return self.method_call(tree, callee, type_args, arg_trees, loc)
        if isinstance(callee, Tree) and callee.data == "path":
            name = str(callee.children[0])
            if name in ("sizeInBits", "sizeInBytes") and not self.is_declared(name):
                self.expect_args(tree, name, 1, len(arg_trees))
                if isinstance(arg_trees[0], Tree) and arg_trees[0].data in _TYPE_TREES:
                    t = self.resolve_type(arg_trees[0])
                else:
                    t = self.expr(arg_trees[0]).type
                return self.size_of(tree, t, name)
            sym = self.lookup(name, callee)
            func = A.PathExpr(getattr(sym.decl, "name", name) if sym.kind in ("action", "function") else name,
                              sym.kind, sym.decl, loc=self.loc(callee))
            if sym.kind == "action":
                sig = Signature(name, (), sym.decl.params, A.VoidT())
                args, _ = self.check_args(tree, sig, arg_trees, {}, [], f"action '{name}'")
                return A.Call(func, args, type=A.VoidT(), loc=loc)
            if sym.kind == "function":
                sig = Signature(name, (), sym.decl.params, sym.decl.return_type)
                args, ret = self.check_args(tree, sig, arg_trees, {}, [], f"function '{name}'")
                return A.Call(func, args, type=ret, loc=loc)
            if sym.kind == "extern_function":
                sig = self.pick_overload(tree, sym.decl, len(arg_trees), f"'{name}'")
                if name == "verify" and not self.in_parser:
                    raise self.error(callee, "verify() can only be called in a parser")
                args, ret = self.check_args(tree, sig, arg_trees, {}, type_args, f"'{name}'")
                return A.Call(func, args, type_args=type_args, type=ret, loc=loc)
            raise self.error(callee, f"'{name}' is a {sym.kind} and cannot be called")
        raise self.error(tree, f"cannot call '{self.text_of(callee)}'")

    def method_call(self, tree, callee, type_args, arg_trees, loc):
        target_tree, mname = callee.children[0], str(callee.children[1].children[0])
        target = self.expr(target_tree)
        t = target.type
        nargs = len(arg_trees)
        if mname in _SIZE_METHODS and not isinstance(t, A.ExternT):
            self.expect_args(tree, mname, 0, nargs)
            return self.size_of(tree, t, mname)
        if isinstance(target, A.PathExpr) and target.kind == "table":
            if mname != "apply":
                raise self.error(callee.children[1], f"table '{target.name}' has no method '{mname}' (apply)")
            self.expect_args(tree, "apply", 0, nargs)
            rt = A.TableApplyResultT(target.decl.runtime_name)
            return A.MethodCall(target, "apply", [], type=rt, loc=loc)
        if isinstance(t, (A.HeaderT, A.HeaderUnionT)) and mname in ("isValid", "setValid", "setInvalid"):
            if isinstance(t, A.HeaderUnionT) and mname != "isValid":
                raise self.error(callee.children[1], f"header_union has no method '{mname}'")
            self.expect_args(tree, mname, 0, nargs)
            if mname != "isValid":
                self.check_lvalue(target, target_tree, f"'{mname}()'")
            rt = A.BoolT() if mname == "isValid" else A.VoidT()
            return A.MethodCall(target, mname, [], type=rt, loc=loc)
        if isinstance(t, A.StackT) and mname in ("push_front", "pop_front"):
            self.expect_args(tree, mname, 1, nargs)
            count = self.const_int(arg_trees[0], f"argument of {mname}")
            if count < 0:
                raise self.error(arg_trees[0], f"{mname} count must not be negative")
            self.check_lvalue(target, target_tree, f"'{mname}()'")
            arg = A.Literal(count, type=A.InfIntT(), loc=self.loc(arg_trees[0]))
            return A.MethodCall(target, mname, [arg], type=A.VoidT(), loc=loc)
        if isinstance(t, A.ExternT):
            info = self.externs[t.name]
            overloads = info.methods.get(mname)
            if not overloads:
                known = ", ".join(sorted(info.methods)) or "none"
                raise self.error(callee.children[1], f"extern {t.name} has no method '{mname}' "
                                                     f"(methods: {known})")
            sig = self.pick_overload(tree, overloads, nargs, f"'{t.name}.{mname}'")
            binding = {p: a for p, a in zip(info.type_params, t.type_args)}
            args, ret = self.check_args(tree, sig, arg_trees, binding, type_args, f"'{mname}'")
            return A.MethodCall(target, mname, args, type_args=type_args, type=ret, loc=loc)
        raise self.error(callee.children[1], f"type {type_name(t)} has no method '{mname}'")

    def size_of(self, tree, t, what: str) -> A.Literal:
        """minSizeInBits() and friends, folded: sizes of fixed types are constants."""
        bits = bit_width(t)
        if bits is None:
            raise self.error(tree, f"{what}: type {type_name(t)} has no fixed size")
        if isinstance(t, A.HeaderT) and "max" not in what.lower():
            bits -= sum(f.type.max_width for f in t.fields if isinstance(f.type, A.VarbitT))
        value = bits if "Bits" in what else (bits + 7) // 8
        return A.Literal(value, type=A.InfIntT(), loc=self.loc(tree))

    def expect_args(self, tree, name, want, got):
        if want != got:
            raise self.error(tree, f"wrong number of arguments to '{name}': expected {want}, got {got}")

    def pick_overload(self, tree, sigs, nargs, what):
        for sig in sigs:
            if len(sig.params) == nargs:
                return sig
        counts = " or ".join(sorted({str(len(s.params)) for s in sigs}))
        raise self.error(tree, f"wrong number of arguments to {what}: expected {counts}, got {nargs}")

    def check_args(self, tree, sig: Signature, arg_trees, binding, type_args, what):
        """Arguments checked against `sig`; type variables bound from explicit
        type arguments first, then from the arguments that have a known type."""
        params = sig.params
        arg_trees = self.positional_args(tree, [p.name for p in params], arg_trees, what)
        if len(arg_trees) != len(params):
            raise self.error(tree, f"wrong number of arguments to {what}: expected {len(params)}, "
                                   f"got {len(arg_trees)}")
        binding = dict(binding)
        if type_args:
            if len(type_args) != len(sig.type_params):
                raise self.error(tree, f"wrong number of type arguments to {what}: expected "
                                       f"{len(sig.type_params)}, got {len(type_args)}")
            binding.update(zip(sig.type_params, type_args))
        args = []
        for p, at in zip(params, arg_trees):
            expected = substitute(p.type, binding)
            e = self.expr(at, None if isinstance(expected, TypeVar) else expected)
            if isinstance(expected, TypeVar):
                if not isinstance(e.type, A.InfIntT):
                    binding[expected.name] = e.type
            else:
                e = self.coerce(e, expected, f"argument '{p.name}' of {what}", at)
            if p.direction in ("out", "inout"):
                self.check_lvalue(e, at, f"'{p.direction}' argument '{p.name}' of {what}")
            args.append(e)
        # Untyped constants passed for a type variable take the type bound by another argument.
        for i, (p, e) in enumerate(zip(params, args)):
            if isinstance(p.type, TypeVar) and isinstance(e.type, A.InfIntT) and p.type.name in binding:
                args[i] = self.coerce(e, binding[p.type.name], f"argument '{p.name}' of {what}")
        return args, substitute(sig.ret, binding)

    def positional_args(self, tree, names, arg_trees, what):
        """Named arguments (`extract(hdr = h)`, as p4c prints programs) put in
        parameter order; all or none of the arguments must be named."""
        named = [isinstance(a, Tree) and a.data == "named_arg" for a in arg_trees]
        if not any(named):
            return arg_trees
        if not all(named):
            raise self.error(tree, f"arguments to {what} must be all named or all positional")
        by_name = {}
        for a in arg_trees:
            pname = str(a.children[0].children[0])
            if pname not in names:
                raise self.error(a, f"{what} has no parameter named '{pname}' (parameters: {', '.join(names)})")
            if pname in by_name:
                raise self.error(a, f"argument '{pname}' of {what} is given twice")
            by_name[pname] = a.children[1]
        missing = [n for n in names if n not in by_name]
        if missing:
            raise self.error(tree, f"missing argument '{missing[0]}' for {what}")
        return [by_name[n] for n in names]

    def x_named_arg(self, tree):
        raise self.error(tree, "named argument outside of a call")

    def check_lvalue(self, e, tree, what: str):
        root = e
        while isinstance(root, (A.Member, A.Index, A.Slice)):
            root = root.expr
        if not isinstance(root, A.PathExpr) or root.kind not in _LVALUE_KINDS:
            raise self.error(tree, f"{what} must be a variable, field or slice that can be written")
        if root.kind == "param" and getattr(root.decl, "direction", "") in ("in", ""):
            kind = "an 'in'" if root.decl.direction == "in" else "a directionless"
            raise self.error(tree, f"{what}: '{root.name}' is {kind} parameter and cannot be written")
