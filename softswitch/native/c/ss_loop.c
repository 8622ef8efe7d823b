/* softswitch compiled data path: the packet loop for AF_PACKET ports (included by
 * ss_switch.c). It receives in batches (recvmmsg), runs the pipeline on each frame and
 * sends the outputs in batches (sendmmsg); outputs to a port with a delay line
 * (ss_linkem.c) wait there and leave at their departure time, the loop waking for it
 * with ppoll's nanosecond timeout. It returns to the Python loop as soon as one
 * of the `wake` fds (control connections, the P4Runtime bridge, the signal wake-up
 * socket) is readable or the timeout passed, so control-plane changes are applied between
 * batches, on this one thread. Port rules are the Python Port's (dataplane/ports.py):
 * frames this host sent are skipped when the kernel cannot ignore them, frames longer
 * than max_frame are counted and dropped (MSG_TRUNC gives the real length).
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <linux/if_packet.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define SS_BATCH 64
#define SS_BATCHES_PER_WAKE 8    /* per readable port, before polling again */
#define SS_MAX_FDS 64

static uint64_t ss_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t ss_now_us(void) { return ss_now_ns() / 1000; }

#include "ss_linkem.c"
#include "ss_pcap.c"

typedef struct {
    int32_t fd, port, max_frame, ignore_outgoing;
    /* counted here, taken (and zeroed) by the Python side after each run */
    uint64_t rx_packets, rx_oversized, tx_packets, tx_bytes, tx_errors;
    ss_delay *delay;             /* the egress delay line, or NULL (owned by the Python side) */
    ss_pcap *pcap_in, *pcap_out; /* capture files, or NULL (owned by the Python side) */
} ss_port;

typedef struct {
    uint8_t rx[SS_BATCH][SS_MAX_PACKET + 1];
    struct sockaddr_ll addr[SS_BATCH];
    struct mmsghdr msgs[SS_BATCH];
    struct iovec iov[SS_BATCH];
    struct mmsghdr tx_msgs[SS_BATCH];
    struct iovec tx_iov[SS_BATCH];
    uint64_t unknown_port;       /* outputs to a port with no interface (dropped) */
} ss_loop_bufs;

SS_API ss_loop_bufs *ss_loop_new(void)
{
    /* The kernel may fire a thread's timeouts up to 50 us late to batch wake-ups (timer
     * slack); delay lines want their departure times, so ask for 1 ns. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    return calloc(1, sizeof(ss_loop_bufs));
}
SS_API void ss_loop_delete(ss_loop_bufs *b) { free(b); }
SS_API uint64_t ss_loop_take_unknown(ss_loop_bufs *b) { uint64_t n = b->unknown_port; b->unknown_port = 0; return n; }

static ss_port *ss_port_by_number(ss_port *ports, int nports, int32_t number)
{
    for (int i = 0; i < nports; i++)
        if (ports[i].port == number)
            return &ports[i];
    return NULL;
}

static void ss_wall(struct timespec *wall, const ss_port *p, int out)
{
    if (out ? p->pcap_out != NULL : p->pcap_in != NULL)
        clock_gettime(CLOCK_REALTIME, wall);
}

/* Send the n frames set up in b->tx_iov to one port (one sendmmsg when the queue has
 * room), capturing them first as the Python path does. */
static void ss_send_prepared(ss_loop_bufs *b, ss_port *dst, int n)
{
    if (dst->pcap_out) {
        struct timespec wall;
        ss_wall(&wall, dst, 1);
        for (int k = 0; k < n; k++)
            ss_pcap_write(dst->pcap_out, &wall, b->tx_iov[k].iov_base, (uint32_t)b->tx_iov[k].iov_len);
    }
    for (int k = 0; k < n; k++) {
        memset(&b->tx_msgs[k], 0, sizeof b->tx_msgs[k]);
        b->tx_msgs[k].msg_hdr.msg_iov = &b->tx_iov[k];
        b->tx_msgs[k].msg_hdr.msg_iovlen = 1;
    }
    int sent = 0;
    while (sent < n) {
        int r = sendmmsg(dst->fd, b->tx_msgs + sent, (unsigned)(n - sent), MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            dst->tx_errors++;        /* full queue or link down: this frame is lost */
            sent++;
            continue;
        }
        for (int k = 0; k < r; k++) {
            dst->tx_packets++;
            dst->tx_bytes += b->tx_iov[sent + k].iov_len;
        }
        sent += r;
    }
}

/* Send x->out's frames, consecutive frames to one port in one sendmmsg; frames to a
 * port with a delay line go into the line instead. */
static void ss_flush(ss_ctx *x, ss_loop_bufs *b, ss_port *ports, int nports)
{
    ss_out *o = &x->out;
    uint64_t now = 0;
    int i = 0;
    while (i < o->n) {
        ss_port *dst = ss_port_by_number(ports, nports, o->frames[i].port);
        if (!dst) {
            b->unknown_port++;
            i++;
            continue;
        }
        if (dst->delay) {
            if (!now)
                now = ss_now_ns();
            ss_delay_submit(dst->delay, o->buf + o->frames[i].off, o->frames[i].len, now);
            i++;
            continue;
        }
        int n = 0;
        while (i + n < o->n && n < SS_BATCH && o->frames[i + n].port == dst->port) {
            b->tx_iov[n].iov_base = o->buf + o->frames[i + n].off;
            b->tx_iov[n].iov_len = o->frames[i + n].len;
            n++;
        }
        ss_send_prepared(b, dst, n);
        i += n;
    }
    o->n = 0;
    o->used = 0;
}

/* Send every frame whose departure time has come, in batches per port. */
static void ss_release(ss_loop_bufs *b, ss_port *ports, int nports, uint64_t now)
{
    ss_dl_item *items[SS_BATCH];
    for (int i = 0; i < nports; i++) {
        ss_delay *d = ports[i].delay;
        if (!d)
            continue;
        for (;;) {
            int n = 0;
            ss_dl_item *it;
            while (n < SS_BATCH && (it = ss_delay_pop(d, now)) != NULL) {
                items[n] = it;
                b->tx_iov[n].iov_base = it->data;
                b->tx_iov[n].iov_len = it->len;
                n++;
            }
            if (n == 0)
                break;
            ss_send_prepared(b, &ports[i], n);
            for (int k = 0; k < n; k++)
                free(items[k]);
            if (n < SS_BATCH)
                break;
        }
    }
}

static uint64_t ss_next_due(const ss_port *ports, int nports)
{
    uint64_t due = UINT64_MAX;
    for (int i = 0; i < nports; i++)
        if (ports[i].delay) {
            uint64_t d = ss_delay_next_due(ports[i].delay);
            if (d < due)
                due = d;
        }
    return due;
}

/* Drain up to SS_BATCHES_PER_WAKE batches from one port. */
static void ss_drain(ss_ctx *x, ss_loop_bufs *b, ss_port *p, ss_port *ports, int nports)
{
    for (int round = 0; round < SS_BATCHES_PER_WAKE; round++) {
        for (int i = 0; i < SS_BATCH; i++) {
            b->iov[i].iov_base = b->rx[i];
            b->iov[i].iov_len = (size_t)p->max_frame + 1;
            memset(&b->msgs[i].msg_hdr, 0, sizeof b->msgs[i].msg_hdr);
            b->msgs[i].msg_hdr.msg_iov = &b->iov[i];
            b->msgs[i].msg_hdr.msg_iovlen = 1;
            b->msgs[i].msg_hdr.msg_name = &b->addr[i];
            b->msgs[i].msg_hdr.msg_namelen = sizeof b->addr[i];
        }
        int n = recvmmsg(p->fd, b->msgs, SS_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
        if (n <= 0)
            return;
        uint64_t now = ss_now_us();
        struct timespec wall;
        ss_wall(&wall, p, 0);
        for (int i = 0; i < n; i++) {
            if (!p->ignore_outgoing && b->addr[i].sll_pkttype == PACKET_OUTGOING)
                continue;
            uint32_t len = b->msgs[i].msg_len;
            if (len > (uint32_t)p->max_frame) {
                p->rx_oversized++;
                continue;
            }
            p->rx_packets++;
            if (p->pcap_in)
                ss_pcap_write(p->pcap_in, &wall, b->rx[i], len);
            ss_run_packet(x, (uint32_t)p->port, b->rx[i], len, now);
        }
        ss_flush(x, b, ports, nports);
        if (n < SS_BATCH)
            return;
    }
}

/* Move frames until a wake fd is readable (returns 1), timeout_ms passed (0), or poll
 * fails (-errno). EINTR returns 1: the Python side handles the signal. Delayed frames
 * are released whenever their time has come, also between those returns. */
SS_API int ss_loop_run(ss_ctx *x, ss_loop_bufs *b, ss_port *ports, int nports, const int32_t *wake, int nwake,
                       int timeout_ms)
{
    struct pollfd pfd[SS_MAX_FDS];
    if (nports + nwake > SS_MAX_FDS)
        return -EINVAL;
    for (int i = 0; i < nports; i++)
        pfd[i] = (struct pollfd){.fd = ports[i].fd, .events = POLLIN};
    for (int i = 0; i < nwake; i++)
        pfd[nports + i] = (struct pollfd){.fd = wake[i], .events = POLLIN};
    uint64_t deadline = ss_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
    for (;;) {
        uint64_t now = ss_now_ns();
        ss_release(b, ports, nports, now);
        if (now >= deadline)
            return 0;
        uint64_t until = ss_next_due(ports, nports);
        if (until > deadline)
            until = deadline;
        uint64_t wait = until > now ? until - now : 0;
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ULL), .tv_nsec = (long)(wait % 1000000000ULL)};
        int r = ppoll(pfd, (nfds_t)(nports + nwake), &ts, NULL);
        if (r < 0)
            return errno == EINTR ? 1 : -errno;
        if (r == 0)
            continue;            /* a departure time or the deadline: checked above */
        for (int i = 0; i < nports; i++)
            if (pfd[i].revents & POLLIN)
                ss_drain(x, b, &ports[i], ports, nports);
        for (int i = 0; i < nwake; i++)
            if (pfd[nports + i].revents)
                return 1;
    }
}
