/* softswitch compiled data path: user-space egress link emulation (included by ss_loop.c).
 *
 * One delay line per emulated egress port, with the semantics of the Python path's
 * DelayLine (softswitch/dataplane/linkem.py), so a switch behaves the same on both paths:
 *   - submit: counted; lost with probability loss (Bernoulli); refused as overflow when
 *     `limit` frames already wait; else due = now + delay + Normal(0, jitter), clipped at 0;
 *   - FIFO unless reorder: due = max(due, previous due), as a real link is FIFO;
 *     with reorder, frames leave in (due, arrival) order (a binary heap), as netem does;
 *   - the RNG draws in the same order (loss first, then jitter) but is this file's
 *     (xoshiro256**, seeded by splitmix64 from `seed`), not Python's Mersenne Twister:
 *     a seed gives a reproducible pattern per data path, not the same one on both.
 * Times are CLOCK_MONOTONIC nanoseconds. Frames are copied into one allocation each.
 */
#include <math.h>

typedef struct {
    uint64_t due, seq;
    uint32_t len;
    uint8_t data[];
} ss_dl_item;

typedef struct {
    uint64_t delay_ns;
    double jitter_ns, loss;
    int reorder;
    uint32_t limit;
    uint64_t rng[4];
    ss_dl_item **items;          /* FIFO: a ring of `limit` slots from head; reorder: a heap */
    uint32_t head, n;
    uint64_t last_due, seq;
    uint64_t submitted, sent, lost, overflow;
} ss_delay;

static uint64_t ss_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t ss_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t ss_rng_next(uint64_t *s)
{
    uint64_t result = ss_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ss_rotl(s[3], 45);
    return result;
}

/* uniform in [0, 1) with 53 random bits */
static double ss_rng_uniform(uint64_t *s) { return (double)(ss_rng_next(s) >> 11) * 0x1.0p-53; }

/* standard normal (Box-Muller; 1 - u keeps the log's argument in (0, 1]) */
static double ss_rng_gauss(uint64_t *s)
{
    double u = 1.0 - ss_rng_uniform(s), v = ss_rng_uniform(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* seed < 0: unseeded (a different pattern each run, as Python's random.Random(None)) */
SS_API ss_delay *ss_delay_new(double delay_ms, double jitter_ms, double loss_pct, int64_t seed, int reorder,
                              uint32_t limit)
{
    if (limit < 1)
        return NULL;
    ss_delay *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->items = calloc(limit, sizeof *d->items);
    if (!d->items) {
        free(d);
        return NULL;
    }
    d->delay_ns = (uint64_t)llround(delay_ms * 1e6);
    d->jitter_ns = jitter_ms * 1e6;
    d->loss = loss_pct / 100.0;
    d->reorder = reorder;
    d->limit = limit;
    uint64_t s = seed >= 0 ? (uint64_t)seed : ss_now_us() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)d;
    for (int i = 0; i < 4; i++)
        d->rng[i] = ss_splitmix64(&s);
    return d;
}

SS_API void ss_delay_delete(ss_delay *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->n; i++)
        free(d->items[d->reorder ? i : (d->head + i) % d->limit]);
    free(d->items);
    free(d);
}

/* submitted, sent, lost, overflow, queued: the Python DelayLine.counters() keys */
SS_API void ss_delay_counters(const ss_delay *d, uint64_t out[5])
{
    out[0] = d->submitted;
    out[1] = d->sent;
    out[2] = d->lost;
    out[3] = d->overflow;
    out[4] = d->n;
}

static int ss_item_before(const ss_dl_item *a, const ss_dl_item *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void ss_heap_push(ss_delay *d, ss_dl_item *it)
{
    uint32_t i = d->n++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!ss_item_before(it, d->items[parent]))
            break;
        d->items[i] = d->items[parent];
        i = parent;
    }
    d->items[i] = it;
}

static ss_dl_item *ss_heap_pop(ss_delay *d)
{
    ss_dl_item *top = d->items[0], *last = d->items[--d->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= d->n)
            break;
        if (c + 1 < d->n && ss_item_before(d->items[c + 1], d->items[c]))
            c++;
        if (!ss_item_before(d->items[c], last))
            break;
        d->items[i] = d->items[c];
        i = c;
    }
    if (d->n > 0)
        d->items[i] = last;
    return top;
}

/* 1: queued; 0: lost, overflow or out of memory (counted) */
SS_API int ss_delay_submit(ss_delay *d, const uint8_t *frame, uint32_t len, uint64_t now_ns)
{
    d->submitted++;
    if (d->loss > 0.0 && ss_rng_uniform(d->rng) < d->loss) {
        d->lost++;
        return 0;
    }
    if (d->n >= d->limit) {
        d->overflow++;
        return 0;
    }
    double delay = (double)d->delay_ns;
    if (d->jitter_ns > 0.0)
        delay += ss_rng_gauss(d->rng) * d->jitter_ns;
    uint64_t due = now_ns + (delay > 0.0 ? (uint64_t)llround(delay) : 0);
    ss_dl_item *it = malloc(sizeof *it + len);
    if (!it) {
        d->overflow++;
        return 0;
    }
    it->len = len;
    it->seq = d->seq++;
    memcpy(it->data, frame, len);
    if (d->reorder) {
        it->due = due;
        ss_heap_push(d, it);
    } else {
        if (due < d->last_due)
            due = d->last_due;
        d->last_due = due;
        it->due = due;
        d->items[(d->head + d->n) % d->limit] = it;
        d->n++;
    }
    return 1;
}

/* the earliest departure time, or UINT64_MAX when the line is empty */
SS_API uint64_t ss_delay_next_due(const ss_delay *d)
{
    if (d->n == 0)
        return UINT64_MAX;
    return d->reorder ? d->items[0]->due : d->items[d->head]->due;
}

/* One frame whose departure time has come (the caller frees it), or NULL. */
SS_API ss_dl_item *ss_delay_pop(ss_delay *d, uint64_t now_ns)
{
    if (ss_delay_next_due(d) > now_ns)
        return NULL;
    ss_dl_item *it;
    if (d->reorder) {
        it = ss_heap_pop(d);
    } else {
        it = d->items[d->head];
        d->head = (d->head + 1) % d->limit;
        d->n--;
    }
    d->sent++;
    return it;
}

SS_API void ss_delay_item_free(ss_dl_item *it) { free(it); }
