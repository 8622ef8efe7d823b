// expect: 8:48: unknown parser state 'parse_ip'
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in p, out headers hdr, inout metadata m, inout standard_metadata_t s) {
    state start { p.extract(hdr.h); transition parse_ip; }
}
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.h); } }
control C(inout headers hdr, inout metadata m) { apply { } }
control I(inout headers hdr, inout metadata m, inout standard_metadata_t s) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
