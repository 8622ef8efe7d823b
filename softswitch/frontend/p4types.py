"""Type helpers of the front end: printing, widths, constant arithmetic.

Pure functions over `p4ast` types; plus the front end's private type nodes
(type variables, extern signatures) that never reach the compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import softswitch.frontend.p4ast as A
class Sym:
    """What a name denotes in a scope: kind ('const', 'param', 'local', 'instance',
    'table', 'action', 'function', 'extern_function', 'parser', 'control',
    'blocktype'), its type, its declaration and, for constants, its Literal."""
    __slots__ = ("kind", "type", "decl", "value")

    def __init__(self, kind, type=None, decl=None, value=None):
        self.kind, self.type, self.decl, self.value = kind, type, decl, value


@dataclass(frozen=True)
class TypeVar(A.Type):
    """A type parameter (`T` in `register<T, I>`) before it is bound."""
    name: str


@dataclass(frozen=True)
class BlockTypeT(A.Type):
    """A parser/control type or a package (only used to check `main`)."""
    name: str
    kind: str  # 'parser' | 'control' | 'package'
    nparams: int = 0
    param_names: tuple = ()


@dataclass
class Signature:
    """One extern function or method overload."""
    name: str
    type_params: tuple
    params: list  # list[A.Param], types may contain TypeVar
    ret: A.Type


@dataclass
class ExternInfo:
    """An extern object type: constructors and methods (overloads by arity)."""
    name: str
    type_params: tuple
    ctors: list = field(default_factory=list)
    methods: dict = field(default_factory=dict)  # name -> list[Signature]


def type_name(t) -> str:
    """A type as P4 source spells it, for messages."""
    if isinstance(t, A.BitT):
        return f"bit<{t.width}>"
    if isinstance(t, A.IntT):
        return f"int<{t.width}>"
    if isinstance(t, A.VarbitT):
        return f"varbit<{t.max_width}>"
    if isinstance(t, A.InfIntT):
        return "int"
    if isinstance(t, A.BoolT):
        return "bool"
    if isinstance(t, A.StringT):
        return "string"
    if isinstance(t, A.VoidT):
        return "void"
    if isinstance(t, A.ErrorT):
        return "error"
    if isinstance(t, A.MatchKindT):
        return "match_kind"
    if isinstance(t, (A.EnumT, A.HeaderT, A.HeaderUnionT, A.StructT, TypeVar, BlockTypeT)):
        return t.name
    if isinstance(t, A.StackT):
        return f"{type_name(t.elem)}[{t.size}]"
    if isinstance(t, A.TupleT):
        return "tuple<" + ", ".join(type_name(e) for e in t.elems) + ">"
    if isinstance(t, A.ExternT):
        if t.type_args:
            return f"{t.name}<" + ", ".join(type_name(e) for e in t.type_args) + ">"
        return t.name
    if isinstance(t, A.TableApplyResultT):
        return f"apply result of table {t.table}"
    if isinstance(t, A.ActionEnumT):
        return f"action_run of table {t.table}"
    return str(t)


def is_fixed_int(t) -> bool:
    return isinstance(t, (A.BitT, A.IntT))


def is_int(t) -> bool:
    return isinstance(t, (A.BitT, A.IntT, A.InfIntT))


def bit_width(t) -> int | None:
    """Width in bits of a serializable type, None if it has none."""
    if isinstance(t, (A.BitT, A.IntT)):
        return t.width
    if isinstance(t, A.BoolT):
        return 1
    if isinstance(t, A.VarbitT):
        return t.max_width
    if isinstance(t, A.EnumT) and t.underlying is not None:
        return bit_width(t.underlying)
    if isinstance(t, (A.HeaderT, A.StructT)):
        widths = [bit_width(f.type) for f in t.fields]
        return None if None in widths else sum(widths)
    if isinstance(t, A.StackT):
        w = bit_width(t.elem)
        return None if w is None else w * t.size
    return None


def wrap(value: int, t) -> int:
    """An integer brought into the range of `t` (two's complement for int<W>)."""
    if isinstance(t, A.BitT):
        return value & ((1 << t.width) - 1)
    if isinstance(t, A.IntT):
        value &= (1 << t.width) - 1
        return value - (1 << t.width) if value >> (t.width - 1) else value
    return value


def saturate(value: int, t) -> int:
    if isinstance(t, A.BitT):
        return max(0, min(value, (1 << t.width) - 1))
    if isinstance(t, A.IntT):
        lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
        return max(lo, min(value, hi))
    return value


def substitute(t, binding: dict):
    """Replace bound type variables in `t`."""
    if isinstance(t, TypeVar):
        return binding.get(t.name, t)
    if isinstance(t, A.ExternT) and t.type_args:
        return A.ExternT(t.name, tuple(substitute(a, binding) for a in t.type_args))
    return t


def fold_binary(op: str, a, b, t):
    """Value of `a op b` for constants of result type `t` (None: not foldable).
    Division by zero is the caller's error to report."""
    if op == "+":
        return wrap(a + b, t)
    if op == "-":
        return wrap(a - b, t)
    if op == "*":
        return wrap(a * b, t)
    if op == "/":
        return wrap(a // b, t) if a >= 0 and b > 0 else None
    if op == "%":
        return wrap(a % b, t) if a >= 0 and b > 0 else None
    if op == "|+|":
        return saturate(a + b, t)
    if op == "|-|":
        return saturate(a - b, t)
    if op == "&":
        return wrap(a & b, t)
    if op == "|":
        return wrap(a | b, t)
    if op == "^":
        return wrap(a ^ b, t)
    if op == "<<":
        return wrap(a << b, t)
    if op == ">>":
        return wrap(a >> b, t)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    if op == "&&":
        return a and b
    if op == "||":
        return a or b
    return None
