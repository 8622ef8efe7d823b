/* Meters for the differential test (test_native_diff.py): an indirect packets meter and an
 * indirect bytes meter indexed by packet data (some indexes beyond the size: green), and
 * a direct meter on a table (a miss reads green). The colors leave in the frame, and a
 * red packet is dropped, so the meters' state shows in the outputs.
 *
 * Frame: ethernet | [ipv4 when etherType 0x0800] | payload
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

struct metadata {
    bit<8> pcolor;
    bit<2> bcolor;
    bit<32> dcolor;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
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
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    meter(4, MeterType.packets) per_port;
    meter(3, MeterType.bytes) per_class;
    direct_meter<bit<32>>(MeterType.bytes) flow_meter;

    action fwd(bit<9> port) {
        sm.egress_spec = port;
        flow_meter.read(meta.dcolor);
    }
    action drop() { mark_to_drop(sm); }
    table flows {
        key = { hdr.ethernet.dst[7:0]: exact; }
        actions = { fwd; drop; }
        default_action = fwd(1);
        meters = flow_meter;
    }
    apply {
        per_port.execute_meter((bit<32>)sm.ingress_port, meta.pcolor);
        per_class.execute_meter((bit<32>)hdr.ipv4.ttl, meta.bcolor);
        flows.apply();
        hdr.ethernet.src[7:0] = meta.pcolor;
        hdr.ethernet.src[15:8] = (bit<8>)meta.bcolor;
        hdr.ethernet.src[23:16] = meta.dcolor[7:0];
        if (meta.pcolor == 2) {
            mark_to_drop(sm);
        }
    }
}

control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
