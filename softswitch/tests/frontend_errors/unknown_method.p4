// expect: 7:11: extern register has no method 'reed' (methods: read, write)
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(16) r;
    apply {
        r.reed(meta.b, 0);
    }
}
MAIN
