/* Direct counters of each CounterType on tables of each lookup structure (exact, lpm,
 * ternary), for the differential test (test_native_diff.py): the compiled path counts
 * hits into the cells the control plane reads (counter_read on an entry handle,
 * P4Runtime direct counter data), a miss counts nothing, and `count()` in an action
 * adds nothing (the table apply counted). Applied only on some paths of the control,
 * so some packets pass a counted table without applying it.
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

struct metadata { bit<8> cls; }

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
    direct_counter(CounterType.packets_and_bytes) route_count;
    direct_counter(CounterType.packets) acl_count;
    direct_counter(CounterType.bytes) mac_count;

    action fwd(bit<9> port) {
        sm.egress_spec = port;
        route_count.count();
    }
    action drop() { mark_to_drop(sm); }
    action set_cls(bit<8> cls) {
        meta.cls = cls;
        acl_count.count();
    }
    action mac_fwd(bit<9> port) { sm.egress_spec = port; }

    table route {
        key = { hdr.ipv4.dst: lpm; }
        actions = { fwd; drop; }
        default_action = drop();
        counters = route_count;
    }
    table acl {
        key = { hdr.ipv4.src: ternary; hdr.ipv4.proto: ternary; }
        actions = { set_cls; NoAction; }
        default_action = NoAction();
        counters = acl_count;
    }
    table macs {
        key = { hdr.ethernet.dst[7:0]: exact; }
        actions = { mac_fwd; drop; }
        default_action = mac_fwd(1);
        counters = mac_count;
    }
    apply {
        if (hdr.ipv4.isValid()) {
            acl.apply();
            if (meta.cls != 7) {
                route.apply();
            }
        } else {
            macs.apply();
        }
        hdr.ethernet.src[7:0] = meta.cls;
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
