// expect: 6:18: slice [8:1] out of range for bit<8>
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.a = meta.a[8:1] ++ 1w0;
    }
}
MAIN
