/* The traffic manager's passes in one program, for the differential test
 * (test_native_diff.py): I2E and E2E clones (with and without a field list, to sessions
 * that may not exist), resubmit and recirculate with field lists (bounded by a limit
 * from the table, or not: then the chain is cut after 16 passes), multicast, truncate
 * and drops, chosen by random table entries. Every pass writes what it saw
 * (instance_type, egress_rid, the metadata that survived) into the frame. A failing
 * assert/assume drops the whole input frame, outputs of its earlier passes included.
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
    @field_list(1)
    bit<8>  count;
    @field_list(1, 2)
    bit<8>  kept;
    bit<8>  notkept;
    @field_list(2)
    bit<16> mark;
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
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action mcast(bit<16> grp) { sm.mcast_grp = grp; }
    action clone_fl(bit<32> sess, bit<9> port) {
        sm.egress_spec = port;
        clone_preserving_field_list(CloneType.I2E, sess, 1);
    }
    action clone_plain(bit<32> sess) { clone(CloneType.I2E, sess); }
    action resub(bit<8> limit, bit<9> port) {
        sm.egress_spec = port;
        if (meta.count < limit) {
            meta.count = meta.count + 1;
            resubmit_preserving_field_list(1);
        }
    }
    action resub_forever() { resubmit_preserving_field_list(2); }
    action trunc(bit<32> len, bit<9> port) {
        truncate(len);
        sm.egress_spec = port;
    }
    action drop() { mark_to_drop(sm); }
    table ing {
        key = { hdr.ethernet.dst[7:0]: exact; hdr.ipv4.ttl: ternary; }
        actions = { fwd; mcast; clone_fl; clone_plain; resub; resub_forever; trunc; drop; }
        default_action = fwd(1);
    }
    apply {
        meta.kept = meta.kept + 1;
        meta.notkept = meta.notkept + 1;
        ing.apply();
        hdr.ethernet.dst[47:40] = (bit<8>)sm.instance_type;
        hdr.ethernet.dst[39:32] = meta.count;
        assume(hdr.ethernet.src[7:0] != 0x35);
    }
}

control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action e2e(bit<32> sess) {
        meta.mark = meta.mark + 0x101;
        clone_preserving_field_list(CloneType.E2E, sess, 2);
    }
    action e2e_plain(bit<32> sess) { clone(CloneType.E2E, sess); }
    action recirc(bit<8> limit) {
        if (meta.count < limit) {
            meta.count = meta.count + 1;
            recirculate_preserving_field_list(1);
        }
    }
    action recirc_plain() { recirculate_preserving_field_list(3); }
    action edrop() { mark_to_drop(sm); }
    action etrunc(bit<32> len) { truncate(len); }
    table eg {
        key = { sm.egress_port: exact; sm.instance_type: ternary; }
        actions = { e2e; e2e_plain; recirc; recirc_plain; edrop; etrunc; NoAction; }
        default_action = NoAction();
    }
    apply {
        eg.apply();
        hdr.ethernet.src[7:0] = (bit<8>)sm.instance_type;
        hdr.ethernet.src[15:8] = meta.count;
        hdr.ethernet.src[23:16] = meta.kept;
        hdr.ethernet.src[31:24] = meta.notkept;
        hdr.ethernet.src[39:32] = sm.egress_rid[7:0];
        hdr.ethernet.etherType = meta.mark;
        // a failing assert drops the whole frame: also the clones and copies already out
        assert(sm.instance_type != 2 || meta.kept != 1);
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            hdr.ipv4.id = (bit<16>)sm.packet_length;
        }
    }
}

control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
