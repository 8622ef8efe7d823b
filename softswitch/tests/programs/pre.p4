/* Traffic manager semantics (conformance: softswitch/tests/stf/pre.stf):
 * multicast through the PRE (one egress pass per replica, egress_rid),
 * I2E and E2E clones to mirror sessions, resubmit and recirculate with a
 * preserved field list, mark_to_drop (also cancelling a multicast), digest.
 * The ctl header's op selects the behaviour; ingress and egress write what
 * they saw (instance_type, egress_rid, egress_port) into it. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ctl_t {
    bit<8>  op;
    bit<8>  itype_ing;
    bit<8>  itype_eg;
    bit<8>  rid;
    bit<8>  eport;
    bit<8>  meta_val;
    bit<16> pad;
}

struct metadata {
    @field_list(1)
    bit<8> kept;
    bit<8> dropped;     // not in field list 1: reset on resubmit/recirculate
}

struct digest_t {
    bit<8> op;
    bit<9> port;
}

struct headers {
    ethernet_t ethernet;
    ctl_t      ctl;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.ctl);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.ctl.itype_ing = (bit<8>) standard_metadata.instance_type;
        bit<8> op = hdr.ctl.op;
        if (op == 1) {
            standard_metadata.mcast_grp = 1;
        } else if (op == 2) {
            clone(CloneType.I2E, 5);
            hdr.ctl.meta_val = 0x77;
            standard_metadata.egress_spec = 2;
        } else if (op == 3) {
            if (standard_metadata.instance_type == 0) {
                meta.kept = 0x42;
                meta.dropped = 0x0F;
                resubmit_preserving_field_list(1);
            } else {
                hdr.ctl.meta_val = meta.kept | meta.dropped;
                standard_metadata.egress_spec = 3;
            }
        } else if (op == 4) {
            if (standard_metadata.instance_type == 0) {
                meta.kept = 0x43;
            } else {
                hdr.ctl.meta_val = meta.kept;
            }
            standard_metadata.egress_spec = 4;
        } else if (op == 5) {
            mark_to_drop(standard_metadata);
        } else if (op == 7) {
            digest<digest_t>(1, {hdr.ctl.op, standard_metadata.ingress_port});
            standard_metadata.egress_spec = 2;
        } else if (op == 8) {
            standard_metadata.mcast_grp = 1;
            mark_to_drop(standard_metadata);
        } else {
            standard_metadata.egress_spec = 2;
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.ctl.itype_eg = (bit<8>) standard_metadata.instance_type;
        hdr.ctl.rid = (bit<8>) standard_metadata.egress_rid;
        hdr.ctl.eport = (bit<8>) standard_metadata.egress_port;
        // egress sees instance_type 0 for every unicast packet, so ask what ingress saw
        if (hdr.ctl.op == 4 && hdr.ctl.itype_ing == 0) {
            recirculate_preserving_field_list(1);
        }
        if (hdr.ctl.op == 6 && standard_metadata.instance_type == 0) {
            clone(CloneType.E2E, 6);
        }
        if (hdr.ctl.op == 9) {
            mark_to_drop(standard_metadata);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ctl);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
