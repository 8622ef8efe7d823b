/* The constructs of the compiled data path's first slice in one program, for the
 * differential test (softswitch/tests/test_native_diff.py): both paths must give the
 * same frames for any packet and any entries.
 *
 * Frame: ethernet | ctl (op, a, b, shift, flags) | [ipv4 when etherType 0x0800]
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

header ctl_t {
    bit<8>  op;
    bit<16> a;
    bit<16> b;
    bit<8>  shift;
    bit<1>  flag;
    bit<7>  pad;
    bit<64> wide;
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

header out_t {
    bit<16> r1;
    bit<16> r2;
    bit<32> r3;
    bool    ok;
    bit<7>  rid;
    bit<8>  itype;
}

struct metadata {
    bit<16> acc;
    bool    seen;
    bit<8>  loops;
}

struct headers {
    ethernet_t ethernet;
    ctl_t      ctl;
    ipv4_t     ipv4;
    out_t      res;
}

parser P(packet_in packet, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    bit<8> n = 0;
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType, hdr.ethernet.dst[7:0]) {
            (0x88b5, _): parse_ctl;
            (0x0800, 0x00 &&& 0x80): parse_ipv4;
            (0x0800, _): spin;
            (0x9000 .. 0x90ff, _): reject;
            (0x0000 &&& 0xff00, _): accept;
            default: parse_ctl;
        }
    }
    state spin {
        n = n + 1;
        meta.loops = n;
        transition select(n) {
            3: parse_ipv4;
            default: spin;
        }
    }
    state parse_ctl {
        packet.extract(hdr.ctl);
        verify(hdr.ctl.op != 0xee, error.HeaderTooShort);
        transition select(hdr.ctl.flag) {
            1: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.totalLen, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    bit<16> tmp = 7;
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action fwd_exit(bit<9> port, bit<16> mark) {
        sm.egress_spec = port;
        hdr.res.r2 = mark;
        exit;
    }
    action mcast(bit<16> grp) { sm.mcast_grp = grp; }
    action arith(bit<16> k) {
        hdr.res.r1 = hdr.ctl.a + k;
        hdr.res.r2 = hdr.ctl.a - hdr.ctl.b;
        hdr.res.r3 = (bit<32>)hdr.ctl.a * 3 ^ ~((bit<32>)hdr.ctl.b);
        tmp = k;
    }
    table by_op {
        key = { hdr.ctl.op: exact; hdr.ctl.flag: exact; }
        actions = { arith; fwd; fwd_exit; drop; NoAction; }
        default_action = NoAction();
    }
    table route {
        key = { hdr.ipv4.dst: lpm; hdr.ipv4.proto: exact; }
        actions = { fwd; mcast; drop; }
        default_action = drop();
    }
    table acl {
        key = { hdr.ipv4.src: ternary; hdr.ipv4.dst: lpm; hdr.ipv4.tos: optional; }
        actions = { drop; fwd; fwd_exit; NoAction; }
        default_action = NoAction();
    }
    apply {
        hdr.res.setValid();
        hdr.res.itype = (bit<8>)sm.instance_type;
        sm.egress_spec = 1;
        if (hdr.ctl.isValid()) {
            if (by_op.apply().hit) {
                hdr.res.ok = true;
            } else {
                hdr.res.ok = false;
            }
            hdr.res.r3[7:0] = hdr.ctl.a[15:8] |+| hdr.ctl.b[7:0];
            hdr.res.r3[31:24] = (bit<8>)(hdr.ctl.a << hdr.ctl.shift);
            hdr.res.r3[23:16] = (bit<8>)(hdr.ctl.b >> hdr.ctl.shift) |-| 8w3;
            hdr.res.r1 = hdr.res.r1 + tmp;
            if (hdr.ctl.wide + 64w1 == 0 || hdr.ctl.wide << 63 == 64w0x8000000000000000) {
                hdr.res.r2 = hdr.res.r2 ^ 16w0xffff;
            }
            switch (hdr.ctl.op) {
                1: { hdr.res.r1 = -hdr.res.r1; }
                2:
                3: { hdr.ctl.setInvalid(); }
                9: { return; }
                default: { meta.acc = hdr.ctl.a ++ hdr.ctl.b[15:8] == 24w0 ? 16w1 : 16w2; }
            }
            hdr.res.r2 = hdr.res.r2 | meta.acc;
        }
        if (hdr.ipv4.isValid()) {
            if (sm.checksum_error == 1 || hdr.ipv4.ttl == 0) {
                drop();
                return;
            }
            switch (route.apply().action_run) {
                fwd: { hdr.ipv4.ttl = hdr.ipv4.ttl - 1; }
                mcast: { meta.seen = true; }
            }
            if (!acl.apply().miss) {
                hdr.res.r1 = 16w0xacac;
            }
            meta.acc = (bit<16>)meta.loops;
        }
        hdr.res.r2 = hdr.res.r2 + meta.acc;
    }
}

control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.res.rid = (bit<7>)sm.egress_rid;
        hdr.res.itype = hdr.res.itype + (bit<8>)sm.instance_type;
        if (sm.egress_port == 7) {
            mark_to_drop(sm);
        }
        if (meta.seen && sm.egress_rid == 3) {
            hdr.ethernet = hdr.ethernet;
            hdr.ethernet.src = 0xffffffffffff;
        }
    }
}

control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.totalLen, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.res);
        packet.emit(hdr.ctl);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
