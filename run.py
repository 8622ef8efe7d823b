#!/usr/bin/env python3
"""The testbed's command line (thin: every command delegates to a package).

  python3 run.py run SCENARIO [--set key=value]... [--out DIR] [--cli]
  python3 run.py validate FILE...
  python3 run.py predict SCENARIO [--set key=value]... [--schemes a,b,c]   (model output)
  python3 run.py clean
  python3 run.py bench switch|topology|schemes|ina
  python3 run.py sweep SWEEP [--resume] [--quick] [--out DIR] [--model]
  python3 run.py plot RESULTS [--format pdf,png]

Errors are one line on stderr, no traceback (set GDML_DEBUG=1 for one); a scenario or
sweep file with several problems gives one `error:` line per problem, then their count.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def cmd_run(a) -> int:
    from testbed.lifecycle import RunInterrupted, RunOptions, run_scenario
    _need_root("run")
    try:
        run_scenario(RunOptions(a.scenario, a.set, a.out, a.cli, prefix=a.prefix))
    except RunInterrupted:
        return 130
    return 0   # each run already printed "results: <folder> (complete|INCOMPLETE ...)"


def cmd_predict(a) -> int:
    from testbed.fidelity import main
    return main(a.scenario, a.set, a.schemes)


def cmd_validate(a) -> int:
    from testbed.validate import main
    return main(a.files)


def cmd_clean(a) -> int:
    from testbed.cleanup import clean
    _need_root("clean")
    r = clean(sweep=True)
    print(f"clean: {len(r['runs'])} dead run(s), {len(r['killed'])} process(es) killed, "
          f"{len(r['interfaces'])} interface(s) removed")
    return 0


def cmd_bench(a) -> int:
    if a.what == "switch":
        from softswitch.bench.veth import main
        return main(a.args) or 0
    if a.what == "schemes":
        from bench.schemes import main as schemes_main
        _need_root("bench schemes")
        return schemes_main(a.args) or 0
    if a.what == "ina":
        from bench.ina import main   # needs root: it says so itself
        return main(a.args) or 0
    from bench.topology import main
    _need_root("bench topology")
    return main(a.args) or 0


def cmd_sweep(a) -> int:
    from testbed.sweep import main
    if a.model:   # the model only: no emulation, no root (docs/model.md)
        from testbed.sweep import predict_sweep
        from testbed.sweep_model import load_sweep
        folder = predict_sweep(load_sweep(a.sweep, quick=a.quick), a.out)
        print(f"MODEL OUTPUT (not a measurement): {folder / 'model_table.csv'}")
        return 0
    _need_root("sweep")
    return main(a.sweep, resume=a.resume, quick=a.quick, out=a.out, prefix=a.prefix)


def cmd_plot(a) -> int:
    from analysis.report import main
    return main(a.results, a.format)


def _need_root(what: str) -> None:
    if os.geteuid() != 0:
        raise SystemExit(f"error: `run.py {what}` needs root (network namespaces, veth, tc): "
                         f"run it with sudo or as root")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 run.py", description="Geo-distributed ML emulation testbed")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a scenario end to end")
    r.add_argument("scenario")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario field, e.g. --set wan.default.bandwidth_mbps=50")
    r.add_argument("--out", default=None, help="results root (default: the scenario's output.folder)")
    r.add_argument("--cli", action="store_true", help="open Mininet's CLI after bring-up")
    r.add_argument("--prefix", default="", help="node-name prefix (1-3 letters) so that "
                   "several runs can share one machine")
    r.set_defaults(fn=cmd_run)
    pr = sub.add_parser("predict", help="the model's iteration time (no emulation; any scale)")
    pr.add_argument("scenario")
    pr.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a scenario field, as for run")
    pr.add_argument("--schemes", default=None, help="comma-separated schemes: a table of them "
                    "on the same scenario (default: the scenario's scheme, with its terms)")
    pr.set_defaults(fn=cmd_predict)
    v = sub.add_parser("validate", help="check scenario files")
    v.add_argument("files", nargs="+")
    v.set_defaults(fn=cmd_validate)
    c = sub.add_parser("clean", help="remove what killed runs left behind")
    c.set_defaults(fn=cmd_clean)
    b = sub.add_parser("bench", help="benchmarks")
    b.add_argument("what", choices=("switch", "topology", "schemes", "ina"))
    b.add_argument("args", nargs=argparse.REMAINDER)
    b.set_defaults(fn=cmd_bench)
    s = sub.add_parser("sweep", help="run every point of a sweep file (docs/sweeps.md)")
    s.add_argument("sweep")
    s.add_argument("--resume", action="store_true", help="skip the points already finished ok")
    s.add_argument("--quick", action="store_true", help="the sweep's quick variant (minutes)")
    s.add_argument("--model", action="store_true",
                   help="the model's prediction of every point instead of runs (seconds, no root)")
    s.add_argument("--out", default=None, help="results root (default: the sweep's output)")
    s.add_argument("--prefix", default="", help="node-name prefix (1-3 letters), as for run")
    s.set_defaults(fn=cmd_sweep)
    pl = sub.add_parser("plot", help="figures and report.md of a run, a scenario's runs or a sweep")
    pl.add_argument("results")
    pl.add_argument("--format", default="pdf,png", help="comma-separated: pdf, png, svg")
    pl.set_defaults(fn=cmd_plot)
    return p


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    try:
        return a.fn(a)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except Exception as e:   # one line, no traceback: the message says what to do
        if os.environ.get("GDML_DEBUG"):
            raise
        msg = str(e).strip().splitlines()
        if getattr(e, "problems", None):   # every problem of a file (testbed/problems.py)
            print("\n".join(f"error: {line}" for line in msg), file=sys.stderr)
            return 1
        first = msg[0] if msg else type(e).__name__
        print(f"error: {first}", file=sys.stderr)
        if len(msg) > 1:   # e.g. a switch's log tail: keep it, it says why
            print("\n".join(msg[1:]), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
