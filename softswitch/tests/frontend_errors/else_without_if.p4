// expect: 3:1: #else without #if
#include "base.p4h"
#else
