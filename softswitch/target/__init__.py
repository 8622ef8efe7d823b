"""The v1model target: one switch as simple_switch runs it.

    switch.py   Switch.from_file(path) loads (front end), compiles and runs a program:
                parser, checksums, ingress, traffic manager, egress, deparser;
                process(port, bytes) -> [(port, bytes)]

The top of the pipeline stack (front end -> compiler -> runtime); the process
(softswitch.dataplane) and tests drive it.
"""
