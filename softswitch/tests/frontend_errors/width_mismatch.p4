// expect: 6:18: type mismatch in assignment: expected bit<8>, got bit<16> (cast with (bit<8>)(...))
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.a = hdr.eth.etherType;
    }
}
MAIN
