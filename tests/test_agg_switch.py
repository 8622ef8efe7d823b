"""The switch behaviour table (docs/protocol.md) driven packet by packet through
p4/aggregation.p4 in the in-process softswitch (and the Python model, which must
agree with it byte for byte). Switches are programmed by the real control plane.
"""
import itertools
import random
from collections import deque

import numpy as np
import pytest
from scapy.layers.inet import ICMP, IP
from scapy.layers.l2 import Ether

from control.agg_entries import push, switch_commands
from control import routes
from control.agg_tree import build_tree
from tests.agg_model import EV, ModelSwitch
from tests.agg_sim import Faults, build_sim
from tests.agg_switches import factory
from tests.agg_topo import graph
from workers import agg_packet as ap

KINDS = ["softswitch", "model"]


class Net:
    def __init__(self, kind, g, trees, k=32):
        self.g, self.k = g, k
        self.trees = {t.job: t for t in trees}
        self.sim = build_sim(g, factory(kind, k), trees, Faults(), k=k)
        self.sw = self.sim.switches

    def frame(self, host, payload, dst_ip):
        a = self.g.nodes[host]
        return ap.udp_frame(a["mac"], a["gateway_mac"], a["ip"], dst_ip, payload)

    def contribute(self, host, slot, gen, values, job=1, flags=ap.DATA, sender=None, k=None):
        b = self.trees[job].workers[host]
        payload = ap.encode(job, flags, slot, gen, slot * (k or self.k), b.sender if sender is None else sender,
                            b.fan_in, 0, np.asarray(values, dtype=np.int32))
        return self.frame(host, payload, b.agg_address)

    def send(self, host, frame, drop=lambda frm, to, f: False):
        """Inject at a host; forward through switches at once. Returns [(host, frame)] arrivals."""
        arrivals, q = [], deque([(host, next(iter(self.g.neighbors(host))), frame)])
        while q:
            frm, to, f = q.popleft()
            if drop(frm, to, f):
                continue
            if self.g.nodes[to]["role"] == "host":
                arrivals.append((to, f))
                continue
            in_port = self.g.edges[frm, to]["ports"][to]
            for port, out in self.sw[to].process(in_port, f):
                q.append((to, self.sim.port_peer[(to, port)], out))
        return arrivals

    def events(self, sw):
        return self.sw[sw].events


def g_mac(mac):
    return mac.replace(":", "")


def collect(net, arrivals):
    out = {}
    for host, f in arrivals:
        a = net.g.nodes[host]
        assert ap.ipv4_checksum_ok(f), "switch emitted a bad IPv4 checksum"
        src, dst, payload = ap.udp_payload(f)
        assert dst == a["ip"], f"{host} got a packet for {dst}"
        assert f[0:6] == bytes.fromhex(g_mac(a["mac"])), "destination MAC is not the worker's"
        assert host not in out, f"{host} got two packets"
        out[host] = ap.decode(payload)
    return out


def vec(seed, k=32):
    return np.random.default_rng(seed).integers(-2**26, 2**26, size=k).astype(np.int32)


# ------------------------------------------------------------------ orders
@pytest.mark.parametrize("kind", KINDS)
def test_every_arrival_order_flat(kind):
    """ina: one point (gateway g1), three workers behind a transit rack switch."""
    g = graph(2, 1, 3)
    hosts = ["h1r1w1", "h1r1w2", "h1r1w3"]
    net = Net(kind, g, [build_tree(g, job=1, scheme="ina", workers=hosts, root=1, window=6)])
    vals = {h: vec(i) for i, h in enumerate(hosts)}
    want = np.sum([v.astype(np.int64) for v in vals.values()], axis=0)
    for slot, order in enumerate(itertools.permutations(hosts)):
        for i, h in enumerate(order):
            got = net.send(h, net.contribute(h, slot, 1, vals[h]))
            if i < 2:
                assert got == [], f"order {order}: output before the last contribution"
        res = collect(net, got)
        assert sorted(res) == hosts
        for f in res.values():
            assert f.flags == ap.RESULT and (f.slot, f.gen, f.offset) == (slot, 1, slot * 32)
            np.testing.assert_array_equal(f.values.astype(np.int64), want)
    ev = net.events("g1")
    assert (ev[EV["NEW"]], ev[EV["ADD"]], ev[EV["COMPLETE"]], ev[EV["MCAST"]]) == (6, 12, 6, 6)


@pytest.mark.parametrize("kind,k", [("softswitch", 32), ("model", 32), ("softswitch", 64)])
def test_every_arrival_order_three_levels(kind, k):
    """2 datacenters x 1 rack x 2 workers: rack -> datacenter -> global, all 24 orders."""
    g = graph(2, 1, 2)
    net = Net(kind, g, [build_tree(g, job=1, root=1, window=24)], k=k)
    assert net.trees[1].depth() == 3
    hosts = sorted(net.trees[1].workers)
    vals = {h: vec(i, k) for i, h in enumerate(hosts)}
    want = np.sum([v.astype(np.int64) for v in vals.values()], axis=0)
    for slot, order in enumerate(itertools.permutations(hosts)):
        arrivals = []
        for h in order:
            arrivals += net.send(h, net.contribute(h, slot, 1, vals[h]))
        res = collect(net, arrivals)
        assert sorted(res) == hosts, f"order {order}"
        for f in res.values():
            assert len(f.values) == k
            np.testing.assert_array_equal(f.values.astype(np.int64), want)
    assert net.events("g2")[EV["UP"]] == 24 and net.events("g2")[EV["RESULT_STORE"]] == 24
    assert net.events("g1")[EV["MCAST"]] == 24


def two_level(kind, window=4):
    """Workers of datacenter 1 only: racks s1r1, s1r2 -> global point at g1."""
    g = graph(2, 2, 2)
    hosts = ["h1r1w1", "h1r1w2", "h1r2w1", "h1r2w2"]
    net = Net(kind, g, [build_tree(g, job=1, workers=hosts, root=1, window=window)])
    assert net.trees[1].depth() == 2
    return net, hosts


@pytest.mark.parametrize("kind", KINDS)
def test_duplicates(kind):
    net, hosts = two_level(kind)
    vals = {h: vec(i) for i, h in enumerate(hosts)}
    want = np.sum([v.astype(np.int64) for v in vals.values()], axis=0)
    assert net.send("h1r1w1", net.contribute("h1r1w1", 0, 1, vals["h1r1w1"])) == []
    # duplicate of an incomplete slot: dropped, not added twice
    assert net.send("h1r1w1", net.contribute("h1r1w1", 0, 1, vals["h1r1w1"], flags=ap.DATA | ap.RETX)) == []
    assert net.events("s1r1")[EV["DUP_DROP"]] == 1
    arrivals = []
    for h in hosts[1:]:
        arrivals += net.send(h, net.contribute(h, 0, 1, vals[h]))
    res = collect(net, arrivals)
    assert sorted(res) == hosts
    np.testing.assert_array_equal(res["h1r2w1"].values.astype(np.int64), want)
    # duplicate after completion: answered from the rack switch's stored result, to the sender only
    again = collect(net, net.send("h1r2w1", net.contribute("h1r2w1", 0, 1, vals["h1r2w1"], flags=ap.DATA | ap.RETX)))
    assert list(again) == ["h1r2w1"]
    assert again["h1r2w1"].flags == ap.RESULT | ap.RETX
    np.testing.assert_array_equal(again["h1r2w1"].values.astype(np.int64), want)
    assert net.events("s1r2")[EV["DUP_ANSWER"]] == 1 and net.events("g1")[EV["DUP_ANSWER"]] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_lost_upward_partial_is_resent(kind):
    net, hosts = two_level(kind)
    vals = {h: vec(10 + i) for i, h in enumerate(hosts)}
    want = np.sum([v.astype(np.int64) for v in vals.values()], axis=0)
    lose_up = lambda frm, to, f: (frm, to) == ("s1r1", "g1")
    for h in hosts:
        assert net.send(h, net.contribute(h, 2, 1, vals[h]), drop=lose_up) == []
    assert net.events("s1r1")[EV["UP"]] == 1 and net.events("g1")[EV["COMPLETE"]] == 0
    # h1r1w2 times out and retransmits: the rack re-sends its partial sum, the root completes
    res = collect(net, net.send("h1r1w2", net.contribute("h1r1w2", 2, 1, vals["h1r1w2"], flags=ap.DATA | ap.RETX)))
    assert sorted(res) == hosts
    for f in res.values():
        np.testing.assert_array_equal(f.values.astype(np.int64), want)
    assert net.events("s1r1")[EV["DUP_RESEND"]] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_result_completed_by_a_resent_contribution_carries_retx(kind):
    """Karn's rule over the job: a result that waited for someone's re-send says so (RETX),
    to every worker and through every level, so no worker takes its round trip as a
    sample. Only what completes a copy counts: a re-send that arrived before the last
    first transmission did not delay the result."""
    net, hosts = two_level(kind, window=8)
    vals = {h: vec(30 + i) for i, h in enumerate(hosts)}

    def run(slot, resent):
        arrivals = []
        for h in hosts:
            flags = ap.DATA | ap.RETX if h in resent else ap.DATA
            arrivals += net.send(h, net.contribute(h, slot, 1, vals[h], flags=flags))
        res = collect(net, arrivals)
        assert sorted(res) == hosts
        return {f.flags for f in res.values()}

    assert run(3, resent=()) == {ap.RESULT}
    # the last contribution (it completes rack 2, whose partial completes the root) is a re-send
    assert run(4, resent=(hosts[3],)) == {ap.RESULT | ap.RETX}
    # rack 1's partial was completed by a re-send, but rack 2's, later, by a first copy
    assert run(5, resent=(hosts[1],)) == {ap.RESULT}
    # a duplicate re-send that completes nothing leaves the result clean
    arrivals = net.send(hosts[0], net.contribute(hosts[0], 6, 1, vals[hosts[0]]))
    arrivals += net.send(hosts[0], net.contribute(hosts[0], 6, 1, vals[hosts[0]], flags=ap.DATA | ap.RETX))
    for h in hosts[1:]:
        arrivals += net.send(h, net.contribute(h, 6, 1, vals[h]))
    assert {f.flags for f in collect(net, arrivals).values()} == {ap.RESULT}


@pytest.mark.parametrize("kind", KINDS)
def test_lost_result_is_recovered_from_parent(kind):
    net, hosts = two_level(kind)
    vals = {h: vec(20 + i) for i, h in enumerate(hosts)}
    want = np.sum([v.astype(np.int64) for v in vals.values()], axis=0)
    lose_down = lambda frm, to, f: (frm, to) == ("g1", "s1r2")
    arrivals = []
    for h in hosts:
        arrivals += net.send(h, net.contribute(h, 1, 1, vals[h]), drop=lose_down)
    assert sorted(collect(net, arrivals)) == ["h1r1w1", "h1r1w2"]
    # a worker of the rack that lost the result retransmits: rack re-sends up, root answers it,
    # the rack stores the result and multicasts it to both its workers
    res = collect(net, net.send("h1r2w2", net.contribute("h1r2w2", 1, 1, vals["h1r2w2"], flags=ap.DATA | ap.RETX)))
    assert sorted(res) == ["h1r2w1", "h1r2w2"]
    for f in res.values():
        np.testing.assert_array_equal(f.values.astype(np.int64), want)
    assert net.events("s1r2")[EV["DUP_RESEND"]] == 1
    assert net.events("g1")[EV["DUP_ANSWER"]] == 1
    assert net.events("s1r2")[EV["RESULT_STORE"]] == 1
    # now the rack has the result: a further retransmission is answered locally
    net.send("h1r2w1", net.contribute("h1r2w1", 1, 1, vals["h1r2w1"], flags=ap.DATA | ap.RETX))
    assert net.events("s1r2")[EV["DUP_ANSWER"]] == 1 and net.events("g1")[EV["DUP_ANSWER"]] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_shadow_copy_and_stale_generations(kind):
    net, hosts = two_level(kind, window=1)
    def run_gen(gen, seed, skip=()):
        vals = {h: vec(seed + i) for i, h in enumerate(hosts)}
        arrivals = []
        for h in hosts:
            if h not in skip:
                arrivals += net.send(h, net.contribute(h, 0, gen, vals[h]))
        return vals, arrivals
    v1, a1 = run_gen(1, 100)
    want1 = np.sum([v.astype(np.int64) for v in v1.values()], axis=0)
    assert len(collect(net, a1)) == 4
    # generation 2 (other shadow copy) is filling; a late retransmission of generation 1 is
    # still answered from copy 0
    v2, a2 = run_gen(2, 200, skip=("h1r2w2",))
    assert a2 == []
    late = collect(net, net.send("h1r2w2", net.contribute("h1r2w2", 0, 1, v1["h1r2w2"], flags=ap.DATA | ap.RETX)))
    np.testing.assert_array_equal(late["h1r2w2"].values.astype(np.int64), want1)
    a2 = net.send("h1r2w2", net.contribute("h1r2w2", 0, 2, v2["h1r2w2"]))
    assert len(collect(net, a2)) == 4
    # generation 3 reuses copy 0: a very late duplicate of generation 1 is stale, never added
    v3, a3 = run_gen(3, 300, skip=("h1r1w2",))
    stale_before = net.events("s1r1")[EV["STALE"]]
    assert net.send("h1r1w2", net.contribute("h1r1w2", 0, 1, v1["h1r1w2"])) == []
    assert net.events("s1r1")[EV["STALE"]] == stale_before + 1
    res = collect(net, net.send("h1r1w2", net.contribute("h1r1w2", 0, 3, v3["h1r1w2"])))
    want3 = np.sum([v.astype(np.int64) for v in v3.values()], axis=0)
    assert sorted(res) == hosts
    for f in res.values():
        assert f.gen == 3
        np.testing.assert_array_equal(f.values.astype(np.int64), want3)


@pytest.mark.parametrize("kind", KINDS)
def test_several_jobs_share_switches(kind):
    g = graph(2, 1, 2)
    t1 = build_tree(g, job=1, root=1, window=2)
    t2 = build_tree(g, job=2, root=2, window=2)
    t3 = build_tree(g, job=3, scheme="ina", root=2, window=2)
    net = Net(kind, g, [t1, t2, t3])
    hosts = sorted(t1.workers)
    for job in (1, 2, 3):
        vals = {h: vec(job * 10 + i) for i, h in enumerate(hosts)}
        want = np.sum([v.astype(np.int64) for v in vals.values()], axis=0)
        arrivals = []
        for h in hosts:                  # same slot 0, gen 1 for every job
            arrivals += net.send(h, net.contribute(h, 0, 1, vals[h], job=job))
        res = collect(net, arrivals)
        assert sorted(res) == hosts
        for f in res.values():
            assert f.job == job
            np.testing.assert_array_equal(f.values.astype(np.int64), want)
    # a job no switch serves is just routed like any packet, and 10.1.1.254 has no route: dropped
    t9 = build_tree(g, job=9, root=1, window=2)
    net.trees[9] = t9
    assert net.send("h1r1w1", net.contribute("h1r1w1", 0, 1, vec(1), job=9)) == []


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_packets_are_dropped_and_counted(kind):
    net, hosts = two_level(kind, window=2)
    h = "h1r1w1"
    b = net.trees[1].workers[h]
    bad_payloads = [
        ap.encode(1, ap.DATA, 0, 1, 0, 0, 2, 0, np.zeros(64, np.int32)),     # k = 64 on a k = 32 switch
        ap.encode(1, ap.DATA, 2, 1, 0, 0, 2, 0, np.zeros(32, np.int32)),     # slot outside the job's range
        ap.encode(1, ap.DATA, 0, 1, 0, 5, 2, 0, np.zeros(32, np.int32)),     # sender >= fan-in
    ]
    shadow_wrong = bytearray(ap.encode(1, ap.DATA, 0, 1, 0, 0, 2, 0, np.zeros(32, np.int32)))
    shadow_wrong[2] ^= 0x80
    gen_zero = bytearray(ap.encode(1, ap.DATA, 0, 2, 0, 0, 2, 0, np.zeros(32, np.int32)))
    gen_zero[2:8] = b"\x00\x00\x00\x00\x00\x00"
    bad_payloads += [bytes(shadow_wrong), bytes(gen_zero)]
    for p in bad_payloads:
        assert net.send(h, net.frame(h, p, b.agg_address)) == []
    assert net.events("s1r1")[EV["BAD"]] == 5
    # a misconfigured slot range beyond the registers is refused, not read out of bounds
    net.sw["s1r1"].execute("table_add MyIngress.agg_points MyIngress.agg_point 7 10.1.1.254 => "
                           "0 2047 4 2 1 10.0.0.1 0 2")
    p = ap.encode(7, ap.DATA, 3, 1, 0, 0, 2, 0, np.zeros(32, np.int32))
    assert net.send(h, net.frame(h, p, b.agg_address)) == []
    assert net.events("s1r1")[EV["BAD"]] == 6
    # truncated: the values are cut off; must not crash, must not count
    full = net.contribute(h, 0, 1, vec(1))
    for cut in (len(full) - 4, 60, 50):
        trunc = bytearray(full[:cut])
        trunc[16:18] = (cut - 14).to_bytes(2, "big")        # IPv4 total length of what is left
        trunc[24:26] = b"\0\0"
        trunc[24:26] = ap._csum16(bytes(trunc[14:34])).to_bytes(2, "big")
        net.send(h, bytes(trunc))
    assert net.events("s1r1")[EV["NEW"]] == 0 and net.events("s1r1")[EV["ADD"]] == 0
    # the slot still works afterwards
    arrivals = []
    for i, hh in enumerate(hosts):
        arrivals += net.send(hh, net.contribute(hh, 0, 1, np.full(32, i, np.int32)))
    res = collect(net, arrivals)
    assert all((f.values == 6).all() for f in res.values())


@pytest.mark.parametrize("kind", KINDS)
def test_plain_ipv4_crosses_the_aggregation_switches(kind):
    net, _ = two_level(kind)
    a, b = net.g.nodes["h1r1w1"], net.g.nodes["h2r1w2"]
    ping = bytes(Ether(src=a["mac"], dst=a["gateway_mac"]) / IP(src=a["ip"], dst=b["ip"], ttl=64)
                 / ICMP(id=7, seq=1) / (b"x" * 40))
    got = net.send("h1r1w1", ping)
    assert [h for h, _ in got] == ["h2r1w2"]
    pkt = Ether(got[0][1])
    assert pkt[IP].ttl == 64 - 4 and pkt[ICMP].seq == 1 and pkt[Ether].dst == b["mac"]
    assert ap.ipv4_checksum_ok(got[0][1])


# ------------------------------------------------------------------ differential
def test_p4_program_matches_model_byte_for_byte():
    """Random, mostly-wrong traffic at one switch that hosts a point of each kind:
    the softswitch running the P4 program and the model emit identical packets."""
    g = graph(2, 2, 2)
    trees = [build_tree(g, job=1, root=1, window=3), build_tree(g, job=2, root=2, window=2)]
    cmds = routes.table_commands(g)
    agg = switch_commands(g, trees)
    rng = random.Random(1234)
    for sw_name in ("g1", "g2", "s1r1"):
        p4sw, model = factory("softswitch")(), ModelSwitch()
        for s in (p4sw, model):
            push(s, cmds[sw_name] + agg[sw_name])
        points = [(p.job, p.address, p.fan_in, t.window, p.is_root)
                  for t in trees for p in t.points.values() if p.switch == sw_name]
        others = ["10.0.0.1", "10.0.0.2", "10.1.0.254", "10.2.0.254", "10.1.1.254", "10.1.1.1", "10.2.2.2"]
        for i in range(3000):
            job, dst, fan_in, window, is_root = rng.choice(points)
            if rng.random() < 0.1:
                job, dst = rng.choice([1, 2, 3]), rng.choice(others)
            flags = rng.choice([ap.DATA] * 4 + [ap.DATA | ap.RETX, ap.RESULT, ap.DATA | ap.OVERFLOW,
                                                ap.RESULT | ap.OVERFLOW])
            sender = rng.randrange(fan_in + (1 if rng.random() < 0.05 else 0))
            slot = rng.randrange(window + (1 if rng.random() < 0.05 else 0))
            payload = bytearray(ap.encode(job, flags, slot, rng.choice([1, 2, 2, 3, 4]), slot * 32,
                                          sender, fan_in, rng.randrange(-3, 3),
                                          [rng.randrange(-2**31, 2**31) for _ in range(32)]))
            if rng.random() < 0.02:
                payload[2] ^= 0x80
            src = rng.choice(others)
            frame = ap.udp_frame("00:00:0a:01:01:01", "00:00:0a:01:01:fd", src, dst, bytes(payload))
            if rng.random() < 0.02:
                frame = frame[:rng.randrange(14, len(frame))]
            port = rng.randrange(1, 5)
            assert p4sw.process(port, frame) == model.process(port, frame), f"{sw_name}: packet {i} differs"
        ev = model.events
        assert min(ev[EV[e]] for e in ("NEW", "ADD", "COMPLETE", "DUP_ANSWER", "DUP_DROP", "STALE",
                                       "RESULT_DROP", "BAD")) > 0, ev
        if sw_name != "g1":
            assert ev[EV["DUP_RESEND"]] > 0 and ev[EV["RESULT_STORE"]] > 0, ev
        assert p4sw.events == model.events[:len(p4sw.events)]


def test_unsupported_k_is_a_compile_error():
    from softswitch import frontend
    from softswitch.frontend.errors import P4Error
    from tests.agg_switches import PROGRAM
    with pytest.raises(P4Error, match="AGG_K must be 32 or 64"):
        frontend.load(str(PROGRAM), {"AGG_K": "48"})
