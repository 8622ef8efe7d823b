/* Const entries (ternary with priorities), a serializable enum, and a switch
 * on the table's action_run: classifies UDP packets by destination port and
 * tags them with a class in the IPv4 DSCP bits. */
#include <core.p4>
#include <v1model.p4>

enum bit<8> IpProto {
    TCP = 6,
    UDP = 17
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    IpProto protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

struct metadata {
    bit<8> cls;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol, hdr.ipv4.ihl) {
            (IpProto.UDP, 5): parse_udp;
            (_, 0 .. 4): reject;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action set_class(bit<8> cls) {
        meta.cls = cls;
    }

    @name("bulk") action set_bulk() {
        meta.cls = 8w1;
    }

    action to_cpu() {
        standard_metadata.egress_spec = 9w64;
    }

    table classify {
        key = {
            hdr.udp.dstPort: ternary @name("dport");
            hdr.ipv4.dstAddr[31:24]: ternary;
        }
        actions = {
            set_class;
            set_bulk;
            to_cpu;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        const entries = {
            (0x1000 &&& 0xF000, 10): set_bulk();
            priority=5: (4791, _): set_class(3);
            @priority(1) (53, 10): to_cpu();
            (_, 11): set_class(2);
        }
    }

    apply {
        standard_metadata.egress_spec = 1;
        if (!hdr.udp.isValid()) {
            return;
        }
        switch (classify.apply().action_run) {
            set_bulk: {
                hdr.ipv4.dscp = 6w8;
            }
            set_class: {
                hdr.ipv4.dscp = meta.cls[5:0] |+| 6w32;
            }
            default: {
                exit;
            }
        }
        if (hdr.ipv4.protocol == IpProto.UDP && hdr.udp.length > 16w8) {
            hdr.ipv4.ecn = hdr.ipv4.dscp[0:0] ++ 1w1;
        }
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
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
