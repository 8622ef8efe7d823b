// expect: 3:1: unsupported: function-like macro 'MAX' (use an object-like #define or a P4 const)
#include "base.p4h"
#define MAX(a, b) ((a) > (b) ? (a) : (b))
