// The standalone link relay's pipeline (softswitch/dataplane/relay.py): every frame leaves
// by the other port, unchanged, so the relay runs on the compiled data path (C loop and C
// delay lines) like any switch. Port 1 is IF_A, port 2 IF_B.
#include <core.p4>
#include <v1model.p4>

struct relay_headers_t { }
struct relay_meta_t { }

parser RelayParser(packet_in pkt, out relay_headers_t hdr, inout relay_meta_t meta,
                   inout standard_metadata_t sm) {
    state start { transition accept; }
}

control RelayVerify(inout relay_headers_t hdr, inout relay_meta_t meta) { apply { } }

control RelayIngress(inout relay_headers_t hdr, inout relay_meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 1) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control RelayEgress(inout relay_headers_t hdr, inout relay_meta_t meta, inout standard_metadata_t sm) { apply { } }

control RelayCompute(inout relay_headers_t hdr, inout relay_meta_t meta) { apply { } }

control RelayDeparser(packet_out pkt, in relay_headers_t hdr) { apply { } }

V1Switch(RelayParser(), RelayVerify(), RelayIngress(), RelayEgress(), RelayCompute(), RelayDeparser()) main;
