// expect: 7:45: header ethernet_t has no field 'ethType'
#include "base.p4h"
#define ETHERTYPE_OFFSET 0x1000
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.b = ETHERTYPE_OFFSET + hdr.eth.ethType;
    }
}
MAIN
