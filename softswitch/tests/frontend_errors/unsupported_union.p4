// expect: 3:1: unsupported: header_union (use separate headers with validity checks)
#include "base.p4h"
header_union ip_t {
    ethernet_t a;
}
