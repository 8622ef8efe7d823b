"""Switch factories for the aggregation tests: the P4 program in the softswitch, and the model."""
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.agg_model import ModelSwitch

PROGRAM = Path(__file__).resolve().parent.parent / "p4" / "aggregation.p4"
_compiled = {}


class SoftswitchAdapter:
    """The in-process softswitch with the execute/process/events interface of ModelSwitch."""

    def __init__(self, sw):
        from softswitch.control.commands import RuntimeAPI
        self.sw, self.api = sw, RuntimeAPI(sw.state)

    def execute(self, line):
        return self.api.execute(line)

    def process(self, port, data):
        return self.sw.process(port, data)

    @property
    def events(self):
        return list(self.sw.state.counters["MyIngress.agg_events"].packets)


def softswitch_factory(k: int = 32):
    """A function making fresh softswitches running p4/aggregation.p4 (parsed once per k)."""
    from softswitch import frontend
    from softswitch.target.switch import Switch
    if k not in _compiled:
        _compiled[k] = frontend.load(str(PROGRAM), {"AGG_K": str(k)})
    program = _compiled[k]
    return lambda name=None: SoftswitchAdapter(Switch(program))


def factory(kind: str, k: int = 32):
    if kind == "model":
        return lambda name=None: ModelSwitch(k=k)
    try:
        return softswitch_factory(k)
    except ImportError as e:   # softswitch not importable yet: say so, never pass silently
        pytest.skip(f"softswitch cannot be imported: {e}")


def flat_point_commands(agg_ip: str, worker_ips: list[str], window: int, *, job: int = 1,
                        slot_base: int = 0, fan_in: int | None = None,
                        port_per_child: bool = False) -> list[str]:
    """One root aggregation point of `job` at agg_ip for these children (fan_in: their
    number unless given), all behind port 1 or child i behind port i + 1, and /32 routes
    back to them (answers to retransmissions go to their sender)."""
    fan_in = len(worker_ips) if fan_in is None else fan_in
    cmds = [f"table_add MyIngress.agg_points MyIngress.agg_point {job} {agg_ip} => 1 {slot_base} "
            f"{window} {fan_in} 1 0.0.0.0 0 0", "mc_mgrp_create 1"]
    for i, ip in enumerate(worker_ips):
        mac = f"00:00:00:00:01:{i:02x}"
        port = i + 1 if port_per_child else 1
        cmds += [f"table_add MyEgress.agg_children MyEgress.set_child {i + 1} => {ip} {mac}",
                 f"mc_node_create {i + 1} {port}", f"mc_node_associate 1 $n{i}",
                 f"table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward {ip}/32 => {mac} {port}"]
    return cmds


def udp_bridge(sw, sock, stop, loss, rng):
    """Until `stop` is set: receive UDP at the aggregation address `sock` is bound to, run
    each datagram as a frame through switch `sw` (frames carry the protocol's port), send
    the outputs to the workers on the socket's port; each direction loses a datagram with
    probability `loss`."""
    from workers import agg_packet as ap
    agg_ip, port = sock.getsockname()
    while not stop.is_set():
        try:
            data, (src, _) = sock.recvfrom(2048)
        except TimeoutError:
            continue
        if rng.random() < loss:
            continue
        frame = ap.udp_frame("00:00:00:00:00:01", "00:00:00:00:00:02", src, agg_ip, data)
        for _, out in sw.process(1, frame):
            _, dst, payload = ap.udp_payload(out)
            if rng.random() >= loss:
                sock.sendto(payload, (dst, port))


@contextmanager
def bridged_switch(agg_ip: str, worker_ips: list[str], window: int, loss: float, seed: int,
                   k: int = 32):
    """p4/aggregation.p4 in the in-process softswitch, one flat aggregation point at agg_ip
    for worker_ips, behind a udp_bridge thread (loss each way): yields the switch."""
    import socket
    import threading

    import numpy as np

    from control.agg_entries import push
    from workers import agg_packet as ap
    sw = factory("softswitch", k)()
    push(sw, flat_point_commands(agg_ip, worker_ips, window))
    agg = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    agg.bind((agg_ip, ap.AGG_UDP_PORT))
    agg.settimeout(0.05)
    stop = threading.Event()
    t = threading.Thread(target=udp_bridge, args=(sw, agg, stop, loss, np.random.default_rng(seed)),
                         daemon=True)
    t.start()
    try:
        yield sw
    finally:
        stop.set()
        t.join(2)
        agg.close()
