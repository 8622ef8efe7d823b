// expect: 7:9: wrong number of arguments to action 'fwd': expected 1, got 2
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action fwd(bit<9> port) { standard_metadata.egress_spec = port; }
    apply {
        fwd(1, 2);
    }
}
MAIN
