/* Remaining language features (conformance: softswitch/tests/stf/misc.stf):
 * a plain enum in a variable and a switch, header stack lastIndex, struct
 * initialised from a list, struct assignment as a copy, struct equality, and a
 * user function with a return value. */
#include <core.p4>
#include <v1model.p4>

enum Color { Red, Green, Blue }

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header v_t {
    bit<8> sel;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

header s_t {
    bit<8> x;
}

struct pair_t {
    bit<8> a;
    bit<8> b;
}

struct metadata {
    pair_t p;
    pair_t q;
}

struct headers {
    ethernet_t ethernet;
    v_t        v;
    s_t[4]     st;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.v);
        packet.extract(hdr.st.next);
        packet.extract(hdr.st.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

bit<8> twice_plus(in bit<8> v, in bit<8> k) {
    return (v << 1) + k;
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        Color c = Color.Red;
        if (hdr.v.sel == 1) {
            c = Color.Green;
        } else if (hdr.v.sel == 2) {
            c = Color.Blue;
        }
        switch (c) {
            Color.Red: { hdr.v.r1 = 10; }
            Color.Green: { hdr.v.r1 = 20; }
            default: { hdr.v.r1 = 30; }
        }
        hdr.v.r2 = (bit<8>) hdr.st.lastIndex;
        meta.p = { hdr.v.sel, 7 };
        meta.q = meta.p;
        if (hdr.v.sel != 3) {
            meta.q.b = meta.q.b + 1;
        }
        hdr.v.r3 = (meta.p == meta.q) ? 8w1 : 8w0;
        hdr.v.r4 = twice_plus(hdr.v.sel, 100);
        hdr.st[0].x = meta.p.b;
        standard_metadata.egress_spec = 2;
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
