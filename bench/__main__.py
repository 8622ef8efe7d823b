"""`python3 -m bench WHAT [ARGS...]`: the benchmarks, one program (`gdml bench WHAT` runs it).

The command line reaches the benchmarks as a program, not by importing them: bench is the
top room (it imports the testbed, the schemes and the switch to measure them) and nothing
imports it. WHAT picks the benchmark; those that build namespaces or veths need root and
say so before they start. Errors are one line, as everywhere (GDML_DEBUG=1 for a traceback).
"""
from __future__ import annotations

import os
import sys

# what -> (module, needs root before it starts; ina checks root itself, with its own message)
BENCHES = {
    "switch": ("bench.bmv2_switch", False),      # the softswitch, and BMv2 beside it when on PATH
    "topology": ("bench.topology", True),
    "schemes": ("bench.schemes", True),
    "ina": ("bench.ina", False),
    "capacity": ("bench.capacity", True),
    "client": ("bench.client_core", False),      # the INA client's CPU per result, Python and C
}


def main(argv=None) -> int:
    import importlib
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in BENCHES:
        print(f"usage: gdml bench {{{','.join(BENCHES)}}} [ARGS...]", file=sys.stderr)
        return 2
    what, rest = argv[0], argv[1:]
    module, root = BENCHES[what]
    if root and os.geteuid() != 0:
        print(f"error: `gdml bench {what}` needs root (network namespaces, veth, tc): run it "
              f"with sudo or as root", file=sys.stderr)
        return 1
    from testbed.fidelity import show_model_progress
    show_model_progress()
    try:
        return importlib.import_module(module).main(rest) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:   # as every command shows errors (testbed/problems.py)
        if os.environ.get("GDML_DEBUG"):
            raise
        from testbed.problems import error_lines
        print(error_lines(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
