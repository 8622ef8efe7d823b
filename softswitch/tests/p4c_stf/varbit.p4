// varbit fields as BMv2 runs them. Frame: op_t (op, len, len2, res), then what op selects:
//   1: a with len bits          2: a with len bits, b with len2 bits    3: s.next twice, len then len2
//   4: nothing; b.setValid()    5: a with len bits; ck.crc = crc16 over a.v (ingress);
//                                  ck.csum = csum16 over a's fields (compute-checksum)
// res (written by ingress): low nibble the parser error (0 none, 1 PacketTooShort,
// 4 HeaderTooShort, 6 ParserInvalidArgument); 0x10 a.v == b.v; 0x20 a == b; 0x40 s[0] == s[1];
// 0x80 s[0].v == s[1].v. Fields are compared only when both headers are valid (an invalid
// header's fields have no defined value; BMv2 keeps an earlier packet's there); headers are
// compared always (two invalid headers are equal). Op 2 then swaps a.v and b.v, so each is
// emitted at the other's width.
// v_t's fixed nibbles sit on both sides of the varbit: the varbit is not byte-aligned.
#include <core.p4>
#include <v1model.p4>

header op_t { bit<8> op; bit<8> len; bit<8> len2; bit<8> res; }
header v_t { bit<4> hi; varbit<32> v; bit<4> lo; }
header w_t { varbit<24> v; }
header ck_t { bit<16> csum; bit<16> crc; }
struct headers_t { op_t op; v_t a; v_t b; w_t[2] s; ck_t ck; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.op);
        transition select(hdr.op.op) {
            1: one;
            2: two;
            3: stack;
            5: one;
            default: accept;
        }
    }
    state one { pkt.extract(hdr.a, (bit<32>)hdr.op.len); transition accept; }
    state two {
        pkt.extract(hdr.a, (bit<32>)hdr.op.len);
        pkt.extract(hdr.b, (bit<32>)hdr.op.len2);
        transition accept;
    }
    state stack {
        pkt.extract(hdr.s.next, (bit<32>)hdr.op.len);
        pkt.extract(hdr.s.next, (bit<32>)hdr.op.len2);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> r = 0;
        if (sm.parser_error == error.PacketTooShort) { r = 1; }
        else if (sm.parser_error == error.HeaderTooShort) { r = 4; }
        else if (sm.parser_error == error.ParserInvalidArgument) { r = 6; }
        else if (sm.parser_error != error.NoError) { r = 15; }
        if (hdr.a.isValid() && hdr.b.isValid() && hdr.a.v == hdr.b.v) { r = r | 0x10; }
        if (hdr.a == hdr.b) { r = r | 0x20; }
        if (hdr.s[0] == hdr.s[1]) { r = r | 0x40; }
        if (hdr.s[0].isValid() && hdr.s[1].isValid() && hdr.s[0].v == hdr.s[1].v) { r = r | 0x80; }
        hdr.op.res = r;
        if (hdr.op.op == 2) {
            varbit<32> t = hdr.a.v;
            hdr.a.v = hdr.b.v;
            hdr.b.v = t;
        } else if (hdr.op.op == 4) {
            hdr.b.setValid();
            hdr.b.hi = 0xa;
            hdr.b.lo = 0x5;
        } else if (hdr.op.op == 5) {
            hdr.ck.setValid();
            hash(hdr.ck.crc, HashAlgorithm.crc16, 16w0, { hdr.a.v }, 32w65536);
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) {
    apply {
        update_checksum(hdr.ck.isValid(), { hdr.a.hi, hdr.a.v, hdr.a.lo }, hdr.ck.csum,
                        HashAlgorithm.csum16);
    }
}

control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.op); pkt.emit(hdr.a); pkt.emit(hdr.b); pkt.emit(hdr.s); pkt.emit(hdr.ck); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
