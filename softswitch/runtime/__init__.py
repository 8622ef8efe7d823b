"""Run time: what exists while packets flow, independent of P4 source.

    state.py         tables, registers, counters, meters, the PRE (multicast), mirroring
    state_tables.py  match-action tables: entries, matching, priorities, handles
    v1model.py       the run-time half of v1model's externs: hashes, checksums, the
                     per-packet context and the exceptions generated code raises

The compiler fills these objects; the generated pipeline reads and writes them per
packet; the command language (softswitch.control) changes them. Imports nothing else of
the softswitch.
"""
