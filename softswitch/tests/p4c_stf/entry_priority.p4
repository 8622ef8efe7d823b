// @priority on const entries, as p4c's BMv2 back end reads it: the annotation is the BMv2
// priority itself (numerically lowest wins) and an entry without one ranks by its position
// (1, 2, ...). Under P4-16's `priority=` rule (largest wins) the first entry would win below.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> tag; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<9> port, bit<8> tag) { sm.egress_spec = port; hdr.h.tag = tag; }
    table t {
        key = { hdr.h.k: ternary; }
        actions = { set; }
        default_action = set(9, 0xee);
        const entries = {
            0x10 &&& 0xf0 : set(1, 0xa1) @priority(3);   // BMv2 priority 3
            0x11          : set(2, 0xa2);                // position 2
            0x11 &&& 0x1f : set(3, 0xa3) @priority(1);   // 1: wins over both
            0x22          : set(4, 0xa4);                // position 4
            0x22 &&& 0xfe : set(5, 0xa5) @priority(4);   // ties with position 4: first added wins
        }
    }
    apply { t.apply(); }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
