// expect: 10:26: default_action: action 'drop' is not in the actions of table 't'
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() { mark_to_drop(standard_metadata); }
    action fwd(bit<9> port) { standard_metadata.egress_spec = port; }
    table t {
        key = { hdr.eth.dstAddr: exact; }
        actions = { fwd; }
        default_action = drop();
    }
    apply { t.apply(); }
}
MAIN
