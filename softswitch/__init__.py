"""softswitch: a P4-16 v1model software switch that runs the .p4 files p4c compiles for BMv2.

Layers, each importing only those before it (docs/dev/interfaces.md):
frontend (P4 source -> typed AST), runtime (state and externs while packets flow), compiler
(AST -> Python), target (Switch: simple_switch's pipeline), control (the simple_switch_CLI
language, its server, client and CLI), dataplane (ports, pcap, link emulation, the process),
node (Mininet), bench. The modules at this level are the commands' thin entries.
"""
