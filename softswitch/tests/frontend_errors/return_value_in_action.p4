// expect: 5:30: only functions can return a value
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action a() { if (true) { return 1; } }
    apply { a(); }
}
MAIN
