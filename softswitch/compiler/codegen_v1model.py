"""v1model externs as BMv2 simple_switch implements them: the code generator hooks that
turn extern calls into Python (the run-time helpers they call: softswitch.runtime.v1model).

Decisions where BMv2 is not a model to copy:
- `assert`/`assume` failing: BMv2 aborts the whole switch process. Here the
  packet is dropped, counted in stats['assert_failures'] and the P4 source
  location is logged; the switch keeps running.
- `hash(..., max)` with max == 0: BMv2 divides by zero; here the result is
  base + hash (no modulo), wrapped to the result width.
- field lists of clone/resubmit/recirculate: the user-metadata fields annotated
  `@field_list(i)` keep their values, as p4c builds the lists; the rest is reset.
"""
from __future__ import annotations

import softswitch.frontend.p4ast as A
from softswitch.compiler.codegen_expr import CodegenError, wrap
from softswitch.compiler.codegen_types import width_of, is_signed
from softswitch.runtime.v1model import HASHES


# ---------------------------------------------------------------- code generation
def _enum_name(e) -> str:
    if isinstance(e, A.Literal):
        return str(e.value)
    if isinstance(e, A.Member):
        return e.name
    raise CodegenError("expected an enum constant (e.g. HashAlgorithm.crc32)", getattr(e, "loc", None))


def flatten(e):
    """Scalar leaf expressions of a data list / struct / header, in order."""
    if isinstance(e, A.ListExpr):
        out = []
        for x in e.elems:
            out += flatten(x)
        return out
    t = e.type
    if isinstance(t, (A.HeaderT, A.StructT)):
        out = []
        for f in t.fields:
            out += flatten(A.Member(e, f.name, type=f.type, loc=e.loc))
        return out
    return [e]


def no_varbit(leaves, what: str):
    """The leaves, refused if one is a varbit: digests and log lines carry plain ints here,
    and a varbit's value means nothing without its current width."""
    for x in leaves:
        if isinstance(x.type, A.VarbitT):
            raise CodegenError(f"unsupported: a varbit value in {what}: pass the header's fixed-size "
                               f"fields instead", x.loc)
    return leaves


def concat_code(g, e):
    """(python expr of all leaves' bits concatenated MSB-first, total width). The width is
    an int, or a Python expression when a leaf is a varbit: a varbit counts with its
    current width (BMv2 computes checksums and hashes over what the field holds now)."""
    leaves = flatten(e)
    terms, total, dyn = [], 0, []
    for x in reversed(leaves):
        t = x.type
        if isinstance(t, A.InfIntT):
            raise CodegenError("a data list element needs a width: cast the constant, e.g. (bit<8>)1", x.loc)
        shift = str(total) if not dyn else "(" + " + ".join([str(total)] * bool(total) + dyn) + ")"
        if isinstance(t, A.VarbitT):
            vb = g.tmp()
            g.line(f"{vb} = {g.expr(x)}")
            terms.append(f"{vb}[1]" if shift == "0" else f"({vb}[1] << {shift})")
            dyn.append(f"{vb}[0]")
            continue
        w = width_of(t)
        v = g.expr(x)
        if isinstance(t, A.BoolT):
            v = f"(1 if {v} else 0)"
        elif is_signed(t):
            v = f"({v} & {hex((1 << w) - 1)})"
        terms.append(v if shift == "0" else f"({v} << {shift})")
        total += w
    if not terms:
        return "0", 0
    width = total if not dyn else "(" + " + ".join([str(total)] * bool(total) + dyn) + ")"
    return "(" + " | ".join(reversed(terms)) + ")", width


class V1Gen:
    """Extern calls of v1model programs; `g` is the FnGen emitting the current function."""

    def __init__(self, unit):
        self.unit = unit

    # extern object methods ------------------------------------------------
    def method_stmt(self, g, e: A.MethodCall):
        tt = e.target.type
        ext = tt.name if isinstance(tt, A.ExternT) else None
        obj = g.expr(e.target)
        inst = self.unit.instance_obj(g.ctl, e.target)
        if ext == "register":
            vals = g.reg_values(obj)
            # Out-of-range index (BMv2): a read gives 0, a write does nothing. Indexes
            # are unsigned, so Python's IndexError is exactly "out of range"; a try
            # costs nothing when it does not fire, less than comparing every time.
            if e.method in ("read", "write"):
                ix = e.args[1] if e.method == "read" else e.args[0]
                if is_signed(ix.type):
                    raise CodegenError("unsupported: a signed register index; use bit<32>", e.loc)
            if e.method == "read":
                idx = g.expr(e.args[1])
                if isinstance(e.args[1], A.Literal):
                    g.assign(e.args[0], f"{vals}[{idx}]" if int(e.args[1].value) < inst.size else "0")
                    return
                g.line("try:")
                g.ind += 1
                g.assign(e.args[0], f"{vals}[{idx}]")
                g.ind -= 1
                g.line("except IndexError:")
                g.ind += 1
                g.assign(e.args[0], "0")
                g.ind -= 1
                return
            if e.method == "write":
                idx = g.expr(e.args[0])
                val = g.expr(e.args[1])
                if isinstance(e.args[0], A.Literal):
                    if int(e.args[0].value) < inst.size:
                        g.line(f"{vals}[{idx}] = {val}")
                else:
                    g.line("try:")
                    g.line(f"    {vals}[{idx}] = {val}")
                    g.line("except IndexError:")
                    g.line("    pass")
                return
        # counter and meter: an out-of-range index does nothing (meter color 0); a
        # constant index is checked here, once, not per packet
        if ext == "counter" and e.method == "count":
            idx = g.expr(e.args[0])
            bump = f"{obj}.packets[{idx}] += 1; {obj}.bytes[{idx}] += _P.plen"
            if not isinstance(e.args[0], A.Literal):
                g.line(f"if {idx} < {inst.size}: {bump}")
            elif int(e.args[0].value) < inst.size:
                g.line(bump)
            return
        if ext == "direct_counter" and e.method == "count":
            return  # counted by the table apply on a hit, as BMv2 does
        if ext == "meter" and e.method == "execute_meter":
            idx = g.expr(e.args[0])
            run = f"{obj}.execute({idx}, _P.plen, _P.now)"
            if not isinstance(e.args[0], A.Literal):
                g.assign(e.args[1], f"({run} if {idx} < {inst.size} else 0)")
            else:
                g.assign(e.args[1], run if int(e.args[0].value) < inst.size else "0")
            return
        if ext == "direct_meter" and e.method == "read":
            g.assign(e.args[0], "_P.dmeter")
            return
        raise CodegenError(f"unsupported: {ext or type(tt).__name__}.{e.method}", e.loc)

    def method_expr(self, g, e):
        raise CodegenError(f"unsupported: {e.method}() used as a value", e.loc)

    # extern functions -----------------------------------------------------
    def function_stmt(self, g, e: A.Call):
        name = e.func.name
        m = getattr(self, "f_" + name, None)
        if m is None:
            raise CodegenError(f"unsupported: extern function {name}", e.loc)
        m(g, e, *e.args)

    def f_mark_to_drop(self, g, e, sm=None):
        s = g.expr(sm) if sm is not None else "_P.sm"
        g.line(f"{s}.egress_spec = 511; {s}.mcast_grp = 0")

    def f_clone(self, g, e, ctype, session):
        g.line(f"_P.clone_type = {_enum_name(ctype)!r}; _P.clone_sess = {g.expr(session)}; _P.clone_fl = None")

    def f_clone_preserving_field_list(self, g, e, ctype, session, index):
        g.line(f"_P.clone_type = {_enum_name(ctype)!r}; _P.clone_sess = {g.expr(session)}; "
               f"_P.clone_fl = {g.expr(index)}")

    def f_resubmit_preserving_field_list(self, g, e, index):
        g.line(f"_P.resubmit_fl = {g.expr(index)}")

    def f_recirculate_preserving_field_list(self, g, e, index):
        g.line(f"_P.recirc_fl = {g.expr(index)}")

    # Old-style v1model names without field lists: nothing preserved.
    def f_resubmit(self, g, e, *args):
        g.line("_P.resubmit_fl = -1")

    def f_recirculate(self, g, e, *args):
        g.line("_P.recirc_fl = -1")

    def f_truncate(self, g, e, length):
        g.line(f"_P.truncate = {g.expr(length)}")

    def f_digest(self, g, e, receiver, data):
        leaves = no_varbit(flatten(data), "digest")
        tname = getattr(data.type, "name", "digest")
        vals = "(" + "".join(g.expr(x) + ", " for x in leaves) + ")"
        g.line(f"_P.digests.append(({tname!r}, {vals}))")

    def f_random(self, g, e, result, lo, hi):
        g.assign(result, f"_p4_random({g.expr(lo)}, {g.expr(hi)})")

    def f_log_msg(self, g, e, msg, data=None):
        vals = "()" if data is None else \
            "(" + "".join(g.expr(x) + ", " for x in no_varbit(flatten(data), "log_msg")) + ")"
        g.line(f"_P.logs.append(_format_log({g.expr(msg)}, {vals}))")

    def _assert(self, g, e, cond):
        g.line(f"if not {g.expr(cond)}: raise AssertFailed({str(e.loc)!r})")

    f_assert = _assert
    f_assume = _assert

    def f_hash(self, g, e, result, algo, base, data, maxv):
        alg = _enum_name(algo)
        if alg not in HASHES:
            raise CodegenError(f"unsupported: hash algorithm {alg}", e.loc)
        x, w = concat_code(g, data)
        h = g.tmp()
        g.line(f"{h} = _HASH[{alg!r}](_data_bytes({x}, {w}))")
        m = g.tmp()
        g.line(f"{m} = {g.expr(maxv)}")
        g.assign(result, wrap(f"{g.expr(base)} + ({h} % {m} if {m} else {h})", result.type))

    def _checksum_code(self, g, data, algo, with_payload):
        alg = _enum_name(algo)
        if alg not in HASHES:
            raise CodegenError(f"unsupported: checksum algorithm {alg}", data.loc)
        x, w = concat_code(g, data)
        if with_payload:
            return f"_HASH[{alg!r}](_data_bytes({x}, {w}) + bytes(_P.payload))"
        if alg == "csum16" and isinstance(w, int) and w % 8 == 0:
            return f"_csum16_int({x}, {w})"
        return f"_HASH[{alg!r}](_data_bytes({x}, {w}))"

    def _verify(self, g, e, cond, data, cksum, algo, with_payload=False):
        c = self._checksum_code(g, data, algo, with_payload)
        w = width_of(cksum.type)
        sm = "_P.sm"
        g.line(f"if {g.expr(cond)} and ({c} & {hex((1 << w) - 1)}) != {g.expr(cksum)}:")
        g.line(f"    {sm}.checksum_error = 1")

    def _update(self, g, e, cond, data, cksum, algo, with_payload=False):
        c = self._checksum_code(g, data, algo, with_payload)
        w = width_of(cksum.type)
        g.line(f"if {g.expr(cond)}:")
        g.ind += 1
        g.assign(cksum, f"({c} & {hex((1 << w) - 1)})")
        g.ind -= 1

    def f_verify_checksum(self, g, e, *a):
        self._verify(g, e, *a)

    def f_update_checksum(self, g, e, *a):
        self._update(g, e, *a)

    def f_verify_checksum_with_payload(self, g, e, *a):
        self._verify(g, e, *a, with_payload=True)

    def f_update_checksum_with_payload(self, g, e, *a):
        self._update(g, e, *a, with_payload=True)
