/* log_msg with and without values, and a digest, for the compiled path's event queue
 * (test_digest_log.py): both data paths must log the same lines and keep the same
 * digests. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

struct learn_t {
    bit<48> src;
    bit<9>  port;
}

struct metadata { bit<8> n; }

struct headers { ethernet_t ethernet; }

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        log_msg("frame from port {} type {} to {}", { sm.ingress_port, hdr.ethernet.etherType, hdr.ethernet.dst });
        if (hdr.ethernet.etherType == 0x88cc) {
            log_msg("lldp seen");
            digest<learn_t>(1, { hdr.ethernet.src, sm.ingress_port });
        }
        log_msg("more braces {} {} than values", { hdr.ethernet.etherType });
    }
}

control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { log_msg("egress port {}", { sm.egress_port }); }
}

control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
