"""Front end: P4-16 source -> the typed, resolved AST (softswitch.frontend.p4ast.Program).

    preprocess.py   #include, #define, #if...; a line map back to the original files
    p4.lark         the grammar, readable on its own
    parser.py       lark (LALR) parse, the tree -> AST transformer entry, load()
    typecheck.py    declarations; exprcheck, callcheck, stmtcheck, tablecheck, subcontrol:
                    expressions, calls, statements, tables and parser states, control instances
    p4ast.py        the AST: the contract with the compiler
    p4types.py      types, signatures, width rules and constant folding
    errors.py       P4Error: file:line:col, the source line and a caret

Imports nothing of the rest of the softswitch. Modules inside this package import each
other by full path (softswitch.frontend.p4ast), never through this package, so that the
re-export below makes no import cycle.
"""
from softswitch.frontend.parser import load, load_string

__all__ = ["load", "load_string"]
