"""A whole v1model program to one C source file, or `Unsupported` naming the first construct
the compiled path lacks.

    generate(program, state) -> CProgram(source, tables)

`state` is the SwitchState the Python compiler built for the same program: the C tables
are numbered here and mirror.py copies each Python table into its C slot (CProgram.tables
says which, with the action order of the C switch). Layout of the source:

    #include "ssrt.h"            tables, PRE, bit helpers, checksum
    typedefs of the P4 types; ss_pkt (headers, metadata, standard_metadata, control locals)
    #include "ss_ctx.h"          the switch context
    actions, parser, controls, deparser, gen_init_tables
    #include "ss_switch.c"       simple_switch's pipeline order and the exported API
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import softswitch.frontend.p4ast as A
from softswitch.compiler.pipeline import metadata_field_lists
from softswitch.native.cgen_body import CBody
from softswitch.native.cgen_parser import DeparserC, ParserC
from softswitch.native.cgen_types import CTypes, Unsupported, is_aggregate, scalar_width, type_name

SLOTS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
MAX_KEYS = 8        # ssrt.h SS_MAX_KEYS
MAX_ARGS = 16       # ssrt.h SS_MAX_ARGS
EVENT_CAP = 4096    # log_msg/digest calls queued between two drains; more are counted as lost
KIND_C = {"exact": "SS_EXACT", "lpm": "SS_LPM", "ternary": "SS_TERNARY"}


@dataclass
class TableInfo:
    index: int              # slot in ss_ctx.tables
    table: object           # the Python runtime Table it mirrors
    actions: list           # runtime action names, in the order of the C action indexes
    kind: str               # exact | lpm | ternary (the lookup structure)
    counter_slot: int = -1  # direct counter: packets at ext[slot], bytes at ext[slot + 1]
    meter_slot: int = -1    # direct meter: ss_meter cells at ext[slot], one per entry handle slot
    meter_packets: bool = False   # the direct meter counts packets (else bytes)


@dataclass
class ExternInfo:
    """A register, an indirect counter or a table's direct counter: its cells are arrays
    the Python object adopts (Register.adopt / Counter.adopt / Table.adopt_counter_cells)
    and C reads through ss_ctx.ext[slot] (a counter uses two slots: packets at `slot`,
    bytes at `slot + 1`; a direct counter has a cell per entry handle slot)."""
    slot: int
    obj: object             # the runtime Register / Counter / Table
    kind: str               # register | counter | direct_counter
    ctype: str              # C element type: uint8_t .. uint64_t
    size: int


@dataclass
class CProgram:
    source: str
    tables: list            # [TableInfo]
    externs: list           # [ExternInfo]
    clones: bool = False    # the program clones: the mirror sessions are copied to C
    events: list = None     # [(kind, text, nvals)] by event id: log_msg and digest call sites


class ProgramGen:
    def __init__(self, program: A.Program, state):
        self.p = program
        self.state = state
        self.types = CTypes()
        self._ids = itertools.count()
        self.errors = list(program.errors)
        self.tables: dict = {}           # (control name, table name) -> TableInfo
        self._decls: dict = {}           # (control name, table name) -> TableDecl
        self._actions: dict = {}         # (control name, runtime name) -> C function name
        self.action_defs: list[str] = []
        self.prototypes: list[str] = []
        self.externs: dict = {}          # (control name, instance name) -> ExternInfo
        self._ext_slots = 0
        self.scratch = 0                 # bytes of data list before a payload (checksums with payload)
        self.uses: set[str] = set()      # traffic-manager requests the program makes: clone, resubmit, ...
        self.events: list = []           # [(kind, message or digest name, number of values)]

    def add_event(self, kind: str, text: str, nvals: int) -> int:
        """The id of a log_msg or digest call site: what the Python side needs to turn
        its queued values back into the Python path's log line or digest."""
        self.events.append((kind, text, nvals))
        return len(self.events) - 1

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def error_code(self, name) -> int:
        if isinstance(name, int):
            return name
        if name not in self.errors:
            self.errors.append(name)
        return self.errors.index(name)

    # ------------------------------------------------------------ tables
    def add_tables(self, ctl: A.ControlDecl):
        for t in ctl.locals:
            if not isinstance(t, A.TableDecl):
                continue
            if len(t.keys) > MAX_KEYS:
                raise Unsupported(f"table {t.name} with more than {MAX_KEYS} keys", t.loc)
            kinds = [k.match_kind for k in t.keys]
            for k in t.keys:
                if k.match_kind not in ("exact", "lpm", "ternary", "optional", "range"):
                    raise Unsupported(f"{k.match_kind} match key {k.name} of table {t.name}", t.loc)
                scalar_width(k.expr.type, k.expr.loc)
            kind = "ternary" if ("ternary" in kinds or "optional" in kinds or "range" in kinds) else \
                "lpm" if "lpm" in kinds else "exact"
            table = self.state.tables[t.runtime_name or f"{ctl.name}.{t.name}"]
            names = [a.action.runtime_name or a.action.name for a in t.actions]
            info = TableInfo(len(self.tables), table, names, kind)
            if t.counters:
                info.counter_slot = self._direct_counter(ctl, t, table)
            if t.meters:
                info.meter_slot, info.meter_packets = self._direct_meter(ctl, t, table)
            self.tables[(ctl.name, t.name)] = info
            self._decls[(ctl.name, t.name)] = t

    def _direct_counter(self, ctl, t: A.TableDecl, table) -> int:
        """Two extern slots (packets, bytes) with a cell per entry handle slot: the table's
        entries adopt them as their counters (Table.adopt_counter_cells)."""
        slot = self._ext_slots
        self.externs[(ctl.name, f"{t.name}.{t.counters}")] = \
            ExternInfo(slot, table, "direct_counter", "uint64_t", table.size)
        self._ext_slots += 2
        return slot

    def _direct_meter(self, ctl, t: A.TableDecl, table) -> tuple:
        """One extern slot with an ss_meter per entry handle slot, which the DirectMeter
        adopts (new entries' cells included); (slot, whether it meters packets)."""
        dm = table.direct_meter
        slot = self._ext_slots
        self.externs[(ctl.name, f"{t.name}.{t.meters}")] = \
            ExternInfo(slot, dm, "direct_meter", "ss_meter", table.size)
        self._ext_slots += 1
        return slot, dm.type == "packets"

    def table_decl(self, ctl, target) -> A.TableDecl:
        key = (ctl.name if ctl is not None else "", target.name)
        if key not in self._decls:
            raise Unsupported(f"apply of {target.name} outside its control", target.loc)
        return self._decls[key]

    def table_info(self, ctl, tdecl) -> TableInfo:
        return self.tables[(ctl.name, tdecl.name)]

    def action_index(self, tdecl: A.TableDecl, label, loc) -> int:
        name = label if isinstance(label, str) else getattr(label, "name", str(label))
        for i, ref in enumerate(tdecl.actions):
            a = ref.action
            if name in (a.name, a.runtime_name) or (a.runtime_name or "").endswith("." + name):
                return i
        raise Unsupported(f"switch label {name} that is not an action of table {tdecl.name}", loc)

    def init_tables(self) -> list[str]:
        out = ["static void gen_init_tables(ss_ctx *x)", "{", "    (void)x;"]
        for (ctl, name), info in self.tables.items():
            t = self._decls[(ctl, name)]
            i = info.index
            out.append(f"    x->tables[{i}].kind = {KIND_C[info.kind]};  /* {info.table.name} */")
            out.append(f"    x->tables[{i}].nkeys = {len(t.keys)};")
            for j, k in enumerate(t.keys):
                if k.match_kind == "range":
                    out.append(f"    x->tables[{i}].range_keys |= 1u << {j};")
                if k.match_kind == "lpm":
                    out.append(f"    x->tables[{i}].lpm_key = {j};")
                    out.append(f"    x->tables[{i}].lpm_width = {scalar_width(k.expr.type)};")
        return out + ["}"]

    # ------------------------------------------------------------ actions
    def action_fn(self, ctl, decl: A.ActionDecl, loc=None) -> str:
        ctl_name = ctl.name if isinstance(ctl, A.ControlDecl) else ""
        key = (ctl_name, decl.runtime_name or decl.name)
        if key in self._actions:
            return self._actions[key]
        if any(p.direction for p in decl.params):
            raise Unsupported(f"action {decl.name} with in/out/inout parameters", decl.loc)
        if len(decl.params) > MAX_ARGS:
            raise Unsupported(f"action {decl.name} with more than {MAX_ARGS} parameters", decl.loc)
        fn = self.fresh(f"a_{decl.name}_")
        self._actions[key] = fn
        params = dict(self.ctl_params.get(ctl_name, {}))
        params.update({p.name: f"p_{p.name}" for p in decl.params})
        g = CBody(self, ctl if isinstance(ctl, A.ControlDecl) else None, params,
                  exit_code="return 1;", return_code="return 0;")
        g.ctl_locals = self.ctl_locals.get(ctl_name, {})
        for i, p in enumerate(decl.params):
            scalar_width(p.type, decl.loc)
            g.line(f"uint64_t p_{p.name} = args[{i}];")
        g.block(decl.body)
        sig = f"static int {fn}(ss_ctx *x, ss_pkt *c, const uint64_t *args)"
        self.prototypes.append(sig + ";")
        self.action_defs += [f"{sig}  /* action {key[1]} */", "{", "    (void)x; (void)c; (void)args;"] + \
            g.lines + ["    return 0;", "}", ""]
        return fn

    # ------------------------------------------------------------ the program
    def slot_params(self) -> dict:
        """P4 parameter names of each block -> the C expression of the packet's object."""
        p = self.p
        missing = [s for s in SLOTS if s not in p.main]
        if missing:
            raise Unsupported(f"a V1Switch without {missing[0]}")
        parser = p.parsers[p.main["parser"]]
        hdr_t, meta_t, sm_t = (q.type for q in parser.params[1:4])
        out = {"parser": {q.name: role for q, role in zip(parser.params[1:4], ("c->hdr", "c->meta", "c->sm"))}}
        positions = {"verify_checksum": (hdr_t, meta_t), "compute_checksum": (hdr_t, meta_t),
                     "ingress": (hdr_t, meta_t, sm_t), "egress": (hdr_t, meta_t, sm_t)}
        for slot, want in positions.items():
            ctl = p.controls[p.main[slot]]
            out[slot] = {}
            for q, t, role in zip(ctl.params, want, ("c->hdr", "c->meta", "c->sm")):
                if q.type != t:
                    raise Unsupported(f"control {ctl.name} parameter {q.name} of another type than the parser's", ctl.loc)
                out[slot][q.name] = role
        dep = p.controls[p.main["deparser"]]
        out["deparser"] = {q.name: "c->hdr" for q in dep.params[1:2]}
        return out

    def add_externs(self, ctl):
        """Registers (bit<W>, W <= 64) and indirect counters get C slots; every other
        extern instance is refused."""
        for d in ctl.locals:
            if not isinstance(d, A.InstanceDecl):
                continue
            kind = d.type.name
            name = d.runtime_name or f"{ctl.name}.{d.name}"
            if kind == "register":
                et = d.type.type_args[0] if d.type.type_args else A.BitT(32)
                if not isinstance(et, A.BitT):
                    raise Unsupported(f"register {d.name} of {type_name(et)}", d.loc)
                w = scalar_width(et, d.loc)
                ctype = next(f"uint{n}_t" for n in (8, 16, 32, 64) if w <= n)
                obj, nslots = self.state.registers[name], 1
            elif kind == "counter":
                obj, ctype, nslots = self.state.counters[name], "uint64_t", 2
            elif kind == "meter":
                obj, ctype, nslots = self.state.meters[name], "ss_meter", 1
            elif kind in ("direct_counter", "direct_meter"):
                continue        # their cells belong to the table (add_tables)
            else:
                raise Unsupported(f"extern {kind} {d.name}", d.loc)
            self.externs[(ctl.name, d.name)] = ExternInfo(self._ext_slots, obj, kind, ctype, obj.size)
            self._ext_slots += nslots

    def extern(self, ctl, target) -> ExternInfo:
        key = (ctl.name if ctl is not None else "", getattr(target, "name", ""))
        if key not in self.externs:
            raise Unsupported(f"use of extern {key[1]} outside its control", getattr(target, "loc", None))
        return self.externs[key]

    def generate(self) -> CProgram:
        p = self.p
        params = self.slot_params()
        parser = p.parsers[p.main["parser"]]
        hdr_t, meta_t, sm_t = (q.type for q in parser.params[1:4])
        if not (isinstance(sm_t, A.StructT) and sm_t.name == "standard_metadata_t"):
            raise Unsupported("a parser whose fourth parameter is not standard_metadata_t", parser.loc)
        hdr_c, meta_c, sm_c = (self.types.cname(t, parser.loc) for t in (hdr_t, meta_t, sm_t))
        self.ctl_params, self.ctl_locals = {}, {}
        local_members = []
        for slot in ("verify_checksum", "ingress", "egress", "compute_checksum", "deparser"):
            ctl = p.controls[p.main[slot]]
            self.add_externs(ctl)
            self.ctl_params[ctl.name] = params[slot]
            if slot != "deparser":
                self.add_tables(ctl)
            names = {}
            for d in ctl.locals:
                if isinstance(d, A.VarDecl):
                    names[d.name] = f"c->L_{slot}.v_{d.name}"
                    local_members.append((slot, d))
            self.ctl_locals[ctl.name] = names

        body: list[str] = []
        body += ParserC(self, parser, params["parser"]).gen() + [""]
        for slot, fname in (("verify_checksum", "gen_verify"), ("ingress", "gen_ingress"),
                            ("egress", "gen_egress"), ("compute_checksum", "gen_compute")):
            body += self.control(p.controls[p.main[slot]], slot, params[slot], fname) + [""]
        dep = DeparserC(self, p.controls[p.main["deparser"]], params["deparser"])
        body += dep.gen() + [""]

        pkt = ["typedef struct {", f"    {hdr_c} hdr;", f"    {meta_c} meta;", f"    {sm_c} sm;",
               "    uint64_t _plen;    /* the frame's length at ingress: what counters count */",
               "    const uint8_t *_pay;    /* the unparsed payload */",
               "    uint32_t _paylen;",
               "    /* requests to the traffic manager (clone, resubmit, recirculate, truncate) */",
               "    uint8_t _clone, _resub, _recirc, _trunc;",
               "    uint64_t _dmeter;    /* the color of the last direct meter (direct_meter.read) */",
               "    uint64_t _clone_sess, _clone_fl, _resub_fl, _recirc_fl, _trunc_len;"]
        for slot in ("verify_checksum", "ingress", "egress", "compute_checksum"):
            decls = [d for s, d in local_members if s == slot]
            if decls:
                pkt.append("    struct {")
                pkt += [f"        {self.types.cname(d.type, d.loc)} v_{d.name};" for d in decls]
                pkt.append(f"    }} L_{slot};")
        pkt.append("} ss_pkt;")
        head = ["/* generated by softswitch.native from the P4 program: do not edit */",
                '#include "ssrt.h"', ""] + self.types.lines + pkt + [
                f"#define SS_NTABLES {len(self.tables)}", f"#define SS_NEXT {self._ext_slots}",
                f"#define SS_HDR_MAX {dep.max_bytes}",
                f"#define SS_SCRATCH {self.scratch + 65536 if self.scratch else 1}",
                f"#define SS_MIRROR_SESSIONS {32768 if 'clone' in self.uses else 1}",
                f"#define SS_EVENT_CAP {EVENT_CAP if self.events else 1}",
                f"#define SS_EVENT_VALS {max([1] + [n for _, _, n in self.events])}",
                *(f"#define SS_HAS_{u.upper()} {int(u in self.uses)}"
                  for u in ("clone", "resubmit", "recirc", "truncate", "assert")),
                f"#define SS_ASSERT_BUFS {20 if 'assert' in self.uses else 1}",
                '#include "ss_ctx.h"', ""]
        src = head + self.prototypes + [""] + self.action_defs + body + self.init_tables() + \
            [""] + self.preserve(meta_t) + ["", '#include "ss_switch.c"', ""]
        tables = sorted(self.tables.values(), key=lambda i: i.index)
        externs = sorted(self.externs.values(), key=lambda e: e.slot)
        return CProgram("\n".join(src), tables, externs, "clone" in self.uses, self.events)

    def preserve(self, meta_t) -> list[str]:
        """gen_preserve: the user metadata a clone, resubmit or recirculation keeps, the
        fields of @field_list(fl) as the Python path's Switch._preserve (p4c builds the
        lists alike); any other fl (the forms without a list) keeps nothing."""
        out = ["static void gen_preserve(ss_pkt *dst, const ss_pkt *src, uint64_t fl)", "{",
               "    (void)dst; (void)src;", "    switch (fl) {"]
        for idx, names in sorted(metadata_field_lists(meta_t).items()):
            if idx < 0:
                continue
            out.append(f"    case {idx}ULL:")
            out += [f"        dst->meta.f_{n} = src->meta.f_{n};" for n in names]
            out.append("        break;")
        return out + ["    default: break;", "    }", "}"]

    def control(self, ctl: A.ControlDecl, slot: str, params: dict, fname: str) -> list[str]:
        g = CBody(self, ctl, params, exit_code="goto L_exit;", return_code="goto L_exit;")
        g.ctl_locals = self.ctl_locals[ctl.name]
        if g.ctl_locals:
            g.line(f"memset(&c->L_{slot}, 0, sizeof c->L_{slot});")
        for d in ctl.locals:
            if isinstance(d, A.VarDecl) and d.init is not None:
                if isinstance(d.init, A.ListExpr):
                    raise Unsupported("initialisation from a list expression", d.loc)
                if not is_aggregate(d.type):
                    scalar_width(d.type, d.loc)
                g.line(f"{g.ctl_locals[d.name]} = {g.expr(d.init)};")
        g.block(ctl.body)
        return [f"static void {fname}(ss_ctx *x, ss_pkt *c)  /* control {ctl.name} */", "{",
                "    (void)x; (void)c;"] + g.lines + ["L_exit: __attribute__((unused));", "}"]


def generate(program: A.Program, state) -> CProgram:
    """The C source of `program` (its tables numbered against `state`), or Unsupported."""
    return ProgramGen(program, state).generate()
