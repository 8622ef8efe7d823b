/* Parser semantics (conformance: softswitch/tests/stf/parser_ops.stf):
 * select with masks, ranges, tuples and don't-cares; verify() with a program
 * error; NoMatch; PacketTooShort; header stack next/last with StackOutOfBounds;
 * lookahead and advance. Ingress reports what the parser did in a tag header:
 * path (which state ran), err (parser_error as a small number), look (lookahead). */
#include <core.p4>
#include <v1model.p4>

error { BadVal }

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header h_t {
    bit<8>  kind;
    bit<8>  sub;
    bit<16> val;
}

header tag_t {
    bit<8> path;
    bit<8> err;
    bit<8> look;
    bit<8> first;
}

header item_t {
    bit<7> data;
    bit<1> bos;
}

struct metadata {
    bit<8> path;
    bit<8> look;
}

struct headers {
    ethernet_t ethernet;
    tag_t      tag;
    h_t        h;
    item_t[3]  items;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88B6: parse_h;
            0x88B7: parse_items;
            0x88B8: parse_look;
            default: accept;
        }
    }
    state parse_h {
        packet.extract(hdr.h);
        transition select(hdr.h.kind, hdr.h.sub) {
            (0x10 &&& 0xF0, _): p_mask;
            (_, 5 .. 9): p_range;
            (0x20, 0x20): p_exact;
            (0x30, _): p_verify;
            (0x40, _): p_nomatch;
            default: accept;
        }
    }
    state p_mask {
        meta.path = 1;
        transition accept;
    }
    state p_range {
        meta.path = 2;
        transition accept;
    }
    state p_exact {
        meta.path = 3;
        transition accept;
    }
    state p_verify {
        meta.path = 4;
        verify(hdr.h.val == 0x1234, error.BadVal);
        transition accept;
    }
    state p_nomatch {
        transition select(hdr.h.val) {
            0x0001: accept;
        }
    }
    state parse_items {
        packet.extract(hdr.items.next);
        transition select(hdr.items.last.bos) {
            1: accept;
            default: parse_items;
        }
    }
    state parse_look {
        bit<16> peek = packet.lookahead<bit<16>>();
        meta.look = peek[15:8];
        packet.advance(16);
        packet.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.tag.setValid();
        hdr.tag.path = meta.path;
        hdr.tag.look = meta.look;
        hdr.tag.first = (bit<8>) hdr.items[0].data;
        if (standard_metadata.parser_error == error.NoError) {
            hdr.tag.err = 0;
        } else if (standard_metadata.parser_error == error.PacketTooShort) {
            hdr.tag.err = 1;
        } else if (standard_metadata.parser_error == error.NoMatch) {
            hdr.tag.err = 2;
        } else if (standard_metadata.parser_error == error.StackOutOfBounds) {
            hdr.tag.err = 3;
        } else if (standard_metadata.parser_error == error.BadVal) {
            hdr.tag.err = 4;
        } else {
            hdr.tag.err = 255;
        }
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
        packet.emit(hdr.tag);
        packet.emit(hdr.h);
        packet.emit(hdr.items);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
