// expect: 7:5: syntax error: unexpected 'standard_metadata' (missing ';' at the end of the line before?)
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.a = 1
    standard_metadata.egress_spec = 2;
    }
}
MAIN
