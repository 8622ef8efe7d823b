/* Range match keys, alone and beside ternary and exact keys, with a direct counter on
 * one table, for the differential test (test_native_diff.py): the compiled path scans
 * range tables in BMv2's priority order as the Python path does.
 *
 * Frame: ethernet | [ipv4 when etherType 0x0800 [udp when proto 17]] | payload
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> totalLen;
    bit<16> id;
    bit<3>  flags;
    bit<13> frag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> csum;
    bit<32> src;
    bit<32> dst;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> len;
    bit<16> csum;
}

struct metadata { bit<8> cls; }

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
}

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.proto) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) ports_count;

    action fwd(bit<9> port) { sm.egress_spec = port; }
    action set_cls(bit<8> cls) { meta.cls = cls; }
    action drop() { mark_to_drop(sm); }

    table ports {
        key = { hdr.udp.dstPort: range; hdr.ipv4.proto: ternary; hdr.ethernet.dst[7:0]: exact; }
        actions = { fwd; drop; }
        default_action = fwd(1);
        counters = ports_count;
    }
    table ttls {
        key = { hdr.ipv4.ttl: range; }
        actions = { set_cls; NoAction; }
        default_action = NoAction();
    }
    apply {
        ports.apply();
        ttls.apply();
        hdr.ethernet.src[7:0] = meta.cls;
    }
}

control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
