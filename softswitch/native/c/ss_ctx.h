/* softswitch compiled data path: one switch instance (included by the generated source
 * after its types: ss_pkt, SS_NTABLES). Everything a packet touches lives here, so two
 * switches running the same program in one process share nothing. */
#ifndef SS_CTX_H
#define SS_CTX_H

typedef struct ss_ctx {
    ss_table tables[SS_NTABLES > 0 ? SS_NTABLES : 1];
    ss_pre pre;
    ss_stats stats;
    ss_out out;
    ss_pkt pkt, copy;            /* the packet in flight; a multicast copy */
} ss_ctx;

#endif
