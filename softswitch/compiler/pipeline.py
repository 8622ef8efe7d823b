"""Compile a checked p4ast.Program into Python, once, at load time.

`compile_program(program, device_id=0) -> CompiledPipeline` builds the live
`SwitchState` (tables with const entries and defaults, registers, counters,
meters) from the program's declarations, generates one Python module (header
and struct classes, one function per parser / control / action / user
function), execs it, and returns the entry points. The generated source is kept
in `CompiledPipeline.source` (and `python3 -m softswitch.compiler PROG.p4`
prints it) so what runs per packet can be read.

Objects the generated code uses (tables, registers, action maps) are bound as
module globals: a lookup of a global is one dict access, and the runtime
mutates these same objects in place.
"""
from __future__ import annotations

import itertools
import linecache
from dataclasses import dataclass, field

import softswitch.frontend.p4ast as A
import softswitch.runtime.state as S
from softswitch.compiler.codegen_control import gen_action, gen_bound_action, gen_control, gen_function, gen_locals_class
from softswitch.compiler.codegen_expr import CodegenError
from softswitch.frontend.errors import P4Error
from softswitch.compiler.codegen_parser import DeparserGen, ParserGen
from softswitch.compiler.codegen_types import RUNTIME_NAMES as TYPE_RUNTIME, class_name, gen_type_classes, is_signed, width_of
from softswitch.compiler.codegen_v1model import V1Gen
from softswitch.runtime.v1model import RUNTIME_NAMES as V1_RUNTIME

SLOTS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


@dataclass
class CompiledPipeline:
    state: S.SwitchState
    parse: object
    verify_checksum: object
    ingress: object
    egress: object
    compute_checksum: object
    deparse: object
    new_headers: object
    new_meta: object
    new_sm: object
    field_lists: dict          # @field_list index -> names of user metadata fields in it
    source: str
    errors: list = field(default_factory=list)


def _lit(e) -> int:
    if isinstance(e, A.Literal):
        v = e.value
        if isinstance(v, str) and isinstance(e.type, A.EnumT) and e.type.values:
            return e.type.values[e.type.members.index(v)]
        return v
    if isinstance(e, A.Cast):
        return _lit(e.expr)
    raise CodegenError(f"expected a compile-time constant, got {type(e).__name__}", getattr(e, "loc", None))


def _enum_member(e) -> str:
    if isinstance(e, A.Literal):
        return str(e.value)
    if isinstance(e, A.Member):
        return e.name
    return str(_lit(e))


class Unit:
    """Program-wide facts and the globals of the generated module."""

    def __init__(self, program: A.Program, device_id=0):
        self.p = program
        self.device_id = device_id
        self.g: dict = {}
        self._ids = itertools.count()
        self.v1 = V1Gen(self)
        self.defs: list[str] = []                    # generated functions, in order
        self._action_fns: dict = {}
        self.called_actions: dict = {}   # runtime name -> ActionDecl called from a control's apply
        self._function_fns: dict = {}
        self.instances: dict = {}                    # (ctl, name) -> (glob, obj)
        self.tables: dict = {}                       # (ctl, name) -> (glob, Table, TableDecl)
        self.specs: dict = {}                        # runtime action name -> ActionSpec
        self._fnmaps: dict = {}
        self.errors = list(program.errors)

    # names and globals ----------------------------------------------------
    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def bind(self, prefix: str, obj) -> str:
        name = f"{prefix}{next(self._ids)}"
        self.g[name] = obj
        return name

    def error_code(self, name) -> int:
        if isinstance(name, int):
            return name
        if name not in self.errors:
            self.errors.append(name)
        return self.errors.index(name)

    def sm_param(self, decl):
        for p in decl.params:
            if isinstance(p.type, A.StructT) and p.type.name == "standard_metadata_t":
                return "p_" + p.name
        return None

    # externs ------------------------------------------------------------
    def _ctl_name(self, ctl):
        return ctl.name if ctl is not None else ""

    def instance_glob(self, ctl, name):
        key = (self._ctl_name(ctl), name)
        if key not in self.instances:
            raise CodegenError(f"extern instance {name} is not declared in {key[0] or 'this scope'}")
        return self.instances[key][0]

    def instance_obj(self, ctl, target):
        return self.instances[(self._ctl_name(ctl), target.name)][1]

    def table_decl(self, ctl, target) -> A.TableDecl:
        return self.tables[(self._ctl_name(ctl), target.name)][2]

    def table_glob(self, ctl, tdecl) -> str:
        return self.tables[(self._ctl_name(ctl), tdecl.name)][0]

    def table_fn_map(self, ctl, tdecl) -> str:
        glob, table, _ = self.tables[(self._ctl_name(ctl), tdecl.name)]
        key = (self._ctl_name(ctl), tdecl.name)
        if key not in self._fnmaps:
            fmap = {}
            if table.default_action not in [self.specs.get(self.action_runtime_name(r.action))
                                            for r in tdecl.actions]:
                fmap[table.default_action] = "_noop_action"
            for ref in tdecl.actions:
                if any(p.direction for p in ref.action.params):
                    fn = f"b_{key[0]}_{tdecl.name}_{ref.action.name}_{next(self._ids)}"
                    self.defs += gen_bound_action(self, ctl, ref, fn) + [""]
                else:
                    fn = self.action_fn(ctl, ref.action)
                fmap[self.specs[self.action_runtime_name(ref.action)]] = fn
            self._fnmaps[key] = self.bind("FN_", fmap)
        return self._fnmaps[key]

    def action_spec_glob(self, tdecl, label) -> str:
        name = label if isinstance(label, str) else getattr(label, "name", str(label))
        for ref in tdecl.actions:
            a = ref.action
            if name in (a.name, a.runtime_name) or (a.runtime_name or "").endswith("." + name):
                return self.bind("AS_", self.specs[self.action_runtime_name(a)])
        raise CodegenError(f"switch label {name} is not an action of table {tdecl.name}")

    def action_runtime_name(self, a: A.ActionDecl) -> str:
        return a.runtime_name or a.name

    def action_fn(self, ctl, decl: A.ActionDecl) -> str:
        key = (self._ctl_name(ctl), decl.runtime_name or decl.name)
        if key not in self._action_fns:
            fname = f"a_{key[0]}_{decl.name}_{next(self._ids)}"
            self._action_fns[key] = fname
            self.defs += gen_action(self, ctl, decl, fname) + [""]
        return self._action_fns[key]

    def function_fn(self, decl: A.FunctionDecl) -> str:
        if decl.name not in self._function_fns:
            fname = f"f_{decl.name}_{next(self._ids)}"
            self._function_fns[decl.name] = fname
            self.defs += gen_function(self, decl, fname) + [""]
        return self._function_fns[decl.name]

    # state ----------------------------------------------------------------
    def build_state(self) -> S.SwitchState:
        tables, registers, counters, meters = [], [], [], []
        for slot in SLOTS:
            ctl = self.p.controls.get(self.p.main.get(slot))
            if ctl is None:
                continue
            tdecls = [d for d in ctl.locals if isinstance(d, A.TableDecl)]
            direct = {}
            for d in ctl.locals:
                if isinstance(d, A.InstanceDecl):
                    obj = self._make_instance(ctl, d, tdecls, direct)
                    if obj is None:
                        continue
                    self.instances[(ctl.name, d.name)] = (self.bind("X_", obj), obj)
                    {"register": registers, "counter": counters, "direct_counter": counters,
                     "meter": meters, "direct_meter": meters}[d.type.name].append(obj)
            for t in tdecls:
                table = self._make_table(ctl, t, direct.get(t.meters))
                tables.append(table)
                self.tables[(ctl.name, t.name)] = (self.bind("T_", table), table, t)
                if t.counters and t.counters in direct:
                    direct[t.counters].table = table
                if t.meters and t.meters in direct:
                    direct[t.meters].table = table
        return S.SwitchState(tables, registers, counters, meters, actions=self.specs.values(),
                             device_id=self.device_id)

    def _make_instance(self, ctl, d: A.InstanceDecl, tdecls, direct):
        name = d.runtime_name or f"{ctl.name}.{d.name}"
        kind = d.type.name
        args = d.args
        if kind == "register":
            et = d.type.type_args[0] if d.type.type_args else A.BitT(32)
            return S.Register(name, _lit(args[0]), width_of(et), signed=is_signed(et))
        if kind == "counter":
            return S.Counter(name, _lit(args[0]), _enum_member(args[1]) if len(args) > 1 else "packets_and_bytes")
        if kind == "direct_counter":
            c = S.DirectCounter(name, None, _enum_member(args[0]) if args else "packets_and_bytes")
            direct[d.name] = c
            return c
        if kind == "meter":
            return S.Meter(name, _lit(args[0]), _enum_member(args[1]) if len(args) > 1 else "bytes")
        if kind == "direct_meter":
            m = S.DirectMeter(name, _enum_member(args[0]) if args else "bytes")
            direct[d.name] = m
            return m
        if kind in ("action_profile", "action_selector", "Checksum16"):
            raise CodegenError(f"unsupported: extern {kind}", d.loc)
        return None

    def _spec(self, a: A.ActionDecl) -> S.ActionSpec:
        name = self.action_runtime_name(a)
        if name not in self.specs:
            params = [(p.name, width_of(p.type)) for p in a.params if not p.direction]
            self.specs[name] = S.ActionSpec(name, params, id=len(self.specs))
        return self.specs[name]

    def _make_table(self, ctl, t: A.TableDecl, dmeter):
        name = t.runtime_name or f"{ctl.name}.{t.name}"
        keys = [S.KeySpec(k.name, k.match_kind, _key_width(k.expr.type)) for k in t.keys]
        specs = [self._spec(r.action) for r in t.actions]
        default_only = [self._spec(r.action).name for r in t.actions if "defaultonly" in r.annotations]
        table_only = [self._spec(r.action).name for r in t.actions if "tableonly" in r.annotations]
        if t.default_action is not None:
            dspec = self._spec(t.default_action.action)
            dargs = tuple(_lit(x) & ((1 << w) - 1) for x, (_, w) in zip(
                [a for a, p in zip(t.default_action.args, t.default_action.action.params) if not p.direction]
                or t.default_action.args, dspec.params))
        else:
            dspec = self.specs.get("NoAction") or S.ActionSpec("NoAction")
            self.specs.setdefault("NoAction", dspec)
            dargs = ()
        table = S.Table(name, keys, specs, size=t.size, default_action=dspec, default_args=dargs,
                        const_default=t.default_action_const, const_entries=t.const_entries is not None,
                        default_only=default_only, table_only=table_only, direct_meter=dmeter)
        prios = _bmv2_priorities(t.const_entries or ())
        for i, ce in enumerate(t.const_entries or ()):
            match = tuple(_const_match(k, x) for k, x in zip(keys, ce.keys))
            prio = prios[i] if table.needs_priority else None
            table.add_const(match, self._spec(ce.action.action).name,
                            [_lit(x) & ((1 << w) - 1) for x, (_, w) in zip(ce.action.args, self._spec(ce.action.action).params)],
                            prio)
        return table

    # the module -------------------------------------------------------------
    def generate(self):
        p = self.p
        roots = []
        parser = p.parsers[p.main["parser"]]
        for prm in parser.params:
            roots.append(prm.type)
        for c in p.controls.values():
            for prm in c.params:
                roots.append(prm.type)
            for d in c.locals:
                if isinstance(d, A.VarDecl):
                    roots.append(d.type)
        roots += [t for t in p.types.values() if isinstance(t, (A.HeaderT, A.StructT, A.HeaderUnionT))]
        head = ["# generated by softswitch.compiler: do not edit", ""] + gen_type_classes(roots)
        entry = {}
        body = []
        body += ParserGen(self, parser).gen("parse") + [""]
        for slot in ("verify_checksum", "ingress", "egress", "compute_checksum"):
            ctl = p.controls[p.main[slot]]
            body += gen_locals_class(ctl) + [""]
            body += gen_control(self, ctl, "c_" + slot) + [""]
            entry[slot] = "c_" + slot
        body += DeparserGen(self, p.controls[p.main["deparser"]]).gen("deparse") + [""]
        return "\n".join(head + self.defs + body) + "\n"


BMV2_PRIORITY_BASE = 1 << 24


def _bmv2_priorities(entries) -> list:
    """The BMv2 priority (numerically lowest wins) of each const entry.

    With only `@priority(N)` annotations (or none), as p4c's BMv2 back end does: an
    annotated entry gets N itself, every other entry its 1-based position.

    With any P4-16 `priority=N:` property (14.2.1.4, default largest_priority_wins,
    priority_delta 1), P4-16's order converted to BMv2's: an entry without a priority
    ranks just below the entry before it (the first such entry, if it comes before any
    explicit one, ranks above all explicit ones); `@priority` then counts as `priority=`."""
    if not any(e.priority_from == "property" for e in entries):
        return [e.priority if e.priority_from == "annotation" else i + 1
                for i, e in enumerate(entries)]
    top = max(e.priority for e in entries if e.priority is not None) + len(entries)
    p4, prev = [], None
    for e in entries:
        cur = e.priority if e.priority is not None else (top if prev is None else prev - 1)
        p4.append(cur)
        prev = cur
    return [BMV2_PRIORITY_BASE - p for p in p4]


def _key_width(t) -> int:
    if isinstance(t, A.BoolT):
        return 1
    return width_of(t)


def _const_match(k: S.KeySpec, x):
    full = (1 << k.width) - 1
    if isinstance(x, A.Default):
        return {"exact": 0, "lpm": (0, 0), "range": (0, full)}.get(k.match_kind, (0, 0))
    if isinstance(x, A.Mask):
        v, m = _lit(x.value) & full, _lit(x.mask) & full
        if k.match_kind == "lpm":
            return (v, bin(m).count("1"))
        return (v & m, m)
    if isinstance(x, A.Range):
        return (_lit(x.lo) & full, _lit(x.hi) & full)
    v = _lit(x)
    v = int(v) & full
    if k.match_kind == "lpm":
        return (v, k.width)
    if k.match_kind in ("ternary", "optional"):
        return (v, full)
    if k.match_kind == "range":
        return (v, v)
    return v


def compile_program(program: A.Program, device_id: int = 0) -> CompiledPipeline:
    try:
        return _compile(program, device_id)
    except P4Error:
        raise
    except Exception as e:  # a compiler bug: still one clear message, not a traceback
        loc = A.Loc(_main_file(program), 0, 0)
        raise P4Error(loc, f"internal compiler error ({type(e).__name__}: {e}); please report it "
                           f"with this program (python3 -m softswitch.compiler shows the generated code)") from e


def _compile(program: A.Program, device_id: int) -> CompiledPipeline:
    unit = Unit(program, device_id)
    state = unit.build_state()
    src = unit.generate()
    # the control plane (P4Info) lists every action the program uses, as p4c does, not only
    # the tables' ones; and the @id annotations of its resources
    for a in unit.called_actions.values():
        state.actions.setdefault(unit.action_runtime_name(a), unit._spec(a))
    state.declared_ids = _declared_ids(program)
    fname = f"<p4:{_main_file(program)}#{id(unit)}>"
    # linecache lets tracebacks of generated code show the generated line
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    g = unit.g
    g.update(TYPE_RUNTIME)
    g.update(V1_RUNTIME)
    exec(compile(src, fname, "exec"), g)
    for fmap_name in unit._fnmaps.values():   # action maps hold function names until exec
        fmap = g[fmap_name]
        for spec, fn in list(fmap.items()):
            fmap[spec] = g[fn]
    parser = program.parsers[program.main["parser"]]
    hdr_t = parser.params[1].type
    meta_t = parser.params[2].type
    sm_t = parser.params[3].type
    return CompiledPipeline(
        state=state, parse=g["parse"], verify_checksum=g["c_verify_checksum"],
        ingress=g["c_ingress"], egress=g["c_egress"], compute_checksum=g["c_compute_checksum"],
        deparse=g["deparse"], new_headers=g[class_name(hdr_t)], new_meta=g[class_name(meta_t)],
        new_sm=g[class_name(sm_t)], field_lists=metadata_field_lists(meta_t),
        source=src, errors=unit.errors)


def _declared_ids(program: A.Program) -> dict:
    """{runtime name: N} of every table, action and extern instance with @id(N)."""
    ids = {}
    for ctl in program.controls.values():
        for d in ctl.locals:
            raw = (getattr(d, "annotations", None) or {}).get("id")
            if raw is None or not isinstance(d, (A.TableDecl, A.ActionDecl, A.InstanceDecl)):
                continue
            text = raw[0] if isinstance(raw, list) else raw
            try:
                value = int(str(text).strip(), 0)
            except ValueError:
                continue
            ids[d.runtime_name or f"{ctl.name}.{d.name}"] = value
    return ids


def metadata_field_lists(meta_t) -> dict:
    """{index: (field names)} from @field_list(i, ...) on user metadata fields, as p4c
    builds the lists that clone/resubmit/recirculate_preserving_field_list(i) keep."""
    lists: dict = {}
    for f in getattr(meta_t, "fields", ()):
        for name, value in getattr(f, "annotations", ()):
            if name != "field_list":
                continue
            for idx in (value if isinstance(value, tuple) else (value,)):
                lists.setdefault(int(idx), []).append(f.name)
    return {k: tuple(v) for k, v in lists.items()}


def _main_file(program) -> str:
    return program.source_files[0] if program.source_files else "program"
