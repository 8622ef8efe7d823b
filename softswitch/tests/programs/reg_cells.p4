/* Registers of several widths and an indirect counter, indexed by packet data so that
 * about half of the indexes are beyond the declared sizes (reads give 0, writes and
 * counts do nothing): the compiled data path's extern cells against the Python path's
 * (softswitch/tests/test_native_diff.py, test_native.py). What was read leaves in the
 * frame's header fields, so the outputs show every read. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct metadata {
    bit<64> acc;
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
    register<bit<8>>(16) r8;
    register<bit<9>>(16) r9;
    register<bit<48>>(16) r48;
    register<bit<64>>(4) r64;
    counter(8, CounterType.packets_and_bytes) seen;

    action bump(bit<32> i) {
        bit<8> v8;
        r8.read(v8, i);
        r8.write(i, v8 + hdr.ethernet.srcAddr[7:0]);
        seen.count(i);
    }

    apply {
        bit<32> i = (bit<32>)hdr.ethernet.etherType[4:0];      /* 0..31 */
        bump(i);
        bit<9> v9;
        r9.read(v9, i);
        r9.write(i, v9 |+| 300);                                 /* saturates at 511 */
        bit<48> v48;
        r48.read(v48, i);
        r48.write(i, v48 + hdr.ethernet.dstAddr);
        bit<64> v64;
        r64.read(v64, (bit<32>)hdr.ethernet.srcAddr[2:0]);       /* 0..7 of 4 */
        r64.write((bit<32>)hdr.ethernet.dstAddr[2:0], v64 * 0x9E3779B97F4A7C15 + 1);
        r64.read(meta.acc, 7);                                   /* constant, out of range: 0 */
        r64.write(9, 5);                                         /* constant, out of range: nothing */
        seen.count(3);
        seen.count(8);                                           /* out of range: nothing */
        r8.read(hdr.ethernet.dstAddr[15:8], i);                  /* a slice as the target */
        hdr.ethernet.srcAddr = v48;
        hdr.ethernet.etherType = (bit<16>)v9 ^ (bit<16>)meta.acc;
        hdr.ethernet.dstAddr[47:16] = v64[63:32];
        standard_metadata.egress_spec = (bit<9>)(v64[1:0]) + 1;
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
