"""`python3 -m softswitch.bench_inproc [--seconds S] [--profile]`: the pipeline's packet rate
with no sockets. It lives in softswitch.bench.inproc."""
import sys

from softswitch.bench.inproc import main

if __name__ == "__main__":
    sys.exit(main())
