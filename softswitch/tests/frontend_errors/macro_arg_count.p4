// expect: 6:1: macro 'MAX' takes 2 argument(s), got 1
#include "base.p4h"
#define MAX(a, b) ((a) > (b) ? (a) : (b))
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply { meta.a = MAX(meta.a); }
}
MAIN
