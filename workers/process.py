"""The end of a server process's main: its stats as one JSON line on stdout (the testbed
reads the last line of the process's log, testbed/scheme_app.py), or its error on stderr."""
from __future__ import annotations

import json
import sys
import time
from typing import Callable


def serve_and_report(serve: Callable[[], dict], expected: tuple[type[BaseException], ...]) -> int:
    """Run serve(); print its stats with elapsed_s and return 0, or print `error: ...` for
    an expected error (a peer failed, a bad configuration) and return 1. Anything else is
    a bug and propagates with its traceback."""
    t0 = time.monotonic()
    try:
        stats = serve()
    except expected as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stats["elapsed_s"] = round(time.monotonic() - t0, 3)
    print(json.dumps(stats), flush=True)
    return 0
