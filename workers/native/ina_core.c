/* The INA worker's client state machine in C: workers/ina_client.py's InaClient, decision
 * for decision. Python stays the reference; this mirrors it, including its details
 * (lazy deletion of timers, the order loops scan in, how min/max pick among equals), so
 * the same events give the same bytes (tests/test_ina_core.py). workers/ina_core.py
 * drives it through ctypes.
 *
 * Floats: every expression is written in the Python's order of operations, and the build
 * (workers/native/build.py) forbids fused multiply-adds and -ffast-math, so each result is
 * the double Python computes. None is NaN (times) or a has_* flag.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_LEN 16
#define F_RESULT 0x02
#define F_RETX 0x04
#define F_OVERFLOW 0x08

enum { ERR_FAILED = -1, ERR_NEGATIVE_RTT = -2, ERR_MEMORY = -3 };

/* Written by Python once (workers/ina_core.py's _Config): int64 and double only, no padding. */
struct ina_config {
    int64_t job, window, k, max_retransmissions, cc_enabled, cubic, rack, pacing, backlog;
    int64_t initial_cwnd, quantum, burst_quanta, min_samples, payload_len;
    double initial_rto, min_rto, max_rto, granularity, beta, cubic_c, time_dilation;
    double veno_beta, gain, interval_rtts, reorder_extra, max_rate;
};

/* What Python reads (and rtt.granularity, which it writes): workers/ina_core.py's _View,
   allocated by Python and zeroed, handed to ina_new. */
struct ina_view {
    /* ClientStats, in its field order */
    int64_t sent, retransmissions, results, duplicate_results, bad_packets, bytes_sent;
    int64_t bytes_received, cwnd_decreases, cwnd_undos, random_losses;
    int64_t has_it, n, n_results, overflow, has_srtt, has_min_rtt, has_rate;
    int64_t err_chunk, err_retries;
    int64_t outbox, outbox_rows;    /* where the outbox is now (it moves when it grows) */
    double srtt, rttvar, min_rtt, granularity, cwnd, ssthresh, rate, err_rtt;
};

struct timer { double at; int64_t j; };

struct ina_core {
    struct ina_view *v;             /* Python's memory (it outlives the core: stats stay readable) */
    struct ina_config cfg;
    /* Aimd (workers/congestion.py); cwnd and ssthresh are in v */
    double max_cwnd, recover_at, w_max, epoch;
    int has_epoch, has_before, before_has_epoch;
    double before_cwnd, before_ssthresh, before_w_max, before_epoch;
    /* Pacer (workers/pacing.py); its arrival deque is arrivals[a_head:a_tail] (at most
       one arrival per chunk and tensor, so a plain array sized n, no wrap-around) */
    double best, tokens, t;
    double *arrivals;
    int64_t a_head, a_tail;
    /* InaClient's own state */
    int64_t stalls;
    double rack_sent, rack_rtt, rack_at, progress, pace_at;
    int has_rack_at, has_pace_at;
    struct timer *timers;           /* min-heap on (at, j), with stale entries, as _timers */
    int64_t n_timers, cap_timers;
    /* _Iteration: the tensor being aggregated */
    int64_t n, base_seq, in_flight;
    int64_t *unlocked, n_unlocked;  /* min-heap: chunks that may go (never sent, slot free) */
    const uint8_t *packets;         /* (n, payload_len) rows, owned by Python */
    int32_t *sums;                  /* (n, k), owned by Python */
    uint8_t *out;                   /* the outbox: out_cap rows of payload_len, grown on demand */
    int64_t n_out, out_cap;
    double *sent_at, *last_tx, *deadline, *timeout;     /* NaN: None */
    int64_t *retries;
    uint8_t *answered;              /* it.results */
    int64_t *prev, *next, head, tail;   /* it.outstanding: a list in send order, -1 ends */
    uint8_t *listed;
    int64_t *lost, n_lost;          /* min-heap of chunks */
    int64_t *event, event_id, event_size;   /* j in it.event <=> event[j] == event_id */
    int64_t *episode, episode_id, episode_size; /* j in it.episode <=> episode[j] == episode_id */
    int event_resent;
};

/* ------------------------------------------------------------ Python's min/max */
/* min(a, b) is a unless b < a; max(a, b) is a unless b > a (which matters only for -0.0) */
static double py_min(double a, double b) { return b < a ? b : a; }
static double py_max(double a, double b) { return b > a ? b : a; }

/* float ** 3 as CPython's float_pow: a negative base is raised by its absolute value */
static double py_cube(double x) { return x < 0 ? -pow(-x, 3.0) : pow(x, 3.0); }

/* ------------------------------------------------------------ RttEstimator */
/* RttEstimator.sample */
static int rtt_sample(struct ina_core *c, double rtt) {
    struct ina_view *v = c->v;
    if (rtt < 0) {
        v->err_rtt = rtt;
        return ERR_NEGATIVE_RTT;
    }
    if (!v->has_min_rtt || rtt < v->min_rtt) {
        v->min_rtt = rtt;
        v->has_min_rtt = 1;
    }
    if (!v->has_srtt) {
        v->srtt = rtt;
        v->rttvar = rtt / 2;
        v->has_srtt = 1;
    } else {
        v->rttvar = (1 - 0.25) * v->rttvar + 0.25 * fabs(v->srtt - rtt);
        v->srtt = (1 - 0.125) * v->srtt + 0.125 * rtt;
    }
    return 0;
}

/* RttEstimator.rto */
double ina_rto(const struct ina_core *c) {
    const struct ina_view *v = c->v;
    double base = v->has_srtt ? v->srtt + py_max(v->granularity, 4 * v->rttvar) : c->cfg.initial_rto;
    return py_min(c->cfg.max_rto, py_max(c->cfg.min_rto, base));
}

/* RttEstimator.backed_off */
static double rtt_backed_off(const struct ina_core *c, int64_t n) {
    return py_min(c->cfg.max_rto, ina_rto(c) * (double)((int64_t)1 << (n < 16 ? n : 16)));
}

/* ------------------------------------------------------------ Aimd */
/* Aimd.allowed */
static int64_t cc_allowed(const struct ina_core *c) {
    return c->cfg.cc_enabled ? (int64_t)c->v->cwnd : (int64_t)c->max_cwnd;
}

/* Aimd.cubic_target */
static double cc_cubic_target(const struct ina_core *c, double now) {
    double t = (now - c->epoch) / c->cfg.time_dilation;
    double k = pow(c->w_max * (1 - c->cfg.beta) / c->cfg.cubic_c, 1.0 / 3);
    return c->cfg.cubic_c * py_cube(t - k) + c->w_max;
}

/* Aimd.on_result */
static void cc_on_result(struct ina_core *c, double now) {
    struct ina_view *v = c->v;
    if (!c->cfg.cc_enabled)
        return;
    double step = v->cwnd < v->ssthresh ? 1.0 : 1.0 / v->cwnd;
    if (c->cfg.cubic && v->cwnd >= v->ssthresh && c->has_epoch)
        step = py_max(step, (cc_cubic_target(c, now) - v->cwnd) / v->cwnd);
    v->cwnd = py_min(c->max_cwnd, v->cwnd + step);
}

/* Aimd.on_loss */
static int cc_on_loss(struct ina_core *c, double sent_at, double now) {
    struct ina_view *v = c->v;
    if (!c->cfg.cc_enabled || sent_at < c->recover_at)
        return 0;
    c->has_before = 1;
    c->before_cwnd = v->cwnd;
    c->before_ssthresh = v->ssthresh;
    c->before_w_max = c->w_max;
    c->before_epoch = c->epoch;
    c->before_has_epoch = c->has_epoch;
    if (c->cfg.cubic) {
        c->w_max = v->cwnd;
        c->epoch = now;
        c->has_epoch = 1;
        v->ssthresh = v->cwnd = py_max(1.0, v->cwnd * c->cfg.beta);
    } else {
        v->ssthresh = v->cwnd = py_max(1.0, v->cwnd / 2);
    }
    c->recover_at = now;
    return 1;
}

/* Aimd.undo */
static void cc_undo(struct ina_core *c) {
    struct ina_view *v = c->v;
    if (!c->has_before)
        return;
    v->cwnd = py_max(v->cwnd, c->before_cwnd);
    v->ssthresh = py_max(v->ssthresh, c->before_ssthresh);
    c->w_max = c->before_w_max;
    c->epoch = c->before_epoch;
    c->has_epoch = c->before_has_epoch;
    c->has_before = 0;
}

/* congestion.queue_backlog; +inf when there is no sample */
static double queue_backlog(const struct ina_core *c) {
    const struct ina_view *v = c->v;
    if (!v->has_srtt || v->srtt == 0 || !v->has_min_rtt)
        return INFINITY;
    return v->cwnd * py_max(0.0, v->srtt - v->min_rtt) / v->srtt;
}

/* ------------------------------------------------------------ Pacer */
/* Pacer.start; the arrival array for the new tensor is set up by ina_start */
static void pacer_start(struct ina_core *c, double now) {
    int64_t len = c->a_tail - c->a_head;
    double *a = c->arrivals;
    if (c->best == 0 && len >= c->cfg.min_samples && a[c->a_tail - 1] > a[c->a_head])
        c->best = (double)(len - 1) / (a[c->a_tail - 1] - a[c->a_head]);
    if (c->cfg.pacing && c->best > 0) {
        c->v->rate = c->cfg.gain * c->best;
        c->v->has_rate = 1;
    }
    if (c->cfg.max_rate > 0) {      /* Pacer.max_rate: a cap set from outside */
        c->v->rate = c->v->has_rate ? py_min(c->v->rate, c->cfg.max_rate) : c->cfg.max_rate;
        c->v->has_rate = 1;
    }
    c->best = 0.0;
    c->a_head = c->a_tail = 0;
    c->tokens = (double)c->cfg.quantum;
    c->t = now;
}

/* Pacer.on_result */
static void pacer_on_result(struct ina_core *c, double arrival) {
    if (!c->v->has_srtt || c->v->srtt == 0)
        return;
    double span = c->cfg.interval_rtts * c->v->srtt;
    double *a = c->arrivals;
    a[c->a_tail++] = arrival;
    while (c->a_tail - c->a_head > c->cfg.min_samples && arrival - a[c->a_head + 1] >= span)
        c->a_head++;
    int64_t len = c->a_tail - c->a_head;
    if (len < c->cfg.min_samples || arrival - a[c->a_head] < span || arrival <= a[c->a_head])
        return;
    c->best = py_max(c->best, (double)(len - 1) / (arrival - a[c->a_head]));
}

/* Pacer._refill */
static void pacer_refill(struct ina_core *c, double now) {
    if (now > c->t) {
        double cap = (double)(c->cfg.quantum * c->cfg.burst_quanta);
        c->tokens = py_min(cap, c->tokens + (now - c->t) * c->v->rate);
        c->t = now;
    }
}

/* Pacer.may_send */
static int pacer_may_send(struct ina_core *c, double now) {
    if (!c->v->has_rate)
        return 1;
    pacer_refill(c, now);
    return c->tokens >= 1.0 - 1e-9;
}

/* Pacer.sent */
static void pacer_sent(struct ina_core *c, double now) {
    if (c->v->has_rate) {
        pacer_refill(c, now);
        c->tokens -= 1.0;
    }
}

/* Pacer.next_send_time */
static double pacer_next_send_time(struct ina_core *c, double now) {
    if (!c->v->has_rate)
        return now;
    pacer_refill(c, now);
    return now + py_max(0.0, (double)c->cfg.quantum - c->tokens) / c->v->rate;
}

/* ------------------------------------------------------------ heaps and the send-order list */
static int timer_less(struct timer a, struct timer b) {     /* Python's tuple order */
    return a.at < b.at || (a.at == b.at && a.j < b.j);
}

static int timer_push(struct ina_core *c, double at, int64_t j) {
    if (c->n_timers == c->cap_timers) {
        int64_t cap = c->cap_timers ? 2 * c->cap_timers : 64;
        struct timer *grown = realloc(c->timers, cap * sizeof *grown);
        if (!grown)
            return ERR_MEMORY;
        c->timers = grown;
        c->cap_timers = cap;
    }
    struct timer *h = c->timers, x = {at, j};
    int64_t i = c->n_timers++;
    while (i > 0 && timer_less(x, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
    return 0;
}

static struct timer timer_pop(struct ina_core *c) {
    struct timer *h = c->timers, top = h[0], x = h[--c->n_timers];
    int64_t n = c->n_timers, i = 0;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && timer_less(h[child + 1], h[child]))
            child++;
        if (!timer_less(h[child], x))
            break;
        h[i] = h[child];
        i = child;
    }
    if (n)
        h[i] = x;
    return top;
}

/* heapq.heappush / heappop on a min-heap of chunks h[0:*n] (room for n chunks: a chunk
   is in `lost` at most once, see _declare_lost, and in `unlocked` once, by its slot) */
static void chunk_push(int64_t *h, int64_t *count, int64_t j) {
    int64_t i = (*count)++;
    while (i > 0 && j < h[(i - 1) / 2]) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = j;
}

static int64_t chunk_pop(int64_t *h, int64_t *count) {
    int64_t top = h[0], x = h[--*count], n = *count, i = 0;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && h[child + 1] < h[child])
            child++;
        if (h[child] >= x)
            break;
        h[i] = h[child];
        i = child;
    }
    if (n)
        h[i] = x;
    return top;
}

static void lost_push(struct ina_core *c, int64_t j) { chunk_push(c->lost, &c->n_lost, j); }
static int64_t lost_pop(struct ina_core *c) { return chunk_pop(c->lost, &c->n_lost); }

/* it.outstanding.pop(j, None) */
static void unlist(struct ina_core *c, int64_t j) {
    if (!c->listed[j])
        return;
    c->listed[j] = 0;
    if (c->prev[j] >= 0) c->next[c->prev[j]] = c->next[j]; else c->head = c->next[j];
    if (c->next[j] >= 0) c->prev[c->next[j]] = c->prev[j]; else c->tail = c->prev[j];
}

/* it.outstanding[j] = now, j not in it: to the end (its time is last_tx[j]) */
static void enlist(struct ina_core *c, int64_t j) {
    c->listed[j] = 1;
    c->prev[j] = c->tail;
    c->next[j] = -1;
    if (c->tail >= 0) c->next[c->tail] = j; else c->head = j;
    c->tail = j;
}

/* ------------------------------------------------------------ InaClient */
/* a row of the tensor into the outbox (InaClient._flush packs the same rows) */
static int emit(struct ina_core *c, int64_t j, int retx) {
    int64_t size = c->cfg.payload_len;
    if (c->n_out == c->out_cap) {   /* a chunk leaves at most once per call unless time
                                       goes backwards: n rows are enough, in practice */
        int64_t cap = c->out_cap < 64 ? 64 : 2 * c->out_cap;
        uint8_t *grown = realloc(c->out, (size_t)(cap * size));
        if (!grown)
            return ERR_MEMORY;
        c->out = grown;
        c->out_cap = cap;
        c->v->outbox = (int64_t)(intptr_t)grown;
        c->v->outbox_rows = cap;
    }
    uint8_t *row = c->out + c->n_out++ * size;
    memcpy(row, c->packets + j * size, size);
    if (retx)
        row[1] |= F_RETX;
    return 0;
}

/* InaClient._transmit */
static int transmit(struct ina_core *c, int64_t j, double now, int retx, double timeout) {
    if (emit(c, j, retx))
        return ERR_MEMORY;
    if (isnan(c->sent_at[j]))
        c->sent_at[j] = now;
    c->last_tx[j] = now;
    c->in_flight++;
    unlist(c, j);
    enlist(c, j);
    if (c->v->has_rate)
        pacer_sent(c, now);
    c->timeout[j] = timeout;
    c->deadline[j] = now + timeout;
    return timer_push(c, c->deadline[j], j);
}

/* InaClient._send_ready */
static int send_ready(struct ina_core *c, double now) {
    int64_t allowed = cc_allowed(c);
    int paced = (int)c->v->has_rate;
    double rto = ina_rto(c);
    /* the lowest chunk first, re-sends and new chunks alike (see the Python) */
    while (c->in_flight < allowed && (!paced || pacer_may_send(c, now))) {
        while (c->n_lost && c->answered[c->lost[0]])
            lost_pop(c);            /* a late result answered it meanwhile */
        if (c->n_lost && (!c->n_unlocked || c->lost[0] < c->unlocked[0])) {
            int64_t j = lost_pop(c);
            c->retries[j]++;
            c->v->retransmissions++;
            if (c->event[j] == c->event_id) {
                c->event_resent = 1;
                c->has_before = 0;  /* cc.before_cut = None */
            }
            int64_t n = c->stalls < c->retries[j] ? c->stalls : c->retries[j];
            if (transmit(c, j, now, 1, n ? rtt_backed_off(c, n) : rto))
                return ERR_MEMORY;
            continue;
        }
        if (!c->n_unlocked)
            break;
        /* a new chunk (the Python inlines _transmit here: never sent, so in no list yet) */
        int64_t nxt = chunk_pop(c->unlocked, &c->n_unlocked);
        if (emit(c, nxt, 0))
            return ERR_MEMORY;
        c->sent_at[nxt] = c->last_tx[nxt] = now;
        enlist(c, nxt);
        c->in_flight++;
        if (paced)
            pacer_sent(c, now);
        c->timeout[nxt] = rto;
        c->deadline[nxt] = now + rto;
        if (timer_push(c, c->deadline[nxt], nxt))
            return ERR_MEMORY;
    }
    int blocked = (c->n_lost || c->n_unlocked) && c->in_flight < allowed;
    c->has_pace_at = blocked;
    if (blocked)
        c->pace_at = pacer_next_send_time(c, now);
    return 0;
}

static void mark_episode(struct ina_core *c, int64_t j) {
    if (!c->answered[j] && c->episode[j] != c->episode_id) {
        c->episode[j] = c->episode_id;
        c->episode_size++;
    }
}

/* InaClient._declare_lost */
static void declare_lost(struct ina_core *c, int64_t j, double now) {
    c->deadline[j] = NAN;
    c->in_flight--;
    unlist(c, j);
    lost_push(c, j);
    if (c->cfg.backlog && queue_backlog(c) < c->cfg.veno_beta) {
        c->v->random_losses++;       /* no queue behind it: re-sent, the window kept */
        return;
    }
    if (!c->episode_size && cc_on_loss(c, c->last_tx[j], now)) {   /* one cut an episode */
        c->v->cwnd_decreases++;
        c->event_id++;              /* it.event = set() */
        c->event_size = 0;
        c->event_resent = 0;
        c->episode_id++;            /* it.episode = the unanswered, lost or in the pipe */
        for (int64_t i = 0; i < c->n_lost; i++)
            mark_episode(c, c->lost[i]);
        for (int64_t x = c->head; x >= 0; x = c->next[x])
            mark_episode(c, x);
    }
    if (c->event[j] != c->event_id) {
        c->event[j] = c->event_id;
        c->event_size++;
    }
}

/* InaClient._rack_detect. The Python collects the chunks to declare lost while it scans
   `outstanding` oldest first, then declares them; here each is declared as the scan
   passes it (the next one read first). The same: a declaration changes nothing the scan
   reads, and the episode a first cut marks is every unanswered chunk either way. */
static void rack_detect(struct ina_core *c, double now) {
    c->has_rack_at = 0;
    double srtt = c->v->has_srtt ? c->v->srtt : 0.0;
    double min_rtt = c->v->has_min_rtt ? c->v->min_rtt : 0.0;
    double reorder = min_rtt / 4 + c->cfg.reorder_extra, floor = py_max(c->rack_rtt, srtt);
    for (int64_t j = c->head, nxt; j >= 0; j = nxt) {
        nxt = c->next[j];
        double t = c->last_tx[j];
        if (t >= c->rack_sent)
            break;
        int resent = c->retries[j] > 0;
        double wait = (resent ? floor : c->rack_rtt) + reorder;
        if (now < t + wait) {
            if (!c->has_rack_at || t + wait < c->rack_at) {
                c->rack_at = t + wait;
                c->has_rack_at = 1;
            }
            if (!resent)
                break;              /* every later first copy is kept too */
            continue;
        }
        if (c->retries[j] >= c->cfg.max_retransmissions)
            continue;               /* its own timer reports the failure */
        declare_lost(c, j, now);
    }
}

/* InaClient._on_result: 1 accepted, 0 not, < 0 an error */
static int on_result(struct ina_core *c, int64_t j, int offset_ok, int flags, double now,
                     double arrival) {
    struct ina_view *v = c->v;
    if (!v->has_it || j < 0 || j >= c->n || c->answered[j] || isnan(c->sent_at[j])) {
        v->duplicate_results++;
        return 0;
    }
    if (!offset_ok) {
        v->bad_packets++;           /* a switch mixed up slots: never accept it */
        return 0;
    }
    c->answered[j] = 1;
    if (j + c->cfg.window < c->n)   /* its slot is free for the chunk W later */
        chunk_push(c->unlocked, &c->n_unlocked, j + c->cfg.window);
    v->n_results++;
    v->overflow |= (flags & F_OVERFLOW) != 0;
    v->results++;
    if (!isnan(c->deadline[j]))
        c->in_flight--;
    c->deadline[j] = NAN;
    unlist(c, j);
    c->progress = now;
    if (c->episode_size && c->episode[j] == c->episode_id) {
        c->episode[j] = 0;
        c->episode_size--;
    }
    if (c->event_size && c->event[j] == c->event_id) {
        c->event[j] = 0;
        c->event_size--;
        if (!c->event_size && !c->event_resent && c->has_before) {
            cc_undo(c);
            v->cwnd_undos++;
        }
    }
    cc_on_result(c, now);
    if (c->retries[j] == 0 && !(flags & F_RETX)) {     /* Karn's rule over the job */
        double sent = c->sent_at[j];
        int err = rtt_sample(c, now - sent);
        if (err)
            return err;
        if (sent >= c->rack_sent) {
            c->rack_sent = sent;
            c->rack_rtt = now - sent;
            if (c->cfg.rack)
                rack_detect(c, now);
        }
        pacer_on_result(c, arrival);
    }
    c->stalls = 0;
    int err = send_ready(c, now);
    return err ? err : 1;
}

/* InaClient._flush's counting: the rows are already in the outbox */
static int64_t flush(struct ina_core *c) {
    c->v->sent += c->n_out;
    c->v->bytes_sent += c->n_out * c->cfg.payload_len;
    return c->n_out;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* InaClient.on_packets: rows of `stride` bytes, at least payload_len of each read.
   Returns the rows in the outbox, or an error (< 0). */
int64_t ina_on_packets(struct ina_core *c, const uint8_t *rows, int64_t stride,
                       const int64_t *lengths, int64_t m, double now, const double *arrivals) {
    const struct ina_config *cfg = &c->cfg;
    int64_t k = cfg->k, w = cfg->window, base = c->v->has_it ? c->base_seq : 0;
    c->n_out = 0;
    for (int64_t i = 0; i < m; i++)
        c->v->bytes_received += lengths[i];
    for (int64_t i = 0; i < m; i++) {
        const uint8_t *row = rows + i * stride;
        /* well-formed as agg_packet.decode and on_packet's checks: whole, our k, our job */
        if (lengths[i] < cfg->payload_len || row[15] != k || row[0] != cfg->job || !(row[1] & F_RESULT)) {
            c->v->bad_packets++;
            continue;
        }
        int64_t slot = ((int64_t)row[2] << 8 | row[3]) & 0x7FFF;
        int64_t j = ((int64_t)be32(row + 4) - 1) * w + slot - base;
        double arrival = arrivals && !isnan(arrivals[i]) ? arrivals[i] : now;
        int r = on_result(c, j, (int64_t)be32(row + 8) == j * k, row[1], now, arrival);
        if (r < 0)
            return r;
        if (r) {
            int32_t *dest = c->sums + j * k;
            for (int64_t q = 0; q < k; q++)
                dest[q] = (int32_t)be32(row + HEADER_LEN + 4 * q);
        }
    }
    return flush(c);
}

/* InaClient.on_timer_batch: rows in the outbox, or ERR_FAILED (err_chunk, err_retries set:
   Python raises AggregationFailed) */
int64_t ina_on_timer(struct ina_core *c, double now) {
    int has_it = (int)c->v->has_it;
    c->n_out = 0;
    if (c->cfg.rack && has_it)
        rack_detect(c, now);
    int fired = 0;
    while (c->n_timers && c->timers[0].at <= now) {
        struct timer x = timer_pop(c);
        int64_t j = x.j;
        if (!has_it || c->answered[j] || c->deadline[j] != x.at)
            continue;               /* answered or re-armed since (NaN != anything) */
        double restart = c->progress + c->timeout[j];
        if (c->cfg.rack && restart > now) {
            c->deadline[j] = restart;   /* results came meanwhile: the timer restarts */
            if (timer_push(c, restart, j))
                return ERR_MEMORY;
            continue;
        }
        if (c->retries[j] >= c->cfg.max_retransmissions) {
            c->v->err_chunk = j;
            c->v->err_retries = c->retries[j];
            return ERR_FAILED;
        }
        declare_lost(c, j, now);
        fired = 1;
    }
    if (fired)
        c->stalls++;
    if (has_it && send_ready(c, now))
        return ERR_MEMORY;
    return flush(c);
}

/* InaClient.next_deadline; NaN for None */
double ina_next_deadline(struct ina_core *c) {
    int has_it = (int)c->v->has_it;
    while (c->n_timers) {
        struct timer top = c->timers[0];
        if (has_it && !c->answered[top.j] && c->deadline[top.j] == top.at)
            break;
        timer_pop(c);
    }
    double best = c->n_timers ? c->timers[0].at : NAN;
    int done = has_it && c->v->n_results == c->n;
    if (c->has_pace_at && !done && (isnan(best) || c->pace_at < best))
        best = c->pace_at;
    if (c->has_rack_at && !done && (isnan(best) || c->rack_at < best))
        best = c->rack_at;
    return best;
}

static void free_iteration(struct ina_core *c) {
    void *arrays[] = {c->sent_at, c->last_tx, c->deadline, c->timeout, c->retries, c->answered,
                      c->prev, c->next, c->listed, c->lost, c->event, c->unlocked, c->episode};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
        free(arrays[i]);
    c->sent_at = c->last_tx = c->deadline = c->timeout = NULL;
    c->retries = c->prev = c->next = c->lost = c->event = c->unlocked = c->episode = NULL;
    c->answered = c->listed = NULL;
}

/* InaClient.start_batch after its checks and packing: rows in the outbox, or an error */
int64_t ina_start(struct ina_core *c, int64_t n, int64_t base_seq, const uint8_t *packets,
                  int32_t *sums, double now) {
    free_iteration(c);
    size_t cells = n > 0 ? (size_t)n : 1;
    c->sent_at = malloc(cells * sizeof(double));
    c->last_tx = malloc(cells * sizeof(double));
    c->deadline = malloc(cells * sizeof(double));
    c->timeout = calloc(cells, sizeof(double));
    c->retries = calloc(cells, sizeof(int64_t));
    c->answered = calloc(cells, 1);
    c->prev = malloc(cells * sizeof(int64_t));
    c->next = malloc(cells * sizeof(int64_t));
    c->listed = calloc(cells, 1);
    c->lost = malloc(cells * sizeof(int64_t));
    c->unlocked = malloc(cells * sizeof(int64_t));
    c->event = calloc(cells, sizeof(int64_t));
    c->episode = calloc(cells, sizeof(int64_t));
    double *arrivals = malloc(cells * sizeof(double));
    if (!c->sent_at || !c->last_tx || !c->deadline || !c->timeout || !c->retries || !c->answered
        || !c->prev || !c->next || !c->listed || !c->lost || !c->unlocked || !c->event || !c->episode
        || !arrivals) {
        free(arrivals);
        free_iteration(c);
        c->v->has_it = 0;
        return ERR_MEMORY;
    }
    for (int64_t j = 0; j < n; j++)
        c->sent_at[j] = c->last_tx[j] = c->deadline[j] = NAN;
    c->v->has_it = 1;
    c->v->n = c->n = n;
    c->v->n_results = 0;
    c->v->overflow = 0;
    c->base_seq = base_seq;
    c->packets = packets;
    c->sums = sums;
    c->n_out = 0;
    c->in_flight = 0;
    c->n_unlocked = n < c->cfg.window ? n : c->cfg.window;
    for (int64_t j = 0; j < c->n_unlocked; j++)
        c->unlocked[j] = j;         /* the first window: a sorted array is a min-heap */
    c->head = c->tail = -1;
    c->n_lost = 0;
    c->event_id = 1;
    c->event_size = 0;
    c->episode_id = 1;
    c->episode_size = 0;
    c->event_resent = 0;
    c->n_timers = 0;                /* self._timers = [] */
    c->rack_sent = -INFINITY;
    c->has_rack_at = 0;
    c->progress = now;
    pacer_start(c, now);            /* reads the previous tensor's arrivals, then drops them */
    free(c->arrivals);
    c->arrivals = arrivals;
    if (send_ready(c, now))
        return ERR_MEMORY;
    return flush(c);
}

/* InaClient.__init__ */
struct ina_core *ina_new(const struct ina_config *cfg, struct ina_view *view) {
    struct ina_core *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = *cfg;
    c->v = view;
    c->v->granularity = cfg->granularity;
    double w = (double)cfg->window;
    c->v->cwnd = cfg->cc_enabled ? (double)(cfg->window < cfg->initial_cwnd ? cfg->window : cfg->initial_cwnd) : w;
    c->v->ssthresh = c->max_cwnd = w;
    c->recover_at = -INFINITY;
    c->rack_sent = -INFINITY;
    c->progress = -INFINITY;
    c->head = c->tail = -1;
    return c;
}

/* Pacer.set_max_rate: a new cap from the next tensor on, the rate re-derived at its start */
void ina_set_max_rate(struct ina_core *c, double max_rate) {
    c->cfg.max_rate = max_rate;
    c->v->has_rate = 0;
}

void ina_free(struct ina_core *c) {
    if (!c)
        return;
    free_iteration(c);
    free(c->arrivals);
    free(c->timers);
    free(c->out);
    free(c);
}
