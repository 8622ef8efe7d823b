"""`python3 -m softswitch.check PROGRAM.p4 [-D NAME=VALUE] [-I DIR]`: front end and compiler.

Both stages run, so "ok" means the softswitch will load the program (a construct the front
end accepts but the compiler does not support yet is reported as `unsupported: ...`).
Prints `ok: <summary>` on success; otherwise the error as
`file:line:col: message`, the source line and a caret on stderr, exit 1.
Never a Python traceback: this is what users see when their program is wrong.
"""
from __future__ import annotations

import argparse
import sys
import time

import softswitch.frontend.p4ast as A
from softswitch.frontend.errors import P4Error
from softswitch.frontend.preprocess import parse_define_args


def summary(prog: A.Program) -> str:
    tables = [t for c in prog.controls.values() for t in c.locals if isinstance(t, A.TableDecl)]
    instances = [i for c in prog.controls.values() for i in c.locals if isinstance(i, A.InstanceDecl)]
    actions = [a for c in prog.controls.values() for a in c.locals if isinstance(a, A.ActionDecl)]
    states = sum(len(p.states) for p in prog.parsers.values())
    return (f"{len(prog.parsers)} parser(s) with {states} state(s), {len(prog.controls)} control(s), "
            f"{len(tables)} table(s), {len(actions) + len(prog.actions)} action(s), "
            f"{len(instances)} extern instance(s), {len(prog.types)} named type(s)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m softswitch.check",
                                 description="Check a P4-16 v1model program with the softswitch front end and compiler.")
    ap.add_argument("program", help="the .p4 file")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                    help="define a preprocessor macro")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                    help="add a folder to the #include search path")
    args = ap.parse_args(argv)
    try:
        defines = parse_define_args(args.defines)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from softswitch.frontend import load
    start = time.perf_counter()
    try:
        prog = load(args.program, defines=defines, include_dirs=args.include_dirs)
    except P4Error as e:
        print(e.format(), file=sys.stderr)
        return 1
    except RecursionError:
        print(f"{args.program}: error: program nests too deeply for the front end", file=sys.stderr)
        return 1
    from softswitch.compiler.pipeline import compile_program
    try:
        compile_program(prog)
    except P4Error as e:
        print(e.format(), file=sys.stderr)
        return 1
    ms = (time.perf_counter() - start) * 1000
    print(f"ok: {args.program}: {summary(prog)} ({ms:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
