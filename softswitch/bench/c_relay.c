/* The do-nothing C forwarder of the switch benchmark (softswitch/bench/veth.py): frames
 * from IN_IF go out of OUT_IF unchanged, with the compiled switch loop's I/O pattern
 * (poll, recvmmsg up to 64 frames, sendmmsg them) and no pipeline, so compiled switch /
 * C relay says what the pipeline costs on the same veths. Stops on SIGTERM/SIGINT.
 *     c_relay IN_IF OUT_IF
 */
#include <errno.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define BATCH 64
#define FRAME 2048

static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

static int raw_socket(const char *ifname)
{
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd < 0)
        return -1;
    struct sockaddr_ll a = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                            .sll_ifindex = (int)if_nametoindex(ifname)};
    int one = 1, buf = 8 << 20;
    if (a.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        return -1;
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: c_relay IN_IF OUT_IF\n");
        return 2;
    }
    int rx = raw_socket(argv[1]), tx = raw_socket(argv[2]);
    if (rx < 0 || tx < 0) {
        fprintf(stderr, "c_relay: cannot open AF_PACKET sockets on %s and %s: %s (root needed)\n",
                argv[1], argv[2], strerror(errno));
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    static unsigned char frames[BATCH][FRAME];
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    printf("relay ready\n");
    fflush(stdout);
    struct pollfd p = {.fd = rx, .events = POLLIN};
    while (!stop) {
        if (poll(&p, 1, 200) <= 0)
            continue;
        for (int i = 0; i < BATCH; i++) {
            iov[i] = (struct iovec){.iov_base = frames[i], .iov_len = FRAME};
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int n = recvmmsg(rx, msgs, BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            continue;
        for (int i = 0; i < n; i++)
            iov[i].iov_len = msgs[i].msg_len;
        int sent = 0;
        while (sent < n) {
            int r = sendmmsg(tx, msgs + sent, (unsigned)(n - sent), MSG_DONTWAIT);
            if (r < 0) {
                if (errno != EINTR)
                    sent++;          /* queue full: this frame is lost, as in the switch */
                continue;
            }
            sent += r;
        }
    }
    return 0;
}
