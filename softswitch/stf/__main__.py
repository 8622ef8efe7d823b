"""`python3 -m softswitch.stf PATH... [--target softswitch|softswitch-compiled|bmv2]`: run p4c-style STF tests.

PATH is a folder of NAME.stf + NAME.p4 pairs (for p4c's corpus: `p4c/testdata/p4_16_samples`
with `--match '*-bmv2.stf'`) or single .stf files. One progress line per test on stderr, the
summary by cause on stdout. Exit 0 when every test passes, or with `--expected FILE` when the
tests that do not pass are exactly those listed; 1 otherwise; 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from softswitch.stf import expected as X
from softswitch.stf.corpus import discover, run_all, summary


def _target_factory(args):
    if args.target == "softswitch":
        from softswitch.stf.target_softswitch import SoftswitchTarget
        return SoftswitchTarget
    if args.target == "softswitch-compiled":
        from softswitch.stf.target_softswitch import SoftswitchCompiledTarget
        return SoftswitchCompiledTarget
    from softswitch.stf.target_bmv2 import Bmv2Target, missing_tools
    missing = missing_tools()
    if missing:
        raise SystemExit(f"error: --target bmv2 needs {', '.join(missing)} on PATH "
                         "(install BMv2 and p4c's BMv2 back end, or put a build's bin/ on PATH)")
    return lambda: Bmv2Target(settle=args.settle)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m softswitch.stf",
                                 description="Run p4c-style STF tests (NAME.stf beside NAME.p4) on the softswitch or BMv2.")
    ap.add_argument("paths", nargs="+", metavar="PATH", help="a folder of .stf/.p4 pairs, or .stf files")
    ap.add_argument("--target", choices=("softswitch", "softswitch-compiled", "bmv2"), default="softswitch",
                    help="softswitch (in-process), softswitch-compiled (the same on the compiled data path: "
                         "programs it does not support are refused) or bmv2 (p4c-bm2-ss + simple_switch on PATH)")
    ap.add_argument("--match", default="*.stf", metavar="GLOB",
                    help="which .stf files of a folder to run (default *.stf; p4c's v1model tests: '*-bmv2.stf')")
    ap.add_argument("--expected", metavar="FILE", help="expected-failures YAML: exit 0 when the failures are exactly these")
    ap.add_argument("--write-expected", metavar="FILE", help="write the tests that did not pass as an expected-failures file")
    ap.add_argument("--corpus-label", default="", metavar="TEXT", help="where the tests came from, for --write-expected")
    ap.add_argument("--json", metavar="FILE", help="write every outcome (status, cause, detail, seconds) as JSON")
    ap.add_argument("--timeout", type=float, default=120.0, metavar="S", help="time limit per test (default 120)")
    ap.add_argument("--settle", type=float, default=1.0, metavar="S",
                    help="bmv2: seconds to let frames drain before a command and at the end (default 1)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the details of every test that does not pass")
    args = ap.parse_args(argv)

    try:
        cases = discover(args.paths, args.match)
        expected = X.load_expected(args.expected) if args.expected else None
    except (FileNotFoundError, X.ExpectedFileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not cases:
        print(f"error: no .stf files matching {args.match!r} in {', '.join(args.paths)}", file=sys.stderr)
        return 2
    try:
        factory = _target_factory(args)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2

    # SIGTERM unwinds like Ctrl-C, so a target's processes and files are removed on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    start = time.monotonic()
    print(f"running {len(cases)} STF test(s) on {args.target}", file=sys.stderr, flush=True)
    results = run_all(cases, factory, timeout=args.timeout, verbose=args.verbose)
    print(summary(results, args.target))
    print(f"({time.monotonic() - start:.0f} s)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: vars(o) for name, o in results.items()}, f, indent=1)
    if args.write_expected:
        with open(args.write_expected, "w") as f:
            f.write(X.dump_expected(results, args.target, args.corpus_label or " ".join(args.paths)))
    if expected is not None:
        cmp = X.compare(results, expected)
        if cmp.report():
            print(cmp.report())
        print(f"expected failures ({args.expected}): {'match' if cmp.matches else 'DO NOT MATCH'}")
        return 0 if cmp.matches else 1
    return 0 if all(o.status == "pass" for o in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
