#!/usr/bin/env python3
"""`python3 run.py VERB ...` is `gdml VERB ...` (testbed/cli.py), from a checkout without installing."""
import sys, pathlib  # noqa: E401
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from testbed.cli import main  # noqa: E402
if __name__ == "__main__":
    sys.exit(main())
