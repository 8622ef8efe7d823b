// expect: 6:9: unknown type 'flow_t'
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        flow_t f;
    }
}
MAIN
