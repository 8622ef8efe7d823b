/* Expression semantics on the wire (conformance: softswitch/tests/stf/ops.stf).
 * The ops header carries operands a, b (bit<8>), x, y (int<8>), w (bit<16>);
 * ingress writes each result into its own field, so one packet checks wrap-around,
 * saturation, shifts (also by >= width), slices (rvalue and lvalue),
 * concatenation, casts, division, ?:, bool<->bit, a function with an out
 * parameter and an action with inout parameters (copy-in/copy-out). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ops_t {
    bit<8>  a;
    bit<8>  b;
    int<8>  x;
    int<8>  y;
    bit<16> w;
    bit<8>  add;
    bit<8>  sub;
    bit<8>  mul;
    int<8>  sadd;
    int<8>  ssub;
    bit<8>  satadd;
    bit<8>  satsub;
    int<8>  ssatsub;
    int<8>  ssatadd;
    bit<8>  shl;
    bit<8>  shr;
    int<8>  sshr;
    bit<8>  shlbig;
    bit<8>  slice;
    bit<16> wset;
    bit<16> cat;
    bit<8>  neg;
    bit<8>  cmpl;
    bit<16> castx;
    bit<8>  div;
    bit<8>  mod;
    bit<8>  tern;
    bit<8>  boolbit;
    bit<8>  fout;
    bit<8>  swapped;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    ops_t      ops;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88B5: parse_ops;
            default: accept;
        }
    }
    state parse_ops {
        packet.extract(hdr.ops);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

bit<8> max_and_min(in bit<8> p, in bit<8> q, out bit<8> lo) {
    if (p > q) {
        lo = q;
        return p;
    }
    lo = p;
    return q;
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action swap(inout bit<8> u, inout bit<8> v) {
        bit<8> t = u;
        u = v;
        v = t;
    }
    apply {
        if (!hdr.ops.isValid()) {
            mark_to_drop(standard_metadata);
            exit;
        }
        bit<8> a = hdr.ops.a;
        bit<8> b = hdr.ops.b;
        int<8> x = hdr.ops.x;
        int<8> y = hdr.ops.y;
        hdr.ops.add = a + b;
        hdr.ops.sub = b - a;
        hdr.ops.mul = a * b;
        hdr.ops.sadd = x + y;
        hdr.ops.ssub = x - y;
        hdr.ops.satadd = a |+| b;
        hdr.ops.satsub = b |-| a;
        hdr.ops.ssatsub = x |-| y;
        hdr.ops.ssatadd = y |+| 8s100;
        hdr.ops.shl = a << 3;
        hdr.ops.shr = a >> 3;
        hdr.ops.sshr = x >> 2;
        hdr.ops.shlbig = a << b;
        hdr.ops.slice = hdr.ops.w[11:4];
        hdr.ops.wset = hdr.ops.w;
        hdr.ops.wset[15:12] = a[3:0];
        hdr.ops.cat = a ++ b;
        hdr.ops.neg = -a;
        hdr.ops.cmpl = ~a;
        hdr.ops.castx = (bit<16>) ((int<16>) x);
        hdr.ops.div = a / 3;
        hdr.ops.mod = a % 7;
        hdr.ops.tern = (a > b) ? a : b;
        hdr.ops.boolbit = (bit<8>) ((bit<1>) (a != b));
        bit<8> lo;
        bit<8> hi = max_and_min(a, b, lo);
        hdr.ops.fout = hi - lo;
        bit<8> s1 = a;
        bit<8> s2 = b;
        swap(s1, s2);
        hdr.ops.swapped = s1;
        standard_metadata.egress_spec = 2;
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
        packet.emit(hdr.ops);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
