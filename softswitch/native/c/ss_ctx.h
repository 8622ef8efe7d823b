/* softswitch compiled data path: one switch instance (included by the generated source
 * after its types: ss_pkt, SS_NTABLES, SS_NEXT). Everything a packet touches lives here,
 * so two switches running the same program in one process share nothing; the one
 * exception is ext: register and counter cells, which the Python Register/Counter
 * objects own (arrays they adopt as their storage) and this context borrows, so the
 * control plane and the packets change the same memory (see ss_ext_bind). */
#ifndef SS_CTX_H
#define SS_CTX_H

#include <setjmp.h>

/* one log_msg or digest call: its call site and values, for the Python side to drain */
typedef struct {
    int64_t id;
    uint64_t vals[SS_EVENT_VALS];
} ss_event;

typedef struct ss_ctx {
    ss_table tables[SS_NTABLES > 0 ? SS_NTABLES : 1];
    ss_pre pre;
    ss_stats stats;
    ss_out out;
    ss_pkt pkt, copy;            /* the packet in flight; a multicast copy */
    void *ext[SS_NEXT > 0 ? SS_NEXT : 1];   /* register / counter cell arrays (borrowed) */
    uint8_t scratch[SS_SCRATCH];            /* data list + payload of a checksum *_with_payload */
    uint64_t now;                           /* the input frame's time (us): what meters see */
    ss_event events[SS_EVENT_CAP];          /* log_msg / digest calls since the last drain */
    int32_t nevents;
    uint64_t events_lost;                   /* calls beyond SS_EVENT_CAP before a drain */
    int16_t mirror[SS_MIRROR_SESSIONS];     /* clone session -> port, -1: none (mirroring_add) */
    jmp_buf abort;                          /* a failing assert/assume ends the frame here */
    uint8_t *recirc_bufs[SS_ASSERT_BUFS];   /* recirculation frames in flight (freed on abort) */
    int nrecirc;
} ss_ctx;

/* Room for one log_msg/digest call's values, or NULL (counted) when the queue is full. */
static inline ss_event *ss_event_push(ss_ctx *x, int64_t id)
{
    if (x->nevents >= SS_EVENT_CAP) {
        x->events_lost++;
        return NULL;
    }
    ss_event *e = &x->events[x->nevents++];
    e->id = id;
    return e;
}

/* assert/assume failed: the whole frame is dropped, as on the Python path (BMv2 would
 * abort the switch); the call site goes to the Python side to be logged. */
__attribute__((noreturn, noinline)) static void ss_assert_fail(ss_ctx *x, int64_t site)
{
    ss_event_push(x, site);
    longjmp(x->abort, 1);
}

#endif
