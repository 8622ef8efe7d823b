// Header unions: at most one member is valid. Extracting a member, setValid on it or
// assigning a valid header to it invalidates the others; the union is valid when a member
// is; emit writes the valid member; a stack of unions takes `next.member`. (pop_front on a
// stack of unions is left out: BMv2 1.15 differs, see docs/softswitch.md, Differences.)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> f; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
struct headers_t { h_t h; u_t u; u_t[2] us; a_t t; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.op) { 1: pa; 2: pb; 3: ps; 5: pab; default: accept; }
    }
    state pa { pkt.extract(hdr.u.a); transition accept; }
    state pb { pkt.extract(hdr.u.b); transition accept; }
    state ps { pkt.extract(hdr.us.next.a); pkt.extract(hdr.us.next.b); transition accept; }
    state pab { pkt.extract(hdr.u.a); pkt.extract(hdr.u.b); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            hdr.u.b.setValid();
            hdr.u.b.y = 0xbbbb;
        } else if (hdr.h.op == 2) {
            hdr.t.setValid();
            hdr.t.x = 0x77;
            hdr.u.a = hdr.t;
            hdr.t.setInvalid();
        }
        hdr.h.f = (hdr.u.isValid() ? 8w0x10 : 8w0) | (hdr.us[1].b.isValid() ? 8w1 : 8w0);
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.u); pkt.emit(hdr.us); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
