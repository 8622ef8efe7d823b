"""Compiler behaviour from P4 source: copy-in/copy-out, lazy && / ?: around a table
apply, struct/header assignment copies, out parameters, invalid headers, errors
for constructs not supported (file:line:col + 'unsupported:'), and the
`python3 -m softswitch.compiler` listing. Fast, no root."""
import subprocess
import sys

import pytest

from softswitch import frontend
from softswitch.frontend.errors import P4Error
from softswitch.target.switch import Switch

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct metadata { }
struct headers { h_t h; h_t h2; }
parser P(packet_in pk, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata m) { apply { } }
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata m) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.h2); } }
"""
MAIN = "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"


def build(ingress: str, name="t.p4") -> Switch:
    return Switch(frontend.load_string(PRELUDE + ingress + MAIN, name))


def run(sw, a, b=0, c=0, d=0):
    out = sw.process(1, bytes([a, b, c, d]))
    return out[0][1] if out else None


def test_copy_in_copy_out_reads_in_arguments_before_the_body_writes():
    sw = build("""
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    action f(inout bit<8> x, in bit<8> y) { x = 1; x = x + y; }
    apply { f(hdr.h.a, hdr.h.a); sm.egress_spec = 1; }
}""")
    assert run(sw, 5)[0] == 6      # y was copied in as 5 before x = 1


def test_out_parameter_starts_at_zero_and_is_copied_out():
    sw = build("""
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    action g(out bit<8> o) { o = o + 7; }
    apply { g(hdr.h.b); sm.egress_spec = 1; }
}""")
    assert run(sw, 1, 99)[1] == 7  # BMv2 gives an uninitialized out parameter 0


def test_short_circuit_and_skips_the_table_apply():
    sw = build("""
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) dc;
    action hit_it() { hdr.h.c = 0xAA; }
    table t { key = { hdr.h.b: exact; } actions = { hit_it; NoAction; } counters = dc; }
    apply {
        if (hdr.h.a == 1 && t.apply().hit) { hdr.h.d = 1; }
        hdr.h.b = (hdr.h.a == 2) ? (t.apply().hit ? 8w3 : 8w4) : 8w5;
        sm.egress_spec = 1;
    }
}""")
    from softswitch.control.commands import RuntimeAPI
    assert RuntimeAPI(sw.state).execute("table_add t hit_it 9 =>").endswith("Entry has been added with handle 0")
    entry = sw.state.table("t").entries()[0]
    assert run(sw, 0, 9) == bytes([0, 5, 0, 0])        # neither apply ran
    assert entry.packets == 0
    assert run(sw, 1, 9) == bytes([1, 5, 0xAA, 1])     # && applied t once
    assert entry.packets == 1
    assert run(sw, 2, 9) == bytes([2, 3, 0xAA, 0])     # ?: applied t in the taken branch
    assert entry.packets == 2


def test_header_assignment_copies_validity_and_values():
    sw = build("""
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply {
        hdr.h2 = hdr.h;      // a copy: later writes to h do not reach h2
        hdr.h.a = 0x11;
        hdr.h2.b = hdr.h2.b + 1;
        sm.egress_spec = 1;
    }
}""")
    assert run(sw, 1, 2, 3, 4) == bytes([0x11, 2, 3, 4, 1, 3, 3, 4])


def test_writes_to_an_invalid_header_are_not_emitted_and_reads_give_zero():
    sw = build("""
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply {
        hdr.h.c = hdr.h2.a + 1;   // h2 was never valid: reads 0
        hdr.h2.d = 9;              // allowed, but h2 stays invalid
        sm.egress_spec = 1;
    }
}""")
    assert run(sw, 1, 2, 3, 4) == bytes([1, 2, 1, 4])


def test_unsupported_construct_reports_file_line_col():
    src = PRELUDE.replace("header h_t { bit<8> a;", "header h_t { bit<4> odd; bit<8> a;") + """
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
""" + MAIN
    with pytest.raises(P4Error) as ei:
        Switch(frontend.load_string(src, "odd.p4"))
    assert "not a whole number of bytes" in ei.value.message
    assert "pad it" in ei.value.message


def test_compiler_gap_is_reported_with_a_location():
    src = PRELUDE.replace("state start { pk.extract(hdr.h);", "state start { pk.advance(4); pk.extract(hdr.h);") + """
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
""" + MAIN
    with pytest.raises(P4Error) as ei:
        Switch(frontend.load_string(src, "adv.p4"))
    e = ei.value
    assert e.message.startswith("unsupported: advance by a number of bits")
    assert e.loc.file == "adv.p4" and e.loc.line > 0
    assert e.format().splitlines()[0].startswith(f"adv.p4:{e.loc.line}:")


def test_compiler_cli_prints_the_generated_python(tmp_path):
    p = tmp_path / "prog.p4"
    p.write_text(PRELUDE + """
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { sm.egress_spec = 2; } }
""" + MAIN)
    r = subprocess.run([sys.executable, "-m", "softswitch.compiler", str(p)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "def c_ingress(" in r.stdout and "p_sm.egress_spec = 2" in r.stdout
    compile(r.stdout, "generated", "exec")   # the listing is valid Python


def test_direct_meter_colors_the_hit_entry_and_reads_in_the_action():
    sw = build("""
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm;
    action mark() { dm.read(hdr.h.c); }
    table t { key = { hdr.h.a: exact; } actions = { mark; NoAction; } meters = dm; }
    apply { t.apply(); sm.egress_spec = 1; }
}""")
    from softswitch.control.commands import RuntimeAPI
    api = RuntimeAPI(sw.state)
    assert "handle 0" in api.execute("table_add t mark 7 =>")
    reply = api.execute("meter_set_rates dm 0 0.000001:1 0.000002:2")
    assert not reply.startswith("Error"), reply
    colors = [sw.process(1, bytes([7, 0, 0, 0]), now_us=10 + i)[0][1][2] for i in range(3)]
    assert colors[0] == 0 and colors[1] != 0      # green, then over the 1-packet committed burst
    assert sw.process(1, bytes([8, 0, 0, 0]), now_us=20)[0][1][2] == 0   # miss: no meter, no color


def test_lookahead_of_a_header_type_does_not_consume():
    src = PRELUDE.replace("state start { pk.extract(hdr.h); transition accept; }",
                          "state start { h_t peek = pk.lookahead<h_t>(); hdr.h2 = peek; pk.extract(hdr.h); "
                          "transition accept; }") + """
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
""" + MAIN
    sw = Switch(frontend.load_string(src, "look.p4"))
    assert sw.process(1, bytes([1, 2, 3, 4]))[0][1] == bytes([1, 2, 3, 4, 1, 2, 3, 4])
    assert sw.process(1, bytes([1, 2]))[0][1] == bytes([1, 2])   # too short: PacketTooShort
    assert sw.stats["parser_errors"] == 1


def test_log_msg_formats_values_into_the_log():
    logged = []

    class Log:
        def info(self, fmt, *a):
            logged.append(fmt % a)
        error = exception = warning = debug = info
    sw = Switch(frontend.load_string(PRELUDE + """
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply { log_msg("a={} b={}", { hdr.h.a, hdr.h.b }); log_msg("plain"); sm.egress_spec = 1; }
}""" + MAIN, "log.p4"), log=Log())
    sw.process(1, bytes([5, 6, 0, 0]))
    assert "log_msg: a=5 b=6" in logged and "log_msg: plain" in logged


def test_a_parser_loop_without_progress_ends_in_parser_timeout():
    src = PRELUDE.replace("state start { pk.extract(hdr.h); transition accept; }",
                          "state start { transition again; } state again { transition start; }") + """
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    apply { if (sm.parser_error == error.ParserTimeout) { sm.egress_spec = 3; } }
}""" + MAIN
    sw = Switch(frontend.load_string(src, "loop.p4"))
    out = sw.process(1, bytes([9, 9, 9, 9]))
    assert out == [(3, bytes([9, 9, 9, 9]))]
    assert sw.stats["parser_errors"] == 1


def test_counter_with_a_constant_index_counts_in_range_and_ignores_out_of_range():
    sw = build("""
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets_and_bytes) c;
    apply { c.count(2); c.count(4); c.count((bit<32>)hdr.h.a); sm.egress_spec = 1; }
}""")
    assert run(sw, 9) is not None     # index 4 and 9 are out of range: nothing happens
    assert run(sw, 3) is not None
    c = sw.state.counter("I.c")
    assert [c.read(i) for i in range(4)] == [(0, 0), (0, 0), (2, 8), (1, 4)]


ENUM_TERNARY = """
enum bit<8> E { X = 0xa0, Y = 0x0b }
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { (E)hdr.h.a : ternary; }
        actions = { set; }
        const entries = { E.X &&& MASK : set(1); }
        default_action = set(2);
    }
    apply { sm.egress_spec = 1; t.apply(); }
}
"""


def test_a_serializable_enum_key_takes_an_int_mask_in_const_entries():
    """p4c types `E.X &&& 0xf0` with the mask as E's underlying bit<8>: a bit pattern."""
    sw = build(ENUM_TERNARY.replace("MASK", "0xf0"))
    assert run(sw, 0xa7)[1] == 1          # 0xa7 & 0xf0 == 0xa0 & 0xf0
    assert run(sw, 0xb0)[1] == 2
    with pytest.raises(P4Error, match=r"t.p4:\d+:\d+: type mismatch in table entry: expected E, got bool"):
        build(ENUM_TERNARY.replace("MASK", "true"))
