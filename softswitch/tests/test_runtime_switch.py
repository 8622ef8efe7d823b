"""Runtime commands take effect on the compiled packet path: the same
SwitchState the runtime edits is what the compiled program reads.
Real P4 programs, real packets (scapy), no root."""
import os

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softswitch.control.client import parse_counter, parse_handle, parse_register
from softswitch.control.commands import RuntimeAPI
from softswitch.target.switch import Switch

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def pkt(dst, size=0):
    return bytes(Ether(dst="00:00:00:00:00:aa", src="00:00:00:00:00:bb") /
                 IP(src="10.0.0.1", dst=dst, ttl=64) / UDP(sport=1, dport=2) / (b"x" * size))


def run(api, *cmds):
    replies = [api.execute(c) for c in cmds]
    for c, r in zip(cmds, replies):
        assert not r.startswith("Error"), f"{c!r} -> {r}"
    return replies


@pytest.fixture
def basic():
    sw = Switch.from_file(os.path.join(PROGRAMS, "basic.p4"))
    return sw, RuntimeAPI(sw.state)


def test_lpm_entries_added_modified_deleted_at_runtime(basic):
    sw, api = basic
    assert sw.process(1, pkt("10.0.1.5")) == []                 # default_action = drop()
    h = parse_handle(run(api, "table_add ipv4_lpm ipv4_forward 10.0.1.0/24 => 00:00:00:00:01:01 2")[0])
    run(api, "table_add ipv4_lpm ipv4_forward 10.0.1.5/32 => 00:00:00:00:01:05 3")
    out = sw.process(1, pkt("10.0.1.9"))
    assert [p for p, _ in out] == [2]
    e = Ether(out[0][1])
    assert e.dst == "00:00:00:00:01:01" and e.src == "00:00:00:00:00:aa" and e[IP].ttl == 63
    assert [p for p, _ in sw.process(1, pkt("10.0.1.5"))] == [3]  # longest prefix
    run(api, f"table_modify ipv4_lpm ipv4_forward {h} 00:00:00:00:01:02 4")
    assert [p for p, _ in sw.process(1, pkt("10.0.1.9"))] == [4]
    run(api, f"table_modify ipv4_lpm drop {h}")
    assert sw.process(1, pkt("10.0.1.9")) == []
    run(api, f"table_delete ipv4_lpm {h}",
        "table_set_default ipv4_lpm ipv4_forward 00:00:00:00:09:09 7")
    assert [p for p, _ in sw.process(1, pkt("192.168.0.1"))] == [7]
    run(api, "reset_state")
    assert sw.process(1, pkt("10.0.1.5")) == []                 # entries and default gone


def test_registers_and_counters_seen_by_runtime(tmp_path):
    sw = Switch.from_file(os.path.join(PROGRAMS, "reg_counter.p4"))
    api = RuntimeAPI(sw.state)
    h = parse_handle(run(api, "table_add fwd forward 1 => 2")[0])
    sizes = [len(pkt("10.0.0.2", n)) for n in (0, 10, 100)]
    for n in (0, 10, 100):
        assert [p for p, _ in sw.process(1, pkt("10.0.0.2", n))] == [2]
    assert parse_register(api.execute("register_read pkt_reg 1")) == 3
    assert parse_register(api.execute("register_read byte_reg 1")) == sum(sizes)
    assert parse_counter(api.execute("counter_read port_counter 1")) == (3, sum(sizes))
    assert parse_counter(api.execute(f"counter_read fwd_counter {h}")).packets == 3
    # writes from the runtime are what the program reads next
    run(api, "register_write pkt_reg 1 100")
    sw.process(1, pkt("10.0.0.2"))
    assert parse_register(api.execute("register_read pkt_reg 1")) == 101
    run(api, "counter_reset port_counter", "register_reset pkt_reg")
    assert parse_counter(api.execute("counter_read port_counter 1")) == (0, 0)
    sw.process(1, pkt("10.0.0.2"))
    assert parse_register(api.execute("register_read pkt_reg 1")) == 1


REPLICATE_P4 = r"""
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct metadata { }
parser P(packet_in p, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { p.extract(h.ethernet); transition accept; }
}
control VC(inout headers h, inout metadata m) { apply { } }
control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply {
        if (h.ethernet.etherType == 0x0001) { sm.mcast_grp = 1; }
        else { sm.egress_spec = 1; clone(CloneType.I2E, 5); }
    }
}
control E(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply { h.ethernet.srcAddr = (bit<48>) sm.egress_rid; }
}
control CC(inout headers h, inout metadata m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_multicast_groups_and_mirroring_sessions_drive_replication(tmp_path):
    src = tmp_path / "replicate.p4"
    src.write_text(REPLICATE_P4)
    sw = Switch.from_file(str(src))
    api = RuntimeAPI(sw.state)
    mc = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="00:00:00:00:00:01", type=0x0001))
    assert sw.process(0, mc) == []                              # group 1 does not exist yet
    run(api, "mc_mgrp_create 1", "mc_node_create 7 2 3", "mc_node_create 9 4",
        "mc_node_associate 1 0", "mc_node_associate 1 1")
    out = sw.process(0, mc)
    assert [(p, Ether(d).src) for p, d in out] == [
        (2, "00:00:00:00:00:07"), (3, "00:00:00:00:00:07"), (4, "00:00:00:00:00:09")]
    run(api, "mc_node_dissociate 1 0")
    assert [p for p, _ in sw.process(0, mc)] == [4]
    uc = bytes(Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01", type=0x0002))
    assert sorted(p for p, _ in sw.process(0, uc)) == [1]       # no session 5: no clone
    run(api, "mirroring_add 5 6")
    assert sorted(p for p, _ in sw.process(0, uc)) == [1, 6]
    run(api, "mirroring_delete 5")
    assert sorted(p for p, _ in sw.process(0, uc)) == [1]
