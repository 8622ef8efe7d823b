"""Benchmarks of the softswitch: `python3 -m softswitch.bench` (veths and in-process) and
`python3 -m softswitch.bench_inproc` (in-process only).

    inproc.py     packets per CPU-second of the pipeline, no sockets
    workloads.py  the forwarding and aggregation workloads: programs, entries, frames
    veth.py       the veth bed: generator, do-nothing relay, the switch through veths; main()
"""
