"""Controls instantiated inside controls (`MyCtl() c; ... c.apply(hdr, x);`), inlined.

The AST contract has no node for sub-control instances, so the front end
inlines them, as p4c's own inliner does before the BMv2 back end:

* the instance's locals (variables, actions, tables, externs) join the
  enclosing control's locals, with p4c's runtime names (`Outer.inst.table`)
  and local names mangled as `inst__name` so they cannot collide;
* each parameter becomes one local variable `inst__param` of the enclosing
  control (one storage per instance, which the instance's tables may key on);
* each `c.apply(args)` becomes a block: copy-in of in/inout arguments, the
  instance's apply body, copy-out of out/inout arguments (P4 call semantics).

A mixin of `typecheck.Checker`.
"""
from __future__ import annotations

import softswitch.frontend.p4ast as A
from softswitch.frontend.p4types import Signature, Sym


class SubControl:
    """What an instantiated control contributes: its parameter storage and body."""

    def __init__(self, name: str, control: str, params: list, storage: list, body: A.Block,
                 has_tables: bool):
        self.name, self.control = name, control
        self.params, self.storage, self.body = params, storage, body
        self.has_tables = has_tables
        self.applied = 0


def _contains_return(node) -> bool:
    if isinstance(node, A.Return):
        return True
    if isinstance(node, A.Block):
        return any(_contains_return(s) for s in node.stmts)
    if isinstance(node, A.If):
        return _contains_return(node.then) or (node.other is not None and _contains_return(node.other))
    if isinstance(node, A.Switch):
        return any(c.body is not None and _contains_return(c.body) for c in node.cases)
    return False


class SubControlMixin:
    mangle = ""  # prefix of local names inside an inlined instance

    def local_name(self, name: str) -> str:
        return self.mangle + name

    def is_subcontrol_instance(self, tree) -> bool:
        typ = tree.children[1]
        if typ.data != "type_name":
            return False
        sym = self.scopes[0].get(str(typ.children[0]))
        return sym is not None and sym.kind in ("control", "parser")

    def subcontrol_instance(self, tree, out: list) -> None:
        """Check an instantiated control's locals and body in its own scope."""
        _, typ, args_tree, name_tree = tree.children
        cname, inst = str(typ.children[0]), str(name_tree.children[0])
        sym = self.scopes[0][cname]
        if sym.kind == "parser" or self.in_parser:
            raise self.error(typ, "unsupported: sub-parsers (instantiate parsers only in main)")
        if args_tree.children:
            raise self.error(args_tree, f"unsupported: constructor arguments for control '{cname}'")
        if self.mangle.count("__") >= 8:
            raise self.error(typ, f"unsupported: controls nested this deep ('{cname}')")
        ctl_tree = self.control_trees[cname]
        _, params_tree, body = self.block_params(ctl_tree)
        params = self.params(params_tree)
        saved = (self.scopes, self.prefix, self.mangle)
        # The instance sees only global names, as P4's lexical scoping says.
        self.scopes = [self.scopes[0], {}]
        self.prefix = f"{self.prefix}.{inst}"
        self.mangle = f"{self.mangle}{inst}__"
        try:
            storage = []
            for p in params:
                var = A.VarDecl(self.local_name(p.name), p.type, None, loc=self.loc(name_tree))
                storage.append(var)
                self.declare(p.name, Sym("local", p.type, decl=var), None)
            out.extend(storage)
            first_local = len(out)
            for local in body[:-2]:
                self.local_decl(local, out)
            has_tables = any(isinstance(d, A.TableDecl) for d in out[first_local:])
            block = self.block(body[-1])
        finally:
            self.scopes, self.prefix, self.mangle = saved
        if _contains_return(block):
            raise self.error(ctl_tree, f"unsupported: 'return' in control '{cname}' applied as an instance")
        info = SubControl(inst, cname, params, storage, block, has_tables)
        self.declare(inst, Sym("subcontrol", None, decl=info), name_tree)

    def subcontrol_apply(self, tree, info: SubControl) -> A.Block:
        """`inst.apply(args)` as copy-in, body, copy-out."""
        loc = self.loc(tree)
        info.applied += 1
        if info.applied > 1 and info.has_tables:
            # Its tables would be applied twice in one control, which P4 does not allow.
            raise self.error(tree, f"unsupported: applying '{info.name}' more than once: control "
                                   f"'{info.control}' has tables (instantiate it once per use)")
        sig = Signature("apply", (), info.params, A.VoidT())
        args, _ = self.check_args(tree, sig, list(tree.children[-1].children), {}, [],
                                  f"'{info.name}.apply'")
        stmts = []
        for p, var, arg in zip(info.params, info.storage, args):
            if p.direction in ("in", "inout", ""):
                path = A.PathExpr(var.name, "local", var, type=var.type, loc=loc)
                stmts.append(A.Assign(path, arg, loc=loc))
        stmts.append(info.body)
        for p, var, arg in zip(info.params, info.storage, args):
            if p.direction in ("out", "inout"):
                path = A.PathExpr(var.name, "local", var, type=var.type, loc=loc)
                stmts.append(A.Assign(arg, path, loc=loc))
        return A.Block(stmts, loc=loc)
