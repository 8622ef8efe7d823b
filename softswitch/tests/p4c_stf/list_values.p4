// A list expression ({...}) as a header or struct value: returned from a function, passed
// as an argument, assigned whole (all elements read before any field is written).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct pair_t { bit<8> a; bit<8> b; }
struct meta_t { pair_t p; }

h_t make(in bit<8> a) {
    if (a == 0) {
        return { 0xf0, 0xf1, 0xf2 };
    }
    return { 0xe0, a, a + 1 };
}
bit<8> total(in pair_t p) { return p.a + p.b; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action put(in h_t v) { hdr.h.b = v.a; }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            hdr.h = make(hdr.h.a);                          // a header returned as a list
        } else if (hdr.h.op == 2) {
            hdr.h.b = total({ hdr.h.a, 3 });                // a struct argument given as a list
        } else if (hdr.h.op == 3) {
            put({ 7, 0x42, 9 });                            // a header action argument
        } else if (hdr.h.op == 4) {
            m.p = { hdr.h.a, hdr.h.b };
            m.p = { m.p.b, m.p.a };                         // a swap
            hdr.h.a = m.p.a;
            hdr.h.b = m.p.b;
        }
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
