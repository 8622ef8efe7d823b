// expect: 6:34: unknown match kind 'prefix' (exact, lpm, ternary, range, optional)
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    table t {
        key = { hdr.eth.dstAddr: prefix; }
        actions = { NoAction; }
    }
    apply { t.apply(); }
}
MAIN
