// expect: 3:1: unsupported: top-level instance other than the V1Switch package
#include "base.p4h"
register<bit<32>>(16) global_reg;
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}
MAIN
