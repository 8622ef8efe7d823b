"""The softswitch process, started the way simple_switch is:

    python3 -m softswitch PROGRAM.p4 -i 1@s1-eth1 -i 2@s1-eth2 --device-id N [--thrift-port P]
        [--log-console | --log-file F] [--pcap DIR] [-D NAME=VALUE] [-I DIR]
        [--link-emu PORT:delay_ms=D,jitter_ms=J,loss_pct=L[,seed=S]] [--trace] [--stats-file F]

One thread runs one selectors loop over the AF_PACKET ports, the control server's sockets,
a timerfd for the link-emulation delay lines and a signal wake-up socket. One thread means
the compiled pipeline and the runtime never race on tables and registers (no locks), and
the ports are drained in batches so the loop costs little per frame.
"""
from __future__ import annotations

import argparse
import logging
import os
import selectors
import signal
import socket
import sys
import time

from softswitch.linkem import LinkEmulation, PreciseTimer, parse_link_emu_spec
from softswitch.pcap import PortPcaps
from softswitch.ports import Port, parse_interface_spec

log = logging.getLogger("softswitch")


class SwitchLoop:
    """Moves frames between ports and the pipeline; `process(port, bytes, now_us)` is the switch.

    `ports` maps port numbers to objects with fileno(), read_batch(), send(frame) and close()
    (softswitch.ports.Port in the real process; tests may pass socketpair-backed stand-ins).
    """

    def __init__(self, process, ports: dict, *, linkem: LinkEmulation | None = None,
                 pcaps: PortPcaps | None = None, trace: bool = False, clock=time.monotonic):
        self.process = process
        self.ports = ports
        self.linkem = linkem if linkem and linkem.lines else None
        self.pcaps = pcaps
        self.trace = trace
        self.clock = clock
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        self.tx_unknown_port = 0
        self.packets_in = 0
        self.timer = None
        for port in ports.values():
            self.selector.register(port, selectors.EVENT_READ, self._reader(port))
        if self.linkem is not None:
            try:
                self.timer = PreciseTimer()
                self.selector.register(self.timer, selectors.EVENT_READ, self._on_timer)
            except OSError as e:   # no timerfd: fall back to epoll's millisecond timeouts
                log.warning("no timerfd (%s): link-emulation delays have millisecond resolution", e)
                self.timer = None

    # --- event handlers (selector data = handler(mask)) ---------------------------------
    def _reader(self, port):
        number = port.number
        pcap_in = self.pcaps.inputs.get(number) if self.pcaps else None
        if self.pcaps is None and not self.trace:
            return self._fast_reader(port)

        def on_readable(_mask):
            frames = port.read_batch()
            if not frames:
                return
            now = self.clock()
            now_us = int(now * 1e6)
            self.packets_in += len(frames)
            process = self.process
            emit = self._emit
            for frame in frames:
                if pcap_in is not None:
                    pcap_in.write(frame)
                if self.trace:
                    log.info("in  port %d len %d %s", number, len(frame), frame[:34].hex())
                for out_port, out in process(number, frame, now_us):
                    emit(out_port, out, now)
        return on_readable

    def _fast_reader(self, port):
        """The real runs' case (no pcap or trace; link emulation or not) with _emit and
        _transmit inlined: at tens of kpps each Python call saved is a few percent of
        throughput. A frame to an emulated port goes straight into its delay line."""
        number = port.number
        process = self.process
        clock = self.clock
        lines = self.linkem.lines if self.linkem is not None else {}
        sends = {n: p.send for n, p in self.ports.items() if n not in lines}
        submits = {n: line.submit for n, line in lines.items()}

        def on_readable(_mask):
            frames = port.read_batch()
            if not frames:
                return
            now = clock()
            now_us = int(now * 1e6)
            self.packets_in += len(frames)
            for frame in frames:
                for out_port, out in process(number, frame, now_us):
                    send = sends.get(out_port)
                    if send is not None:
                        send(out)
                        continue
                    submit = submits.get(out_port)
                    if submit is None:
                        self.tx_unknown_port += 1
                    else:
                        submit(out, now)
        return on_readable

    def _emit(self, out_port: int, frame: bytes, now: float) -> None:
        if self.linkem is not None and out_port in self.linkem:
            self.linkem.submit(out_port, frame, now)
            return
        self._transmit(out_port, frame)

    def _transmit(self, out_port: int, frame: bytes) -> None:
        port = self.ports.get(out_port)
        if port is None:
            self.tx_unknown_port += 1   # the program sent to a port with no interface: dropped
            return
        if self.trace:
            log.info("out port %d len %d %s", out_port, len(frame), frame[:34].hex())
        if self.pcaps is not None:
            self.pcaps.outputs[out_port].write(frame)
        port.send(frame)

    def _on_timer(self, _mask) -> None:
        self.timer.consume()

    def _release_due_frames(self) -> None:
        for out_port, frame in self.linkem.pop_due(self.clock()):
            self._transmit(out_port, frame)
        due = self.linkem.next_due()
        if self.timer is not None:
            if due is None:
                self.timer.disarm()
            else:
                self.timer.arm(due)

    def _select_timeout(self) -> float | None:
        if self.linkem is None or self.timer is not None:
            return None
        due = self.linkem.next_due()
        return None if due is None else max(0.0, due - self.clock())

    # --- loop -----------------------------------------------------------------------------
    def run(self, on_ready=None) -> None:
        if on_ready:
            on_ready()
        while not self.stopping:
            self.run_once()

    def run_once(self, max_wait: float | None = None) -> None:
        """One select() round: handle ready sockets, then release frames whose delay is over."""
        timeout = self._select_timeout()
        if max_wait is not None:
            timeout = max_wait if timeout is None else min(timeout, max_wait)
        for key, mask in self.selector.select(timeout):
            key.data(mask)
        if self.linkem is not None:
            self._release_due_frames()

    def stop(self) -> None:
        self.stopping = True

    def close(self) -> None:
        for port in self.ports.values():
            port.close()
        if self.timer is not None:
            self.timer.close()
        if self.pcaps is not None:
            self.pcaps.close()
        self.selector.close()


def final_stats(loop: SwitchLoop, switch) -> dict:
    """Counters of a finished run: what the testbed reports as switch drops comes from here
    (pipeline drops, kernel receive-buffer drops, link-emulation losses)."""
    return {
        "packets_in": loop.packets_in,
        "pipeline": dict(getattr(switch, "stats", {})),
        "ports": {n: p.counters() for n, p in loop.ports.items()},
        "link_emu": {n: line.counters() for n, line in loop.linkem.lines.items()} if loop.linkem else {},
        "unknown_egress_port_drops": loop.tx_unknown_port,
    }


def write_stats(path: str, stats: dict) -> None:
    import json
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True, default=str)
    os.replace(tmp, path)   # readers never see half a file


def install_signal_wakeup(loop: SwitchLoop) -> socket.socket:
    """SIGTERM/SIGINT stop the loop; a wake-up socket makes select() return at once."""
    rsock, wsock = socket.socketpair()
    rsock.setblocking(False)
    wsock.setblocking(False)

    def on_signal(signum, _frame):
        log.info("received %s, shutting down", signal.Signals(signum).name)
        loop.stop()

    def drain(_mask):
        try:
            rsock.recv(4096)
        except BlockingIOError:
            pass

    signal.set_wakeup_fd(wsock.fileno(), warn_on_full_buffer=False)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    loop.selector.register(rsock, selectors.EVENT_READ, drain)
    loop._signal_socks = (rsock, wsock)   # kept alive for the process's lifetime
    return rsock


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
    from softswitch.switch import Switch
    kwargs = {"defines": defines, "device_id": args.device_id, "log": log}
    if args.include_dirs:
        kwargs["include_dirs"] = tuple(args.include_dirs)
    return Switch.from_file(args.program, **kwargs)


def _start_control_server(switch, port: int):
    from softswitch.runtime import RuntimeAPI
    from softswitch.server import ControlServer
    return ControlServer(RuntimeAPI(switch.state), port, log=log.info)


def main(argv=None) -> int:
    args = parse_args(argv)
    _setup_logging(args)
    from softswitch.errors import P4Error
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

    ports: dict[int, Port] = {}
    try:
        for number, ifname in ifaces.items():
            ports[number] = Port(number, ifname)
        server = _start_control_server(switch, control_port)
    except OSError as e:   # a PortError's or the control server's message names what to check
        _fail(args, f"softswitch: {e.strerror or e}")
        for p in ports.values():
            p.close()
        return 1

    pcaps = PortPcaps(args.pcap, ifaces) if args.pcap else None
    loop = SwitchLoop(switch.process, ports, linkem=LinkEmulation(emu), pcaps=pcaps, trace=args.trace)
    server.register(loop.selector)
    install_signal_wakeup(loop)
    for number, cfg in emu.items():
        log.info("link emulation on port %d (%s): delay %g ms, jitter %g ms, loss %g %%, seed %s, timer %s",
                 number, ifaces[number], cfg.delay_ms, cfg.jitter_ms, cfg.loss_pct, cfg.seed,
                 "timerfd" if loop.timer else "epoll-ms")

    def ready():
        port_list = " ".join(f"{n}@{name}" for n, name in sorted(ifaces.items()))
        log.info("ready: pid %d device %d ports [%s] control port 127.0.0.1:%d program %s",
                 os.getpid(), args.device_id, port_list, getattr(server, "port", control_port), args.program)
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
        final = final_stats(loop, switch)
        log.info("stopping: packets_in %d, stats %s, ports %s, link-emu %s, unknown egress port drops %d",
                 final["packets_in"], final["pipeline"], final["ports"], final["link_emu"],
                 final["unknown_egress_port_drops"])
        if args.stats_file:
            write_stats(args.stats_file, final)
        close = getattr(server, "close", None)
        if close:
            close()
        loop.close()
        logging.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
