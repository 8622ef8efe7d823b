/* Aggregation protocol headers (docs/protocol.md), shared by p4/aggregation.p4.
 *
 * Ethernet / IPv4 / UDP (dst port AGG_UDP_PORT) / agg_t (16 bytes) / agg_values_t
 * (AGG_K signed 32-bit values, two's complement, network byte order).
 * AGG_K is a compile-time constant: 32 by default, 64 with -DAGG_K=64.
 * The per-value fields are written out because P4 has no arrays of values
 * that registers can be indexed by; keep them in step with the registers.
 */
#ifndef AGG_HEADERS_P4
#define AGG_HEADERS_P4

#ifndef AGG_K
#define AGG_K 32
#endif
#if AGG_K != 32 && AGG_K != 64
#error AGG_K must be 32 or 64 (values per packet)
#endif

const bit<16> AGG_UDP_PORT = 48879;   /* 0xBEEF: source and destination port */

/* flags byte */
const bit<8> AGG_FLAG_DATA     = 0x01;   /* a contribution (worker or partial sum) */
const bit<8> AGG_FLAG_RESULT   = 0x02;   /* the aggregated result, travelling down */
const bit<8> AGG_FLAG_RETX     = 0x04;   /* sent again (worker timeout, switch re-send/answer) */
const bit<8> AGG_FLAG_OVERFLOW = 0x08;   /* some contribution was clipped by quantization */
const bit<8> AGG_FLAG_TIMER    = 0x10;   /* a repair timer of a slot copy, on a switch's timer loop */

header agg_t {
    bit<8>  job;        /* job id: selects the slot range and tree at each switch */
    bit<8>  flags;      /* AGG_FLAG_* */
    bit<1>  shadow;     /* which copy of the slot (always gen & 1) */
    bit<15> slot;       /* slot index inside the job's range */
    bit<32> gen;        /* generation: how many times the slot has been used, from 1 */
    bit<32> offset;     /* index of the first value in the flattened tensor */
    bit<8>  sender;     /* sender's child index at this aggregation point */
    bit<8>  fan_in;     /* children of the aggregation point the packet is addressed to */
    bit<8>  exponent;   /* quantization exponent e (signed): value = q * 2^-e */
    bit<8>  k;          /* number of values that follow; must equal AGG_K */
}

header agg_values_t {
    bit<32> v00;
    bit<32> v01;
    bit<32> v02;
    bit<32> v03;
    bit<32> v04;
    bit<32> v05;
    bit<32> v06;
    bit<32> v07;
    bit<32> v08;
    bit<32> v09;
    bit<32> v10;
    bit<32> v11;
    bit<32> v12;
    bit<32> v13;
    bit<32> v14;
    bit<32> v15;
    bit<32> v16;
    bit<32> v17;
    bit<32> v18;
    bit<32> v19;
    bit<32> v20;
    bit<32> v21;
    bit<32> v22;
    bit<32> v23;
    bit<32> v24;
    bit<32> v25;
    bit<32> v26;
    bit<32> v27;
    bit<32> v28;
    bit<32> v29;
    bit<32> v30;
    bit<32> v31;
#if AGG_K == 64
    bit<32> v32;
    bit<32> v33;
    bit<32> v34;
    bit<32> v35;
    bit<32> v36;
    bit<32> v37;
    bit<32> v38;
    bit<32> v39;
    bit<32> v40;
    bit<32> v41;
    bit<32> v42;
    bit<32> v43;
    bit<32> v44;
    bit<32> v45;
    bit<32> v46;
    bit<32> v47;
    bit<32> v48;
    bit<32> v49;
    bit<32> v50;
    bit<32> v51;
    bit<32> v52;
    bit<32> v53;
    bit<32> v54;
    bit<32> v55;
    bit<32> v56;
    bit<32> v57;
    bit<32> v58;
    bit<32> v59;
    bit<32> v60;
    bit<32> v61;
    bit<32> v62;
    bit<32> v63;
#endif
}

#endif
