/* softswitch compiled data path: simple_switch's pipeline order around the generated
 * blocks (included at the end of the generated source, which defines ss_pkt, the gen_*
 * functions, gen_preserve, SS_HDR_MAX, the SS_HAS_* switches and gen_init_tables):
 *
 *   parser -> verify checksum -> ingress -> traffic manager -> egress (per copy)
 *          -> compute checksum -> deparser (valid headers + unparsed payload)
 *
 * The traffic manager is the Python path's (softswitch/target/switch.py, the reference,
 * checked against BMv2), step for step: after ingress an I2E clone (the original frame
 * parsed again, instance_type 1, to the mirror session's port), then resubmit (the
 * original frame back to ingress, instance_type 6; ends the pass), multicast through the
 * PRE (one egress pass per replica, instance_type 5, egress_rid set), drop on egress_spec
 * 511, else unicast (instance_type 0, also after resubmit or recirculation). After
 * egress an E2E clone (the egress-modified headers, metadata reset, instance_type 2,
 * through egress again) runs before the original goes on; then drop on egress_spec 511,
 * compute checksum, deparse, truncate, and recirculate (the deparsed frame back to
 * ingress, instance_type 4) or output. Clones, resubmits and recirculations keep the
 * user metadata of their @field_list (gen_preserve), the rest starts at 0; a chain is
 * cut after SS_MAX_PASSES passes (loop_limit_drops). The rare passes run in functions of
 * their own, each with its own packet storage on the stack, so a pass never overwrites
 * one still in flight. Statistics are the Python Switch's, counted alike.
 */
#include <stdlib.h>

enum { SS_NORMAL = 0, SS_INGRESS_CLONE = 1, SS_EGRESS_CLONE = 2, SS_RECIRC = 4, SS_REPLICATION = 5,
       SS_RESUBMIT = 6 };
#define SS_MAX_PASSES 16          /* resubmit + recirculate + clone passes per input frame */

static void ss_ingress_pass(ss_ctx *x, ss_pkt *p, ss_pkt *cp, uint32_t port, const uint8_t *data,
                            uint32_t len, uint64_t now, uint32_t itype, int *passes);
SS_API void ss_mirror_load(ss_ctx *x, int n, const int32_t *ids, const int32_t *ports);

/* The mirror session's port, or -1 when the session is not configured. */
static inline int ss_session_port(const ss_ctx *x, uint64_t sess)
{
    return sess < SS_MIRROR_SESSIONS ? x->mirror[sess] : -1;
}

/* Parse one pass's frame into p (whose metadata the caller set: zero or preserved). */
static void ss_parse_pass(ss_ctx *x, ss_pkt *p, uint32_t port, const uint8_t *data, uint32_t len,
                          uint64_t now, uint32_t itype)
{
    p->sm.f_ingress_port = port;
    p->sm.f_instance_type = itype;
    p->sm.f_packet_length = len;
    p->_plen = len;
    p->sm.f_ingress_global_timestamp = now;
    uint32_t off = gen_parse(x, p, data, len);
    p->_pay = data + off;
    p->_paylen = len - off;
    if (p->sm.f_parser_error)
        x->stats.parser_errors++;
}

static void ss_egress(ss_ctx *x, ss_pkt *p, uint32_t eport, uint32_t itype, uint64_t now, int reuse, int *passes);

/* E2E clone: the egress-modified headers, the preserved metadata, fresh standard_metadata
 * but for packet_length, through egress to the session's port. */
__attribute__((noinline)) static void ss_clone_e2e(ss_ctx *x, const ss_pkt *p, uint32_t sport, uint64_t now,
                                                   int *passes)
{
    ss_pkt q;
    memset(&q, 0, sizeof q);
    q.hdr = p->hdr;
    gen_preserve(&q, p, p->_clone_fl);
    q.sm.f_packet_length = p->sm.f_packet_length;
    q._plen = p->_plen;
    q._pay = p->_pay;
    q._paylen = p->_paylen;
    q._trunc = p->_trunc;
    q._trunc_len = p->_trunc_len;
    ss_egress(x, &q, sport, SS_EGRESS_CLONE, now, 0, passes);
}

/* Recirculation: the deparsed frame (n bytes at pkt) back to ingress. */
__attribute__((noinline)) static void ss_recirculate(ss_ctx *x, const ss_pkt *p, const uint8_t *pkt, uint32_t n,
                                                     uint64_t now, int *passes)
{
    ss_pkt q[2];
    memset(&q[0], 0, sizeof q[0]);
    gen_preserve(&q[0], p, p->_recirc_fl);
    ss_ingress_pass(x, &q[0], &q[1], (uint32_t)p->sm.f_ingress_port, pkt, n, now, SS_RECIRC, passes);
}

/* One egress pass. reuse: the unicast copy, which keeps the ingress pass's requests
 * (recirculate, truncate) but not its clone (already served); other copies start with
 * none but truncate. */
static void ss_egress(ss_ctx *x, ss_pkt *p, uint32_t eport, uint32_t itype, uint64_t now, int reuse, int *passes)
{
    if (*passes > SS_MAX_PASSES) {
        x->stats.loop_limit_drops++;
        return;
    }
    p->sm.f_egress_port = eport;
    p->sm.f_instance_type = itype;
    p->sm.f_egress_spec = 0;             /* as the Python path: "not the drop port" */
    p->sm.f_enq_timestamp = now & 0xFFFFFFFFULL;
    p->sm.f_egress_global_timestamp = now;
    p->_clone = 0;
    if (!reuse) {                        /* a new packet context on the Python path */
        p->_recirc = 0;
        p->_dmeter = 0;
    }
    gen_egress(x, p);
    if (SS_HAS_CLONE && p->_clone) {
        int sport = ss_session_port(x, p->_clone_sess);
        if (sport >= 0) {
            x->stats.clones++;
            ++*passes;
            ss_clone_e2e(x, p, (uint32_t)sport, now, passes);
        }
    }
    if (p->sm.f_egress_spec == SS_DROP_PORT)
        return;
    gen_compute(x, p);
    int recirc = SS_HAS_RECIRC && p->_recirc;
    uint8_t *dst = recirc ? malloc(SS_HDR_MAX + (size_t)p->_paylen) : ss_out_reserve(&x->out, SS_HDR_MAX + (size_t)p->_paylen);
    if (!dst) {
        x->stats.errors++;
        return;
    }
    uint32_t n = gen_deparse(x, p, dst);
    memcpy(dst + n, p->_pay, p->_paylen);
    n += p->_paylen;
    if (SS_HAS_TRUNCATE && p->_trunc && p->_trunc_len < n)
        n = (uint32_t)p->_trunc_len;
    if (recirc) {
        x->stats.recirculations++;
        if (SS_HAS_ASSERT)
            x->recirc_bufs[x->nrecirc++] = dst;
        ss_recirculate(x, p, dst, n, now, passes);
        if (SS_HAS_ASSERT)
            x->nrecirc--;
        free(dst);
        return;
    }
    ss_out_commit(&x->out, (int32_t)eport, n);
}

/* I2E clone: the original frame parsed again with the preserved metadata, through
 * egress to the session's port. */
__attribute__((noinline)) static void ss_clone_i2e(ss_ctx *x, const ss_pkt *p, uint32_t port, const uint8_t *data,
                                                   uint32_t len, uint64_t now, int *passes)
{
    int sport = ss_session_port(x, p->_clone_sess);
    if (sport < 0)
        return;                          /* BMv2: a clone to an unconfigured session does nothing */
    x->stats.clones++;
    ++*passes;
    ss_pkt q;
    memset(&q, 0, sizeof q);
    gen_preserve(&q, p, p->_clone_fl);
    ss_parse_pass(x, &q, port, data, len, now, SS_INGRESS_CLONE);
    ss_egress(x, &q, (uint32_t)sport, SS_INGRESS_CLONE, now, 0, passes);
}

/* Resubmit: the original frame back to ingress with the preserved metadata. */
__attribute__((noinline)) static void ss_resubmit(ss_ctx *x, const ss_pkt *p, uint32_t port, const uint8_t *data,
                                                  uint32_t len, uint64_t now, int *passes)
{
    ss_pkt q[2];
    memset(&q[0], 0, sizeof q[0]);
    gen_preserve(&q[0], p, p->_resub_fl);
    ss_ingress_pass(x, &q[0], &q[1], port, data, len, now, SS_RESUBMIT, passes);
}

/* One ingress pass of p (metadata already set by the caller) and what the traffic
 * manager makes of it; cp is storage for this pass's multicast copies. */
static void ss_ingress_pass(ss_ctx *x, ss_pkt *p, ss_pkt *cp, uint32_t port, const uint8_t *data,
                            uint32_t len, uint64_t now, uint32_t itype, int *passes)
{
    if (++*passes > SS_MAX_PASSES) {
        x->stats.loop_limit_drops++;
        return;
    }
    ss_parse_pass(x, p, port, data, len, now, itype);
    gen_verify(x, p);
    if (p->sm.f_checksum_error)
        x->stats.checksum_errors++;
    gen_ingress(x, p);
    if (SS_HAS_CLONE && p->_clone)
        ss_clone_i2e(x, p, port, data, len, now, passes);
    if (SS_HAS_RESUBMIT && p->_resub) {
        x->stats.resubmits++;
        ss_resubmit(x, p, port, data, len, now, passes);
        return;
    }
    if (p->sm.f_mcast_grp) {
        uint32_t g = (uint32_t)p->sm.f_mcast_grp & 0xFFFF;
        int count = x->pre.count ? x->pre.count[g] : 0;
        const ss_replica *r = count ? x->pre.reps + x->pre.start[g] : NULL;
        for (int i = 0; i < count; i++) {
            x->stats.multicast_copies++;
            ss_pkt *q = p;
            if (i != count - 1) {        /* the last copy can use the original */
                *cp = *p;
                q = cp;
            }
            q->sm.f_egress_rid = r[i].rid;
            ss_egress(x, q, r[i].port, SS_REPLICATION, now, 0, passes);
        }
    } else if (p->sm.f_egress_spec != SS_DROP_PORT) {
        ss_egress(x, p, (uint32_t)p->sm.f_egress_spec, SS_NORMAL, now, 1, passes);
    }
}

/* Arms the assert/assume abort for one frame: returns 0 when armed, 1 when an assert
 * failed, after this frame's outputs and recirculation buffers were dropped (the Python
 * path raises AssertFailed out of the whole frame). A macro: setjmp's frame must stay. */
#define ss_guard(x, before) (setjmp((x)->abort) ? (ss_aborted((x), (before)), 1) : 0)

static void ss_aborted(ss_ctx *x, int before)
{
    while (x->nrecirc > 0)
        free(x->recirc_bufs[--x->nrecirc]);
    x->out.used = before ? x->out.frames[before - 1].off + x->out.frames[before - 1].len : 0;
    x->out.n = before;
    x->stats.assert_failures++;
    x->stats.dropped++;
}

/* One frame in: its outputs are appended to x->out; returns how many were added. */
static int ss_run_packet(ss_ctx *x, uint32_t port, const uint8_t *data, uint32_t len, uint64_t now)
{
    int before = x->out.n;
    x->stats.packets_in++;
    if (len > SS_MAX_PACKET) {
        x->stats.oversized++;
        x->stats.dropped++;
        return 0;
    }
    ss_pkt *p = &x->pkt;
    memset(p, 0, sizeof *p);
    x->now = now;
    int passes = 0;
    if (SS_HAS_ASSERT && ss_guard(x, before))
        return 0;
    ss_ingress_pass(x, p, &x->copy, port, data, len, now, SS_NORMAL, &passes);
    int added = x->out.n - before;
    x->stats.packets_out += (uint64_t)added;
    if (!added)
        x->stats.dropped++;
    return added;
}

SS_API ss_ctx *ss_new(void)
{
    ss_ctx *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    gen_init_tables(x);
    ss_mirror_load(x, 0, NULL, NULL);
    for (int i = 0; i < SS_NTABLES; i++)
    {
        x->tables[i].miss.action = -1;
        x->tables[i].miss.slot = -1;
    }
    return x;
}

SS_API void ss_delete(ss_ctx *x)
{
    if (!x)
        return;
    for (int i = 0; i < SS_NTABLES; i++)
        ss_table_free(&x->tables[i]);
    ss_pre_free(&x->pre);
    ss_out_free(&x->out);
    free(x);
}

SS_API ss_table *ss_table_at(ss_ctx *x, int i) { return (i >= 0 && i < SS_NTABLES) ? &x->tables[i] : NULL; }
SS_API ss_pre *ss_pre_of(ss_ctx *x) { return &x->pre; }
SS_API ss_stats *ss_stats_of(ss_ctx *x) { return &x->stats; }
SS_API ss_out *ss_out_of(ss_ctx *x) { return &x->out; }
SS_API int ss_table_count(void) { return SS_NTABLES; }
SS_API int ss_ext_count(void) { return SS_NEXT; }

/* The queued log_msg/digest calls (*n of them, *lost beyond the queue's room), which the
 * caller reads before ss_events_clear. */
SS_API const ss_event *ss_events_of(ss_ctx *x, int32_t *n, uint64_t *lost)
{
    *n = x->nevents;
    *lost = x->events_lost;
    return x->events;
}

SS_API void ss_events_clear(ss_ctx *x)
{
    x->nevents = 0;
    x->events_lost = 0;
}

/* Replace the mirror sessions (mirroring_add): n session ids and their ports. */
SS_API void ss_mirror_load(ss_ctx *x, int n, const int32_t *ids, const int32_t *ports)
{
    for (int i = 0; i < SS_MIRROR_SESSIONS; i++)
        x->mirror[i] = -1;
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < SS_MIRROR_SESSIONS)
            x->mirror[ids[i]] = (int16_t)ports[i];
}

/* Lend the context the cell array of extern slot i (a register's cells, a counter's
 * packets or bytes): generated code indexes it with the declared size checked, so the
 * array must hold that many cells of the generated element type and outlive the context
 * (the Python object that adopted it keeps it). Returns -1 for a slot that does not exist. */
SS_API int ss_ext_bind(ss_ctx *x, int i, void *cells)
{
    if (i < 0 || i >= SS_NEXT)
        return -1;
    x->ext[i] = cells;
    return 0;
}

/* One frame; its outputs replace what x->out held. */
SS_API int ss_process(ss_ctx *x, int32_t port, const uint8_t *data, uint32_t len, uint64_t now)
{
    x->out.n = 0;
    x->out.used = 0;
    return ss_run_packet(x, (uint32_t)port, data, len, now);
}

/* For the in-process benchmark: the npk frames, round after round, `rounds` times; the
 * outputs of each frame are discarded after it. Returns the number of output frames. */
SS_API uint64_t ss_process_rounds(ss_ctx *x, int npk, const int32_t *ports, const uint8_t *const *datas,
                                  const uint32_t *lens, uint64_t now, uint64_t rounds)
{
    uint64_t total = 0;
    for (uint64_t r = 0; r < rounds; r++)
        for (int i = 0; i < npk; i++) {
            x->out.n = 0;
            x->out.used = 0;
            total += (uint64_t)ss_run_packet(x, (uint32_t)ports[i], datas[i], lens[i], now++);
        }
    return total;
}

#include "ss_loop.c"
