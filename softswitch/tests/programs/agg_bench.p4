/* Aggregation-style benchmark program (SwitchML-like data path, no protocol
 * corner cases): per slot a bitmap and a counter register, and K int32 value
 * registers that every packet reads, adds to and writes back.
 * K = 32 (default) or 64: compile with -D K=64.
 * Used by softswitch/bench_inproc.py; the testbed's real aggregation program
 * lives in p4/. Header layout: Ethernet / IPv4 / UDP (dst port 48879) / agg_t / K x int32.
 */
#include <core.p4>
#include <v1model.p4>
#include "../../../p4/include/net_headers.p4"

#ifndef K
#define K 32
#endif
#define SLOTS 1024
#define AGG_PORT 48879

header agg_t {
    bit<16> slot;
    bit<8>  worker;
    bit<8>  fanin;
    bit<32> flags;
}

header vals_t {
    int<32> v00;
    int<32> v01;
    int<32> v02;
    int<32> v03;
    int<32> v04;
    int<32> v05;
    int<32> v06;
    int<32> v07;
    int<32> v08;
    int<32> v09;
    int<32> v10;
    int<32> v11;
    int<32> v12;
    int<32> v13;
    int<32> v14;
    int<32> v15;
    int<32> v16;
    int<32> v17;
    int<32> v18;
    int<32> v19;
    int<32> v20;
    int<32> v21;
    int<32> v22;
    int<32> v23;
    int<32> v24;
    int<32> v25;
    int<32> v26;
    int<32> v27;
    int<32> v28;
    int<32> v29;
    int<32> v30;
    int<32> v31;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    agg_t      agg;
    vals_t     vals0;
#if K == 64
    vals_t     vals1;
#endif
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            AGG_PORT: parse_agg;
            default: accept;
        }
    }
    state parse_agg {
        packet.extract(hdr.agg);
        packet.extract(hdr.vals0);
#if K == 64
        packet.extract(hdr.vals1);
#endif
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(SLOTS) bitmap;
    register<bit<8>>(SLOTS) count;
    register<int<32>>(SLOTS) r00;
    register<int<32>>(SLOTS) r01;
    register<int<32>>(SLOTS) r02;
    register<int<32>>(SLOTS) r03;
    register<int<32>>(SLOTS) r04;
    register<int<32>>(SLOTS) r05;
    register<int<32>>(SLOTS) r06;
    register<int<32>>(SLOTS) r07;
    register<int<32>>(SLOTS) r08;
    register<int<32>>(SLOTS) r09;
    register<int<32>>(SLOTS) r10;
    register<int<32>>(SLOTS) r11;
    register<int<32>>(SLOTS) r12;
    register<int<32>>(SLOTS) r13;
    register<int<32>>(SLOTS) r14;
    register<int<32>>(SLOTS) r15;
    register<int<32>>(SLOTS) r16;
    register<int<32>>(SLOTS) r17;
    register<int<32>>(SLOTS) r18;
    register<int<32>>(SLOTS) r19;
    register<int<32>>(SLOTS) r20;
    register<int<32>>(SLOTS) r21;
    register<int<32>>(SLOTS) r22;
    register<int<32>>(SLOTS) r23;
    register<int<32>>(SLOTS) r24;
    register<int<32>>(SLOTS) r25;
    register<int<32>>(SLOTS) r26;
    register<int<32>>(SLOTS) r27;
    register<int<32>>(SLOTS) r28;
    register<int<32>>(SLOTS) r29;
    register<int<32>>(SLOTS) r30;
    register<int<32>>(SLOTS) r31;
#if K == 64
    register<int<32>>(SLOTS) r32;
    register<int<32>>(SLOTS) r33;
    register<int<32>>(SLOTS) r34;
    register<int<32>>(SLOTS) r35;
    register<int<32>>(SLOTS) r36;
    register<int<32>>(SLOTS) r37;
    register<int<32>>(SLOTS) r38;
    register<int<32>>(SLOTS) r39;
    register<int<32>>(SLOTS) r40;
    register<int<32>>(SLOTS) r41;
    register<int<32>>(SLOTS) r42;
    register<int<32>>(SLOTS) r43;
    register<int<32>>(SLOTS) r44;
    register<int<32>>(SLOTS) r45;
    register<int<32>>(SLOTS) r46;
    register<int<32>>(SLOTS) r47;
    register<int<32>>(SLOTS) r48;
    register<int<32>>(SLOTS) r49;
    register<int<32>>(SLOTS) r50;
    register<int<32>>(SLOTS) r51;
    register<int<32>>(SLOTS) r52;
    register<int<32>>(SLOTS) r53;
    register<int<32>>(SLOTS) r54;
    register<int<32>>(SLOTS) r55;
    register<int<32>>(SLOTS) r56;
    register<int<32>>(SLOTS) r57;
    register<int<32>>(SLOTS) r58;
    register<int<32>>(SLOTS) r59;
    register<int<32>>(SLOTS) r60;
    register<int<32>>(SLOTS) r61;
    register<int<32>>(SLOTS) r62;
    register<int<32>>(SLOTS) r63;
#endif

    action drop() {
        mark_to_drop(standard_metadata);
    }

    apply {
        if (!hdr.agg.isValid()) {
            drop();
            return;
        }
        bit<32> slot = (bit<32>) hdr.agg.slot;
        bit<32> seen;
        bitmap.read(seen, slot);
        bit<32> mine = 32w1 << hdr.agg.worker[4:0];
        if ((seen & mine) != 0) {
            drop();   // duplicate: already counted
            return;
        }
        bit<8> n;
        count.read(n, slot);
        n = n + 1;
        int<32> t;
        // the first packet of a round overwrites the slot, later ones add to it
        if (n == 1) {
            r00.write(slot, hdr.vals0.v00);
            r01.write(slot, hdr.vals0.v01);
            r02.write(slot, hdr.vals0.v02);
            r03.write(slot, hdr.vals0.v03);
            r04.write(slot, hdr.vals0.v04);
            r05.write(slot, hdr.vals0.v05);
            r06.write(slot, hdr.vals0.v06);
            r07.write(slot, hdr.vals0.v07);
            r08.write(slot, hdr.vals0.v08);
            r09.write(slot, hdr.vals0.v09);
            r10.write(slot, hdr.vals0.v10);
            r11.write(slot, hdr.vals0.v11);
            r12.write(slot, hdr.vals0.v12);
            r13.write(slot, hdr.vals0.v13);
            r14.write(slot, hdr.vals0.v14);
            r15.write(slot, hdr.vals0.v15);
            r16.write(slot, hdr.vals0.v16);
            r17.write(slot, hdr.vals0.v17);
            r18.write(slot, hdr.vals0.v18);
            r19.write(slot, hdr.vals0.v19);
            r20.write(slot, hdr.vals0.v20);
            r21.write(slot, hdr.vals0.v21);
            r22.write(slot, hdr.vals0.v22);
            r23.write(slot, hdr.vals0.v23);
            r24.write(slot, hdr.vals0.v24);
            r25.write(slot, hdr.vals0.v25);
            r26.write(slot, hdr.vals0.v26);
            r27.write(slot, hdr.vals0.v27);
            r28.write(slot, hdr.vals0.v28);
            r29.write(slot, hdr.vals0.v29);
            r30.write(slot, hdr.vals0.v30);
            r31.write(slot, hdr.vals0.v31);
#if K == 64
            r32.write(slot, hdr.vals1.v00);
            r33.write(slot, hdr.vals1.v01);
            r34.write(slot, hdr.vals1.v02);
            r35.write(slot, hdr.vals1.v03);
            r36.write(slot, hdr.vals1.v04);
            r37.write(slot, hdr.vals1.v05);
            r38.write(slot, hdr.vals1.v06);
            r39.write(slot, hdr.vals1.v07);
            r40.write(slot, hdr.vals1.v08);
            r41.write(slot, hdr.vals1.v09);
            r42.write(slot, hdr.vals1.v10);
            r43.write(slot, hdr.vals1.v11);
            r44.write(slot, hdr.vals1.v12);
            r45.write(slot, hdr.vals1.v13);
            r46.write(slot, hdr.vals1.v14);
            r47.write(slot, hdr.vals1.v15);
            r48.write(slot, hdr.vals1.v16);
            r49.write(slot, hdr.vals1.v17);
            r50.write(slot, hdr.vals1.v18);
            r51.write(slot, hdr.vals1.v19);
            r52.write(slot, hdr.vals1.v20);
            r53.write(slot, hdr.vals1.v21);
            r54.write(slot, hdr.vals1.v22);
            r55.write(slot, hdr.vals1.v23);
            r56.write(slot, hdr.vals1.v24);
            r57.write(slot, hdr.vals1.v25);
            r58.write(slot, hdr.vals1.v26);
            r59.write(slot, hdr.vals1.v27);
            r60.write(slot, hdr.vals1.v28);
            r61.write(slot, hdr.vals1.v29);
            r62.write(slot, hdr.vals1.v30);
            r63.write(slot, hdr.vals1.v31);
#endif
        } else {
                r00.read(t, slot); t = t + hdr.vals0.v00; r00.write(slot, t); hdr.vals0.v00 = t;
                r01.read(t, slot); t = t + hdr.vals0.v01; r01.write(slot, t); hdr.vals0.v01 = t;
                r02.read(t, slot); t = t + hdr.vals0.v02; r02.write(slot, t); hdr.vals0.v02 = t;
                r03.read(t, slot); t = t + hdr.vals0.v03; r03.write(slot, t); hdr.vals0.v03 = t;
                r04.read(t, slot); t = t + hdr.vals0.v04; r04.write(slot, t); hdr.vals0.v04 = t;
                r05.read(t, slot); t = t + hdr.vals0.v05; r05.write(slot, t); hdr.vals0.v05 = t;
                r06.read(t, slot); t = t + hdr.vals0.v06; r06.write(slot, t); hdr.vals0.v06 = t;
                r07.read(t, slot); t = t + hdr.vals0.v07; r07.write(slot, t); hdr.vals0.v07 = t;
                r08.read(t, slot); t = t + hdr.vals0.v08; r08.write(slot, t); hdr.vals0.v08 = t;
                r09.read(t, slot); t = t + hdr.vals0.v09; r09.write(slot, t); hdr.vals0.v09 = t;
                r10.read(t, slot); t = t + hdr.vals0.v10; r10.write(slot, t); hdr.vals0.v10 = t;
                r11.read(t, slot); t = t + hdr.vals0.v11; r11.write(slot, t); hdr.vals0.v11 = t;
                r12.read(t, slot); t = t + hdr.vals0.v12; r12.write(slot, t); hdr.vals0.v12 = t;
                r13.read(t, slot); t = t + hdr.vals0.v13; r13.write(slot, t); hdr.vals0.v13 = t;
                r14.read(t, slot); t = t + hdr.vals0.v14; r14.write(slot, t); hdr.vals0.v14 = t;
                r15.read(t, slot); t = t + hdr.vals0.v15; r15.write(slot, t); hdr.vals0.v15 = t;
                r16.read(t, slot); t = t + hdr.vals0.v16; r16.write(slot, t); hdr.vals0.v16 = t;
                r17.read(t, slot); t = t + hdr.vals0.v17; r17.write(slot, t); hdr.vals0.v17 = t;
                r18.read(t, slot); t = t + hdr.vals0.v18; r18.write(slot, t); hdr.vals0.v18 = t;
                r19.read(t, slot); t = t + hdr.vals0.v19; r19.write(slot, t); hdr.vals0.v19 = t;
                r20.read(t, slot); t = t + hdr.vals0.v20; r20.write(slot, t); hdr.vals0.v20 = t;
                r21.read(t, slot); t = t + hdr.vals0.v21; r21.write(slot, t); hdr.vals0.v21 = t;
                r22.read(t, slot); t = t + hdr.vals0.v22; r22.write(slot, t); hdr.vals0.v22 = t;
                r23.read(t, slot); t = t + hdr.vals0.v23; r23.write(slot, t); hdr.vals0.v23 = t;
                r24.read(t, slot); t = t + hdr.vals0.v24; r24.write(slot, t); hdr.vals0.v24 = t;
                r25.read(t, slot); t = t + hdr.vals0.v25; r25.write(slot, t); hdr.vals0.v25 = t;
                r26.read(t, slot); t = t + hdr.vals0.v26; r26.write(slot, t); hdr.vals0.v26 = t;
                r27.read(t, slot); t = t + hdr.vals0.v27; r27.write(slot, t); hdr.vals0.v27 = t;
                r28.read(t, slot); t = t + hdr.vals0.v28; r28.write(slot, t); hdr.vals0.v28 = t;
                r29.read(t, slot); t = t + hdr.vals0.v29; r29.write(slot, t); hdr.vals0.v29 = t;
                r30.read(t, slot); t = t + hdr.vals0.v30; r30.write(slot, t); hdr.vals0.v30 = t;
                r31.read(t, slot); t = t + hdr.vals0.v31; r31.write(slot, t); hdr.vals0.v31 = t;
    #if K == 64
                r32.read(t, slot); t = t + hdr.vals1.v00; r32.write(slot, t); hdr.vals1.v00 = t;
                r33.read(t, slot); t = t + hdr.vals1.v01; r33.write(slot, t); hdr.vals1.v01 = t;
                r34.read(t, slot); t = t + hdr.vals1.v02; r34.write(slot, t); hdr.vals1.v02 = t;
                r35.read(t, slot); t = t + hdr.vals1.v03; r35.write(slot, t); hdr.vals1.v03 = t;
                r36.read(t, slot); t = t + hdr.vals1.v04; r36.write(slot, t); hdr.vals1.v04 = t;
                r37.read(t, slot); t = t + hdr.vals1.v05; r37.write(slot, t); hdr.vals1.v05 = t;
                r38.read(t, slot); t = t + hdr.vals1.v06; r38.write(slot, t); hdr.vals1.v06 = t;
                r39.read(t, slot); t = t + hdr.vals1.v07; r39.write(slot, t); hdr.vals1.v07 = t;
                r40.read(t, slot); t = t + hdr.vals1.v08; r40.write(slot, t); hdr.vals1.v08 = t;
                r41.read(t, slot); t = t + hdr.vals1.v09; r41.write(slot, t); hdr.vals1.v09 = t;
                r42.read(t, slot); t = t + hdr.vals1.v10; r42.write(slot, t); hdr.vals1.v10 = t;
                r43.read(t, slot); t = t + hdr.vals1.v11; r43.write(slot, t); hdr.vals1.v11 = t;
                r44.read(t, slot); t = t + hdr.vals1.v12; r44.write(slot, t); hdr.vals1.v12 = t;
                r45.read(t, slot); t = t + hdr.vals1.v13; r45.write(slot, t); hdr.vals1.v13 = t;
                r46.read(t, slot); t = t + hdr.vals1.v14; r46.write(slot, t); hdr.vals1.v14 = t;
                r47.read(t, slot); t = t + hdr.vals1.v15; r47.write(slot, t); hdr.vals1.v15 = t;
                r48.read(t, slot); t = t + hdr.vals1.v16; r48.write(slot, t); hdr.vals1.v16 = t;
                r49.read(t, slot); t = t + hdr.vals1.v17; r49.write(slot, t); hdr.vals1.v17 = t;
                r50.read(t, slot); t = t + hdr.vals1.v18; r50.write(slot, t); hdr.vals1.v18 = t;
                r51.read(t, slot); t = t + hdr.vals1.v19; r51.write(slot, t); hdr.vals1.v19 = t;
                r52.read(t, slot); t = t + hdr.vals1.v20; r52.write(slot, t); hdr.vals1.v20 = t;
                r53.read(t, slot); t = t + hdr.vals1.v21; r53.write(slot, t); hdr.vals1.v21 = t;
                r54.read(t, slot); t = t + hdr.vals1.v22; r54.write(slot, t); hdr.vals1.v22 = t;
                r55.read(t, slot); t = t + hdr.vals1.v23; r55.write(slot, t); hdr.vals1.v23 = t;
                r56.read(t, slot); t = t + hdr.vals1.v24; r56.write(slot, t); hdr.vals1.v24 = t;
                r57.read(t, slot); t = t + hdr.vals1.v25; r57.write(slot, t); hdr.vals1.v25 = t;
                r58.read(t, slot); t = t + hdr.vals1.v26; r58.write(slot, t); hdr.vals1.v26 = t;
                r59.read(t, slot); t = t + hdr.vals1.v27; r59.write(slot, t); hdr.vals1.v27 = t;
                r60.read(t, slot); t = t + hdr.vals1.v28; r60.write(slot, t); hdr.vals1.v28 = t;
                r61.read(t, slot); t = t + hdr.vals1.v29; r61.write(slot, t); hdr.vals1.v29 = t;
                r62.read(t, slot); t = t + hdr.vals1.v30; r62.write(slot, t); hdr.vals1.v30 = t;
                r63.read(t, slot); t = t + hdr.vals1.v31; r63.write(slot, t); hdr.vals1.v31 = t;
    #endif
        }
        if (n == hdr.agg.fanin) {
            bitmap.write(slot, 0);
            count.write(slot, 0);
            standard_metadata.egress_spec = standard_metadata.ingress_port;
        } else {
            bitmap.write(slot, seen | mine);
            count.write(slot, n);
            drop();
        }
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
        packet.emit(hdr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
