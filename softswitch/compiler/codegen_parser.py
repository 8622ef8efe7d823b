"""Parser and deparser to Python source.

The parser becomes one function holding a small state machine:

    def parse(_P, _buf, p_hdr, p_meta, p_standard_metadata):
        _off = 0 ; _n = len(_buf) ; _st = 0
        try:
            while True:
                if _st == 0:      # state start
                    ...extract: length check, Header._extract(_buf, _off), _off += N
                    _st = 1       # transition / select as an if-chain
                elif _st == 1: ...
        except ParserError as e:  # v1model: the packet still goes to ingress,
            sm.parser_error = e.code   # with parser_error set (BMv2 does not drop it)
        return _off               # where the unparsed payload starts

Parser-local variables are plain Python locals. When the states form a loop, a
guard on the number of state visits turns a loop that never extracts into
ParserTimeout instead of a hang.
"""
from __future__ import annotations

import softswitch.frontend.p4ast as A
from softswitch.compiler.codegen_control import FnGen
from softswitch.compiler.codegen_expr import CodegenError, const_wrap
from softswitch.compiler.codegen_types import class_name, is_signed, varbit_field, varbit_layout, width_of

MAX_STATE_VISITS = 1000


class ParserGen(FnGen):
    def __init__(self, unit, parser: A.ParserDecl):
        super().__init__(unit, parser, parser.params, ())
        self.packet = next((p.name for p in parser.params
                            if isinstance(p.type, A.ExternT) and p.type.name == "packet_in"), None)
        self.state_ids = {name: i for i, name in enumerate(parser.states)}

    def err(self, name: str) -> int:
        return self.unit.error_code(name)

    def is_packet(self, e) -> bool:
        return isinstance(e, A.PathExpr) and e.name == self.packet

    # packet_in methods -------------------------------------------------
    def call_stmt(self, e):
        if isinstance(e, A.MethodCall) and self.is_packet(e.target):
            if e.method == "extract":
                return self.extract(e)
            if e.method == "advance":
                return self.advance(e)
            if e.method == "lookahead":
                self.lookahead(e)
                return None
        if isinstance(e, A.Call) and e.func.name == "verify":
            cond, err = e.args
            self.line(f"if not {self.expr(cond)}:")
            self.line(f"    raise ParserError({self.expr(err)})")
            return None
        return super().call_stmt(e)

    def call_expr(self, e):
        if isinstance(e, A.MethodCall) and self.is_packet(e.target) and e.method == "lookahead":
            return self.lookahead(e)
        return super().call_expr(e)

    def need(self, nbytes: str):
        self.line(f"if _off + {nbytes} > _n:")
        self.line(f"    raise ParserError({self.err('PacketTooShort')})")

    def extract(self, e):
        arg = e.args[0]
        t = arg.type
        if not isinstance(t, A.HeaderT):
            raise CodegenError(f"unsupported: extract into {type(t).__name__} (only headers)", e.loc)
        vf = varbit_field(t)
        if vf is None and len(e.args) == 2:
            raise CodegenError(f"extract with a bit count needs a header with a varbit field; {t.name} has "
                               f"none: drop the second argument", e.loc)
        if vf is not None and len(e.args) == 1:
            raise CodegenError(f"header {t.name} has a varbit field ({vf.name}): extract it with its "
                               f"size in bits, extract(hdr, nbits)", e.loc)
        # stack.next (a header) or stack.next.member (a member of a header union)
        nxt = arg if isinstance(arg, A.Member) and arg.name == "next" else \
            arg.expr if isinstance(arg, A.Member) and isinstance(arg.expr, A.Member) and arg.expr.name == "next" \
            else None
        if nxt is not None and isinstance(nxt.expr.type, A.StackT):
            stk = self.tmp()
            self.line(f"{stk} = {self.expr(nxt.expr)}")
            self.line(f"if {stk}.nxt >= {nxt.expr.type.size}:")
            self.line(f"    raise ParserError({self.err('StackOutOfBounds')})")
            nbytes, call = self.extract_size(e, t, vf)
            elem = f"{stk}.h[{stk}.nxt]"
            if nxt is not arg:
                self.union_member_valid(arg, elem)
                elem = f"{elem}.{arg.name}"
            self.line(f"{elem}.{call}")
            self.line(f"{stk}.nxt += 1")
        else:
            nbytes, call = self.extract_size(e, t, vf)
            self.union_member_valid(arg)
            self.line(f"{self.expr(arg)}.{call}")
        self.line(f"_off += {nbytes}")

    def extract_size(self, e, t: A.HeaderT, vf):
        """Emit the checks before an extract; returns (Python expression of the number of
        bytes extracted, the `_extract(...)` call). A varbit header's checks are BMv2's, in
        its order: a bit count that is not a multiple of 8 is ParserInvalidArgument, too few
        bytes left PacketTooShort, a count above the varbit's maximum HeaderTooShort."""
        if vf is None:
            nbytes = str(width_of(t) // 8)
            self.need(nbytes)
            return nbytes, "_extract(_buf, _off)"
        _, _, fixed = varbit_layout(t, vf)
        nb, n = self.tmp(), self.tmp()
        self.line(f"{nb} = {self.expr(e.args[1])}")
        self.line(f"if {nb} & 7:")
        self.line(f"    raise ParserError({self.err('ParserInvalidArgument')})")
        self.line(f"{n} = {fixed // 8} + ({nb} >> 3)")
        self.need(n)
        self.line(f"if {nb} > {vf.type.max_width}:")
        self.line(f"    raise ParserError({self.err('HeaderTooShort')})")
        return n, f"_extract(_buf, _off, {nb})"

    def advance(self, e):
        amount = e.args[0]
        if isinstance(amount, A.Literal):
            bits = int(amount.value)
            if bits % 8:
                raise CodegenError("unsupported: advance by a number of bits that is not a whole number of bytes", e.loc)
            self.need(str(bits // 8))
            self.line(f"_off += {bits // 8}")
            return
        b = self.tmp()
        self.line(f"{b} = ({self.expr(amount)}) >> 3")
        self.need(b)
        self.line(f"_off += {b}")

    def lookahead(self, e):
        t = e.type
        if isinstance(t, A.HeaderT) and varbit_field(t) is not None:
            raise CodegenError(f"lookahead<{t.name}>: the header has a varbit field, and lookahead "
                               f"needs a fixed-size type: look ahead at its fixed part instead", e.loc)
        if isinstance(t, A.HeaderT):
            nbytes = width_of(t) // 8
            self.need(str(nbytes))
            v = self.tmp()
            self.line(f"{v} = {class_name(t)}()")
            self.line(f"{v}._extract(_buf, _off)")
            return v
        w = width_of(t)
        nbytes = (w + 7) // 8
        self.need(str(nbytes))
        v = self.tmp()
        expr = f"int.from_bytes(_buf[_off:_off + {nbytes}], 'big')"
        if nbytes * 8 != w:
            expr = f"({expr} >> {nbytes * 8 - w})"
        if is_signed(t):
            expr = f"_sx({expr}, {w})"
        if isinstance(t, A.BoolT):
            expr = f"bool({expr})"
        self.line(f"{v} = {expr}")
        return v

    # states --------------------------------------------------------------
    def goto(self, state: str):
        if state == "accept":
            self.line("break")
        elif state == "reject":
            # Explicit reject: BMv2 ends parsing here; parser_error keeps its value.
            self.line("raise ParserError(None)")
        else:
            self.line(f"_st = {self.state_ids[state]}")
            self.line("continue")

    def keyset_cond(self, ks, subj, t) -> str:
        if isinstance(ks, A.Default):
            return "True"
        if isinstance(ks, A.Mask):
            m = self.expr(ks.mask)
            return f"({subj} & {m}) == ({self.expr(ks.value)} & {m})"
        if isinstance(ks, A.Range):
            return f"{self.expr(ks.lo)} <= {subj} <= {self.expr(ks.hi)}"
        if isinstance(ks, A.Literal) and isinstance(ks.value, int) and not isinstance(ks.value, bool):
            return f"{subj} == {const_wrap(ks.value, t)}"
        return f"{subj} == {self.expr(ks)}"

    def select(self, st: A.ParserState):
        subs = []
        for x in st.select_exprs:
            v = self.tmp()
            self.line(f"{v} = {self.expr(x)}")
            subs.append((v, x.type))
        first = True
        for case in st.select_cases:
            ks = case.keyset
            if isinstance(ks, A.ListExpr) and len(subs) > 1:
                conds = [self.keyset_cond(k, s, t) for k, (s, t) in zip(ks.elems, subs)]
            elif isinstance(ks, A.ListExpr) and len(ks.elems) == 1:
                conds = [self.keyset_cond(ks.elems[0], *subs[0])]
            elif len(subs) > 1 and isinstance(ks, A.Default):
                conds = ["True"]
            else:
                conds = [self.keyset_cond(ks, *subs[0])]
            conds = [c for c in conds if c != "True"]
            if not conds:   # matches everything: later cases and NoMatch are unreachable
                if not first:
                    self.line("else:")
                    self.ind += 1
                self.goto(case.state)
                if not first:
                    self.ind -= 1
                return
            self.line(("if " if first else "elif ") + " and ".join(conds) + ":")
            first = False
            self.ind += 1
            self.goto(case.state)
            self.ind -= 1
        self.line("else:" if not first else "if True:")
        self.line(f"    raise ParserError({self.err('NoMatch')})")

    def has_loop(self) -> bool:
        """Whether a state can be entered again: only then can parsing go on forever
        and needs the ParserTimeout guard on the number of state visits."""
        states = self.ctl.states
        nxt = {name: ([c.state for c in st.select_cases] if st.select_exprs is not None
                      else [st.next_state or "accept"]) for name, st in states.items()}
        done, path = set(), set()

        def visit(name) -> bool:
            if name in path:
                return True
            if name in done or name not in nxt:
                return False
            path.add(name)
            found = any(visit(n) for n in nxt[name])
            path.discard(name)
            done.add(name)
            return found
        return visit("start")

    def gen(self, fname: str) -> list[str]:
        p = self.ctl
        for d in p.locals:
            if isinstance(d, A.VarDecl):
                self.py_locals.add(d.name)
                self.declare(f"v_{d.name}", d.type, d.init)
        self.line("_off = 0")
        self.line("_n = len(_buf)")
        self.line(f"_st = {self.state_ids['start']}")
        loops = self.has_loop()
        if loops:
            self.line("_visits = 0")
        self.line("try:")
        self.ind += 1
        self.line("while True:")
        self.ind += 1
        if loops:
            self.line("_visits += 1")
            self.line(f"if _visits > {MAX_STATE_VISITS}:")
            self.line(f"    raise ParserError({self.err('ParserTimeout')})")
        first = True
        for name, st in p.states.items():
            if name in ("accept", "reject"):
                continue
            self.line(("if " if first else "elif ") + f"_st == {self.state_ids[name]}:  # state {name}")
            first = False
            self.ind += 1
            for s in st.stmts:
                self.stmt(s)
            if st.select_exprs is not None:
                self.select(st)
            else:
                self.goto(st.next_state or "accept")
            self.ind -= 1
        self.ind -= 2
        self.line("except ParserError as _e:")
        sm = self.unit.sm_param(p)
        self.line("    if _e.code is not None:")
        self.line(f"        {sm}.parser_error = _e.code" if sm else "        pass")
        self.line("return _off")
        sig = ", ".join(["_P", "_buf"] + ["p_" + q.name for q in p.params if q.name != self.packet])
        return [f"def {fname}({sig}):  # parser {p.name}"] + self.header_lines() + self.lines


class DeparserGen(FnGen):
    def __init__(self, unit, ctl: A.ControlDecl):
        super().__init__(unit, ctl, ctl.params, ())
        self.packet = next((p.name for p in ctl.params
                            if isinstance(p.type, A.ExternT) and p.type.name == "packet_out"), None)

    def call_stmt(self, e):
        if isinstance(e, A.MethodCall) and isinstance(e.target, A.PathExpr) and e.target.name == self.packet:
            if e.method != "emit":
                raise CodegenError(f"unsupported: packet_out.{e.method}", e.loc)
            self.emit(self.expr(e.args[0]), e.args[0].type)
            return None
        return super().call_stmt(e)

    def emit(self, code: str, t):
        if isinstance(t, A.HeaderT):
            v = self.tmp()
            self.line(f"{v} = {code}")
            self.line(f"if {v}._v:")
            self.line(f"    _out.append({v}._bytes())")
        elif isinstance(t, A.StackT):
            for i in range(t.size):
                self.emit(f"{code}.h[{i}]", t.elem)
        elif isinstance(t, (A.StructT, A.HeaderUnionT)):
            for f in t.fields:
                self.emit(f"{code}.{f.name}", f.type)
        else:
            raise CodegenError(f"unsupported: emit of {type(t).__name__} (headers, stacks, structs of headers)")

    def gen(self, fname: str) -> list[str]:
        self.line("_out = []")
        self.block(self.ctl.body)
        self.line("return _out")
        sig = ", ".join(["_P"] + ["p_" + q.name for q in self.ctl.params if q.name != self.packet])
        return [f"def {fname}({sig}):  # deparser {self.ctl.name}"] + self.header_lines() + self.lines
