"""varbit fields: the pair p4c_stf/varbit.{p4,stf} (extract with a bit count and BMv2's three
errors, emit at the current width, equality of varbits, headers and stacks, assignment, a stack
of varbit headers, crc16 and csum16 over a varbit) on the softswitch and on BMv2; where the two
differ (equality at different widths), each side's answer; the generated header methods against
a bit-level model; and the programs the compiler refuses, each with what to do."""
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from softswitch import frontend
from softswitch.compiler.codegen_types import RUNTIME_NAMES, gen_header_class
from softswitch.frontend import p4ast as A
from softswitch.frontend.errors import P4Error
from softswitch.stf.runner import run_test
from softswitch.stf.target_bmv2 import Bmv2Target, missing_tools
from softswitch.stf.target_softswitch import SoftswitchTarget
from softswitch.target.switch import Switch

PAIRS = Path(__file__).parent / "p4c_stf"
NEEDS_BMV2 = pytest.mark.skipif(bool(missing_tools()), reason="BMv2 (simple_switch, p4c-bm2-ss) not on PATH")

# a (hi 1, v 8 bits AB, lo 2) and b (hi 1, v 16 bits 00AB, lo 2): the same value at two widths.
# After op 2's swap each is emitted at the other's width.
DIFFERENT_WIDTHS = "packet 0 02 08 10 00 1ab2 100ab2 55\nexpect 1 02 08 10 {res} 100ab2 1ab2 55 $\n"


def test_pair_passes_on_the_softswitch():
    out = run_test(PAIRS / "varbit.stf", PAIRS / "varbit.p4", SoftswitchTarget())
    assert (out.status, out.cause) == ("pass", ""), out.detail


@pytest.mark.bmv2
@NEEDS_BMV2
def test_pair_passes_on_bmv2():
    out = run_test(PAIRS / "varbit.stf", PAIRS / "varbit.p4", Bmv2Target(settle=0.5))
    assert (out.status, out.cause) == ("pass", ""), out.detail


def test_a_wrong_expectation_fails(tmp_path):
    """The pair can fail: one byte of one emitted varbit changed."""
    stf = (PAIRS / "varbit.stf").read_text().replace("expect 1 02 08 10 40 1cdef2 3ab4", "expect 1 02 08 10 40 1cdef2 3ab5")
    assert "3ab5" in stf
    (tmp_path / "w.stf").write_text(stf)
    out = run_test(tmp_path / "w.stf", PAIRS / "varbit.p4", SoftswitchTarget())
    assert out.status == "fail" and "expected B5, got B4" in out.detail, out.detail


def test_varbits_of_different_widths_differ_on_the_softswitch_as_p4_16_says(tmp_path):
    """P4-16: equal varbits have the same dynamic width and the same bits. res 40: neither
    a.v == b.v (0x10) nor a == b (0x20); only the two invalid stack elements are equal."""
    (tmp_path / "w.stf").write_text(DIFFERENT_WIDTHS.format(res="40"))
    out = run_test(tmp_path / "w.stf", PAIRS / "varbit.p4", SoftswitchTarget())
    assert (out.status, out.cause) == ("pass", ""), out.detail


@pytest.mark.bmv2
@NEEDS_BMV2
def test_bmv2_compares_varbit_values_only(tmp_path):
    """BMv2 1.15 compares the values and not the widths (docs/softswitch.md, Differences): if
    this fails, BMv2 changed and the difference can go."""
    (tmp_path / "w.stf").write_text(DIFFERENT_WIDTHS.format(res="70"))
    out = run_test(tmp_path / "w.stf", PAIRS / "varbit.p4", Bmv2Target(settle=0.5))
    assert (out.status, out.cause) == ("pass", ""), out.detail


# ------------------------------------------------------------------ generated header methods
H = A.HeaderT("h", (A.FieldDef("hi", A.BitT(4)), A.FieldDef("s", A.IntT(4)), A.FieldDef("v", A.VarbitT(64)),
                    A.FieldDef("f", A.BoolT()), A.FieldDef("lo", A.BitT(7))))


def header_class(h):
    ns = dict(RUNTIME_NAMES)
    exec("\n".join(gen_header_class(h)), ns)
    return ns["H_" + h.name]


@settings(max_examples=200, deadline=None)
@given(nbytes=st.integers(0, 8), data=st.binary(min_size=10, max_size=10), pre=st.binary(max_size=3))
def test_extract_and_emit_match_a_bit_model_at_any_width(nbytes, data, pre):
    """hi(4) s(4, signed) v(8*nbytes) f(1, bool) lo(7), read from a bit string at offset
    len(pre): every field as the bit model says, and _bytes() gives the same bytes back."""
    cls = header_class(H)
    total = 2 + nbytes
    buf = pre + data
    bits = "".join(f"{b:08b}" for b in data[:total])
    h = cls()
    assert h.v == (0, 0) and not h._v
    h._extract(buf, len(pre), 8 * nbytes)
    s = int(bits[4:8], 2)
    assert h._v and h.hi == int(bits[:4], 2) and h.s == (s - 16 if s >= 8 else s)
    assert h.v == (8 * nbytes, int(bits[8:8 + 8 * nbytes] or "0", 2))
    assert h.f is (bits[8 + 8 * nbytes] == "1") and h.lo == int(bits[9 + 8 * nbytes:], 2)
    assert h._bytes() == data[:total]


def test_emit_uses_the_varbit_width_it_was_given_last():
    cls = header_class(H)
    h = cls()
    h.hi, h.s, h.f, h.lo = 0xa, -1, True, 0x7f
    assert h._bytes() == bytes([0xaf, 0xff])              # an empty varbit adds nothing
    h.v = (24, 0x010203)
    assert h._bytes() == bytes([0xaf, 0x01, 0x02, 0x03, 0xff])
    other = cls()
    other._set(h)
    assert other._eq(h) and not h._v                      # both invalid: equal
    h._v = other._v = True
    assert other._eq(h)
    other.v = (32, 0x010203)                              # the same value, one byte wider
    assert not other._eq(h)


def test_fixed_size_headers_keep_the_struct_based_methods():
    """The per-packet path of headers without a varbit is unchanged: one struct per header."""
    src = "\n".join(gen_header_class(A.HeaderT("e", (A.FieldDef("a", A.BitT(16)),))))
    assert "_nbytes = 2" in src and "def _extract(self, buf, off):" in src and "unpack_from" in src


# ------------------------------------------------------------------ refused programs
BASE = """
#include <core.p4>
#include <v1model.p4>
header l_t { bit<8> len; }
header v_t { bit<8> a; varbit<32> v; }
HEADERS
struct headers { l_t l; v_t v; w_t w; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.l); PARSE transition accept; }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { BODY } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control VC(inout headers hdr, inout meta_t m) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def program(parse="", body="", headers="header w_t { varbit<16> v; }"):
    return BASE.replace("HEADERS", headers).replace("PARSE", parse).replace("BODY", body)


def test_a_program_with_varbits_loads():
    sw = Switch(frontend.load_string(program("pkt.extract(hdr.v, (bit<32>)hdr.l.len);",
                                             "sm.egress_spec = 2; varbit<32> t = hdr.v.v; hdr.v.v = t;"), "ok.p4"))
    assert sw.process(1, bytes([16, 7, 0xab, 0xcd, 0xee])) == [(2, bytes([16, 7, 0xab, 0xcd, 0xee]))]


@pytest.mark.parametrize("parse,body,headers,message", [
    ("pkt.extract(hdr.v);", "", None,
     r"t.p4:10:\d+: header v_t has a varbit field \(v\): extract it with its size in bits, extract\(hdr, nbits\)"),
    ("pkt.extract(hdr.l, 8);", "", None,
     r"t.p4:10:\d+: extract with a bit count needs a header with a varbit field; l_t has none: drop the second argument"),
    ("v_t x = pkt.lookahead<v_t>();", "", None,
     r"t.p4:10:\d+: lookahead<v_t>: the header has a varbit field, and lookahead needs a fixed-size type"),
    ("", "", "header w_t { varbit<16> v; varbit<8> u; }",
     r"header w_t has 2 varbit fields \(v, u\): BMv2 and the softswitch allow one per header; split it"),
    ("", "", "header w_t { bit<4> x; varbit<16> v; bit<8> y; }",
     r"header w_t: its fixed fields \(12 bits\) and its varbit's maximum \(16 bits\) must each be a whole "
     r"number of bytes, as BMv2 needs"),
    ("", "", "header w_t { bit<4> x; varbit<12> v; }", r"header w_t: its fixed fields \(4 bits\)"),
    ("", "digest(1, {hdr.v.v});", None, r"t.p4:12:\d+: unsupported: a varbit value in digest"),
    ("", 'log_msg("{}", {hdr.v.v});', None, r"t.p4:12:\d+: unsupported: a varbit value in log_msg"),
    ("", "if (hdr.v.v == hdr.w.v) { exit; }", None,
     r"t.p4:12:\d+: operands of '==' have different types: varbit<32> and varbit<16> \(varbits compare "
     r"only with varbits of the same varbit<N> type\)"),
    ("", "hdr.v.v = 5;", None, r"t.p4:12:\d+: type mismatch in assignment: expected varbit<32>, got int"),
])
def test_refused_with_what_to_do(parse, body, headers, message):
    src = program(parse, body) if headers is None else program(parse, body, headers)
    with pytest.raises(P4Error, match=message):
        Switch(frontend.load_string(src, "t.p4"))
