/* softswitch compiled data path: per-port pcap capture (included by ss_loop.c), the
 * files the Python path writes (softswitch/dataplane/pcap.py): classic little-endian
 * libpcap, microsecond wall-clock timestamps, Ethernet link type, one file per port and
 * direction. Written through stdio with a 64 KiB buffer and flushed on close.
 */
#include <stdio.h>

#define SS_PCAP_SNAPLEN 65535

typedef struct {
    FILE *f;
    char buf[1 << 16];
} ss_pcap;

SS_API ss_pcap *ss_pcap_open(const char *path)
{
    ss_pcap *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->f = fopen(path, "wb");
    if (!p->f) {
        free(p);
        return NULL;
    }
    setvbuf(p->f, p->buf, _IOFBF, sizeof p->buf);
    struct {
        uint32_t magic;
        uint16_t major, minor;
        int32_t zone;
        uint32_t sigfigs, snaplen, linktype;
    } __attribute__((packed)) hdr = {0xA1B2C3D4u, 2, 4, 0, 0, SS_PCAP_SNAPLEN, 1};
    fwrite(&hdr, sizeof hdr, 1, p->f);
    return p;
}

static void ss_pcap_write(ss_pcap *p, const struct timespec *wall, const uint8_t *frame, uint32_t len)
{
    uint32_t caplen = len < SS_PCAP_SNAPLEN ? len : SS_PCAP_SNAPLEN;
    uint32_t rec[4] = {(uint32_t)wall->tv_sec, (uint32_t)(wall->tv_nsec / 1000), caplen, len};
    fwrite(rec, sizeof rec, 1, p->f);
    fwrite(frame, 1, caplen, p->f);
}

/* 0, or -1 when the last buffered bytes could not be written (disk full) */
SS_API int ss_pcap_close(ss_pcap *p)
{
    if (!p)
        return 0;
    int rc = fclose(p->f);
    free(p);
    return rc == 0 ? 0 : -1;
}
