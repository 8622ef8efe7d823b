// expect: 6:13: if condition must be bool, not bit<8>
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (meta.a) { exit; }
    }
}
MAIN
