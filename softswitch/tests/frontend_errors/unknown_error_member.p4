// expect: 6:47: unknown error 'BadChecksum' (declare it with error { BadChecksum })
#include "base.p4h"
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.BadChecksum) {
            mark_to_drop(standard_metadata);
        }
    }
}
MAIN
