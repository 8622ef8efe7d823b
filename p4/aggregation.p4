/* Hierarchical in-network aggregation for v1model (docs/protocol.md).
 *
 * Each switch serves aggregation points: (job, aggregation address) pairs in
 * table agg_points, each with its own slot range in the registers. Packets
 * addressed to an aggregation point are summed there; everything else, including
 * aggregation packets in transit to another switch, is routed by ipv4_lpm as in
 * p4/forward.p4 (same table and action names), so pings and TCP cross the same
 * switches.
 *
 * Behaviour per slot copy (SwitchML-style bitmap + counter + shadow copy, with
 * a generation number so that stale packets of earlier uses are recognised):
 *   contribution, new generation       -> reset the copy, store values
 *   contribution, new sender           -> add values
 *     ... and it completes the count   -> root: multicast RESULT to the children
 *                                         other: send partial sum up as child my_index
 *   contribution, duplicate, complete  -> result known: answer the sender with it
 *                                         else: re-send the partial sum upward
 *   contribution, duplicate, incomplete-> drop
 *   contribution, older generation     -> drop (stale)
 *   RESULT from parent for the current, completed generation
 *                                      -> store it (for later answers), multicast down
 *   contribution for a slot beyond the point's num_slots (the switch has no memory
 *   for it), point configured with agg_point_bypass
 *                                      -> forward it unaggregated to the parent as
 *                                         child bypass_base + sender (ATP-like
 *                                         fallback to the parameter server)
 * Lossless links between aggregation points (a point with an agg_repair entry): when
 * the point sends its partial sum up, an I2E clone of the completing contribution goes
 * into the switch's timer loop (a port whose frames come back after the repair
 * timeout: the emulation of a Tofino packet generator's timer, per slot copy). When it
 * comes back as a TIMER packet:
 *   copy still waits for the parent's result  -> re-send the stored partial sum up
 *                                               (on passes 1, 2, 4, 8, ... then every
 *                                               2^cap), loop again
 *   result here, or the copy moved on         -> drop (the timer ends)
 * so a partial sum or a result lost between two points is repaired by the switches.
 * Paths by slot range (agg_path): a contribution on its way to an aggregation address
 * (a partial sum sent up, or one in transit) may leave by a port chosen for its job,
 * destination and slot range instead of the route: a datacenter's partial sums spread
 * over several WAN paths (L3DML's rate-synchronization routing, this testbed's reading).
 * Registers are indexed by ((slot_base + slot) << 1) | shadow.
 * P4 has no loops, so the k per-value statements of accumulate / load_values /
 * store_values and the k value registers are written out (most of this file's
 * length); values 32..63 exist only with -DAGG_K=64.
 */
#include <core.p4>
#include <v1model.p4>
#include "include/net_headers.p4"
#include "include/agg_headers.p4"

#ifndef AGG_SLOTS
#define AGG_SLOTS 2048                 /* slots per switch, shared by all jobs and levels */
#endif
#define AGG_REGISTER_SIZE (2 * AGG_SLOTS)

/* indices of counter agg_events: what happened to aggregation packets */
const bit<32> EV_NEW          = 0;   /* first contribution of a generation */
const bit<32> EV_ADD          = 1;   /* further contribution */
const bit<32> EV_COMPLETE     = 2;   /* all children counted */
const bit<32> EV_UP           = 3;   /* partial sum sent to the parent */
const bit<32> EV_MCAST        = 4;   /* result multicast to the children */
const bit<32> EV_DUP_ANSWER   = 5;   /* duplicate answered with the stored result */
const bit<32> EV_DUP_RESEND   = 6;   /* duplicate made the partial sum go up again */
const bit<32> EV_DUP_DROP     = 7;   /* duplicate of an incomplete slot */
const bit<32> EV_STALE        = 8;   /* older generation */
const bit<32> EV_RESULT_STORE = 9;   /* result from the parent kept */
const bit<32> EV_RESULT_DROP  = 10;  /* result that matches no completed generation */
const bit<32> EV_BAD          = 11;  /* malformed: k, slot range, shadow bit, sender */
const bit<32> EV_BYPASS       = 12;  /* slot beyond num_slots forwarded to the parent as is */
const bit<32> EV_TIMER_DONE   = 13;  /* a repair timer found the result in (or the copy reused) */
const bit<32> EV_REPAIR       = 14;  /* a repair timer re-sent the partial sum up */
const bit<32> EV_REPAIR_GIVEUP = 15; /* a repair timer ended after REPAIR_MAX_PASSES passes */

const bit<8> REPAIR_MAX_PASSES = 254; /* then the workers' retransmissions take over */
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;

const bit<8> ST_RESULT_VALID = 0x01; /* r_state: the copy holds the final result */

struct agg_meta_t {
    bit<1>  is_root;
    bit<32> slot_base;
    bit<32> num_slots;
    bit<8>  fan_in;
    bit<16> mcast_grp;
    bit<32> parent_addr;
    bit<8>  my_index;
    bit<8>  parent_fan_in;
    bit<8>  bypass_base;   /* a bypassed worker is child bypass_base + sender at the parent */
    bit<8>  bypass_fan_in; /* 0: no bypass (slots beyond num_slots are malformed) */
    bit<1>  repair;       /* agg_repair hit: this point repairs the link to its parent */
    bit<9>  timer_port;   /* the port the timer loop delivers TIMER packets on */
    bit<32> timer_session;/* clone session whose port is the timer loop's entrance */
    bit<8>  backoff_mask; /* after the powers of two, re-send every backoff_mask + 1 passes */
    bit<32> idx;
    bit<32> cur_gen;
    bit<32> bitmap;
    bit<8>  count;
    bit<8>  state;
    bit<32> sender_bit;
    bit<32> keep;         /* 0: overwrite the copy (new generation); all ones: add */
    bit<1>  route;        /* route the packet by hdr.ipv4.dstAddr */
    bit<1>  mcast;        /* result multicast: egress sets each child's address */
}

struct metadata {
    agg_meta_t agg;
}

struct headers {
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    udp_t        udp;
    agg_t        agg;
    agg_values_t vals;
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
        /* Options and fragments: not ours, routed as plain IPv4. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (5, 0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            AGG_UDP_PORT: parse_agg;
            default: accept;
        }
    }
    state parse_agg {
        packet.extract(hdr.agg);
        packet.extract(hdr.vals);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(AGG_REGISTER_SIZE) r_gen;
    register<bit<32>>(AGG_REGISTER_SIZE) r_bitmap;
    register<bit<8>>(AGG_REGISTER_SIZE)  r_count;
    register<bit<8>>(AGG_REGISTER_SIZE)  r_state;   /* ST_RESULT_VALID | AGG_FLAG_OVERFLOW */
    register<bit<32>>(AGG_REGISTER_SIZE) r_v00;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v01;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v02;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v03;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v04;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v05;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v06;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v07;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v08;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v09;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v10;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v11;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v12;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v13;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v14;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v15;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v16;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v17;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v18;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v19;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v20;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v21;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v22;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v23;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v24;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v25;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v26;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v27;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v28;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v29;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v30;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v31;
#if AGG_K == 64
    register<bit<32>>(AGG_REGISTER_SIZE) r_v32;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v33;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v34;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v35;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v36;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v37;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v38;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v39;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v40;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v41;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v42;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v43;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v44;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v45;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v46;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v47;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v48;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v49;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v50;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v51;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v52;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v53;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v54;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v55;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v56;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v57;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v58;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v59;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v60;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v61;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v62;
    register<bit<32>>(AGG_REGISTER_SIZE) r_v63;
#endif
    counter(16, CounterType.packets) agg_events;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action ipv4_forward(macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action multicast(bit<16> grp) {
        standard_metadata.mcast_grp = grp;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; multicast; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }

    /* A contribution's next hop by job, destination and slot range, ahead of the route
     * (a miss: the route). Keyed by the ingress port too, so that a transit switch steers
     * the streams it forwards without steering its own partial sums (port ternary). */
    table agg_path {
        key = {
            hdr.agg.job: exact;
            hdr.ipv4.dstAddr: exact;
            hdr.agg.slot: range;
            standard_metadata.ingress_port: ternary;
        }
        actions = { ipv4_forward; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    /* One entry per aggregation point this switch hosts. */
    action agg_point(bit<1> is_root, bit<32> slot_base, bit<32> num_slots, bit<8> fan_in,
                     bit<16> mcast_grp, bit<32> parent_addr, bit<8> my_index,
                     bit<8> parent_fan_in) {
        meta.agg.is_root = is_root;
        meta.agg.slot_base = slot_base;
        meta.agg.num_slots = num_slots;
        meta.agg.fan_in = fan_in;
        meta.agg.mcast_grp = mcast_grp;
        meta.agg.parent_addr = parent_addr;
        meta.agg.my_index = my_index;
        meta.agg.parent_fan_in = parent_fan_in;
        meta.agg.bypass_base = 0;
        meta.agg.bypass_fan_in = 0;
    }
    /* A point with memory for fewer slots than the job's window (num_slots < window):
     * contributions for the other slots go on to the parent (a parameter server host
     * that sums them per worker), as ATP falls back to the PS when no aggregator is free.
     * A second action rather than two more parameters of agg_point, so that entries of
     * points without bypass stay as they were. */
    action agg_point_bypass(bit<1> is_root, bit<32> slot_base, bit<32> num_slots,
                            bit<8> fan_in, bit<16> mcast_grp, bit<32> parent_addr,
                            bit<8> my_index, bit<8> parent_fan_in,
                            bit<8> bypass_base, bit<8> bypass_fan_in) {
        agg_point(is_root, slot_base, num_slots, fan_in, mcast_grp, parent_addr, my_index,
                  parent_fan_in);
        meta.agg.bypass_base = bypass_base;
        meta.agg.bypass_fan_in = bypass_fan_in;
    }
    table agg_points {
        key = { hdr.agg.job: exact; hdr.ipv4.dstAddr: exact; }
        actions = { agg_point; agg_point_bypass; NoAction; }
        size = 256;
        default_action = NoAction();
    }

    /* Points that repair the link to their parent themselves (docs/protocol.md,
     * "Lossless links between aggregation points"). A separate table, so that points
     * without repair (and programs driven by older control planes) stay as they were. */
    action repair_point(bit<9> timer_port, bit<32> timer_session, bit<8> backoff_mask) {
        meta.agg.repair = 1;
        meta.agg.timer_port = timer_port;
        meta.agg.timer_session = timer_session;
        meta.agg.backoff_mask = backoff_mask;
    }
    table agg_repair {
        key = { hdr.agg.job: exact; hdr.ipv4.dstAddr: exact; }
        actions = { repair_point; NoAction; }
        size = 256;
        default_action = NoAction();
    }

    action accumulate() {
        bit<32> tmp;
        r_v00.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v00; r_v00.write(meta.agg.idx, tmp); hdr.vals.v00 = tmp;
        r_v01.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v01; r_v01.write(meta.agg.idx, tmp); hdr.vals.v01 = tmp;
        r_v02.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v02; r_v02.write(meta.agg.idx, tmp); hdr.vals.v02 = tmp;
        r_v03.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v03; r_v03.write(meta.agg.idx, tmp); hdr.vals.v03 = tmp;
        r_v04.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v04; r_v04.write(meta.agg.idx, tmp); hdr.vals.v04 = tmp;
        r_v05.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v05; r_v05.write(meta.agg.idx, tmp); hdr.vals.v05 = tmp;
        r_v06.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v06; r_v06.write(meta.agg.idx, tmp); hdr.vals.v06 = tmp;
        r_v07.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v07; r_v07.write(meta.agg.idx, tmp); hdr.vals.v07 = tmp;
        r_v08.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v08; r_v08.write(meta.agg.idx, tmp); hdr.vals.v08 = tmp;
        r_v09.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v09; r_v09.write(meta.agg.idx, tmp); hdr.vals.v09 = tmp;
        r_v10.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v10; r_v10.write(meta.agg.idx, tmp); hdr.vals.v10 = tmp;
        r_v11.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v11; r_v11.write(meta.agg.idx, tmp); hdr.vals.v11 = tmp;
        r_v12.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v12; r_v12.write(meta.agg.idx, tmp); hdr.vals.v12 = tmp;
        r_v13.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v13; r_v13.write(meta.agg.idx, tmp); hdr.vals.v13 = tmp;
        r_v14.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v14; r_v14.write(meta.agg.idx, tmp); hdr.vals.v14 = tmp;
        r_v15.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v15; r_v15.write(meta.agg.idx, tmp); hdr.vals.v15 = tmp;
        r_v16.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v16; r_v16.write(meta.agg.idx, tmp); hdr.vals.v16 = tmp;
        r_v17.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v17; r_v17.write(meta.agg.idx, tmp); hdr.vals.v17 = tmp;
        r_v18.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v18; r_v18.write(meta.agg.idx, tmp); hdr.vals.v18 = tmp;
        r_v19.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v19; r_v19.write(meta.agg.idx, tmp); hdr.vals.v19 = tmp;
        r_v20.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v20; r_v20.write(meta.agg.idx, tmp); hdr.vals.v20 = tmp;
        r_v21.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v21; r_v21.write(meta.agg.idx, tmp); hdr.vals.v21 = tmp;
        r_v22.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v22; r_v22.write(meta.agg.idx, tmp); hdr.vals.v22 = tmp;
        r_v23.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v23; r_v23.write(meta.agg.idx, tmp); hdr.vals.v23 = tmp;
        r_v24.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v24; r_v24.write(meta.agg.idx, tmp); hdr.vals.v24 = tmp;
        r_v25.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v25; r_v25.write(meta.agg.idx, tmp); hdr.vals.v25 = tmp;
        r_v26.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v26; r_v26.write(meta.agg.idx, tmp); hdr.vals.v26 = tmp;
        r_v27.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v27; r_v27.write(meta.agg.idx, tmp); hdr.vals.v27 = tmp;
        r_v28.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v28; r_v28.write(meta.agg.idx, tmp); hdr.vals.v28 = tmp;
        r_v29.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v29; r_v29.write(meta.agg.idx, tmp); hdr.vals.v29 = tmp;
        r_v30.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v30; r_v30.write(meta.agg.idx, tmp); hdr.vals.v30 = tmp;
        r_v31.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v31; r_v31.write(meta.agg.idx, tmp); hdr.vals.v31 = tmp;
#if AGG_K == 64
        r_v32.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v32; r_v32.write(meta.agg.idx, tmp); hdr.vals.v32 = tmp;
        r_v33.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v33; r_v33.write(meta.agg.idx, tmp); hdr.vals.v33 = tmp;
        r_v34.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v34; r_v34.write(meta.agg.idx, tmp); hdr.vals.v34 = tmp;
        r_v35.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v35; r_v35.write(meta.agg.idx, tmp); hdr.vals.v35 = tmp;
        r_v36.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v36; r_v36.write(meta.agg.idx, tmp); hdr.vals.v36 = tmp;
        r_v37.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v37; r_v37.write(meta.agg.idx, tmp); hdr.vals.v37 = tmp;
        r_v38.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v38; r_v38.write(meta.agg.idx, tmp); hdr.vals.v38 = tmp;
        r_v39.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v39; r_v39.write(meta.agg.idx, tmp); hdr.vals.v39 = tmp;
        r_v40.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v40; r_v40.write(meta.agg.idx, tmp); hdr.vals.v40 = tmp;
        r_v41.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v41; r_v41.write(meta.agg.idx, tmp); hdr.vals.v41 = tmp;
        r_v42.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v42; r_v42.write(meta.agg.idx, tmp); hdr.vals.v42 = tmp;
        r_v43.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v43; r_v43.write(meta.agg.idx, tmp); hdr.vals.v43 = tmp;
        r_v44.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v44; r_v44.write(meta.agg.idx, tmp); hdr.vals.v44 = tmp;
        r_v45.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v45; r_v45.write(meta.agg.idx, tmp); hdr.vals.v45 = tmp;
        r_v46.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v46; r_v46.write(meta.agg.idx, tmp); hdr.vals.v46 = tmp;
        r_v47.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v47; r_v47.write(meta.agg.idx, tmp); hdr.vals.v47 = tmp;
        r_v48.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v48; r_v48.write(meta.agg.idx, tmp); hdr.vals.v48 = tmp;
        r_v49.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v49; r_v49.write(meta.agg.idx, tmp); hdr.vals.v49 = tmp;
        r_v50.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v50; r_v50.write(meta.agg.idx, tmp); hdr.vals.v50 = tmp;
        r_v51.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v51; r_v51.write(meta.agg.idx, tmp); hdr.vals.v51 = tmp;
        r_v52.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v52; r_v52.write(meta.agg.idx, tmp); hdr.vals.v52 = tmp;
        r_v53.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v53; r_v53.write(meta.agg.idx, tmp); hdr.vals.v53 = tmp;
        r_v54.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v54; r_v54.write(meta.agg.idx, tmp); hdr.vals.v54 = tmp;
        r_v55.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v55; r_v55.write(meta.agg.idx, tmp); hdr.vals.v55 = tmp;
        r_v56.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v56; r_v56.write(meta.agg.idx, tmp); hdr.vals.v56 = tmp;
        r_v57.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v57; r_v57.write(meta.agg.idx, tmp); hdr.vals.v57 = tmp;
        r_v58.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v58; r_v58.write(meta.agg.idx, tmp); hdr.vals.v58 = tmp;
        r_v59.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v59; r_v59.write(meta.agg.idx, tmp); hdr.vals.v59 = tmp;
        r_v60.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v60; r_v60.write(meta.agg.idx, tmp); hdr.vals.v60 = tmp;
        r_v61.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v61; r_v61.write(meta.agg.idx, tmp); hdr.vals.v61 = tmp;
        r_v62.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v62; r_v62.write(meta.agg.idx, tmp); hdr.vals.v62 = tmp;
        r_v63.read(tmp, meta.agg.idx); tmp = (tmp & meta.agg.keep) + hdr.vals.v63; r_v63.write(meta.agg.idx, tmp); hdr.vals.v63 = tmp;
#endif
    }
    action load_values() {
        r_v00.read(hdr.vals.v00, meta.agg.idx);
        r_v01.read(hdr.vals.v01, meta.agg.idx);
        r_v02.read(hdr.vals.v02, meta.agg.idx);
        r_v03.read(hdr.vals.v03, meta.agg.idx);
        r_v04.read(hdr.vals.v04, meta.agg.idx);
        r_v05.read(hdr.vals.v05, meta.agg.idx);
        r_v06.read(hdr.vals.v06, meta.agg.idx);
        r_v07.read(hdr.vals.v07, meta.agg.idx);
        r_v08.read(hdr.vals.v08, meta.agg.idx);
        r_v09.read(hdr.vals.v09, meta.agg.idx);
        r_v10.read(hdr.vals.v10, meta.agg.idx);
        r_v11.read(hdr.vals.v11, meta.agg.idx);
        r_v12.read(hdr.vals.v12, meta.agg.idx);
        r_v13.read(hdr.vals.v13, meta.agg.idx);
        r_v14.read(hdr.vals.v14, meta.agg.idx);
        r_v15.read(hdr.vals.v15, meta.agg.idx);
        r_v16.read(hdr.vals.v16, meta.agg.idx);
        r_v17.read(hdr.vals.v17, meta.agg.idx);
        r_v18.read(hdr.vals.v18, meta.agg.idx);
        r_v19.read(hdr.vals.v19, meta.agg.idx);
        r_v20.read(hdr.vals.v20, meta.agg.idx);
        r_v21.read(hdr.vals.v21, meta.agg.idx);
        r_v22.read(hdr.vals.v22, meta.agg.idx);
        r_v23.read(hdr.vals.v23, meta.agg.idx);
        r_v24.read(hdr.vals.v24, meta.agg.idx);
        r_v25.read(hdr.vals.v25, meta.agg.idx);
        r_v26.read(hdr.vals.v26, meta.agg.idx);
        r_v27.read(hdr.vals.v27, meta.agg.idx);
        r_v28.read(hdr.vals.v28, meta.agg.idx);
        r_v29.read(hdr.vals.v29, meta.agg.idx);
        r_v30.read(hdr.vals.v30, meta.agg.idx);
        r_v31.read(hdr.vals.v31, meta.agg.idx);
#if AGG_K == 64
        r_v32.read(hdr.vals.v32, meta.agg.idx);
        r_v33.read(hdr.vals.v33, meta.agg.idx);
        r_v34.read(hdr.vals.v34, meta.agg.idx);
        r_v35.read(hdr.vals.v35, meta.agg.idx);
        r_v36.read(hdr.vals.v36, meta.agg.idx);
        r_v37.read(hdr.vals.v37, meta.agg.idx);
        r_v38.read(hdr.vals.v38, meta.agg.idx);
        r_v39.read(hdr.vals.v39, meta.agg.idx);
        r_v40.read(hdr.vals.v40, meta.agg.idx);
        r_v41.read(hdr.vals.v41, meta.agg.idx);
        r_v42.read(hdr.vals.v42, meta.agg.idx);
        r_v43.read(hdr.vals.v43, meta.agg.idx);
        r_v44.read(hdr.vals.v44, meta.agg.idx);
        r_v45.read(hdr.vals.v45, meta.agg.idx);
        r_v46.read(hdr.vals.v46, meta.agg.idx);
        r_v47.read(hdr.vals.v47, meta.agg.idx);
        r_v48.read(hdr.vals.v48, meta.agg.idx);
        r_v49.read(hdr.vals.v49, meta.agg.idx);
        r_v50.read(hdr.vals.v50, meta.agg.idx);
        r_v51.read(hdr.vals.v51, meta.agg.idx);
        r_v52.read(hdr.vals.v52, meta.agg.idx);
        r_v53.read(hdr.vals.v53, meta.agg.idx);
        r_v54.read(hdr.vals.v54, meta.agg.idx);
        r_v55.read(hdr.vals.v55, meta.agg.idx);
        r_v56.read(hdr.vals.v56, meta.agg.idx);
        r_v57.read(hdr.vals.v57, meta.agg.idx);
        r_v58.read(hdr.vals.v58, meta.agg.idx);
        r_v59.read(hdr.vals.v59, meta.agg.idx);
        r_v60.read(hdr.vals.v60, meta.agg.idx);
        r_v61.read(hdr.vals.v61, meta.agg.idx);
        r_v62.read(hdr.vals.v62, meta.agg.idx);
        r_v63.read(hdr.vals.v63, meta.agg.idx);
#endif
    }
    action store_values() {
        r_v00.write(meta.agg.idx, hdr.vals.v00);
        r_v01.write(meta.agg.idx, hdr.vals.v01);
        r_v02.write(meta.agg.idx, hdr.vals.v02);
        r_v03.write(meta.agg.idx, hdr.vals.v03);
        r_v04.write(meta.agg.idx, hdr.vals.v04);
        r_v05.write(meta.agg.idx, hdr.vals.v05);
        r_v06.write(meta.agg.idx, hdr.vals.v06);
        r_v07.write(meta.agg.idx, hdr.vals.v07);
        r_v08.write(meta.agg.idx, hdr.vals.v08);
        r_v09.write(meta.agg.idx, hdr.vals.v09);
        r_v10.write(meta.agg.idx, hdr.vals.v10);
        r_v11.write(meta.agg.idx, hdr.vals.v11);
        r_v12.write(meta.agg.idx, hdr.vals.v12);
        r_v13.write(meta.agg.idx, hdr.vals.v13);
        r_v14.write(meta.agg.idx, hdr.vals.v14);
        r_v15.write(meta.agg.idx, hdr.vals.v15);
        r_v16.write(meta.agg.idx, hdr.vals.v16);
        r_v17.write(meta.agg.idx, hdr.vals.v17);
        r_v18.write(meta.agg.idx, hdr.vals.v18);
        r_v19.write(meta.agg.idx, hdr.vals.v19);
        r_v20.write(meta.agg.idx, hdr.vals.v20);
        r_v21.write(meta.agg.idx, hdr.vals.v21);
        r_v22.write(meta.agg.idx, hdr.vals.v22);
        r_v23.write(meta.agg.idx, hdr.vals.v23);
        r_v24.write(meta.agg.idx, hdr.vals.v24);
        r_v25.write(meta.agg.idx, hdr.vals.v25);
        r_v26.write(meta.agg.idx, hdr.vals.v26);
        r_v27.write(meta.agg.idx, hdr.vals.v27);
        r_v28.write(meta.agg.idx, hdr.vals.v28);
        r_v29.write(meta.agg.idx, hdr.vals.v29);
        r_v30.write(meta.agg.idx, hdr.vals.v30);
        r_v31.write(meta.agg.idx, hdr.vals.v31);
#if AGG_K == 64
        r_v32.write(meta.agg.idx, hdr.vals.v32);
        r_v33.write(meta.agg.idx, hdr.vals.v33);
        r_v34.write(meta.agg.idx, hdr.vals.v34);
        r_v35.write(meta.agg.idx, hdr.vals.v35);
        r_v36.write(meta.agg.idx, hdr.vals.v36);
        r_v37.write(meta.agg.idx, hdr.vals.v37);
        r_v38.write(meta.agg.idx, hdr.vals.v38);
        r_v39.write(meta.agg.idx, hdr.vals.v39);
        r_v40.write(meta.agg.idx, hdr.vals.v40);
        r_v41.write(meta.agg.idx, hdr.vals.v41);
        r_v42.write(meta.agg.idx, hdr.vals.v42);
        r_v43.write(meta.agg.idx, hdr.vals.v43);
        r_v44.write(meta.agg.idx, hdr.vals.v44);
        r_v45.write(meta.agg.idx, hdr.vals.v45);
        r_v46.write(meta.agg.idx, hdr.vals.v46);
        r_v47.write(meta.agg.idx, hdr.vals.v47);
        r_v48.write(meta.agg.idx, hdr.vals.v48);
        r_v49.write(meta.agg.idx, hdr.vals.v49);
        r_v50.write(meta.agg.idx, hdr.vals.v50);
        r_v51.write(meta.agg.idx, hdr.vals.v51);
        r_v52.write(meta.agg.idx, hdr.vals.v52);
        r_v53.write(meta.agg.idx, hdr.vals.v53);
        r_v54.write(meta.agg.idx, hdr.vals.v54);
        r_v55.write(meta.agg.idx, hdr.vals.v55);
        r_v56.write(meta.agg.idx, hdr.vals.v56);
        r_v57.write(meta.agg.idx, hdr.vals.v57);
        r_v58.write(meta.agg.idx, hdr.vals.v58);
        r_v59.write(meta.agg.idx, hdr.vals.v59);
        r_v60.write(meta.agg.idx, hdr.vals.v60);
        r_v61.write(meta.agg.idx, hdr.vals.v61);
        r_v62.write(meta.agg.idx, hdr.vals.v62);
        r_v63.write(meta.agg.idx, hdr.vals.v63);
#endif
    }

    /* The packet leaves as a fresh packet of this aggregation point. */
    action originate(bit<8> flags) {
        hdr.agg.flags = flags | (meta.agg.state & AGG_FLAG_OVERFLOW);
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;   /* our aggregation address */
        hdr.ipv4.ttl = 64;
        hdr.udp.checksum = 0;                  /* payload rewritten; 0 = none (IPv4) */
    }
    action send_up(bit<8> extra_flags) {
        originate(AGG_FLAG_DATA | extra_flags);
        hdr.ipv4.dstAddr = meta.agg.parent_addr;
        hdr.agg.sender = meta.agg.my_index;
        hdr.agg.fan_in = meta.agg.parent_fan_in;
        meta.agg.route = 1;
        agg_events.count(EV_UP);
    }
    /* A result keeps the RETX bit of what completed it (a re-sent contribution or
     * partial sum, or a parent's result that carried it): the workers take no round-trip
     * sample from it, since it waited for someone's loss recovery (Karn's rule over the
     * job; docs/protocol.md). */
    action multicast_result() {
        originate(AGG_FLAG_RESULT | (hdr.agg.flags & AGG_FLAG_RETX));
        hdr.agg.fan_in = meta.agg.fan_in;
        standard_metadata.mcast_grp = meta.agg.mcast_grp;
        meta.agg.mcast = 1;
        agg_events.count(EV_MCAST);
    }
    action answer_sender() {
        bit<32> sender_addr = hdr.ipv4.srcAddr;
        originate(AGG_FLAG_RESULT | AGG_FLAG_RETX);
        hdr.ipv4.dstAddr = sender_addr;
        hdr.agg.fan_in = meta.agg.fan_in;
        meta.agg.route = 1;
        agg_events.count(EV_DUP_ANSWER);
    }

    /* No memory here for this slot: the contribution goes on unaggregated, from its
     * worker (source address kept, so the parent answers a retransmission to it). */
    action bypass_to_parent() {
        hdr.ipv4.dstAddr = meta.agg.parent_addr;
        hdr.agg.sender = meta.agg.bypass_base + hdr.agg.sender;
        hdr.agg.fan_in = meta.agg.bypass_fan_in;
        hdr.udp.checksum = 0;                  /* header rewritten; 0 = none (IPv4) */
        meta.agg.route = 1;
        agg_events.count(EV_BYPASS);
    }

    /* A contribution was counted: write the slot state, then act on completion. */
    action count_contribution() {
        r_gen.write(meta.agg.idx, hdr.agg.gen);
        r_bitmap.write(meta.agg.idx, meta.agg.bitmap);
        r_count.write(meta.agg.idx, meta.agg.count);
        r_state.write(meta.agg.idx, meta.agg.state);
        accumulate();
    }

    apply {
        meta.agg.route = 1;
        meta.agg.mcast = 0;
        meta.agg.repair = 0;
        if (!hdr.ipv4.isValid() || standard_metadata.checksum_error == 1 || hdr.ipv4.ttl <= 1) {
            meta.agg.route = 0;
            drop();
        } else if (hdr.agg.isValid()) {
            if (agg_points.apply().hit) {
                meta.agg.route = 0;
                if (meta.agg.is_root == 0) {
                    agg_repair.apply();
                }
                bool timer = (hdr.agg.flags & AGG_FLAG_TIMER) != 0;
                bool well_formed = hdr.vals.isValid() && hdr.agg.k == AGG_K
                        && hdr.agg.gen != 0 && hdr.agg.shadow == hdr.agg.gen[0:0];
                if (well_formed && (bit<32>)hdr.agg.slot >= meta.agg.num_slots
                        && meta.agg.bypass_fan_in != 0 && meta.agg.is_root == 0
                        && (hdr.agg.flags & (AGG_FLAG_RESULT | AGG_FLAG_TIMER)) == 0) {
                    /* Results of bypassed slots come from the parent to the workers'
                     * addresses and are routed, so only contributions get here. */
                    if (hdr.agg.sender >= meta.agg.fan_in || hdr.agg.sender >= 32) {
                        agg_events.count(EV_BAD);
                        drop();
                    } else {
                        bypass_to_parent();
                    }
                } else if (!well_formed
                        || (bit<32>)hdr.agg.slot >= meta.agg.num_slots
                        || meta.agg.slot_base + (bit<32>)hdr.agg.slot >= AGG_SLOTS
                        || (timer && (meta.agg.repair == 0
                                      || standard_metadata.ingress_port != meta.agg.timer_port))) {
                    /* A TIMER packet is only ever this switch's own, off its timer loop. */
                    agg_events.count(EV_BAD);
                    drop();
                } else {
                    meta.agg.idx = ((meta.agg.slot_base + (bit<32>)hdr.agg.slot) << 1)
                                   | (bit<32>)hdr.agg.shadow;
                    r_gen.read(meta.agg.cur_gen, meta.agg.idx);
                    r_bitmap.read(meta.agg.bitmap, meta.agg.idx);
                    r_count.read(meta.agg.count, meta.agg.idx);
                    r_state.read(meta.agg.state, meta.agg.idx);
                    if (timer) {
                        /* The copy still waits for its result only while it holds this
                         * generation, complete, without RESULT_VALID. Read-only: a timer
                         * never changes the copy, so it cannot break exactly-once. */
                        if (hdr.agg.gen == meta.agg.cur_gen && meta.agg.count == meta.agg.fan_in
                                && (meta.agg.state & ST_RESULT_VALID) == 0) {
                            bit<8> pass = hdr.agg.fan_in + 1;  /* fan_in counts earlier passes */
                            if (pass > REPAIR_MAX_PASSES) {
                                agg_events.count(EV_REPAIR_GIVEUP);
                                drop();
                            } else {
                                /* loop again (egress counts the pass), re-send on passes
                                 * 1, 2, 4, 8, ... and every backoff_mask + 1 */
                                clone(CloneType.I2E, meta.agg.timer_session);
                                if ((pass & (pass - 1)) == 0 || (pass & meta.agg.backoff_mask) == 0) {
                                    load_values();
                                    agg_events.count(EV_REPAIR);
                                    send_up(AGG_FLAG_RETX);
                                } else {
                                    drop();
                                }
                            }
                        } else {
                            agg_events.count(EV_TIMER_DONE);
                            drop();
                        }
                    } else if ((hdr.agg.flags & AGG_FLAG_RESULT) != 0) {
                        /* Result from the parent: only for our completed, current generation. */
                        if (meta.agg.is_root == 0 && hdr.agg.gen == meta.agg.cur_gen
                                && meta.agg.count == meta.agg.fan_in) {
                            meta.agg.state = meta.agg.state | ST_RESULT_VALID
                                             | (hdr.agg.flags & AGG_FLAG_OVERFLOW);
                            r_state.write(meta.agg.idx, meta.agg.state);
                            store_values();
                            agg_events.count(EV_RESULT_STORE);
                            multicast_result();
                        } else {
                            agg_events.count(EV_RESULT_DROP);
                            drop();
                        }
                    } else if (hdr.agg.sender >= meta.agg.fan_in || hdr.agg.sender >= 32) {
                        agg_events.count(EV_BAD);
                        drop();
                    } else {
                        meta.agg.sender_bit = (bit<32>)1 << hdr.agg.sender;
                        bit<1> counted = 0;
                        if (hdr.agg.gen > meta.agg.cur_gen) {
                            meta.agg.keep = 0;
                            meta.agg.bitmap = meta.agg.sender_bit;
                            meta.agg.count = 1;
                            meta.agg.state = hdr.agg.flags & AGG_FLAG_OVERFLOW;
                            agg_events.count(EV_NEW);
                            counted = 1;
                        } else if (hdr.agg.gen == meta.agg.cur_gen
                                   && (meta.agg.bitmap & meta.agg.sender_bit) == 0) {
                            meta.agg.keep = 0xFFFFFFFF;
                            meta.agg.bitmap = meta.agg.bitmap | meta.agg.sender_bit;
                            meta.agg.count = meta.agg.count + 1;
                            meta.agg.state = meta.agg.state | (hdr.agg.flags & AGG_FLAG_OVERFLOW);
                            agg_events.count(EV_ADD);
                            counted = 1;
                        } else if (hdr.agg.gen == meta.agg.cur_gen
                                   && meta.agg.count == meta.agg.fan_in) {
                            /* Duplicate of a completed slot: its sender missed what followed. */
                            load_values();
                            if (meta.agg.is_root == 1
                                    || (meta.agg.state & ST_RESULT_VALID) != 0) {
                                answer_sender();
                            } else {
                                agg_events.count(EV_DUP_RESEND);
                                send_up(AGG_FLAG_RETX);
                            }
                        } else if (hdr.agg.gen == meta.agg.cur_gen) {
                            agg_events.count(EV_DUP_DROP);
                            drop();
                        } else {
                            agg_events.count(EV_STALE);
                            drop();
                        }
                        if (counted == 1) {
                            count_contribution();
                            if (meta.agg.count == meta.agg.fan_in) {
                                agg_events.count(EV_COMPLETE);
                                if (meta.agg.is_root == 1) {
                                    multicast_result();
                                } else {
                                    send_up(hdr.agg.flags & AGG_FLAG_RETX);
                                    if (meta.agg.repair == 1) {
                                        /* start the copy's repair timer: the completing
                                         * contribution, as received, names the copy */
                                        clone(CloneType.I2E, meta.agg.timer_session);
                                    }
                                }
                            } else {
                                drop();
                            }
                        }
                    }
                }
            }
        }
        if (meta.agg.route == 1) {
            if (hdr.agg.isValid() && (hdr.agg.flags & AGG_FLAG_DATA) != 0) {
                if (agg_path.apply().hit) {
                    /* steered by slot range */
                } else {
                    ipv4_lpm.apply();
                }
            } else {
                ipv4_lpm.apply();
            }
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    /* Each replica of a multicast result is addressed to one child. */
    action set_child(ip4Addr_t addr, macAddr_t mac) {
        hdr.ipv4.dstAddr = addr;
        hdr.ethernet.dstAddr = mac;
    }
    table agg_children {
        key = { standard_metadata.egress_rid: exact; }
        actions = { set_child; drop; }
        size = 1024;
        default_action = drop();
    }
    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE
                && hdr.agg.isValid()) {
            /* Into the timer loop: the clone of a completing contribution becomes the
             * copy's timer (pass count 0 in fan_in); a timer's clone counts one more pass. */
            if ((hdr.agg.flags & AGG_FLAG_TIMER) == 0) {
                hdr.agg.flags = AGG_FLAG_TIMER;
                hdr.agg.fan_in = 0;
            } else {
                hdr.agg.fan_in = hdr.agg.fan_in + 1;
            }
        } else if (meta.agg.mcast == 1) {
            agg_children.apply();
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.agg);
        packet.emit(hdr.vals);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
