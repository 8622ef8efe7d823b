"""`python3 -m softswitch.compiler PROGRAM.p4 [-D NAME=VALUE]...`: print the generated Python."""
import sys

from softswitch.compiler.pipeline import compile_program
from softswitch.frontend import load
from softswitch.frontend.preprocess import parse_define_args


def main(argv=None):
    """python3 -m softswitch.compiler PROGRAM.p4 [-D NAME=VALUE]...: print the generated Python."""
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m softswitch.compiler")
    ap.add_argument("program")
    ap.add_argument("-D", action="append", default=[], metavar="NAME=VALUE")
    a = ap.parse_args(argv)
    try:
        defines = parse_define_args(a.D)
    except ValueError as e:
        ap.error(str(e))
    sys.stdout.write(compile_program(load(a.program, defines)).source)


main()
