"""Tables and parser states: the match-action and select parts of the checker.

A mixin of `typecheck.Checker`. Keysets of `select` cases and of const table
entries share one conversion (`keyset`): each element becomes a Literal, Mask,
Range or Default typed like its key.
"""
from __future__ import annotations

from lark import Token, Tree

import softswitch.frontend.p4ast as A
from softswitch.frontend.exprcheck import is_const
from softswitch.frontend.p4types import Sym, is_int, type_name

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional", "selector")
IGNORED_TABLE_PROPERTIES = ("support_timeout",)


def _expr_key(e) -> str:
    """A comparable spelling of a simple expression (paths, fields, indexes, constants)."""
    if isinstance(e, A.PathExpr):
        return e.name
    if isinstance(e, A.Member):
        return f"{_expr_key(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{_expr_key(e.expr)}[{_expr_key(e.index)}]"
    if isinstance(e, A.Literal):
        return repr(e.value)
    return f"<{id(e)}>"


def _is_prefix(mask: int, t) -> bool:
    width = t.width if hasattr(t, "width") else 0
    mask &= (1 << width) - 1
    inverted = ~mask & ((1 << width) - 1)
    return inverted & (inverted + 1) == 0  # the zeros are all at the bottom


class TableMixin:
    # ---------------------------------------------------------------- keysets
    def keyset_elem(self, tree, key_type, what: str):
        loc = self.loc(tree)
        if tree.data == "default":
            return A.Default(type=key_type, loc=loc)
        if tree.data == "mask":
            vtree, mtree = tree.children
            value = self.const_keyset_value(vtree, key_type, what)
            # a serializable enum's mask is a bit pattern of its underlying type (p4c takes
            # `MyEnum.A &&& 0xff00`): an int constant mask is typed as that
            mtype = key_type
            if isinstance(key_type, A.EnumT) and key_type.underlying is not None and \
                    is_int(self.expr(mtree).type):
                mtype = key_type.underlying
            mask = self.const_keyset_value(mtree, mtype, what)
            return A.Mask(value, mask, type=key_type, loc=loc)
        if tree.data == "range":
            lo, hi = (self.const_keyset_value(c, key_type, what) for c in tree.children)
            return A.Range(lo, hi, type=key_type, loc=loc)
        if tree.data == "tuple_keyset":
            raise self.error(tree, f"a tuple keyset is not allowed here ({what} has one key)")
        return self.const_keyset_value(tree, key_type, what)

    def const_keyset_value(self, tree, key_type, what):
        e = self.coerce(self.expr(tree), key_type, what, tree)
        if not is_const(e):
            raise self.error(tree, f"{what} must be a compile-time constant")
        return e

    def keyset(self, tree, key_types, what: str):
        """One keyset for keys of `key_types`; tuples for several keys."""
        if len(key_types) == 1:
            if tree.data == "tuple_keyset":
                raise self.error(tree, f"{what} has {len(tree.children)} values for 1 key")
            return [self.keyset_elem(tree, key_types[0], what)]
        if tree.data == "default":
            return [A.Default(type=t, loc=self.loc(tree)) for t in key_types]
        if tree.data != "tuple_keyset":
            raise self.error(tree, f"{what} needs a tuple of {len(key_types)} values")
        if len(tree.children) != len(key_types):
            raise self.error(tree, f"{what} has {len(tree.children)} values for {len(key_types)} keys")
        return [self.keyset_elem(c, t, what) for c, t in zip(tree.children, key_types)]

    # ---------------------------------------------------------------- parsers
    def parser_states(self, decl: A.ParserDecl, state_trees):
        names = {}
        for st in state_trees:
            name = str(st.children[2].children[0])
            if name in names or name in ("accept", "reject"):
                raise self.error(st.children[2], f"parser state '{name}' is already declared")
            names[name] = st
        if "start" not in names:
            raise self.error_at(decl.loc, f"parser {decl.name} has no 'start' state")
        for name, st in names.items():
            decl.states[name] = self.parser_state(name, st, names)

    def parser_state(self, name, tree, names) -> A.ParserState:
        *_, trans = tree.children
        stmt_trees = tree.children[3:-1]
        self.push()
        try:
            stmts = [s for s in (self.stmt(c) for c in stmt_trees) if s is not None]
            state = A.ParserState(name, stmts, loc=self.loc(tree))
            if trans.data == "trans_direct":
                state.next_state = self.state_ref(trans.children[0], names)
            else:
                exprs = [self.expr(e) for e in trans.children[0].children]
                for e, et in zip(exprs, trans.children[0].children):
                    if not isinstance(e.type, (A.BitT, A.IntT, A.BoolT, A.EnumT, A.ErrorT)):
                        raise self.error(et, f"cannot select on a value of type {type_name(e.type)}")
                    if isinstance(e.type, A.InfIntT):
                        raise self.error(et, "select expression needs a known width")
                types = [e.type for e in exprs]
                cases = []
                for case in trans.children[1:]:
                    ks_tree, target = case.children
                    elems = self.keyset(ks_tree, types, "select case")
                    if ks_tree.data == "default":
                        ks = A.Default(loc=self.loc(ks_tree))
                    else:
                        ks = elems[0] if len(types) == 1 else \
                            A.ListExpr(elems, type=A.TupleT(tuple(types)), loc=self.loc(ks_tree))
                    cases.append(A.SelectCase(ks, self.state_ref(target, names)))
                state.select_exprs, state.select_cases = exprs, cases
        finally:
            self.pop()
        return state

    def state_ref(self, name_tree, names) -> str:
        name = str(name_tree.children[0])
        if name not in names and name not in ("accept", "reject"):
            raise self.error(name_tree, f"unknown parser state '{name}'")
        return name

    # ---------------------------------------------------------------- tables
    def table_decl(self, tree) -> A.TableDecl:
        annos_tree, name_tree, *props = tree.children
        lname = str(name_tree.children[0])
        annos = self.annotations(annos_tree)
        table = A.TableDecl(self.local_name(lname), [], [], None, annotations=annos,
                            runtime_name=self.runtime_name(annos, lname), loc=self.loc(tree))
        seen = set()
        entries_tree = None
        for prop in props:
            pname = {"key_prop": "key", "actions_prop": "actions", "entries_prop": "entries"}.get(prop.data)
            if pname is None:
                pname = str(next(c for c in prop.children if isinstance(c, Token) and c.type == "IDENT"))
            if pname in seen:
                raise self.error(prop, f"table property '{pname}' is given twice")
            seen.add(pname)
            if pname == "key":
                table.keys = [self.key_element(k) for k in prop.children[2:]]
            elif pname == "actions":
                table.actions = [self.action_item(a) for a in prop.children[2:]]
            elif pname == "entries":
                entries_tree = prop  # after keys and actions, whatever the order
            else:
                self.simple_property(table, pname, prop)
        if "actions" not in seen:
            raise self.error(tree, f"table '{lname}' has no actions property")
        if entries_tree is not None:
            table.const_entries = [self.entry(table, e) for e in entries_tree.children
                                   if isinstance(e, Tree) and e.data == "entry"]
        self.declare(lname, Sym("table", None, decl=table), name_tree)
        return table

    def key_element(self, tree) -> A.KeyElement:
        expr_tree, kind_tree, annos_tree = tree.children
        e = self.expr(expr_tree)
        kind = str(kind_tree.children[0])
        if kind not in self.match_kinds:
            raise self.error(kind_tree, f"unknown match kind '{kind}' (exact, lpm, ternary, range, optional)")
        if kind == "selector":
            raise self.error(kind_tree, "unsupported: match kind 'selector' (action selectors)")
        if not isinstance(e.type, (A.BitT, A.IntT, A.BoolT, A.EnumT, A.ErrorT)) or \
                isinstance(e.type, A.EnumT) and e.type.underlying is None:
            raise self.error(expr_tree, f"table key cannot have type {type_name(e.type)}")
        annos = self.annotations(annos_tree)
        name = annos.get("name") if isinstance(annos.get("name"), str) else self.text_of(expr_tree)
        return A.KeyElement(e, kind, name)

    def find_action(self, name_tree):
        name = str(name_tree.children[0])
        sym = self.lookup(name, name_tree)
        if sym.kind != "action":
            raise self.error(name_tree, f"'{name}' is not an action")
        return sym.decl

    def action_item(self, tree) -> A.ActionRef:
        annos_tree, name_tree, *args = tree.children
        action = self.find_action(name_tree)
        bound = []
        if args:
            arg_trees = list(args[0].children)
            directional = [p for p in action.params if p.direction]
            if len(arg_trees) != len(directional):
                raise self.error(tree, f"wrong number of arguments to action '{action.name}' in actions list: "
                                       f"expected {len(directional)} (its in/out/inout parameters), "
                                       f"got {len(arg_trees)}")
            for p, at in zip(directional, arg_trees):
                bound.append(self.coerce(self.expr(at, p.type), p.type, f"argument '{p.name}'", at))
        elif any(p.direction for p in action.params):
            raise self.error(tree, f"action '{action.name}' has in/out/inout parameters: bind them "
                                   f"in the actions list, e.g. {action.name}(...)")
        return A.ActionRef(action, bound, self.annotations(annos_tree))

    def table_action_ref(self, table, name_tree, arg_trees, what) -> A.ActionRef:
        """An action call in default_action or an entry: must be in the actions list;
        constant arguments for its directionless parameters."""
        aname = str(name_tree.children[0])
        sym = self.lookup(aname, name_tree)
        ref = next((r for r in table.actions if r.action is sym.decl), None)
        if ref is None:
            raise self.error(name_tree, f"{what}: action '{aname}' is not in the actions of table '{table.name}'")
        data = [p for p in ref.action.params if not p.direction]
        if len(arg_trees) == len(ref.action.params) and len(data) != len(arg_trees):
            # p4c style: the in/out/inout arguments are repeated, e.g. my_drop(standard_metadata);
            # they must be the ones bound in the actions list.
            for p, at, bound in zip((p for p in ref.action.params if p.direction),
                                    (t for p, t in zip(ref.action.params, arg_trees) if p.direction), ref.args):
                if _expr_key(self.expr(at)) != _expr_key(bound):
                    raise self.error(at, f"{what}: argument '{p.name}' of '{aname}' must be the one bound "
                                         f"in the actions list")
            arg_trees = [t for p, t in zip(ref.action.params, arg_trees) if not p.direction]
        if len(arg_trees) != len(data):
            raise self.error(name_tree, f"wrong number of arguments to action '{aname}' in {what}: "
                                        f"expected {len(data)}, got {len(arg_trees)}")
        args = []
        for p, at in zip(data, arg_trees):
            e = self.coerce(self.expr(at, p.type), p.type, f"argument '{p.name}'", at)
            if not is_const(e):
                raise self.error(at, f"{what}: action arguments must be compile-time constants")
            args.append(e)
        return A.ActionRef(ref.action, args, dict(ref.annotations))

    def simple_property(self, table, pname, prop):
        is_const_prop = any(isinstance(c, Token) and c.type == "KW_CONST" for c in prop.children)
        value = prop.children[-1]
        if pname == "default_action":
            if value.data == "call" and value.children[0].data == "path" and len(value.children) == 2:
                name_tree = Tree("name", value.children[0].children, value.children[0].meta)
                arg_trees = list(value.children[1].children)
            elif value.data == "path":
                name_tree, arg_trees = Tree("name", value.children, value.meta), []
            else:
                raise self.error(value, "default_action must be an action call like drop()")
            table.default_action = self.table_action_ref(table, name_tree, arg_trees, "default_action")
            if "tableonly" in table.default_action.annotations:
                raise self.error(value, f"action '{name_tree.children[0]}' is @tableonly and cannot be "
                                        f"the default action")
            table.default_action_const = is_const_prop
        elif pname == "size":
            table.size = self.const_int(value, "table size")
            if table.size <= 0:
                raise self.error(value, "table size must be positive")
        elif pname in ("counters", "meters"):
            want = "direct_counter" if pname == "counters" else "direct_meter"
            if value.data != "path":
                raise self.error(value, f"{pname} must name a {want} instance")
            e = self.expr(value)
            if not (isinstance(e, A.PathExpr) and e.kind == "instance" and e.decl.type.name == want):
                raise self.error(value, f"{pname} must name a {want} instance, "
                                        f"'{self.text_of(value)}' is not one")
            setattr(table, pname, e.decl.name)
        elif pname in IGNORED_TABLE_PROPERTIES:
            pass
        elif pname == "implementation":
            raise self.error(prop, "unsupported: table property 'implementation' (action profiles/selectors)")
        else:
            raise self.error(prop, f"unsupported: table property '{pname}'")

    def entry(self, table, tree) -> A.ConstEntry:
        kids = list(tree.children)
        # p4c writes @priority after the action (`k : a() @priority(1);`), older code before
        # the keyset: both count
        annos = {**self.annotations(kids[0]), **self.annotations(kids[-1])}
        i = 1
        priority, priority_from = None, ""
        if isinstance(kids[1], Tree) and kids[1].data == "entry_priority":
            word, value = kids[1].children
            if str(word) != "priority":
                raise self.error(kids[1], f"unknown entry property '{word}' (only priority=N)")
            priority = self.const_int(value, "entry priority")
            priority_from = "property"
            i = 2
        ks_tree, name_tree = kids[i], kids[i + 1]
        arg_trees = list(kids[i + 2].children) if isinstance(kids[i + 2], Tree) and kids[i + 2].data == "args" else []
        if "priority" in annos:
            if priority is not None:
                raise self.error(tree, "entry priority given twice (@priority and priority=)")
            if not isinstance(annos["priority"], int):
                raise self.error(tree, "@priority needs an integer argument")
            priority, priority_from = annos["priority"], "annotation"
        if not table.keys:
            raise self.error(tree, f"table '{table.name}' has entries but no key")
        keys = self.keyset(ks_tree, [k.expr.type for k in table.keys], "table entry")
        elem_trees = ks_tree.children if ks_tree.data == "tuple_keyset" else [ks_tree] * len(keys)
        for k, v, vt in zip(table.keys, keys, elem_trees):
            if isinstance(v, A.Mask) and k.match_kind not in ("ternary", "lpm"):
                raise self.error(vt, f"mask '&&&' needs a ternary or lpm key, '{k.name}' is {k.match_kind}")
            if isinstance(v, A.Mask) and k.match_kind == "lpm" and not _is_prefix(v.mask.value, v.type):
                raise self.error(vt, f"lpm mask {v.mask.value:#x} of '{k.name}' is not a prefix "
                                     f"(ones from the top bit down)")
            if isinstance(v, A.Range) and k.match_kind != "range":
                raise self.error(vt, f"range '..' needs a range key, '{k.name}' is {k.match_kind}")
            if isinstance(v, A.Default) and k.match_kind == "exact":
                raise self.error(vt, f"'_' cannot match exact key '{k.name}'")
        action = self.table_action_ref(table, name_tree, arg_trees, "table entry")
        if "defaultonly" in action.annotations:
            raise self.error(name_tree, f"action '{action.action.name}' is @defaultonly and cannot "
                                        f"be used in an entry")
        return A.ConstEntry(keys, action, priority, priority_from)
