"""Typed AST of a checked P4-16 program: the contract between front end and compiler.

The front end (`softswitch.frontend`) parses, resolves names and types, evaluates
compile-time constants, and returns a `Program` made of these nodes. Every
expression carries its resolved `type`; every name use is resolved to what it
denotes (`PathExpr.ref`). The compiler (`softswitch.compiler`) never looks at source
text and never resolves names itself.

Nodes are plain dataclasses so tests can build them by hand. `loc` is the
source position (file, line, col) used in error and assert messages.
Changes here are additive: new fields get defaults.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOLOC = Loc("<builtin>", 0, 0)


# ----------------------------------------------------------------- types
class Type:
    """Base of all types. Typedefs and `type` declarations resolve to their target."""


@dataclass(frozen=True)
class BitT(Type):
    width: int


@dataclass(frozen=True)
class IntT(Type):
    width: int


@dataclass(frozen=True)
class VarbitT(Type):
    max_width: int


@dataclass(frozen=True)
class InfIntT(Type):
    """Arbitrary-precision integer: untyped literals and compile-time constants."""


@dataclass(frozen=True)
class BoolT(Type):
    pass


@dataclass(frozen=True)
class StringT(Type):
    pass


@dataclass(frozen=True)
class VoidT(Type):
    pass


@dataclass(frozen=True)
class ErrorT(Type):
    """The `error` type. Values are the member names (str)."""


@dataclass(frozen=True)
class MatchKindT(Type):
    pass


@dataclass(frozen=True)
class EnumT(Type):
    name: str
    members: tuple  # tuple[str, ...]
    underlying: Optional[Type] = None  # BitT/IntT for serializable enums
    values: tuple = ()  # tuple[int, ...] for serializable enums, same order as members


@dataclass(frozen=True)
class FieldDef:
    name: str
    type: Type
    # ((annotation name, value), ...), e.g. (("field_list", 1),); several args -> a tuple.
    # Used for v1model's @field_list (clone/resubmit/recirculate preserving field lists).
    annotations: tuple = ()


@dataclass(frozen=True)
class HeaderT(Type):
    name: str
    fields: tuple  # tuple[FieldDef, ...]; bit/int/bool/varbit/serializable enum


@dataclass(frozen=True)
class HeaderUnionT(Type):
    name: str
    fields: tuple  # tuple[FieldDef, ...] of HeaderT


@dataclass(frozen=True)
class StructT(Type):
    name: str
    fields: tuple  # tuple[FieldDef, ...]


@dataclass(frozen=True)
class StackT(Type):
    elem: Type  # HeaderT or HeaderUnionT
    size: int


@dataclass(frozen=True)
class TupleT(Type):
    elems: tuple  # tuple[Type, ...]


@dataclass(frozen=True)
class ExternT(Type):
    """An extern object type (register<bit<32>>, counter, packet_in ...)."""
    name: str
    type_args: tuple = ()  # tuple[Type, ...]


@dataclass(frozen=True)
class TableApplyResultT(Type):
    """Type of `t.apply()`: has .hit, .miss, .action_run."""
    table: str


@dataclass(frozen=True)
class ActionEnumT(Type):
    """Type of `t.apply().action_run`; values are action names (str)."""
    table: str


# ----------------------------------------------------------------- expressions
@dataclass
class Expr:
    type: Type = field(default=None, kw_only=True)
    loc: Loc = field(default=NOLOC, kw_only=True)


@dataclass
class Literal(Expr):
    """Integer (InfIntT/BitT/IntT), bool, string, error member or enum member value."""
    value: Union[int, bool, str]


@dataclass
class PathExpr(Expr):
    """A resolved name. `kind` says what it denotes:
    'param' (parameter of the enclosing parser/control/action/function),
    'local' (variable declared in a block, parser or control),
    'instance' (extern instance, e.g. a register; `decl` is the InstanceDecl),
    'table' (`decl` is the TableDecl), 'action' (`decl` is the ActionDecl),
    'parser_state' (in transitions), 'extern_function' (mark_to_drop, hash ...),
    'function' (a user function; `decl` is FunctionDecl).
    Constants are folded to Literal by the front end."""
    name: str
    kind: str
    decl: object = None


@dataclass
class Member(Expr):
    """expr.name: header/struct field, stack .next/.last/.lastIndex/.size,
    table-apply .hit/.miss/.action_run, enum member access is folded to Literal."""
    expr: Expr
    name: str


@dataclass
class Index(Expr):
    """stack[i]"""
    expr: Expr
    index: Expr


@dataclass
class Slice(Expr):
    """expr[hi:lo] (hi, lo folded to ints)."""
    expr: Expr
    hi: int
    lo: int


@dataclass
class Unary(Expr):
    op: str  # '-', '~', '!'
    expr: Expr


@dataclass
class Binary(Expr):
    """op is one of + - * / % << >> & | ^ |+| |-| ++ == != < <= > >= && ||.
    Operand types are already unified (literals given the other side's width)."""
    op: str
    left: Expr
    right: Expr


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass
class Cast(Expr):
    """(type) expr; the target is `self.type`."""
    expr: Expr


@dataclass
class Mask(Expr):
    """value &&& mask, only in select cases and const entries."""
    value: Expr
    mask: Expr


@dataclass
class Range(Expr):
    """lo .. hi, only in select cases and const entries."""
    lo: Expr
    hi: Expr


@dataclass
class Default(Expr):
    """`default` or `_` in select cases / const entries keys."""


@dataclass
class ListExpr(Expr):
    """{a, b, c}: tuples in select, hash/checksum data lists, struct initializers."""
    elems: list


@dataclass
class MethodCall(Expr):
    """target.method(args): extract, emit, lookahead, advance, isValid, setValid,
    setInvalid, push_front, pop_front, table apply, extern methods (read, write,
    count, execute_meter ...). `target` is the object expression."""
    target: Expr
    method: str
    args: list
    type_args: list = field(default_factory=list)


@dataclass
class Call(Expr):
    """A call of a named function/action: extern functions (mark_to_drop, hash,
    clone, digest, verify_checksum, ..., verify in parsers), actions called
    directly, user functions. `func` is a PathExpr."""
    func: PathExpr
    args: list
    type_args: list = field(default_factory=list)


# ----------------------------------------------------------------- statements
@dataclass
class Stmt:
    loc: Loc = field(default=NOLOC, kw_only=True)


@dataclass
class Assign(Stmt):
    lhs: Expr  # PathExpr, Member, Index, Slice
    rhs: Expr


@dataclass
class VarDecl(Stmt):
    name: str
    type: Type
    init: Optional[Expr] = None


@dataclass
class ExprStmt(Stmt):
    """A call used as a statement (MethodCall or Call)."""
    expr: Expr


@dataclass
class If(Stmt):
    cond: Expr
    then: "Block"
    other: Optional["Block"] = None


@dataclass
class SwitchCase:
    labels: list  # list of Expr (Literal) or Default(); action names as str for action_run
    body: Optional["Block"]  # None = fall through to the next case


@dataclass
class Switch(Stmt):
    expr: Expr  # action_run of a table apply, or a bit/enum expression
    cases: list  # list[SwitchCase]


@dataclass
class Block(Stmt):
    stmts: list


@dataclass
class Exit(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Optional[Expr] = None


@dataclass
class Empty(Stmt):
    pass


# ----------------------------------------------------------------- declarations
@dataclass
class Param:
    name: str
    direction: str  # 'in', 'out', 'inout', '' (directionless)
    type: Type


@dataclass
class Annotated:
    """Mixin data: annotations as {name: raw argument text or list}."""


@dataclass
class ActionDecl:
    name: str        # local name
    params: list     # list[Param]
    body: Block
    annotations: dict = field(default_factory=dict)
    runtime_name: str = ""  # @name honoured; else p4c's naming (Control.action, or action for top-level)
    loc: Loc = NOLOC


@dataclass
class KeyElement:
    expr: Expr
    match_kind: str  # 'exact', 'lpm', 'ternary', 'range', 'optional', 'selector'
    name: str        # runtime name: @name annotation, else the expression text as p4c prints it


@dataclass
class ActionRef:
    """An action as listed in a table (`actions = { a; b(1); }`) or default_action."""
    action: ActionDecl
    args: list = field(default_factory=list)  # Expr, bound (const) arguments
    annotations: dict = field(default_factory=dict)  # @tableonly, @defaultonly


@dataclass
class ConstEntry:
    keys: list       # list[Expr]: Literal / Mask / Range / Default, one per key element
    action: ActionRef
    priority: Optional[int] = None
    # where the priority came from: "property" (P4-16 `priority=N:`, largest wins) or
    # "annotation" (`@priority(N)`, p4c's BMv2 meaning: the BMv2 priority itself, lowest wins)
    priority_from: str = ""


@dataclass
class TableDecl:
    name: str
    keys: list                    # list[KeyElement]
    actions: list                 # list[ActionRef]
    default_action: Optional[ActionRef]
    default_action_const: bool = False
    const_entries: Optional[list] = None  # list[ConstEntry] or None
    size: int = 1024
    counters: Optional[str] = None  # name of a direct_counter instance in the control
    meters: Optional[str] = None    # name of a direct_meter instance in the control
    annotations: dict = field(default_factory=dict)
    runtime_name: str = ""          # p4c style: "MyIngress.ipv4_lpm" (or @name)
    loc: Loc = NOLOC


@dataclass
class InstanceDecl:
    """Extern instantiation: register<bit<32>>(1024) r; counter(64, CounterType.packets) c;"""
    name: str
    type: ExternT
    args: list  # list[Expr], constants folded to Literal
    annotations: dict = field(default_factory=dict)
    runtime_name: str = ""
    loc: Loc = NOLOC


@dataclass
class SelectCase:
    keyset: Expr  # Literal, Mask, Range, Default, or ListExpr of those for tuple selects
    state: str


@dataclass
class ParserState:
    name: str
    stmts: list  # list[Stmt]
    # transition: either a state name (str, incl. 'accept'/'reject') or a select
    next_state: Optional[str] = None
    select_exprs: Optional[list] = None  # list[Expr]
    select_cases: Optional[list] = None  # list[SelectCase]
    loc: Loc = NOLOC


@dataclass
class ParserDecl:
    name: str
    params: list          # list[Param]
    locals: list          # VarDecl / InstanceDecl (e.g. value_set later)
    states: dict          # name -> ParserState, in source order; 'start' present
    loc: Loc = NOLOC


@dataclass
class ControlDecl:
    name: str
    params: list          # list[Param]
    locals: list          # VarDecl, InstanceDecl, ActionDecl, TableDecl in source order
    body: Block
    loc: Loc = NOLOC


@dataclass
class FunctionDecl:
    name: str
    params: list
    return_type: Type
    body: Block
    loc: Loc = NOLOC


@dataclass
class Program:
    """A checked v1model program.
    `main` maps the V1Switch slots to parser/control declarations:
    {'parser', 'verify_checksum', 'ingress', 'egress', 'compute_checksum', 'deparser'}.
    `types` holds every named type (headers, structs, enums, typedef targets).
    `errors` lists error member names in declaration order (core's first:
    NoError, PacketTooShort, NoMatch, StackOutOfBounds, HeaderTooShort,
    ParserTimeout, ParserInvalidArgument), which is also BMv2's numbering.
    `actions` are top-level actions (e.g. NoAction), `functions` user functions.
    `source_files` lists every file read, for the manifest."""
    main: dict
    parsers: dict
    controls: dict
    types: dict
    errors: list
    actions: dict = field(default_factory=dict)
    functions: dict = field(default_factory=dict)
    consts: dict = field(default_factory=dict)  # name -> Literal, for tooling
    defines: dict = field(default_factory=dict)
    source_files: list = field(default_factory=list)
