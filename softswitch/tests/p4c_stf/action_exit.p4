// `exit` inside an action still copies out its out/inout arguments; the rest of the control
// is skipped (the next control still runs). (An exit in an action called from another action
// is left out: p4c 1.2.3.7 then copies out only the outer action's arguments, see
// docs/softswitch.md, Differences.)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set_and_exit(inout bit<8> v, out bit<8> w) {
        v = 0x11;
        w = 0x22;
        exit;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            set_and_exit(hdr.h.a, hdr.h.b);
        }
        hdr.h.c = 0xff;                    // skipped after an exit
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.h.op = hdr.h.op + 0x10; }
}
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
