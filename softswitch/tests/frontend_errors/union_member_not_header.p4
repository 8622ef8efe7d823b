// expect: 5:5: header_union member 'meta' must be a header, not metadata
#include "base.p4h"
header_union ip_t {
    ethernet_t a;
    metadata meta;
}
