// expect: 6:18: operands of '+' have different types: bit<8> and bit<32> (cast one side)
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.b = meta.a + meta.b;
    }
}
MAIN
