// expect: 8:9: unsupported: table property 'implementation' (action profiles/selectors)
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    table t {
        key = { hdr.eth.dstAddr: exact; }
        actions = { NoAction; }
        implementation = 1;
    }
    apply { t.apply(); }
}
MAIN
