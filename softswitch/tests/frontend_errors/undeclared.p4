// expect: 6:18: undeclared name 'port'
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.b = port;
    }
}
MAIN
