"""`python3 -m softswitch.cli --thrift-port P`: simple_switch_CLI for the softswitch.
The client lives in softswitch.control.cli."""
import sys

from softswitch.control.cli import main

if __name__ == "__main__":
    sys.exit(main())
