// expect: 4:5: unknown type 'flow_t'
#include "base.p4h"
struct more_t {
    flow_t f;
}
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}
MAIN
