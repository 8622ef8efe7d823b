"""Statements: blocks, assignments, calls, if, switch, exit, return.

A mixin of `typecheck.Checker`; block-local names live in nested scopes.
"""
from __future__ import annotations

import softswitch.frontend.p4ast as A
from softswitch.frontend.exprcheck import is_const
from softswitch.frontend.p4types import type_name


class StmtMixin:
    # ---------------------------------------------------------------- statements
    def block(self, tree) -> A.Block:
        self.push()
        try:
            stmts = [s for s in (self.stmt(c) for c in tree.children) if s is not None]
        finally:
            self.pop()
        return A.Block(stmts, loc=self.loc(tree))

    def as_block(self, tree) -> A.Block:
        if tree.data == "block":
            return self.block(tree)
        self.push()
        try:
            s = self.stmt(tree)
        finally:
            self.pop()
        return A.Block([s] if s is not None else [], loc=self.loc(tree))

    def stmt(self, tree):
        d, loc = tree.data, self.loc(tree)
        if d == "assign":
            lhs = self.expr(tree.children[0])
            self.check_lvalue(lhs, tree.children[0], "left side of '='")
            rhs = self.coerce(self.expr(tree.children[1], lhs.type), lhs.type, "assignment", tree.children[1])
            return A.Assign(lhs, rhs, loc=loc)
        if d == "call_stmt":
            callee = tree.children[0]
            if callee.data == "member" and callee.children[0].data == "path" and \
                    str(callee.children[1].children[0]) == "apply" and len(tree.children) == 2:
                sym = self.lookup(str(callee.children[0].children[0]), callee.children[0])
                if sym.kind == "subcontrol":
                    return self.subcontrol_apply(tree, sym.decl)
            return A.ExprStmt(self.x_call(tree), loc=loc)
        if d == "if_stmt":
            cond = self.expr(tree.children[0])
            if not isinstance(cond.type, A.BoolT):
                raise self.error(tree.children[0], f"if condition must be bool, not {type_name(cond.type)}")
            other = self.as_block(tree.children[2]) if len(tree.children) > 2 else None
            return A.If(cond, self.as_block(tree.children[1]), other, loc=loc)
        if d == "switch_stmt":
            return self.switch_stmt(tree)
        if d == "block":
            return self.block(tree)
        if d == "annotated_block":  # e.g. @atomic { ... }: one thread runs packets, so plain
            return self.block(tree.children[-1])
        if d == "var_decl":
            return self.var_decl(tree)
        if d == "const_decl":
            self.const_decl(tree)
            return None
        if d == "exit_stmt":
            if self.in_parser:
                raise self.error(tree, "'exit' is not allowed in a parser (use transition reject)")
            return A.Exit(loc=loc)
        if d == "return_stmt":
            if self.in_parser:
                raise self.error(tree, "'return' is not allowed in a parser state")
            value = None
            if tree.children:
                if self.return_type is None:
                    raise self.error(tree, "only functions can return a value")
                value = self.coerce(self.expr(tree.children[0]), self.return_type, "return", tree.children[0])
            elif self.return_type is not None and not isinstance(self.return_type, A.VoidT):
                raise self.error(tree, f"return needs a value of type {type_name(self.return_type)}")
            return A.Return(value, loc=loc)
        if d == "empty_stmt":
            return A.Empty(loc=loc)
        raise self.error(tree, f"unsupported: statement {d}")

    def switch_stmt(self, tree):
        subject = self.expr(tree.children[0])
        t = subject.type
        cases, seen = [], set()
        on_actions = isinstance(t, A.ActionEnumT)
        if not on_actions and not (isinstance(t, (A.BitT, A.IntT, A.EnumT, A.ErrorT))):
            raise self.error(tree.children[0], f"cannot switch on a value of type {type_name(t)}")
        table = subject.expr.target.decl if on_actions else None
        for case in tree.children[1:]:
            label_tree = case.children[0]
            if label_tree.data == "default":
                label = A.Default(loc=self.loc(label_tree))
                key = "default"
            elif on_actions:
                if label_tree.data != "path":
                    raise self.error(label_tree, "switch on action_run needs action names as labels")
                aname = str(label_tree.children[0])
                sym = self.lookup(aname, label_tree)
                ref = next((r for r in table.actions if r.action is sym.decl), None)
                if ref is None:
                    raise self.error(label_tree, f"'{aname}' is not an action of table '{table.name}'")
                label = key = ref.action.runtime_name
            else:
                label = self.coerce(self.expr(label_tree), t, "switch label", label_tree)
                if not is_const(label):
                    raise self.error(label_tree, "switch label must be a compile-time constant")
                key = label.value
            if key in seen:
                raise self.error(label_tree, f"duplicate switch label '{self.text_of(label_tree)}'")
            seen.add(key)
            body = self.block(case.children[1]) if len(case.children) > 1 else None
            cases.append(A.SwitchCase([label], body))
        return A.Switch(subject, cases, loc=self.loc(tree))
