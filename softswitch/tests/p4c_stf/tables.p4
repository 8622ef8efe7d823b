// A tiny v1model program for the STF runner's tests: one table per match kind, a register,
// a counter, multicast and a clone, chosen by the first byte of the frame (op).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;
    bit<16> a;
    bit<32> b;
    bit<8>  tag;
}
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>>(4) regs;
    counter(8, CounterType.packets_and_bytes) hits;

    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; hdr.h.tag = tag; }
    action drop() { mark_to_drop(sm); }
    action to_group(bit<16> grp) { sm.mcast_grp = grp; }

    table by_a {
        key = { hdr.h.a: ternary; hdr.h.op: exact; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    table by_b {
        key = { hdr.h.b: lpm; }
        actions = { fwd; to_group; drop; }
        default_action = drop();
    }
    apply {
        hits.count((bit<32>)hdr.h.op);
        if (hdr.h.op == 1) {
            by_a.apply();
        } else if (hdr.h.op == 2) {
            by_b.apply();
        } else if (hdr.h.op == 3) {
            regs.read(hdr.h.tag, 2);
            sm.egress_spec = 1;
        } else if (hdr.h.op == 4) {
            clone(CloneType.I2E, 5);
            sm.egress_spec = 1;
        } else {
            mark_to_drop(sm);
        }
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
