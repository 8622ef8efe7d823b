"""A hand-built SwitchState for runtime tests: one table per match kind,
registers, counters (indirect and direct), meters (indirect and direct); and
RunningServer, a control server over it in a thread."""
import selectors
import threading

import pytest

from softswitch.control.commands import RuntimeAPI
from softswitch.control.server import ControlServer
from softswitch.runtime.state import (ActionSpec, Counter, DirectCounter, DirectMeter, KeySpec, Meter,
                              Register, SwitchState, Table)


def make_state() -> SwitchState:
    fwd = ActionSpec("MyIngress.ipv4_forward", [("dstAddr", 48), ("port", 9)])
    drop = ActionSpec("MyIngress.drop")
    noop = ActionSpec("NoAction")
    set_port = ActionSpec("MyIngress.set_port", [("port", 9)])
    mark = ActionSpec("MyEgress.mark", [("dscp", 6)])

    ipv4_lpm = Table("MyIngress.ipv4_lpm", [KeySpec("hdr.ipv4.dstAddr", "lpm", 32)],
                     [fwd, drop, noop], size=8, default_action=drop)
    dmac = Table("MyIngress.dmac", [KeySpec("hdr.ethernet.dstAddr", "exact", 48)],
                 [set_port, drop], size=4, default_action=drop)
    acl = Table("MyIngress.acl", [KeySpec("hdr.ethernet.etherType", "ternary", 16),
                                  KeySpec("hdr.ipv4.protocol", "exact", 8)],
                [set_port, drop, noop], default_action=noop)
    ports = Table("MyIngress.port_range", [KeySpec("meta.l4_dport", "range", 16)],
                  [set_port, noop], default_action=noop)
    opt = Table("MyIngress.opt", [KeySpec("hdr.ipv4.ttl", "optional", 8),
                                  KeySpec("standard_metadata.ingress_port", "exact", 9)],
                [set_port, noop], default_action=noop)
    # the same short name in two controls: 'mark_tbl' alone is ambiguous
    e1 = Table("MyEgress.mark_tbl", [KeySpec("meta.x", "exact", 8)], [mark, noop], default_action=noop)
    e2 = Table("MyIngress.mark_tbl", [KeySpec("meta.x", "exact", 8)], [mark, noop], default_action=noop)
    const_tbl = Table("MyIngress.const_tbl", [KeySpec("meta.x", "exact", 8)], [set_port, noop],
                      default_action=noop, const_default=True, const_entries=True)
    const_tbl.add_const([7], "MyIngress.set_port", [3])

    counted = Table("MyIngress.counted", [KeySpec("meta.x", "exact", 8)], [noop], default_action=noop)
    dmeter = DirectMeter("MyIngress.dmeter", "packets")
    metered = Table("MyIngress.metered", [KeySpec("meta.x", "exact", 8)], [noop],
                    default_action=noop, direct_meter=dmeter)
    dmeter.table = metered

    regs = [Register("MyIngress.agg", 4, 32), Register("MyIngress.small", 2, 8),
            Register("MyIngress.signed_reg", 2, 8, signed=True)]
    counters = [Counter("MyIngress.pkt_counter", 4), DirectCounter("MyIngress.dcount", counted)]
    meters = [Meter("MyIngress.pmeter", 2, "packets"), dmeter]
    return SwitchState([ipv4_lpm, dmac, acl, ports, opt, e1, e2, const_tbl, counted, metered],
                       regs, counters, meters)


class RunningServer:
    def __init__(self):
        self.api = RuntimeAPI(make_state())
        self.sel = selectors.DefaultSelector()
        self.srv = ControlServer(self.api, 0)
        self.srv.register(self.sel)
        self.port = self.srv.port
        self.stop = threading.Event()
        self.errors = []
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        try:
            while not self.stop.is_set():
                for key, mask in self.sel.select(0.05):
                    key.data(mask)
        except Exception as e:   # the test fails if the loop ever dies
            self.errors.append(e)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.srv.close()
        self.sel.close()


@pytest.fixture
def server():
    """A control server on a free port over a fresh state; its loop must not have died."""
    s = RunningServer()
    yield s
    s.close()
    assert not s.errors, f"server loop died: {s.errors}"

