// expect: 5:5: unsupported: sub-parsers (instantiate parsers only in main)
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    MyParser() inner;
    apply { }
}
MAIN
