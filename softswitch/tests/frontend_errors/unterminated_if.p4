// expect: 3:1: unterminated #if (missing #endif)
#include "base.p4h"
#if defined(FAST) || 1
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}
MAIN
