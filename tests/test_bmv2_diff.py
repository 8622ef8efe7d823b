"""Differential tests against BMv2 (issue 17, item 2): p4c compiles the project's programs with
no warnings, and p4/forward.p4 and p4/aggregation.p4 (k = 32 and 64) give, on BMv2's
simple_switch and on the softswitch, the same frames byte for byte on the same ports for the
same entries and packets, and the same agg_events counts. Then a seeded hypothesis fuzzer
does the same on random packet sequences (tests/bmv2_harness.py runs both). Skips, with the
reason, where simple_switch, simple_switch_CLI or p4c are not on PATH."""
import ipaddress
import random
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from tests.agg_switches import flat_point_commands
from tests.bmv2_harness import (AGGREGATION, FORWARD, compile_bmv2, run_bmv2, run_softswitch,
                                skip_unless_bmv2, softswitch)
from workers import agg_packet as ap

pytestmark = pytest.mark.bmv2
EVENTS = 13                                     # agg_events indices p4/aggregation.p4 uses


@pytest.fixture(autouse=True)
def _bmv2():
    skip_unless_bmv2()


@pytest.mark.parametrize("program,defines", [(AGGREGATION, {"AGG_K": "32"}),
                                             (AGGREGATION, {"AGG_K": "64"}), (FORWARD, {})],
                         ids=["aggregation-k32", "aggregation-k64", "forward"])
def test_p4c_compiles_without_warnings(program, defines):
    _, out = compile_bmv2(program, defines)
    assert "warning" not in out.lower() and "error" not in out.lower(), out


def _assert_same(got, want, workdir):
    for port in sorted(set(got) | set(want)):
        g, w = got.get(port, []), want.get(port, [])
        assert len(g) == len(w), f"port {port}: BMv2 sent {len(g)} frames, softswitch {len(w)} " \
            f"(BMv2 log: {workdir}/switch.log)"
        for i, (a, b) in enumerate(zip(g, w)):
            assert a == b, f"port {port}, frame {i}: BMv2 {a.hex()} != softswitch {b.hex()}"


# ------------------------------------------------------------------ forward.p4
def _ipv4(src, dst, ttl=64, proto=17, payload=b"", ihl=5, bad_csum=False, opts=b""):
    total = 4 * ihl + len(payload)
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total, 7, 0, ttl, proto, 0,
                              ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed))
    h += opts
    csum = ap._csum16(bytes(h))
    h[10:12] = struct.pack("!H", csum ^ (0x1111 if bad_csum else 0))
    return bytes(h) + payload


def _eth(ethertype, body, dst="00:00:00:00:00:fe", src="00:00:00:00:00:01"):
    return ap._mac(dst) + ap._mac(src) + struct.pack("!H", ethertype) + body


FORWARD_ENTRIES = [
    "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.1.0/24 => 00:00:00:00:01:01 1",
    "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.2.0/24 => 00:00:00:00:02:02 2",
    "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.2.7/32 => 00:00:00:00:03:03 3",
    "table_add MyIngress.ipv4_lpm MyIngress.drop 10.0.9.0/24 =>",
    "table_add MyIngress.ipv4_lpm MyIngress.multicast 239.1.1.1/32 => 1",
    "mc_mgrp_create 1", "mc_node_create 0 2", "mc_node_associate 1 $n0",
    "mc_node_create 0 3", "mc_node_associate 1 $n1",
]


def _forward_frames(seed=17, n=60):
    """Routed, longest-prefix, dropped, multicast, unrouted; TTL 0/1/2/255, bad checksums,
    IPv4 options, non-IPv4, runt frames and payloads of every size class."""
    rnd = random.Random(seed)
    dsts = ["10.0.1.5", "10.0.2.9", "10.0.2.7", "10.0.9.1", "239.1.1.1", "192.168.5.5"]
    frames = []
    for i in range(n):
        kind = rnd.choice(["ip"] * 6 + ["bad_csum", "options", "arp", "runt", "ttl"])
        payload = rnd.randbytes(rnd.choice([0, 1, 8, 46, 300, 1400]))
        dst = rnd.choice(dsts)
        if kind == "ip":
            body = _ipv4("10.0.3.1", dst, ttl=rnd.choice([2, 64, 255]), payload=payload)
        elif kind == "ttl":
            body = _ipv4("10.0.3.1", dst, ttl=rnd.choice([0, 1]), payload=payload)
        elif kind == "bad_csum":
            body = _ipv4("10.0.3.1", dst, payload=payload, bad_csum=True)
        elif kind == "options":
            body = _ipv4("10.0.3.1", dst, payload=payload, ihl=6, opts=b"\x01\x01\x01\x00")
        elif kind == "arp":
            frames.append((rnd.randint(1, 3), _eth(0x0806, rnd.randbytes(28))))
            continue
        else:
            body = _ipv4("10.0.3.1", dst)[:rnd.randint(1, 19)]
        frames.append((rnd.randint(1, 3), _eth(0x0800, body)))
    return frames


def test_forward_p4_bmv2_and_softswitch_send_the_same_frames(tmp_path):
    ports = (1, 2, 3)
    json_path, _ = compile_bmv2(FORWARD, {})
    frames = _forward_frames()
    want = run_softswitch(softswitch(FORWARD, {}), ports, frames, FORWARD_ENTRIES)
    assert sum(map(len, want.values())) >= 30          # the case list routes most of them
    got, _ = run_bmv2(json_path, ports, frames, FORWARD_ENTRIES, tmp_path,
                      expect=sum(map(len, want.values())))
    _assert_same(got, want, tmp_path)


# ------------------------------------------------------------------ aggregation.p4
AGG_IP = "10.0.0.254"
WORKERS = ["10.0.0.1", "10.0.0.2"]
PORTS = (1, 2, 3)                                     # worker 0, worker 1, the rest


def _agg_commands(window=4):
    return flat_point_commands(AGG_IP, WORKERS, window, port_per_child=True) + [
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.5.0/24 => 00:00:00:00:05:05 3"]


def _agg_frame(sender_ip, payload, dst=AGG_IP):
    return ap.udp_frame("00:00:00:00:01:00", "00:00:00:00:00:fe", sender_ip, dst, payload)


def _chunk(k, slot, sender, values, gen=1, flags=ap.DATA, fan_in=2, job=1, exponent=-4):
    return ap.encode(job, flags, slot, gen, k * slot, sender, fan_in, exponent,
                     np.asarray(values, np.int64).astype(np.int32))


def _agg_frames(k):
    """Aggregated slots (results multicast), an int32 overflow, a stale and a new generation,
    duplicates before and after completion, malformed packets (wrong k, sender, slot beyond
    the window), another job and plain routed traffic."""
    rng = np.random.default_rng(k)
    v = lambda: rng.integers(-2**20, 2**20, k)        # noqa: E731
    big = np.full(k, 2**31 - 5)
    w0, w1 = WORKERS
    return [
        (1, _agg_frame(w0, _chunk(k, 0, 0, v()))), (2, _agg_frame(w1, _chunk(k, 0, 1, v()))),
        (1, _agg_frame(w0, _chunk(k, 1, 0, big))), (2, _agg_frame(w1, _chunk(k, 1, 1, big))),
        (1, _agg_frame(w0, _chunk(k, 2, 0, v()))),
        (1, _agg_frame(w0, _chunk(k, 2, 0, v(), flags=ap.DATA | ap.RETX))),     # incomplete dup
        (1, _agg_frame(w0, _chunk(k, 0, 0, v(), flags=ap.DATA | ap.RETX))),     # answered
        (2, _agg_frame(w1, _chunk(k, 2, 1, v()))),
        (1, _agg_frame(w0, _chunk(k, 0, 0, v(), gen=2))), (2, _agg_frame(w1, _chunk(k, 0, 1, v(), gen=3))),
        (2, _agg_frame(w1, _chunk(k, 0, 1, v(), gen=2))),
        (1, _agg_frame(w0, _chunk(k, 0, 0, v(), gen=1, flags=ap.DATA | ap.RETX))),  # stale
        (1, _agg_frame(w0, _chunk(k, 3, 0, v()[: k // 2]))),                   # wrong k
        (1, _agg_frame(w0, _chunk(k, 3, 5, v()))),                             # sender >= fan-in
        (1, _agg_frame(w0, _chunk(k, 9, 0, v()))),                             # beyond the window
        (2, _agg_frame(w1, _chunk(k, 0, 0, v(), job=7))),                      # no such job
        (3, _agg_frame("10.0.5.9", _chunk(k, 1, 0, v()), dst=w1)),             # routed
        (3, _agg_frame("10.0.5.9", b"not an aggregation packet", dst="10.0.5.1")),
    ]


def _diff_aggregation(k, frames, commands, workdir):
    json_path, _ = compile_bmv2(AGGREGATION, {"AGG_K": str(k)})
    soft = softswitch(AGGREGATION, {"AGG_K": str(k)})
    want = run_softswitch(soft, PORTS, frames, commands)
    got, replies = run_bmv2(json_path, PORTS, frames, commands, workdir,
                            reads=[f"counter_read MyIngress.agg_events {i}" for i in range(EVENTS)],
                            expect=sum(map(len, want.values())))
    _assert_same(got, want, workdir)
    from softswitch.control.client import parse_counter
    assert [parse_counter(r).packets for r in replies] == soft.events[:EVENTS]
    return soft.events


@pytest.mark.parametrize("k", [32, 64])
def test_aggregation_p4_bmv2_and_softswitch_send_the_same_frames(k, tmp_path):
    events = _diff_aggregation(k, _agg_frames(k), _agg_commands(), tmp_path)
    # the case list reaches what it means to: completions, multicasts, duplicates, malformed
    assert events[2] >= 3 and events[4] >= 3 and events[5] >= 1 and events[8] >= 1
    assert events[11] >= 2


# ------------------------------------------------------------------ the fuzzer
K = 32
packets = st.lists(st.tuples(
    st.sampled_from([0, 1]),                                   # which worker sends it
    st.integers(0, 5),                                         # slot (window 4: 4 and 5 are out)
    st.sampled_from([1, 1, 1, 2, 3]),                          # generation
    st.sampled_from([ap.DATA, ap.DATA, ap.DATA | ap.RETX, ap.RESULT, ap.DATA | ap.OVERFLOW, 0]),
    st.sampled_from([0, 1, 2]),                                # sender index (2 is bad)
    st.sampled_from([2, 2, 1, 3]),                             # fan-in it claims
    st.sampled_from([K, K, K, K - 1, 64]),                     # k it claims (malformed unless K)
    st.sampled_from(["small", "big", "negative"]),
    st.sampled_from([1, 1, 1, 1, 2]),                          # job
), min_size=1, max_size=40)


# each example is one simple_switch run (~5 s): few examples, and no shrinking (minutes of
# BMv2 runs); a failure prints its example, which reproduces it
@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(packets, st.integers(0, 2**32 - 1))
def test_fuzz_aggregation_p4_bmv2_equals_softswitch(tmp_path_factory, seq, seed):
    rng = np.random.default_rng(seed)
    frames = []
    for who, slot, gen, flags, sender, fan_in, k, size, job in seq:
        hi = {"small": 2**10, "big": 2**31 - 1, "negative": 2**31}[size]
        vals = rng.integers(-hi if size != "small" else -hi, hi, k) if size != "negative" \
            else -rng.integers(0, hi, k)
        payload = _chunk(k, slot, sender, vals, gen=gen, flags=flags, fan_in=fan_in, job=job)
        frames.append((who + 1, _agg_frame(WORKERS[who], payload)))
    _diff_aggregation(K, frames, _agg_commands(), tmp_path_factory.mktemp("fuzz"))
