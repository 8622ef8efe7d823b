"""The switch process's one loop: AF_PACKET ports, control connections, link-emulation
timers and a signal wake-up socket in one selectors loop.

One thread means the compiled pipeline and the runtime never race on tables and
registers (no locks), and the ports are drained in batches so the loop costs little per
frame. The switch process (process.py) and the standalone link-emulation relay
(relay.py) both run it.
"""
from __future__ import annotations

import logging
import os
import selectors
import signal
import socket
import time

from softswitch.dataplane.linkem import LinkEmulation, PreciseTimer
from softswitch.dataplane.pcap import PortPcaps

log = logging.getLogger("softswitch")


class SwitchLoop:
    """Moves frames between ports and the pipeline; `process(port, bytes, now_us)` is the switch.

    `ports` maps port numbers to objects with fileno(), read_batch(), send(frame) and close()
    (softswitch.dataplane.ports.Port in the real process; tests may pass socketpair-backed stand-ins).
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

    @property
    def timer_name(self) -> str:
        return "timerfd" if self.timer is not None else "epoll-ms"

    def link_emu_counters(self) -> dict:
        """{port: DelayLine.counters()} of the emulated egress ports."""
        return {n: line.counters() for n, line in self.linkem.lines.items()} if self.linkem else {}

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
        "link_emu": loop.link_emu_counters(),
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
