// expect: 11:13: left side of '=': 'hdr' is an 'in' parameter and cannot be written
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in p, out headers hdr, inout metadata m, inout standard_metadata_t s) {
    state start { p.extract(hdr.h); transition accept; }
}
control D(packet_out p, in headers hdr) {
    apply { hdr.h.x = 1; p.emit(hdr.h); }
}
control C(inout headers hdr, inout metadata m) { apply { } }
control I(inout headers hdr, inout metadata m, inout standard_metadata_t s) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
