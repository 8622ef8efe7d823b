"""The switch loop when the packets run on the compiled data path.

The ports are read and written by the C loop (softswitch.native.packet_loop); the Python
selector keeps everything else (control connections, the P4Runtime bridge, the signal
wake-up socket). Each round hands the C loop the selector's fds as wake-ups: when one is
readable the C loop returns, the Python handlers run (a table change included), and the
next batch sees their effect. User-space link emulation and pcap run in C too (the delay
lines of c/ss_linkem.c, released on time by the C loop between and during those rounds;
c/ss_pcap.c), so only --trace needs the Python loop. Port counters (rx_packets, tx_packets, ...) are added to
the Port objects after every round, so the stopping line and --stats-file read as on the
Python path; rx_socket_drops comes from the kernel through the same sockets.
"""
from __future__ import annotations

from softswitch.dataplane.loop import SwitchLoop
from softswitch.native.packet_loop import NativePacketLoop

# The longest the C loop runs before Python looks in. Signals, control connections and the
# P4Runtime bridge wake it at once (their fds are in its poll set), so the round only sets
# how stale the port counters may be and, for programs with log_msg/digest, how many
# events queue up in C before Python drains them (4096 fit): short rounds for those,
# long ones otherwise, so an idle switch costs nearly no CPU.
ROUND_MS = 500
ROUND_MS_EVENTS = 50


class CompiledSwitchLoop(SwitchLoop):
    timer_name = "ppoll (ns)"

    def __init__(self, compiled, ports: dict, *, link_emu: dict | None = None, pcap_paths: dict | None = None,
                 **kw):
        """link_emu: {port: LinkEmuConfig}; pcap_paths: {port: (in_path, out_path)}."""
        super().__init__(compiled.process, ports, **kw)
        if self.linkem is not None or self.pcaps is not None or self.trace:
            raise ValueError("the compiled loop takes link_emu= and pcap_paths=; --trace needs the Python loop")
        for port in ports.values():          # the C loop reads the ports, not the selector
            self.selector.unregister(port)
        self.native = NativePacketLoop(compiled, [
            (p.fileno(), n, p.max_frame, p.kernel_ignores_outgoing) for n, p in ports.items()],
            link_emu=link_emu, pcaps=pcap_paths)
        self.round_ms = ROUND_MS_EVENTS if compiled.cprogram.events else ROUND_MS

    def run_once(self, max_wait: float | None = None) -> None:
        timeout_ms = self.round_ms if max_wait is None else max(0, min(self.round_ms, int(max_wait * 1000)))
        wake = [key.fd for key in self.selector.get_map().values()]
        woke = self.native.run(wake, timeout_ms)
        self._take_counters()
        if woke:
            for key, mask in self.selector.select(0):
                key.data(mask)

    def _take_counters(self) -> None:
        counts, unknown = self.native.take_counters()
        self.tx_unknown_port += unknown
        for number, c in counts.items():
            port = self.ports[number]
            self.packets_in += c["rx_packets"]
            for name, n in c.items():
                setattr(port, name, getattr(port, name) + n)

    def link_emu_counters(self) -> dict:
        return self.native.link_emu_counters()

    def close(self) -> None:
        try:
            self.native.close()
        finally:
            super().close()
