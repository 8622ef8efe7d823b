"""The softswitch process, started the way simple_switch is:

    python3 -m softswitch PROGRAM.p4 -i 1@s1-eth1 -i 2@s1-eth2 --device-id N [--thrift-port P]
        [--log-console | --log-file F] [--pcap DIR] [-D NAME=VALUE] [-I DIR]
        [--link-emu PORT:delay_ms=D,jitter_ms=J,loss_pct=L[,seed=S]] [--trace] [--stats-file F]
        [--grpc-server-addr 127.0.0.1:9559] [--datapath auto|python|compiled]

Loads the program (softswitch.target), opens the ports, serves the command language on a
localhost port (softswitch.control) and runs the one loop (loop.py) until SIGTERM/SIGINT.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from softswitch.dataplane.linkem import LinkEmulation, parse_link_emu_spec
from softswitch.dataplane.loop import SwitchLoop, final_stats, install_signal_wakeup, write_stats
from softswitch.dataplane.pcap import PortPcaps, pcap_paths
from softswitch.dataplane.ports import Port, parse_interface_spec

log = logging.getLogger("softswitch")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m softswitch",
                                description="P4-16 v1model software switch (simple_switch-compatible start-up)")
    p.add_argument("program", help="P4-16 source file written for v1model")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFNAME",
                   help="attach interface IFNAME as port PORT (repeatable)")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--thrift-port", type=int, default=None,
                   help="runtime control port on 127.0.0.1 (default 9090 + device id)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--log-console", action="store_true", help="log to stderr (the default)")
    out.add_argument("--log-file", metavar="F", help="log to file F instead of stderr")
    p.add_argument("--pcap", metavar="DIR", help="write <ifname>_in.pcap and <ifname>_out.pcap per port into DIR")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    p.add_argument("--link-emu", action="append", default=[], metavar="PORT:delay_ms=D,...",
                   help="user-space delay/jitter/loss on egress PORT (for kernels without netem)")
    p.add_argument("--trace", action="store_true", help="log every packet in and out")
    p.add_argument("--grpc-server-addr", metavar="HOST:PORT", default=None,
                   help="also serve P4Runtime (gRPC) on this localhost address, as simple_switch_grpc "
                        "(e.g. 127.0.0.1:9559; port 0 picks a free one, shown in the ready line)")
    p.add_argument("--datapath", choices=("auto", "python", "compiled"), default="auto",
                   help="where packets run: compiled (C, built with gcc at start-up; refuse to start "
                        "if the program or an option needs Python), python, or auto (compiled when "
                        "supported, else python with one log line saying why; the default)")
    p.add_argument("--stats-file", metavar="F",
                   help="on exit, write packet counters (pipeline, ports, link emulation) to F as JSON")
    return p.parse_args(argv)


def _setup_logging(args) -> None:
    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(message)s", "%H:%M:%S"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def _fail(args, message: str) -> None:
    """A start-up error: on stderr always, and in the log file when there is one (the Mininet
    class shows that file's tail when a switch does not come up)."""
    if args.log_file:
        log.error("%s", message)
        if _same_file(sys.stderr, args.log_file):
            return   # the Mininet class sends stderr to the log file too: say it once
    print(message, file=sys.stderr)


def _same_file(stream, path: str) -> bool:
    try:
        a, b = os.fstat(stream.fileno()), os.stat(path)
    except (OSError, ValueError):
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _parse_defines(items: list[str]) -> dict[str, str]:
    defines = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not name:
            raise ValueError(f"bad -D {item!r}: expected NAME=VALUE or NAME")
        defines[name] = value if eq else "1"
    return defines


def _load_switch(args, defines):
    from softswitch.target.switch import Switch
    kwargs = {"defines": defines, "device_id": args.device_id, "log": log}
    if args.include_dirs:
        kwargs["include_dirs"] = tuple(args.include_dirs)
    return Switch.from_file(args.program, **kwargs)


def _start_control_server(switch, port: int):
    from softswitch.control.commands import RuntimeAPI
    from softswitch.control.server import ControlServer
    return ControlServer(RuntimeAPI(switch.state), port, log=log.info)


def _start_p4runtime(switch, args):
    """(server, bridge) or (None, None) without --grpc-server-addr. Imported only when asked
    for: gRPC and protobuf are not needed to run a switch."""
    if not args.grpc_server_addr:
        return None, None
    from softswitch.p4runtime.server import LoopBridge, P4RuntimeServer
    from softswitch.p4runtime.service import P4RuntimeService
    bridge = LoopBridge()
    service = P4RuntimeService(switch.state, args.device_id, program=args.program)
    return P4RuntimeServer(service, bridge, args.grpc_server_addr, log=log.info), bridge


def _python_only_reason(args) -> str | None:
    """The option that needs the Python packet loop, if any. --trace logs every frame
    through Python's logging: a debugging aid, kept on the reference path."""
    if args.trace:
        return "--trace"
    return None


def _choose_datapath(args, switch):
    """(CompiledSwitch or None, error message or None). None, None: the Python path."""
    if args.datapath == "python":
        log.info("datapath: python (--datapath python)")
        return None, None
    reason = _python_only_reason(args)
    if reason is not None:
        if args.datapath == "compiled":
            return None, (f"softswitch: --datapath compiled: {reason} needs the Python packet loop; "
                          f"drop {reason.split()[0]} or use --datapath auto")
        log.info("datapath: python (%s needs the Python packet loop)", reason)
        return None, None
    from softswitch.native.build import BuildError
    from softswitch.native.cgen_types import Unsupported
    from softswitch.native.switch import CompiledSwitch, compile_switch
    if args.datapath == "auto":
        compiled = compile_switch(switch, log)
    else:
        try:
            compiled = CompiledSwitch(switch)
        except Unsupported as e:
            return None, f"softswitch: --datapath compiled: {e.format()}\nuse --datapath auto to run it on the Python path"
        except BuildError as e:
            return None, f"softswitch: --datapath compiled: {e}"
    if compiled is not None:
        log.info("datapath: compiled (%s)", compiled.lib._name)
    return compiled, None


def _make_loop(args, switch, compiled, ports, ifaces, emu):
    if compiled is not None:
        from softswitch.dataplane.compiled_loop import CompiledSwitchLoop
        return CompiledSwitchLoop(compiled, ports, link_emu=emu,
                                  pcap_paths=pcap_paths(args.pcap, ifaces) if args.pcap else None)
    pcaps = PortPcaps(args.pcap, ifaces) if args.pcap else None
    return SwitchLoop(switch.process, ports, linkem=LinkEmulation(emu), pcaps=pcaps, trace=args.trace)


def main(argv=None) -> int:
    args = parse_args(argv)
    _setup_logging(args)
    from softswitch.frontend.errors import P4Error
    try:
        ifaces = dict(parse_interface_spec(s) for s in args.interface)
        emu = dict(parse_link_emu_spec(s) for s in args.link_emu)
        defines = _parse_defines(args.defines)
    except ValueError as e:
        print(f"softswitch: {e}", file=sys.stderr)
        return 2
    unknown = sorted(set(emu) - set(ifaces))
    if unknown:
        print(f"softswitch: --link-emu names port(s) {unknown} that have no -i interface", file=sys.stderr)
        return 2
    control_port = args.thrift_port if args.thrift_port is not None else 9090 + args.device_id

    try:
        switch = _load_switch(args, defines)
    except P4Error as e:
        _fail(args, e.format())
        return 1
    except OSError as e:
        _fail(args, f"softswitch: cannot read program {args.program}: {e.strerror}")
        return 1

    compiled, error = _choose_datapath(args, switch)
    if error:
        _fail(args, error)
        return 1

    ports: dict[int, Port] = {}
    try:
        for number, ifname in ifaces.items():
            ports[number] = Port(number, ifname)
        server = _start_control_server(switch, control_port)
        grpc_server, bridge = _start_p4runtime(switch, args)
    except (OSError, ValueError) as e:   # a PortError's or the control server's message names what to check
        _fail(args, f"softswitch: {getattr(e, 'strerror', None) or e}")
        for p in ports.values():
            p.close()
        return 1

    try:
        loop = _make_loop(args, switch, compiled, ports, ifaces, emu)
    except OSError as e:          # a pcap folder or file that cannot be written
        _fail(args, f"softswitch: --pcap {args.pcap}: {e.strerror or e}; give a writable folder")
        for p in ports.values():
            p.close()
        return 1
    server.register(loop.selector)
    if grpc_server is not None:
        bridge.register(loop.selector)
        grpc_server.start()
    install_signal_wakeup(loop)
    for number, cfg in emu.items():
        log.info("link emulation on port %d (%s): delay %g ms, jitter %g ms, loss %g %%, seed %s, timer %s",
                 number, ifaces[number], cfg.delay_ms, cfg.jitter_ms, cfg.loss_pct, cfg.seed, loop.timer_name)

    def ready():
        port_list = " ".join(f"{n}@{name}" for n, name in sorted(ifaces.items()))
        log.info("ready: pid %d device %d ports [%s] control port 127.0.0.1:%d%s program %s",
                 os.getpid(), args.device_id, port_list, getattr(server, "port", control_port),
                 f" p4runtime {grpc_server.address}" if grpc_server is not None else "", args.program)
        for h in log.handlers:
            h.flush()

    # SOFTSWITCH_PROFILE=FILE: run the loop under cProfile and dump the stats to FILE on
    # exit (softswitch.bench --profile uses it to show where per-packet time goes).
    profile_path = os.environ.get("SOFTSWITCH_PROFILE")
    profiler = None
    if profile_path:
        import cProfile
        profiler = cProfile.Profile()
        profiler.enable()
    try:
        loop.run(on_ready=ready)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile_path)
        final = final_stats(loop, compiled if compiled is not None else switch)
        log.info("stopping: packets_in %d, stats %s, ports %s, link-emu %s, unknown egress port drops %d",
                 final["packets_in"], final["pipeline"], final["ports"], final["link_emu"],
                 final["unknown_egress_port_drops"])
        if args.stats_file:
            write_stats(args.stats_file, final)
        close = getattr(server, "close", None)
        if close:
            close()
        if grpc_server is not None:
            log.info("p4runtime: %s", " ".join(f"{k} {v}" for k, v in grpc_server.service.stats.items()))
            bridge.close()       # first: no gRPC thread may wait for the stopped loop
            grpc_server.stop()
        loop.close()
        logging.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
