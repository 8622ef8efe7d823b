"""Compiler (the back end): the typed AST -> Python source for each v1model block, compiled
once at load time, plus the live state objects its tables and externs need.

    pipeline.py         compile_program(program) -> CompiledPipeline (units, state, source)
    codegen_types.py    headers and structs as Python classes; widths and signedness
    codegen_expr.py     expressions with P4's width rules
    codegen_control.py  statements, actions, tables, controls
    codegen_parser.py   parser state machines and the deparser
    codegen_v1model.py  v1model extern calls

Uses the front end's AST (softswitch.frontend) and instantiates the run-time objects of
softswitch.runtime; knows nothing of processes, sockets or the command language.
`python3 -m softswitch.compiler PROGRAM.p4` prints the generated module.
"""
