"""Data plane I/O: the switch process around the pipeline.

    ports.py    AF_PACKET ports (batched receive, never reads back its own frames)
    pcap.py     per-port pcap files as simple_switch writes them
    linkem.py   user-space egress delay, jitter and loss (kernels without netem)
    loop.py     SwitchLoop: one selectors loop for ports, control connections and timers
    process.py  python3 -m softswitch: arguments, start-up, the ready and stopping lines
    relay.py    python3 -m softswitch.linkem: a two-port relay with link emulation

The top layer: process.py wires the target (softswitch.target), the control server
(softswitch.control) and the loop; nothing below imports it.
"""
