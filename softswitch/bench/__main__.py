"""`python3 -m softswitch.bench`: the switch benchmark (see veth.py); also its helper roles."""
import sys

from softswitch.bench.veth import main

sys.exit(main())
