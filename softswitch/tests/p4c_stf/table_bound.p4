// Table actions with in/out/inout parameters bound in the actions list: the control plane
// gives only the directionless ones; the bound arguments are evaluated when the table runs
// the action and copied out after it, also when the action exits.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> a; bit<8> b; bit<8> c; }
struct headers_t { h_t h; }
struct meta_t { bit<8> seen; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    bit<8> base = 0;
    action add_to(inout bit<8> v, in bit<8> plus, bit<8> x) { v = v + plus + x; }
    action put(out bit<8> w, bit<8> x) { w = x; }
    action put_and_exit(out bit<8> w, bit<8> x) { w = x; exit; }
    table t {
        key = { hdr.h.k: exact; }
        actions = { add_to(hdr.h.a, base); put(hdr.h.b); put_and_exit(m.seen); }
        default_action = put(hdr.h.b, 0xdd);
    }
    apply {
        sm.egress_spec = 1;
        base = hdr.h.c;                      // read by add_to when t runs it
        t.apply();
        hdr.h.c = m.seen;                    // skipped after put_and_exit
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.k = hdr.h.k | 0x80;
        if (m.seen != 0) { hdr.h.a = m.seen; }
    }
}
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
