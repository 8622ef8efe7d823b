/* v1model externs (conformance: softswitch/tests/stf/externs.stf): hash
 * (crc16, crc32, identity, csum16, xor16, base + hash % max), random,
 * registers (out-of-range index: read 0, write ignored), counter, meter colors,
 * log_msg, assert, truncate, and update_checksum_with_payload.
 * Data hashed: the 9 ASCII bytes "123456789" (the CRC catalogue's check input). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header data_t {
    bit<72> s;
}

header res_t {
    bit<16> crc16;
    bit<32> crc32;
    bit<16> csum;
    bit<16> xor16;
    bit<32> ident;
    bit<16> hmod;
    bit<32> idx;
    bit<32> reg_out;
    bit<8>  color;
    bit<8>  rnd_ok;
    bit<16> csum_pl;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    data_t     data;
    res_t      res;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.data);
        packet.extract(hdr.res);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(4) r;
    counter(4, CounterType.packets_and_bytes) c;
    meter(2, MeterType.packets) m;

    apply {
        assert(hdr.data.s != 0);
        hash(hdr.res.crc16, HashAlgorithm.crc16, 16w0, { hdr.data.s }, 32w65536);
        hash(hdr.res.crc32, HashAlgorithm.crc32, 32w0, { hdr.data.s }, 64w0x100000000);
        hash(hdr.res.csum, HashAlgorithm.csum16, 16w0, { hdr.data.s }, 32w65536);
        hash(hdr.res.xor16, HashAlgorithm.xor16, 16w0, { hdr.data.s }, 32w65536);
        hash(hdr.res.ident, HashAlgorithm.identity, 32w0, { hdr.data.s }, 64w0x100000000);
        hash(hdr.res.hmod, HashAlgorithm.crc32, 16w10, { hdr.data.s }, 32w100);
        bit<32> idx = hdr.res.idx;
        r.write(idx, 32w0xAAAA0000 | idx);
        r.read(hdr.res.reg_out, idx);
        c.count(idx);
        bit<32> color;
        m.execute_meter(32w0, color);
        hdr.res.color = (bit<8>) color;
        bit<8> rnd;
        random(rnd, 8w5, 8w7);
        hdr.res.rnd_ok = (rnd >= 5 && rnd <= 7) ? 8w1 : 8w0;
        log_msg("idx={} color={}", { idx, color });
        if (hdr.data.s == 1) {
            truncate(16);
        }
        standard_metadata.egress_spec = 2;
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum_with_payload(true, { hdr.data.s }, hdr.res.csum_pl, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.data);
        packet.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
