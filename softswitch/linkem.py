"""`python3 -m softswitch.linkem IF_A IF_B --a-to-b ... --b-to-a ...`: a two-port relay with
user-space delay, jitter and loss. It lives in softswitch.dataplane.relay; the emulation
itself in softswitch.dataplane.linkem."""
import sys

from softswitch.dataplane.relay import main

if __name__ == "__main__":
    sys.exit(main())
