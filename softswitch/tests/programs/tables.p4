/* Tables and control flow (conformance: softswitch/tests/stf/tables.stf):
 * const entries on a ternary key (the first listed entry that matches wins),
 * range and exact tables filled at run time, default action with data,
 * apply().hit / .miss, switch on action_run and on a value (with a fall-through
 * label), exit inside an action, a control-level variable, a direct counter,
 * header stack push_front / pop_front and setInvalid (invalid headers are not emitted). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header k_t {
    bit<8>  a;
    bit<16> b;
    bit<8>  out1;
    bit<8>  out2;
    bit<8>  out3;
    bit<8>  out4;
}

header s_t {
    bit<8> v;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    k_t        k;
    s_t[2]     s;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.k);
        packet.extract(hdr.s.next);
        packet.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    bit<8> hits;
    direct_counter(CounterType.packets_and_bytes) dc;

    action set1(bit<8> v) {
        hdr.k.out1 = v;
    }
    action set2(bit<8> v) {
        hdr.k.out2 = v;
    }
    action bye() {
        hdr.k.out4 = 0xEE;
        standard_metadata.egress_spec = 3;
        exit;
    }
    action nop() { }

    table t_const {
        key = { hdr.k.a: ternary; }
        actions = { set1; nop; }
        const entries = {
            0x10 &&& 0xF0 : set1(1);
            0x11 : set1(2);
            _ : set1(3);
        }
    }
    table t_range {
        key = { hdr.k.b: range; }
        actions = { set2; nop; }
        default_action = set2(0x99);
    }
    table t_exact {
        key = { hdr.k.a: exact; hdr.k.b: exact; }
        actions = { bye; nop; }
        default_action = nop();
        counters = dc;
    }

    apply {
        hits = 0;
        switch (t_const.apply().action_run) {
            set1: { hits = hits + 1; }
            default: { }
        }
        if (t_range.apply().hit) {
            hits = hits + 0x10;
        }
        if (t_exact.apply().miss) {
            hits = hits + 0x20;
        }
        hdr.k.out3 = hits;
        switch (hdr.k.a) {
            0x40: {
                hdr.s.push_front(1);
                hdr.s[0].setValid();
                hdr.s[0].v = 0xAB;
            }
            0x41:
            0x42: {
                hdr.s.pop_front(1);
            }
            0x43: {
                hdr.s[1].setInvalid();
            }
            default: { }
        }
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
        packet.emit(hdr.ethernet);
        packet.emit(hdr.k);
        packet.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
