/* softswitch compiled data path: one switch instance (included by the generated source
 * after its types: ss_pkt, SS_NTABLES, SS_NEXT). Everything a packet touches lives here,
 * so two switches running the same program in one process share nothing; the one
 * exception is ext: register and counter cells, which the Python Register/Counter
 * objects own (arrays they adopt as their storage) and this context borrows, so the
 * control plane and the packets change the same memory (see ss_ext_bind). */
#ifndef SS_CTX_H
#define SS_CTX_H

typedef struct ss_ctx {
    ss_table tables[SS_NTABLES > 0 ? SS_NTABLES : 1];
    ss_pre pre;
    ss_stats stats;
    ss_out out;
    ss_pkt pkt, copy;            /* the packet in flight; a multicast copy */
    void *ext[SS_NEXT > 0 ? SS_NEXT : 1];   /* register / counter cell arrays (borrowed) */
    uint8_t scratch[SS_SCRATCH];
    uint64_t now;                           /* the input frame's time (us): what meters see */
    int16_t mirror[SS_MIRROR_SESSIONS];     /* clone session -> port, -1: none (mirroring_add) */            /* data list + payload of a checksum *_with_payload */
} ss_ctx;

#endif
