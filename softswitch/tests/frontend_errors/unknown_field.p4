// expect: 6:36: header ethernet_t has no field 'ethType'
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.b = (bit<32>) hdr.eth.ethType;
    }
}
MAIN
