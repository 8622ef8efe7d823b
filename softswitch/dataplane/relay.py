"""`python3 -m softswitch.linkem IF_A IF_B --a-to-b delay_ms=..,.. --b-to-a ...`: the
user-space link emulation (linkem.py) as a standalone two-port relay, run by the same loop
as the switch with a pipeline that sends every frame out of the other port: relay.p4 on the
compiled data path (the C loop and C delay lines), or, when it cannot be built (no gcc),
a Python function on the Python loop (loop.py), with a log line saying so.
"""
from __future__ import annotations

import logging
import os

from softswitch.dataplane.linkem import LinkEmulation, parse_link_emu_spec
from softswitch.dataplane.loop import SwitchLoop, install_signal_wakeup
from softswitch.dataplane.ports import Port, PortError

RELAY_P4 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.p4")


def make_relay_loop(ports: dict, emu: dict, datapath: str = "auto"):
    """The relay's loop over ports {1: IF_A, 2: IF_B} with delay lines emu {port: LinkEmuConfig}."""
    if datapath != "python":
        from softswitch.native.switch import compile_switch
        from softswitch.target.switch import Switch
        compiled = compile_switch(Switch.from_file(RELAY_P4), logging.getLogger("softswitch"))
        if compiled is not None:
            from softswitch.dataplane.compiled_loop import CompiledSwitchLoop
            logging.info("datapath: compiled (%s)", compiled.lib._name)
            return CompiledSwitchLoop(compiled, ports, link_emu=emu)
    else:
        logging.info("datapath: python (--datapath python)")
    return SwitchLoop(lambda port, frame, _now: [(3 - port, frame)], ports, linkem=LinkEmulation(emu))


def main(argv=None) -> int:
    """A two-port relay with the same emulation, for switches that cannot emulate links
    themselves (BMv2 on a kernel without netem): put it between two interfaces, e.g. the
    switch's veth and a second veth towards the next node, and it forwards frames both ways
    with delay/jitter/loss per direction."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python3 -m softswitch.linkem", description=main.__doc__.split("\n")[0])
    ap.add_argument("if_a")
    ap.add_argument("if_b")
    ap.add_argument("--a-to-b", default="", metavar="delay_ms=D,jitter_ms=J,loss_pct=L[,seed=S]",
                    help="emulation for frames from IF_A to IF_B")
    ap.add_argument("--b-to-a", default="", metavar="delay_ms=D,...", help="emulation for frames from IF_B to IF_A")
    ap.add_argument("--datapath", choices=("auto", "python"), default="auto",
                    help="auto: the compiled data path when gcc can build it (the default); python")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s linkem %(message)s")
    try:
        # Port 2 is IF_B: frames towards B are emulated by line 2, towards A by line 1.
        emu = {2: parse_link_emu_spec("2:" + args.a_to_b)[1], 1: parse_link_emu_spec("1:" + args.b_to_a)[1]}
        ports = {1: Port(1, args.if_a), 2: Port(2, args.if_b)}
    except (ValueError, PortError) as e:
        print(f"softswitch.linkem: {e.strerror if isinstance(e, OSError) else e}", file=sys.stderr)
        return 1
    loop = make_relay_loop(ports, emu, args.datapath)
    install_signal_wakeup(loop)
    logging.info("ready: relaying %s <-> %s (a->b %s, b->a %s)", args.if_a, args.if_b, emu[2], emu[1])
    try:
        loop.run()
    finally:
        logging.info("stopping: %s", loop.link_emu_counters())
        loop.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
