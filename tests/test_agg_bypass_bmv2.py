"""p4/aggregation.p4's fallback to the parameter server in real BMv2: p4c compiles the program
for v1model, simple_switch takes the control plane's agg_point_bypass entry, and the frames it
sends for a sequence of aggregated, bypassed, answered and malformed packets are the
in-process softswitch's, byte for byte and port by port, with the same agg_events counts.
BMv2 reads and writes packets from pcap files (--use-files), so no network namespace is
needed. Skips where simple_switch, simple_switch_CLI or p4c are not on PATH."""
import pytest

from control import routes
from control.agg_entries import push, switch_commands
from tests.agg_switches import factory
from tests.bmv2_files import compile_program, run_files, skip_without_bmv2
from tests.test_agg_bypass import DIRECT, SERVER, W1, W2, chunk, g, ip, tree, vec
from workers import agg_packet as ap

pytestmark = pytest.mark.bmv2
PORTS = (1, 2, 3)            # s1r1: W1, W2, uplink toward g1 (and the server)


def _frames():
    """(ingress port, frame) in order: aggregated slot 0, bypassed slots 2 and 3, the server's
    results (the point's, by multicast; a bypassed slot's, routed), a bypassed retransmission,
    a malformed bypass (sender beyond the fan-in) and a duplicate answered by the switch."""
    def worker(host, payload):
        a = g().nodes[host]
        return ({W1: 1, W2: 2}[host],
                ap.udp_frame(a["mac"], g().nodes["s1r1"]["mac"], a["ip"], "10.1.1.254", payload))

    def server(dst, payload):
        return 3, ap.udp_frame(g().nodes["g1"]["mac"], g().nodes["s1r1"]["mac"], ip(SERVER), dst, payload)
    total0 = chunk(0, 0, [a + b + c for a, b, c in zip(vec(0), vec(1), vec(9))], flags=ap.RESULT, fan_in=2)
    total2 = chunk(2, 2, vec(5), flags=ap.RESULT, fan_in=3)
    return [worker(W1, chunk(0, 0, vec(0))), worker(W2, chunk(0, 1, vec(1))),
            worker(W1, chunk(2, 0, vec(2))), worker(W2, chunk(2, 1, vec(3))),
            worker(W1, chunk(3, 0, vec(4))), worker(W2, chunk(3, 1, vec(6))),
            server("10.1.1.254", total0), server(ip(W1), total2),
            worker(W2, chunk(3, 1, vec(6), flags=ap.DATA | ap.RETX)),
            worker(W1, chunk(2, 2, vec(7))),
            worker(W1, chunk(0, 0, vec(0), flags=ap.DATA | ap.RETX))]


def _commands():
    t = tree({"s1r1": 2})
    assert DIRECT in t.workers
    return routes.table_commands(g())["s1r1"] + switch_commands(g(), [t])["s1r1"]


def test_bmv2_compiles_the_program_and_bypasses_as_the_softswitch(tmp_path):
    skip_without_bmv2()
    json_path = compile_program(tmp_path)
    frames = _frames()
    soft = factory("softswitch")()
    push(soft, _commands())
    want = {p: [] for p in PORTS}
    for p, f in frames:
        for out_port, out in soft.process(p, f):
            want[out_port].append(out)
    got, events, log = run_files(tmp_path, json_path, PORTS, _commands(), frames,
                                 sum(map(len, want.values())), events=13)
    assert got == want, log
    assert events == soft.events[:13]
    assert events[12] == 5 and events[11] == 1 and events[5] == 1     # bypass, bad, dup answer
