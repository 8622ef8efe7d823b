// expect: 6:18: syntax error: unexpected character '$'
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.a = $1;
    }
}
MAIN
