/* softswitch compiled data path: simple_switch's pipeline order around the generated
 * blocks (included at the end of the generated source, which defines ss_pkt, the gen_*
 * functions, SS_HDR_MAX and gen_init_tables):
 *
 *   parser -> verify checksum -> ingress -> traffic manager -> egress (per copy)
 *          -> compute checksum -> deparser (valid headers + unparsed payload)
 *
 * The traffic manager here covers what the compiled path supports: multicast through
 * the PRE (one egress pass per replica, instance_type 5, egress_rid set), drop on
 * egress_spec 511, else unicast (instance_type 0). Programs that clone, resubmit,
 * recirculate or truncate are refused by the generator and run on the Python path.
 * Statistics are the Python Switch's (softswitch/target/switch.py), counted alike.
 */
#include <stdlib.h>

enum { SS_NORMAL = 0, SS_REPLICATION = 5 };

static void ss_egress(ss_ctx *x, ss_pkt *p, uint32_t eport, uint32_t itype, uint64_t now,
                      const uint8_t *payload, uint32_t plen)
{
    p->sm.f_egress_port = eport;
    p->sm.f_instance_type = itype;
    p->sm.f_egress_spec = 0;             /* as the Python path: "not the drop port" */
    p->sm.f_enq_timestamp = now & 0xFFFFFFFFULL;
    p->sm.f_egress_global_timestamp = now;
    gen_egress(x, p);
    if (p->sm.f_egress_spec == SS_DROP_PORT)
        return;
    gen_compute(x, p);
    uint8_t *dst = ss_out_reserve(&x->out, SS_HDR_MAX + (size_t)plen);
    if (!dst) {
        x->stats.errors++;
        return;
    }
    uint32_t n = gen_deparse(x, p, dst);
    memcpy(dst + n, payload, plen);
    ss_out_commit(&x->out, (int32_t)eport, n + plen);
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
    p->sm.f_ingress_port = port;
    p->sm.f_instance_type = SS_NORMAL;
    p->sm.f_packet_length = len;
    p->_plen = len;
    p->sm.f_ingress_global_timestamp = now;
    uint32_t off = gen_parse(x, p, data, len);
    p->_pay = data + off;
    p->_paylen = len - off;
    if (p->sm.f_parser_error)
        x->stats.parser_errors++;
    gen_verify(x, p);
    if (p->sm.f_checksum_error)
        x->stats.checksum_errors++;
    gen_ingress(x, p);
    const uint8_t *payload = data + off;
    uint32_t plen = len - off;
    if (p->sm.f_mcast_grp) {
        uint32_t g = (uint32_t)p->sm.f_mcast_grp & 0xFFFF;
        int count = x->pre.count ? x->pre.count[g] : 0;
        const ss_replica *r = count ? x->pre.reps + x->pre.start[g] : NULL;
        for (int i = 0; i < count; i++) {
            x->stats.multicast_copies++;
            ss_pkt *q = p;
            if (i != count - 1) {        /* the last copy can use the original */
                x->copy = *p;
                q = &x->copy;
            }
            q->sm.f_egress_rid = r[i].rid;
            ss_egress(x, q, r[i].port, SS_REPLICATION, now, payload, plen);
        }
    } else if (p->sm.f_egress_spec != SS_DROP_PORT) {
        ss_egress(x, p, (uint32_t)p->sm.f_egress_spec, SS_NORMAL, now, payload, plen);
    }
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
