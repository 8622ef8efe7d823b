"""Fuzzing the packet path: any bytes on any port, into forward.p4, an
aggregation-style program, the traffic-manager program and the parser-heavy
program, never raise out of Switch.process, no packet hits an exception in
generated code, and every packet is counted (one output or more, or one drop)."""
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from softswitch.target.switch import Switch

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = {
    "forward": (ROOT / "p4" / "forward.p4", None,
                ["table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 0.0.0.0/0 => 02:00:00:00:00:01 2",
                 "table_add MyIngress.ipv4_lpm multicast 224.0.0.0/4 => 1",
                 "mc_mgrp_create 1", "mc_node_create 0 1 2 3", "mc_node_associate 1 0"]),
    "agg_bench": (ROOT / "softswitch" / "tests" / "programs" / "agg_bench.p4", {"K": "32"}, []),
    "pre": (ROOT / "softswitch" / "tests" / "programs" / "pre.p4", None,
            ["mc_mgrp_create 1", "mc_node_create 1 2 3", "mc_node_associate 1 0",
             "mirroring_add 5 7", "mirroring_add 6 8"]),
    # header stacks, lookahead/advance, verify, NoMatch: the parser paths most likely to break
    "parser_ops": (ROOT / "softswitch" / "tests" / "programs" / "parser_ops.p4", None, []),
}
_switches = {}


def switch(name):
    if name not in _switches:
        from softswitch.control.commands import RuntimeAPI
        path, defines, cmds = PROGRAMS[name]
        sw = Switch.from_file(str(path), defines)
        api = RuntimeAPI(sw.state)
        for c in cmds:
            assert not api.execute(c).startswith("Error"), c
        _switches[name] = sw
    return _switches[name]


def ipv4_udp_prefix():
    # a valid Ethernet/IPv4/UDP start, so fuzzing also reaches the deeper parser states
    return bytes.fromhex("02000000000102000000000208004500003c000100004011000a0000010a000002"
                         "bbbbbeef0028000000")


# the EtherTypes the test programs branch on, so random bodies reach their parsers
ETHERTYPES = [0x0800, 0x88B5, 0x88B6, 0x88B7, 0x88B8, 0x88B9, 0x88BB, 0x88BC, 0x0001, 0x0002]

frames = st.one_of(
    st.binary(max_size=200),
    st.tuples(st.sampled_from(ETHERTYPES), st.binary(max_size=64)).map(
        lambda t: bytes(12) + t[0].to_bytes(2, "big") + t[1]),
    st.binary(max_size=200).map(lambda b: ipv4_udp_prefix()[:len(b) % 60] + b),
    st.binary(min_size=0, max_size=180).map(lambda b: ipv4_udp_prefix() + b),
)


@pytest.mark.parametrize("name", list(PROGRAMS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(port=st.integers(0, 511), data=frames)
def test_random_bytes_never_raise_and_are_counted(name, port, data):
    sw = switch(name)
    before = dict(sw.stats)
    out = sw.process(port, data)
    assert isinstance(out, list)
    st_ = sw.stats
    assert st_["packets_in"] == before["packets_in"] + 1
    assert st_["errors"] == before["errors"], "generated code raised on this packet"
    if out:
        assert st_["packets_out"] == before["packets_out"] + len(out)
        assert all(isinstance(p, int) and isinstance(d, bytes) for p, d in out)
    else:
        assert st_["dropped"] == before["dropped"] + 1


def test_oversized_packet_is_a_counted_drop():
    sw = switch("forward")
    before = dict(sw.stats)
    assert sw.process(1, bytes(70000)) == []
    assert sw.stats["oversized"] == before["oversized"] + 1
    assert sw.stats["dropped"] == before["dropped"] + 1


def test_an_exception_in_generated_code_costs_one_packet_only():
    sw = Switch.from_file(str(PROGRAMS["forward"][0]))
    real = sw.pipe.ingress

    def broken(*a):
        raise ZeroDivisionError("injected")
    sw.pipe.ingress = broken
    frame = ipv4_udp_prefix() + bytes(20)
    assert sw.process(1, frame) == []
    assert sw.stats["errors"] == 1 and sw.stats["dropped"] == 1
    sw.pipe.ingress = real
    sw.process(1, frame)
    assert sw.stats["errors"] == 1 and sw.stats["packets_in"] == 2
