// The softswitch does not implement parser value sets: the runner must say "refused" and why.
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> len; }
struct headers_t { a_t a; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) lens;
    state start { pkt.extract(hdr.a); transition select(hdr.a.len) { lens: accept; default: accept; } }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.a); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
