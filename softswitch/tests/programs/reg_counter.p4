/* Per-port packet and byte counting in registers (read-add-write), plus a
 * packet counter extern and a direct counter on the forwarding table.
 * Forwards by a port-to-port exact table. Compile with -D NUM_PORTS=... to resize. */
#include <core.p4>
#include <v1model.p4>

#ifndef NUM_PORTS
#define NUM_PORTS 64
#endif

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct metadata {
    bit<32> pkt_count;
    bit<32> byte_count;
}

struct headers {
    ethernet_t ethernet;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(NUM_PORTS) pkt_reg;
    register<bit<32>>(NUM_PORTS) byte_reg;
    counter(NUM_PORTS, CounterType.packets_and_bytes) port_counter;
    direct_counter(CounterType.packets) fwd_counter;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    table fwd {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        counters = fwd_counter;
    }

    apply {
        bit<32> idx = (bit<32>) standard_metadata.ingress_port;
        pkt_reg.read(meta.pkt_count, idx);
        meta.pkt_count = meta.pkt_count + 1;
        pkt_reg.write(idx, meta.pkt_count);

        byte_reg.read(meta.byte_count, idx);
        byte_reg.write(idx, meta.byte_count + standard_metadata.packet_length);

        port_counter.count(idx);
        fwd.apply();
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
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
