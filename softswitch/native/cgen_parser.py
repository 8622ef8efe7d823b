"""The parser and the deparser to C.

The parser is one function with a label per state and gotos for transitions; it returns
where the unparsed payload starts. As on the Python path (codegen_parser.py): an extract
checks the length first (PacketTooShort), a select without a matching case is NoMatch, a
parser error sets standard_metadata.parser_error and ends parsing with the headers
extracted so far (the packet still goes to ingress), an explicit `reject` leaves
parser_error alone, and a parser whose states can loop gets ParserTimeout after
MAX_STATE_VISITS states.

The deparser writes each valid emitted header into the output buffer, field by field, and
returns the number of bytes written (the payload is appended by ss_switch.c).
"""
from __future__ import annotations

import softswitch.frontend.p4ast as A
from softswitch.compiler.codegen_parser import MAX_STATE_VISITS
from softswitch.frontend.p4types import wrap as const_wrap
from softswitch.native.cgen_body import CBody
from softswitch.native.cgen_types import Unsupported, header_bits, scalar_width


class ParserC(CBody):
    def __init__(self, prog, parser: A.ParserDecl, params: dict):
        super().__init__(prog, parser, params, exit_code="", return_code="")
        self.packet = next((p.name for p in parser.params
                            if isinstance(p.type, A.ExternT) and p.type.name == "packet_in"), None)

    def error(self, name) -> str:
        return f"{{ _err = {self.prog.error_code(name)}; goto P_error; }}"

    def s_Exit(self, s):
        raise Unsupported("exit in a parser", s.loc)

    def s_Return(self, s):
        raise Unsupported("return in a parser", s.loc)

    def method_stmt(self, e):
        if isinstance(e.target, A.PathExpr) and e.target.name == self.packet:
            if e.method == "extract" and len(e.args) == 1:
                return self.extract(e, e.args[0])
            raise Unsupported(f"packet_in.{e.method}" + ("" if e.method != "extract" else " with a size"), e.loc)
        return super().method_stmt(e)

    def f_verify(self, e, cond, err):
        self.line(f"if (!({self.expr(cond)})) {{ _err = {self.expr(err)}; goto P_error; }}")

    def extract(self, e, arg):
        t = arg.type
        if not isinstance(t, A.HeaderT):
            raise Unsupported(f"extract into a {type(t).__name__}", e.loc)
        fields = header_bits(t, e.loc)
        nbytes = sum(w for _, _, w in fields) // 8
        target = self.expr(arg)
        self.line(f"if (_off + {nbytes} > _n) {self.error('PacketTooShort')}")
        for name, off, w in fields:
            self.line(f"{target}.f_{name} = ss_get(_buf + _off, {off}, {w});")
        self.line(f"{target}._v = 1;")
        self.line(f"_off += {nbytes};")

    def goto(self, state: str) -> str:
        if state == "accept":
            return "goto P_accept;"
        if state == "reject":
            return "goto P_reject;"
        return f"goto S_{state};"

    def keyset(self, ks, subj: str, t) -> str | None:
        """C condition of one select case element; None when it matches everything."""
        if isinstance(ks, A.Default):
            return None
        if isinstance(ks, A.Mask):
            m = self.expr(ks.mask)
            return f"({subj} & {m}) == ({self.expr(ks.value)} & {m})"
        if isinstance(ks, A.Range):
            return f"({self.expr(ks.lo)} <= {subj} && {subj} <= {self.expr(ks.hi)})"
        if isinstance(ks, A.Literal) and isinstance(ks.value, int) and not isinstance(ks.value, bool):
            return f"{subj} == {const_wrap(ks.value, t) & ((1 << 64) - 1):#x}ULL"
        return f"{subj} == {self.expr(ks)}"

    def select(self, st: A.ParserState):
        subs = []
        for x in st.select_exprs:
            scalar_width(x.type, x.loc)
            v = self.tmp("_s")
            self.line(f"uint64_t {v} = {self.expr(x)};")
            subs.append((v, x.type))
        for case in st.select_cases:
            ks = case.keyset
            if isinstance(ks, A.ListExpr) and len(subs) > 1:
                conds = [self.keyset(k, s, t) for k, (s, t) in zip(ks.elems, subs)]
            elif isinstance(ks, A.ListExpr) and len(ks.elems) == 1:
                conds = [self.keyset(ks.elems[0], *subs[0])]
            elif len(subs) > 1 and isinstance(ks, A.Default):
                conds = [None]
            else:
                conds = [self.keyset(ks, *subs[0])]
            conds = [c for c in conds if c is not None]
            if not conds:        # matches everything: later cases and NoMatch are unreachable
                self.line(self.goto(case.state))
                return
            self.line(f"if ({' && '.join(conds)}) {self.goto(case.state)}")
        self.line(self.error("NoMatch"))

    def has_loop(self) -> bool:
        states = self.ctl.states
        nxt = {n: ([c.state for c in st.select_cases] if st.select_exprs is not None
                   else [st.next_state or "accept"]) for n, st in states.items()}
        done, path = set(), set()

        def visit(n) -> bool:
            if n in path:
                return True
            if n in done or n not in nxt:
                return False
            path.add(n)
            found = any(visit(m) for m in nxt[n])
            path.discard(n)
            done.add(n)
            return found
        return visit("start")

    def gen(self) -> list[str]:
        p = self.ctl
        for d in p.locals:
            if isinstance(d, A.VarDecl):
                self.s_VarDecl(d)
            else:
                raise Unsupported(f"parser-local {type(d).__name__} {getattr(d, 'name', '')}", getattr(d, "loc", None))
        loops = self.has_loop()
        self.line("uint32_t _off = 0;")
        self.line("uint64_t _err = 0;")
        if loops:
            self.line("int _visits = 0;")
        self.line("goto S_start;")
        for name, st in p.states.items():
            if name in ("accept", "reject"):
                continue
            self.lines.append(f"S_{name}: {{")
            if loops:
                self.line(f"if (++_visits > {MAX_STATE_VISITS}) {self.error('ParserTimeout')}")
            for s in st.stmts:
                self.stmt(s)
            if st.select_exprs is not None:
                self.select(st)
            else:
                self.line(self.goto(st.next_state or "accept"))
            self.lines.append("}")
        self.lines.append("P_error:")
        self.line("c->sm.f_parser_error = _err;")
        self.line("return _off;")
        self.lines.append("P_reject: __attribute__((unused));")
        self.lines.append("P_accept:")
        self.line("return _off;")
        return ["static uint32_t gen_parse(ss_ctx *x, ss_pkt *c, const uint8_t *_buf, uint32_t _n)",
                "{", "    (void)x;"] + self.lines + ["}"]


class DeparserC(CBody):
    def __init__(self, prog, ctl: A.ControlDecl, params: dict):
        super().__init__(prog, ctl, params, exit_code="", return_code="")
        self.packet = next((p.name for p in ctl.params
                            if isinstance(p.type, A.ExternT) and p.type.name == "packet_out"), None)
        self.max_bytes = 0

    def s_Exit(self, s):
        raise Unsupported("exit in a deparser", s.loc)

    def s_Return(self, s):
        raise Unsupported("return in a deparser", s.loc)

    def method_stmt(self, e):
        if isinstance(e.target, A.PathExpr) and e.target.name == self.packet:
            if e.method != "emit":
                raise Unsupported(f"packet_out.{e.method}", e.loc)
            return self.emit(self.expr(e.args[0]), e.args[0].type, e.loc)
        return super().method_stmt(e)

    def emit(self, code: str, t, loc):
        if isinstance(t, A.HeaderT):
            fields = header_bits(t, loc)
            nbytes = sum(w for _, _, w in fields) // 8
            self.max_bytes += nbytes
            self.line(f"if ({code}._v) {{")
            self.ind += 1
            self.line(f"memset(_out + _o, 0, {nbytes});")
            for name, off, w in fields:
                self.line(f"ss_put(_out + _o, {off}, {w}, {code}.f_{name});")
            self.line(f"_o += {nbytes};")
            self.ind -= 1
            self.line("}")
        elif isinstance(t, A.StructT):
            for f in t.fields:
                self.emit(f"{code}.f_{f.name}", f.type, loc)
        else:
            raise Unsupported(f"emit of a {type(t).__name__}", loc)

    def gen(self) -> list[str]:
        self.block(self.ctl.body)
        return ["static uint32_t gen_deparse(ss_ctx *x, ss_pkt *c, uint8_t *_out)", "{",
                "    uint32_t _o = 0;", "    (void)x; (void)c;"] + self.lines + ["    return _o;", "}"]
