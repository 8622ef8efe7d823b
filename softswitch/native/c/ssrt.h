/* softswitch compiled data path: the run-time support the generated pipeline uses.
 *
 * Values: every P4 bit<W> (W <= 64) and bool is a uint64_t holding a value in
 * [0, 2^W); generated code wraps right where an operator can leave that range.
 * Tables and the multicast replicas are copies of the Python SwitchState, rebuilt
 * by ss_table_load / ss_pre_load whenever the control plane changed them (the
 * Python side calls these between packets, on the packet thread: no locks).
 */
#ifndef SSRT_H
#define SSRT_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#define SS_MAX_KEYS 8          /* key fields per table */
#define SS_MAX_ARGS 16         /* directionless parameters per action */
#define SS_MAX_PACKET 65535    /* larger input frames are dropped (oversized) */
#define SS_DROP_PORT 511

/* what the Python side calls (everything else stays local to the library) */
#define SS_API __attribute__((visibility("default")))

static inline uint64_t ss_mask(unsigned w) { return w >= 64 ? ~0ULL : ((1ULL << w) - 1); }

/* P4 shifts: an amount >= the width gives 0 (C leaves it undefined). */
static inline uint64_t ss_shl(uint64_t a, uint64_t s, unsigned w) { return s >= w ? 0 : (a << s) & ss_mask(w); }
static inline uint64_t ss_shr(uint64_t a, uint64_t s) { return s >= 64 ? 0 : a >> s; }

/* P4 saturating |+| and |-| on bit<W>. */
static inline uint64_t ss_sat_add(uint64_t a, uint64_t b, unsigned w)
{
    uint64_t r = a + b;
    if (r < a)                   /* only possible at W = 64 */
        return ~0ULL;
    return r > ss_mask(w) ? ss_mask(w) : r;
}
static inline uint64_t ss_sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* Bits [bitoff, bitoff + w) of p, most significant bit first (network order). With
 * constant bitoff and w (always, in generated code) the loop unrolls to a few loads. */
static inline uint64_t ss_get(const uint8_t *p, unsigned bitoff, unsigned w)
{
    unsigned first = bitoff >> 3, nb = ((bitoff + w - 1) >> 3) - first + 1;
    unsigned __int128 acc = 0;
    for (unsigned i = 0; i < nb; i++)
        acc = (acc << 8) | p[first + i];
    return (uint64_t)(acc >> (nb * 8 - (bitoff & 7) - w)) & ss_mask(w);
}

/* OR value v (w bits) into bits [bitoff, bitoff + w) of p, which must be zero there. */
static inline void ss_put(uint8_t *p, unsigned bitoff, unsigned w, uint64_t v)
{
    unsigned first = bitoff >> 3, nb = ((bitoff + w - 1) >> 3) - first + 1;
    unsigned __int128 bits = (unsigned __int128)(v & ss_mask(w)) << (nb * 8 - (bitoff & 7) - w);
    for (unsigned i = nb; i-- > 0;) {
        p[first + i] |= (uint8_t)bits;
        bits >>= 8;
    }
}

/* Internet checksum (RFC 1071) of n bytes, an odd length padded with a zero byte:
 * v1model's HashAlgorithm.csum16. */
static inline uint64_t ss_csum16(const uint8_t *p, unsigned n)
{
    uint64_t s = 0;
    unsigned i = 0;
    for (; i + 1 < n; i += 2)
        s += ((uint64_t)p[i] << 8) | p[i + 1];
    if (i < n)
        s += (uint64_t)p[i] << 8;
    while (s >> 16)
        s = (s & 0xFFFF) + (s >> 16);
    return ~s & 0xFFFF;
}

/* v1model's other hash algorithms over n bytes (the data list packed MSB-first, zero
 * bits padding it to a whole byte, as the Python path's softswitch/runtime/v1model.py and
 * BMv2's calculations.cpp define them): crc16 = CRC-16/ARC, crc32 = CRC-32/ISO-HDLC
 * (zlib), xor16 = XOR of the 16-bit words (an odd length padded with a zero byte),
 * identity = the first (at most) 8 bytes as a big-endian number. In ssrt.c. */
uint64_t ss_crc16(const uint8_t *p, size_t n);
uint64_t ss_crc32(const uint8_t *p, size_t n);
uint64_t ss_xor16(const uint8_t *p, size_t n);
uint64_t ss_identity(const uint8_t *p, size_t n);

/* ------------------------------------------------------------------ meters */
/* A two-rate three-color meter cell, the Python path's MeterCell (softswitch/runtime/
 * state.py, BMv2's meters.cpp): the record the Python MeterCellView reads and writes. */
typedef struct {
    double rate;                 /* units per microsecond */
    int64_t burst, tokens, last; /* last: tokens credited since the origin */
    int64_t color;               /* what running short of this bucket gives */
} ss_bucket;

typedef struct {
    int64_t configured, has_origin, origin;
    ss_bucket b[2];              /* peak first, then committed */
} ss_meter;

/* The color of `amount` units at time now (us): buckets fill from the origin (the first
 * packet after the rates were set), so rounding never accumulates; the peak bucket is
 * checked first (short: its color, nothing taken), then the committed one. */
static inline uint64_t ss_meter_execute(ss_meter *m, uint64_t amount, uint64_t now)
{
    if (!m->configured)
        return 0;
    if (!m->has_origin) {
        m->has_origin = 1;
        m->origin = (int64_t)now;
    }
    int64_t elapsed = (int64_t)now - m->origin;
    for (int i = 0; i < 2; i++) {
        ss_bucket *b = &m->b[i];
        int64_t since = (int64_t)((double)elapsed * b->rate);   /* Python's int(): toward 0 */
        int64_t add = since - b->last;
        if (add > 0) {
            b->last = since;
            b->tokens = b->tokens + add < b->burst ? b->tokens + add : b->burst;
        }
        if (b->tokens < (int64_t)amount)
            return (uint64_t)b->color;
        b->tokens -= (int64_t)amount;
    }
    return 0;
}

/* ------------------------------------------------------------------ tables */
enum { SS_EXACT = 0, SS_LPM = 1, SS_TERNARY = 2 };

typedef struct {
    int32_t action;              /* index in the table's action list; -1: no action to run */
    int32_t hit;
    int32_t slot;                /* the entry's handle slot: its direct counter cell; -1 on a miss */
    uint64_t args[SS_MAX_ARGS];
} ss_result;

typedef struct {
    int kind, nkeys;
    int lpm_key, lpm_width;      /* SS_LPM: which key is the lpm one, its width */
    uint32_t range_keys;         /* SS_TERNARY: bit j set when key j is a range key (vals: low
                                  * bound, masks: high bound) */
    int n;                       /* entries */
    uint64_t *vals;              /* n * nkeys: exact/lpm: the (prefix-masked) key; ternary: value & mask */
    uint64_t *masks;             /* n * nkeys, ternary only */
    int32_t *plens;              /* n, lpm only */
    ss_result *res;              /* n */
    uint32_t cap;                /* hash slots (power of two), exact/lpm */
    int32_t *slots;              /* entry index or -1 */
    int nlens;                   /* lpm: prefix lengths present, longest first; exact: 1 */
    int32_t lens[65];
    uint64_t lenmask[65];
    ss_result miss;              /* the default action */
} ss_table;

static inline uint64_t ss_hash_key(const uint64_t *k, int nkeys, int plen)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL * (uint64_t)(plen + 1);
    for (int i = 0; i < nkeys; i++) {
        h ^= k[i] + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
        h *= 0xFF51AFD7ED558CCDULL;
    }
    return h ^ (h >> 33);
}

/* A scan in lookup order where some keys are ranges (lo <= k <= hi) and the others
 * value & mask; apart from tables with range keys, lookups never pay for the test. */
static inline const ss_result *ss_lookup_range(const ss_table *t, const uint64_t *k)
{
    int nk = t->nkeys;
    for (int i = 0; i < t->n; i++) {
        const uint64_t *v = t->vals + (size_t)i * nk, *m = t->masks + (size_t)i * nk;
        int j = 0;
        for (; j < nk; j++) {
            if ((t->range_keys >> j) & 1) {
                if (k[j] < v[j] || k[j] > m[j])
                    break;
            } else if ((k[j] & m[j]) != v[j]) {
                break;
            }
        }
        if (j == nk)
            return &t->res[i];
    }
    return &t->miss;
}

static inline const ss_result *ss_lookup(const ss_table *t, const uint64_t *k)
{
    int nk = t->nkeys;
    if (t->kind == SS_TERNARY && t->range_keys)
        return ss_lookup_range(t, k);
    if (t->kind == SS_TERNARY) {
        for (int i = 0; i < t->n; i++) {
            const uint64_t *v = t->vals + (size_t)i * nk, *m = t->masks + (size_t)i * nk;
            int j = 0;
            while (j < nk && (k[j] & m[j]) == v[j])
                j++;
            if (j == nk)
                return &t->res[i];
        }
        return &t->miss;
    }
    if (t->n == 0)
        return &t->miss;
    uint64_t mk[SS_MAX_KEYS];
    memcpy(mk, k, sizeof(uint64_t) * nk);
    for (int l = 0; l < t->nlens; l++) {
        int plen = t->lens[l];
        if (t->kind == SS_LPM)
            mk[t->lpm_key] = k[t->lpm_key] & t->lenmask[l];
        uint32_t h = (uint32_t)ss_hash_key(mk, nk, plen);
        for (;;) {
            int32_t e = t->slots[h & (t->cap - 1)];
            if (e < 0)
                break;
            if (t->plens[e] == plen && memcmp(t->vals + (size_t)e * nk, mk, sizeof(uint64_t) * nk) == 0)
                return &t->res[e];
            h++;
        }
    }
    return &t->miss;
}

SS_API int ss_table_load(ss_table *t, int n, const uint64_t *vals, const uint64_t *masks, const int32_t *plens,
                  const int32_t *actions, const uint64_t *args, const int32_t *eslots);
SS_API void ss_table_set_default(ss_table *t, int32_t action, const uint64_t *args);
void ss_table_free(ss_table *t);

/* ------------------------------------------------------------------ multicast (PRE) */
typedef struct { uint16_t port, rid; } ss_replica;

typedef struct {
    int32_t *start, *count;      /* per group id (65536 each), into reps */
    ss_replica *reps;
} ss_pre;

SS_API int ss_pre_load(ss_pre *p, int ngroups, const int32_t *mgrps, const int32_t *counts,
                const int32_t *ports, const int32_t *rids);
void ss_pre_free(ss_pre *p);

/* ------------------------------------------------------------------ output frames */
typedef struct { int32_t port; uint32_t off, len; } ss_frame;

typedef struct {
    uint8_t *buf;
    size_t cap, used;
    ss_frame *frames;
    int n, fcap;
} ss_out;

/* Room for one frame of at most `need` bytes; NULL when memory is exhausted. */
uint8_t *ss_out_reserve(ss_out *o, size_t need);
void ss_out_commit(ss_out *o, int32_t port, uint32_t len);
void ss_out_free(ss_out *o);

/* what the Python side reads as Switch.stats */
typedef struct {
    uint64_t packets_in, packets_out, dropped, parser_errors, checksum_errors, oversized,
        multicast_copies, errors, clones, resubmits, recirculations, loop_limit_drops, digests,
        assert_failures;
} ss_stats;

#endif
