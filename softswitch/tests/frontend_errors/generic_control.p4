// expect: 3:16: unsupported: type parameters on 'Generic'
#include "base.p4h"
control Generic<T>(inout T data) {
    apply { }
}
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}
MAIN
