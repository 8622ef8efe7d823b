"""The testbed's command line, `gdml` (thin: every command delegates to a package).

  gdml run SCENARIO [--set key=value]... [--out DIR] [--cli] [--prefix P]
  gdml sweep SWEEP [--resume] [--quick] [--out DIR] [--model] [--executor local|ray]
  gdml sweep SWEEP --repetitions K[,K...]    (only those repetitions; same ids and seeds)
  gdml merge SWEEP SOURCE... --out DIR      (one table from tables of that sweep run apart)
  gdml plot RESULTS [--format pdf,png]      (a run, a scenario's runs, a sweep, or a folder above them)
  gdml validate FILE...
  gdml predict SCENARIO [--set key=value]... [--schemes a,b,c]   (model output)
  gdml bench switch|topology|schemes|ina|capacity|client
  gdml clean
  gdml doctor [--json]
  gdml show SCENARIO [--set key=value]... [--out DIR] [--format pdf,png]
  gdml demo [--out DIR] [--quick]            (the doctor, then ps against geo-ina: ~3 min)
  gdml train l3dml [--out FILE] [--generations G] [--population P] [--quick] [--seed S]
                                             (L3DML's DRL model set in the flow model; no root)

`gdml` is the console script pyproject.toml declares; `python3 run.py ...` is the same
program. The program name in usage and messages is `gdml` either way. Errors are one line
on stderr, no traceback (set GDML_DEBUG=1 for one); a scenario or sweep file with several
problems gives one `error:` line per problem, then their count.

This module dispatches to every room but bench, which it runs as a program (`python3 -m
bench`: nothing imports the bench room); nothing imports this module.
"""
from __future__ import annotations

import argparse
import os
import sys

PROG = "gdml"


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
    """The benchmarks are a program of their own (bench/__main__.py): run as one, so that
    nothing imports the bench room. Its output and exit status are this command's."""
    import subprocess
    from pathlib import Path
    here = str(Path(__file__).resolve().parent.parent)   # where bench/ sits beside testbed/
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
    p = subprocess.Popen([sys.executable, "-m", "bench", a.what, *a.args], env=env)
    try:
        return p.wait()
    except KeyboardInterrupt:   # the terminal's Ctrl-C reached the bench too: let it finish
        return p.wait()


def cmd_sweep(a) -> int:
    from testbed.sweep import main
    if a.model:   # the model only: no emulation, no root (docs/model.md)
        from testbed.sweep import predict_sweep
        from testbed.sweep_model import load_sweep
        folder = predict_sweep(load_sweep(a.sweep, quick=a.quick), a.out)
        print(f"MODEL OUTPUT (not a measurement): {folder / 'model_table.csv'}")
        return 0
    if a.executor == "local":
        _need_root("sweep")   # with ray, root is checked on the machines that run points
    return main(a.sweep, resume=a.resume, quick=a.quick, out=a.out, prefix=a.prefix,
                executor=a.executor, ray_address=a.ray_address, repetitions=a.repetitions)


def _repetition_list(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give repetition numbers, e.g. 1 or 1,2")
    return out


def cmd_merge(a) -> int:
    from analysis.table_merge import main
    return main(a.sweep, a.sources, a.out)


def cmd_plot(a) -> int:
    from analysis.report import main
    return main(a.results, a.format)


def cmd_doctor(a) -> int:
    from testbed.doctor import main
    return main(as_json=a.json)


def cmd_show(a) -> int:
    from analysis.netfigure import main   # the network figure of a scenario, no emulation
    return main(a.scenario, a.set, a.out, a.format)


def cmd_demo(a) -> int:
    from analysis.demo import main
    from testbed.doctor import main as doctor
    _need_root("demo")
    if doctor(as_json=False):   # what this machine supports, first
        print(f"demo: not started: fix the FAIL lines above, then `{PROG} demo` again", file=sys.stderr)
        return 1
    print()
    return main(a.out, quick=a.quick)


def cmd_train(a) -> int:
    from schemes.l3dml.training import main   # numpy and the flow model only: no root
    return main(out=a.out, generations=a.generations, population=a.population, quick=a.quick,
                seed=a.seed)


def _need_root(what: str) -> None:
    if os.geteuid() != 0:
        raise SystemExit(f"error: `{PROG} {what}` needs root (network namespaces, veth, tc): "
                         f"run it with sudo or as root (`{PROG} doctor` lists what else a run needs)")


def _overrides(p: argparse.ArgumentParser, example: str = "as for run") -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help=f"override a scenario field, {example}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Geo-distributed ML emulation testbed")
    sub = p.add_subparsers(dest="command", required=True, metavar="VERB")
    r = sub.add_parser("run", help="run a scenario end to end (root)")
    r.add_argument("scenario")
    _overrides(r, "e.g. --set wan.default.bandwidth_mbps=50")
    r.add_argument("--out", default=None, help="results root (default: the scenario's output.folder)")
    r.add_argument("--cli", action="store_true", help="open Mininet's CLI after bring-up")
    r.add_argument("--prefix", default="", help="node-name prefix (1-3 letters) so that "
                   "several runs can share one machine")
    r.set_defaults(fn=cmd_run)
    s = sub.add_parser("sweep", help="run every point of a sweep file (root; docs/sweeps.md)")
    s.add_argument("sweep")
    s.add_argument("--resume", action="store_true", help="skip the points already finished ok")
    s.add_argument("--quick", action="store_true", help="the sweep's quick variant (minutes)")
    s.add_argument("--model", action="store_true",
                   help="the model's prediction of every point instead of runs (seconds, no root)")
    s.add_argument("--out", default=None, help="results root (default: the sweep's output)")
    s.add_argument("--prefix", default="", help="node-name prefix (1-3 letters), as for run")
    s.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where points run: this machine, or a Ray cluster, one point per machine "
                   "(docs/sweeps.md)")
    s.add_argument("--ray-address", default=None,
                   help="Ray cluster: auto or HEAD:6379 (default RAY_ADDRESS, else one started here)")
    s.add_argument("--repetitions", type=_repetition_list, default=None, metavar="K[,K...]",
                   help="run only these repetitions (0-based; same point ids and seeds as in the "
                   "whole sweep; gdml merge joins tables run apart)")
    s.set_defaults(fn=cmd_sweep)
    m = sub.add_parser("merge", help="one table of a sweep from tables run apart (repetitions on "
                       "different days or machines, a published table; docs/sweeps.md)")
    m.add_argument("sweep", help="the sweep file every row must be a point of")
    m.add_argument("sources", nargs="+", help="folders holding a table.csv of that sweep")
    m.add_argument("--out", required=True, help="new folder for the merged table")
    m.set_defaults(fn=cmd_merge)
    pl = sub.add_parser("plot", help="figures and report.md of a run, a scenario's runs or a sweep "
                        "(given a folder above them, the one found below it)")
    pl.add_argument("results")
    pl.add_argument("--format", default="pdf,png", help="comma-separated: pdf, png, svg")
    pl.set_defaults(fn=cmd_plot)
    v = sub.add_parser("validate", help="check scenario files")
    v.add_argument("files", nargs="+")
    v.set_defaults(fn=cmd_validate)
    pr = sub.add_parser("predict", help="the model's iteration time (no emulation; any scale)")
    pr.add_argument("scenario")
    _overrides(pr)
    pr.add_argument("--schemes", default=None, help="comma-separated schemes: a table of them "
                    "on the same scenario (default: the scenario's scheme, with its terms)")
    pr.set_defaults(fn=cmd_predict)
    b = sub.add_parser("bench", help="benchmarks")
    b.add_argument("what", choices=("switch", "topology", "schemes", "ina", "capacity", "client"))
    b.add_argument("args", nargs=argparse.REMAINDER)
    b.set_defaults(fn=cmd_bench)
    c = sub.add_parser("clean", help="remove what killed runs left behind (root)")
    c.set_defaults(fn=cmd_clean)
    d = sub.add_parser("doctor", help="what this machine supports and what a run will use")
    d.add_argument("--json", action="store_true", help="the checks as JSON records")
    d.set_defaults(fn=cmd_doctor)
    sh = sub.add_parser("show", help="a figure of a scenario's network (no emulation, no root)")
    sh.add_argument("scenario")
    _overrides(sh)
    sh.add_argument("--out", default=None, help="output folder")
    sh.add_argument("--format", default="pdf,png", help="comma-separated: pdf, png, svg")
    sh.set_defaults(fn=cmd_show)
    dm = sub.add_parser("demo", help="the doctor, then ps against geo-ina on 3 datacenters with "
                        "stragglers: table and figure (root; ~3 min)")
    dm.add_argument("--out", default=None, help="results root (default: results; a fresh "
                    "demo-<time> folder inside)")
    dm.add_argument("--quick", action="store_true", help="one repetition of 3 iterations")
    dm.set_defaults(fn=cmd_demo)
    t = sub.add_parser("train", help="train a scheme's learned policy: l3dml's DRL model set, one "
                       "agent per regime, in the flow model (no root; minutes)")
    t.add_argument("scheme", choices=("l3dml",))
    t.add_argument("--out", default=None, help="model set file (default: results/l3dml/model-set.json; "
                   "the committed default is schemes/l3dml/models/default.json)")
    t.add_argument("--generations", type=int, default=None, help="CEM generations per agent (default 40)")
    t.add_argument("--population", type=int, default=None, help="candidates per generation (default 16)")
    t.add_argument("--quick", action="store_true", help="toy size: seconds, for a first look")
    t.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    t.set_defaults(fn=cmd_train)
    return p


def verbs() -> list[str]:
    """The subcommands, in the order help lists them."""
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def main(argv=None) -> int:
    """The `gdml` command: parse argv (default sys.argv[1:]), run the verb, return its exit code."""
    a = parser().parse_args(argv)
    from testbed.fidelity import show_model_progress
    show_model_progress()
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
        from testbed.problems import error_lines
        print(error_lines(e), file=sys.stderr)
        return 1
