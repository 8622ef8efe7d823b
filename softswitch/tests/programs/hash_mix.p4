/* hash() with every algorithm both data paths compute, and checksums beyond csum16 (other
 * algorithms, *_with_payload), for the differential test (test_native_diff.py): data
 * lists that are not a whole number of bytes (zero bits pad them), longer than 8 bytes
 * (identity keeps the first 8), bool leaves, max 0 (base + hash), max from a table,
 * results narrower than the hash. What was computed leaves in the frame's res header.
 *
 * Frame: ethernet | [ipv4 when etherType 0x0800 | [udp when proto 17]] | payload
 * Out:   ethernet | res | [ipv4 [udp]] | payload
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

header res_t {
    bit<16> crc16;
    bit<32> crc32;
    bit<32> crc32_mod;
    bit<16> csum;
    bit<16> xor;
    bit<64> ident;
    bit<12> narrow;
    bit<4>  pad;
    bit<16> c16c;
    bit<32> c32c;
    bit<32> egr;
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

struct metadata {
    bit<32> maxv;
    bit<16> base;
}

struct headers {
    ethernet_t ethernet;
    res_t      res;
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

control VC(inout headers hdr, inout metadata meta) {
    apply {
        // a UDP checksum over the pseudo header, the UDP header and the payload: csum16
        verify_checksum_with_payload(hdr.udp.isValid() && hdr.udp.csum != 0,
            { hdr.ipv4.src, hdr.ipv4.dst, 8w0, hdr.ipv4.proto, hdr.udp.len,
              hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.len },
            hdr.udp.csum, HashAlgorithm.csum16);
        // the IPv4 "checksum" as a crc16: wrong on most frames, so checksum_error varies
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.tos == 0xB8,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.totalLen, hdr.ipv4.src },
            hdr.ipv4.csum, HashAlgorithm.crc16);
    }
}

control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<32> maxv, bit<16> base) {
        sm.egress_spec = port;
        meta.maxv = maxv;
        meta.base = base;
    }
    action drop() { mark_to_drop(sm); }
    table route {
        key = { hdr.ipv4.dst: lpm; }
        actions = { fwd; drop; }
        default_action = fwd(2, 0, 0);
    }
    apply {
        route.apply();
        hdr.res.setValid();
        hash(hdr.res.crc16, HashAlgorithm.crc16, 16w0,
             { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.proto, hdr.udp.srcPort, hdr.udp.dstPort },
             32w65536);
        hash(hdr.res.crc32, HashAlgorithm.crc32, 32w0,
             { hdr.ethernet.dst, hdr.ethernet.src, hdr.ethernet.etherType }, 32w0);
        hash(hdr.res.crc32_mod, HashAlgorithm.crc32, meta.base,
             { hdr.ipv4.ttl, hdr.udp.isValid(), hdr.ipv4.flags }, meta.maxv);
        hash(hdr.res.csum, HashAlgorithm.csum16, 16w0,
             { hdr.ipv4.ihl, hdr.ipv4.flags }, 32w0);
        hash(hdr.res.xor, HashAlgorithm.xor16, 16w3,
             { hdr.ethernet.src, hdr.ethernet.etherType, hdr.ipv4.ttl }, 32w0);
        hash(hdr.res.ident, HashAlgorithm.identity, 64w0,
             { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.ttl }, 64w0);
        hash(hdr.res.narrow, HashAlgorithm.identity, 12w0xFFF,
             { hdr.ipv4.id, hdr.ipv4.frag }, 32w0);
        hash(hdr.res.c16c, HashAlgorithm.crc16_custom, 16w0, { hdr.ipv4.dst }, 32w1000);
        hash(hdr.res.c32c, HashAlgorithm.crc32_custom, 32w7, { hdr.udp.len, hdr.udp.csum }, meta.maxv);
        if (hdr.res.crc16 == 0x1234) {
            mark_to_drop(sm);
        }
    }
}

control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hash(hdr.res.egr, HashAlgorithm.crc32, 32w0, { sm.egress_port, hdr.res.crc16 }, 32w0x10000);
    }
}

control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.totalLen, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.src, hdr.ipv4.dst, 8w0, hdr.ipv4.proto, hdr.udp.len,
              hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.len },
            hdr.udp.csum, HashAlgorithm.xor16);
    }
}

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.res);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
