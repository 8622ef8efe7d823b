// expect: 3:1: cannot find include file 'headers.p4' (add its folder with -I DIR)
#include <core.p4>
#include "headers.p4"
