// expect: 6:9: wrong number of arguments to 'mark_to_drop': expected 1, got 0
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        mark_to_drop();
    }
}
MAIN
