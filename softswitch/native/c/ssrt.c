/* softswitch compiled data path: building the C copies of tables and multicast groups
 * (see ssrt.h), and the output frame buffer. Runs between packets, never during one. */
#include <stdlib.h>
#include "ssrt.h"

void ss_table_free(ss_table *t)
{
    free(t->vals);
    free(t->masks);
    free(t->plens);
    free(t->res);
    free(t->slots);
    t->vals = t->masks = NULL;
    t->plens = t->slots = NULL;
    t->res = NULL;
    t->n = 0;
    t->cap = 0;
    t->nlens = 0;
}

static uint64_t prefix_mask(int width, int plen)
{
    if (plen == 0)
        return 0;
    return (ss_mask(width) >> (width - plen)) << (width - plen);
}

/* Replace the table's entries. vals/masks: n * nkeys; plens: n (lpm); actions: n;
 * args: n * SS_MAX_ARGS; eslots: n, each entry's handle slot (its direct counter cell). Ternary entries come in lookup order (lowest priority value
 * first, then lowest handle). Returns 0, or -1 when out of memory (table left empty). */
int ss_table_load(ss_table *t, int n, const uint64_t *vals, const uint64_t *masks, const int32_t *plens,
                  const int32_t *actions, const uint64_t *args, const int32_t *eslots)
{
    int nk = t->nkeys;
    ss_table_free(t);
    if (n == 0)
        return 0;
    t->vals = malloc(sizeof(uint64_t) * (size_t)n * nk);
    t->plens = calloc((size_t)n, sizeof(int32_t));
    t->res = calloc((size_t)n, sizeof(ss_result));
    if (t->kind == SS_TERNARY)
        t->masks = malloc(sizeof(uint64_t) * (size_t)n * nk);
    if (!t->vals || !t->plens || !t->res || (t->kind == SS_TERNARY && !t->masks)) {
        ss_table_free(t);
        return -1;
    }
    memcpy(t->vals, vals, sizeof(uint64_t) * (size_t)n * nk);
    if (t->kind == SS_TERNARY)
        memcpy(t->masks, masks, sizeof(uint64_t) * (size_t)n * nk);
    if (t->kind == SS_LPM)
        memcpy(t->plens, plens, sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) {
        t->res[i].action = actions[i];
        t->res[i].hit = 1;
        t->res[i].slot = eslots[i];
        memcpy(t->res[i].args, args + (size_t)i * SS_MAX_ARGS, sizeof(uint64_t) * SS_MAX_ARGS);
    }
    t->n = n;
    if (t->kind == SS_TERNARY)
        return 0;
    /* hash index: load factor <= 1/2 */
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)n)
        cap <<= 1;
    t->slots = malloc(sizeof(int32_t) * cap);
    if (!t->slots) {
        ss_table_free(t);
        return -1;
    }
    memset(t->slots, 0xff, sizeof(int32_t) * cap);
    t->cap = cap;
    for (int i = 0; i < n; i++) {
        uint32_t h = (uint32_t)ss_hash_key(t->vals + (size_t)i * nk, nk, t->plens[i]);
        while (t->slots[h & (cap - 1)] >= 0)
            h++;
        t->slots[h & (cap - 1)] = i;
    }
    if (t->kind == SS_EXACT) {
        t->nlens = 1;
        t->lens[0] = 0;
        return 0;
    }
    char present[65] = {0};
    for (int i = 0; i < n; i++)
        present[t->plens[i]] = 1;
    t->nlens = 0;
    for (int p = t->lpm_width; p >= 0; p--)
        if (present[p]) {
            t->lens[t->nlens] = p;
            t->lenmask[t->nlens] = prefix_mask(t->lpm_width, p);
            t->nlens++;
        }
    return 0;
}

void ss_table_set_default(ss_table *t, int32_t action, const uint64_t *args)
{
    t->miss.action = action;
    t->miss.hit = 0;
    t->miss.slot = -1;
    memcpy(t->miss.args, args, sizeof(uint64_t) * SS_MAX_ARGS);
}

void ss_pre_free(ss_pre *p)
{
    free(p->start);
    free(p->count);
    free(p->reps);
    p->start = p->count = NULL;
    p->reps = NULL;
}

/* Replace every multicast group: group mgrps[g] has counts[g] replicas, taken in order
 * from ports/rids (node by node in association order, each node's ports ascending: the
 * Python PRE's replicas()). Returns 0, or -1 when out of memory (no groups left). */
int ss_pre_load(ss_pre *p, int ngroups, const int32_t *mgrps, const int32_t *counts,
                const int32_t *ports, const int32_t *rids)
{
    size_t total = 0;
    for (int g = 0; g < ngroups; g++)
        total += (size_t)counts[g];
    ss_pre_free(p);
    p->start = calloc(65536, sizeof(int32_t));
    p->count = calloc(65536, sizeof(int32_t));
    p->reps = malloc(sizeof(ss_replica) * (total ? total : 1));
    if (!p->start || !p->count || !p->reps) {
        ss_pre_free(p);
        return -1;
    }
    size_t k = 0;
    for (int g = 0; g < ngroups; g++) {
        int32_t m = mgrps[g] & 0xFFFF;
        p->start[m] = (int32_t)k;
        p->count[m] = counts[g];
        for (int i = 0; i < counts[g]; i++, k++) {
            p->reps[k].port = (uint16_t)ports[k];
            p->reps[k].rid = (uint16_t)rids[k];
        }
    }
    return 0;
}

uint8_t *ss_out_reserve(ss_out *o, size_t need)
{
    if (o->n == o->fcap) {
        int fcap = o->fcap ? 2 * o->fcap : 64;
        ss_frame *f = realloc(o->frames, sizeof(ss_frame) * (size_t)fcap);
        if (!f)
            return NULL;
        o->frames = f;
        o->fcap = fcap;
    }
    if (o->used + need > o->cap) {
        size_t cap = o->cap ? o->cap : 1 << 16;
        while (o->used + need > cap)
            cap *= 2;
        uint8_t *b = realloc(o->buf, cap);
        if (!b)
            return NULL;
        o->buf = b;
        o->cap = cap;
    }
    return o->buf + o->used;
}

void ss_out_commit(ss_out *o, int32_t port, uint32_t len)
{
    o->frames[o->n].port = port;
    o->frames[o->n].off = (uint32_t)o->used;
    o->frames[o->n].len = len;
    o->n++;
    o->used += len;
}

void ss_out_free(ss_out *o)
{
    free(o->buf);
    free(o->frames);
    memset(o, 0, sizeof *o);
}

/* ------------------------------------------------------------------ hash algorithms */
static uint16_t crc16_table[256];
static uint32_t crc32_table[256];

/* Both CRCs are the reflected kind: the byte-at-a-time tables of the reversed
 * polynomials (0x8005 -> 0xA001, 0x04C11DB7 -> 0xEDB88320), built once at load. */
__attribute__((constructor)) static void build_crc_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c16 = i, c32 = i;
        for (int k = 0; k < 8; k++) {
            c16 = (c16 & 1) ? (c16 >> 1) ^ 0xA001 : c16 >> 1;
            c32 = (c32 & 1) ? (c32 >> 1) ^ 0xEDB88320u : c32 >> 1;
        }
        crc16_table[i] = (uint16_t)c16;
        crc32_table[i] = c32;
    }
}

uint64_t ss_crc16(const uint8_t *p, size_t n)
{
    uint32_t c = 0;                      /* CRC-16/ARC: init 0, no final xor */
    for (size_t i = 0; i < n; i++)
        c = (c >> 8) ^ crc16_table[(c ^ p[i]) & 0xFF];
    return c;
}

uint64_t ss_crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;            /* zlib: init and final xor all ones */
    for (size_t i = 0; i < n; i++)
        c = (c >> 8) ^ crc32_table[(c ^ p[i]) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

uint64_t ss_xor16(const uint8_t *p, size_t n)
{
    uint64_t r = 0;
    size_t i = 0;
    for (; i + 1 < n; i += 2)
        r ^= ((uint64_t)p[i] << 8) | p[i + 1];
    if (i < n)
        r ^= (uint64_t)p[i] << 8;
    return r;
}

uint64_t ss_identity(const uint8_t *p, size_t n)
{
    uint64_t r = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        r = (r << 8) | p[i];
    return r;
}
