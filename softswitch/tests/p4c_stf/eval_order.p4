// Operands are evaluated left to right even when a later one is a call that changes an
// earlier one through an inout argument; the left side of an assignment (a stack index)
// is evaluated before the right side.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> x; bit<8> y; bit<8> z; bit<8> i; }
header e_t { bit<8> v; }
struct headers_t { h_t h; e_t[2] s; }
struct pair_t { bit<8> a; bit<8> b; }
struct meta_t { }

bit<8> bump(inout bit<8> v) {   // v becomes 1; returns 1
    v = 1;
    return 1;
}
bit<8> sub(in bit<8> a, in bit<8> b) { return a - b; }
bit<8> same(in bit<8> v) { return v; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.s[0]); pkt.extract(hdr.s[1]); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            hdr.h.y = hdr.h.x + bump(hdr.h.x);            // x + 1 with the old x
        } else if (hdr.h.op == 2) {
            if (hdr.h.x == bump(hdr.h.x)) {                // old x against 1
                hdr.h.y = 0xee;
            } else {
                hdr.h.y = 0xdd;
            }
        } else if (hdr.h.op == 3) {
            hdr.h.y = sub(hdr.h.x, bump(hdr.h.x));         // arguments in order: old x - 1
        } else if (hdr.h.op == 4) {
            pair_t p = { hdr.h.x, bump(hdr.h.x) };         // list elements in order
            hdr.h.y = p.a;
            hdr.h.z = p.b;
        } else if (hdr.h.op == 5) {
            hdr.s[same(hdr.h.i)].v = bump(hdr.h.i);        // index with a call: read first
        } else if (hdr.h.op == 6) {
            hdr.s[hdr.h.i].v = bump(hdr.h.i);              // plain index: read after the call
        }
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.s); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
