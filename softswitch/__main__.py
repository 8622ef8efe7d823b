"""`python3 -m softswitch PROGRAM.p4 -i 1@s1-eth1 ...`: the switch process, started the way
simple_switch is. The process lives in softswitch.dataplane.process."""
import sys

from softswitch.dataplane.process import main

if __name__ == "__main__":
    sys.exit(main())
