"""Property: whatever the network loses, duplicates or reorders, on any link (WAN
included), every worker ends with numpy's exact integer sum, never a wrong one.

A simulated network (tests/agg_sim.py) of switches programmed by the real control
plane and sans-I/O worker clients. Run against the P4 program in the in-process
softswitch, and against the Python model (fast, so it explores more schedules).
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from control.agg_tree import build_tree
from tests.agg_sim import Faults, build_sim, expected_sums, random_tensors
from tests.agg_switches import factory
from tests.agg_topo import graph

LAYOUTS = {
    # name: (datacenters, racks, workers per rack, [(job, scheme, root)])
    "geo-3-level": (2, 2, 2, [(1, "geo-ina", None)]),
    "geo-3dc-2-jobs": (3, 1, 2, [(1, "geo-ina", None), (2, "geo-ina", 3)]),
    "flat-ina": (2, 1, 2, [(5, "ina", 2)]),
    "geo-and-flat": (2, 2, 1, [(1, "geo-ina", 1), (2, "ina", 2)]),
}
_graphs = {}


def _graph(layout):
    if layout not in _graphs:
        n, r, w, _ = LAYOUTS[layout]
        _graphs[layout] = graph(n, r, w, delays={(1, 2): 20, (1, 3): 35, (2, 3): 25}
                                if n == 3 else None)
    return _graphs[layout]


def run_case(kind, layout, window, length, loss, dup, reorder_ms, seed, iterations=2, repair=None):
    """repair: None, or the timer loops' delay (s) at every switch with a non-root point
    (docs/protocol.md, "Lossless links between aggregation points")."""
    g = _graph(layout)
    trees = [build_tree(g, job=j, scheme=s, root=r, window=window) for j, s, r in LAYOUTS[layout][3]]
    loops = {p.switch: repair for t in trees for p in t.points.values()
             if not p.is_root} if repair else None
    sim = build_sim(g, factory(kind), trees, Faults(loss, dup, reorder_ms, seed), loops=loops,
                    initial_rto=0.3, min_rto=0.05, max_rto=2.0, max_retransmissions=200)
    for it in range(iterations):
        tensors = random_tensors(trees, length, seed * 7 + it)
        sim.start(tensors)
        results = sim.run(until=sim.now + 3000)
        want = expected_sums(trees, tensors)
        for (job, host), got in results.items():
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got.astype(np.int64), want[job],
                                          err_msg=f"iteration {it}, job {job}, worker {host}")
    sim.drain(until=sim.now + 10)       # late duplicates must not disturb anything
    for c in sim.clients.values():
        assert c.stats.bad_packets == 0
    return sim


schedules = dict(
    layout=st.sampled_from(sorted(LAYOUTS)), window=st.integers(1, 6), length=st.integers(1, 200),
    loss=st.sampled_from([0.0, 0.02, 0.1, 0.2]), dup=st.sampled_from([0.0, 0.05, 0.2]),
    reorder_ms=st.sampled_from([0.0, 5.0, 60.0]), seed=st.integers(0, 2**16))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**schedules)
def test_exact_sum_under_faults_model(layout, window, length, loss, dup, reorder_ms, seed):
    run_case("model", layout, window, length, loss, dup, reorder_ms, seed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**schedules)
def test_exact_sum_under_faults_p4(layout, window, length, loss, dup, reorder_ms, seed):
    run_case("softswitch", layout, window, min(length, 100), loss, dup, reorder_ms, seed)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**schedules, repair=st.sampled_from([0.01, 0.1, 0.5]))
def test_exact_sum_under_faults_with_switch_repair_model(layout, window, length, loss, dup,
                                                         reorder_ms, seed, repair):
    """The switches' timer loops re-send partial sums beside the workers' retransmissions:
    still exactly once, whatever the loops' timeout against the links' delays."""
    run_case("model", layout, window, length, loss, dup, reorder_ms, seed, repair=repair)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**schedules, repair=st.sampled_from([0.01, 0.1, 0.5]))
def test_exact_sum_under_faults_with_switch_repair_p4(layout, window, length, loss, dup,
                                                      reorder_ms, seed, repair):
    run_case("softswitch", layout, window, min(length, 100), loss, dup, reorder_ms, seed,
             repair=repair)


def test_heavy_loss_recovers_through_retransmissions():
    sim = run_case("model", "geo-3-level", 4, 256, loss=0.25, dup=0.1, reorder_ms=30, seed=11)
    assert sum(c.stats.retransmissions for c in sim.clients.values()) > 0
    ev = np.sum([s.events for s in sim.switches.values()], axis=0)
    assert ev[5] > 0 and ev[6] > 0     # answered from stored results, partial sums re-sent up


def test_heavy_loss_with_switch_repair_uses_the_timers():
    sim = run_case("model", "geo-3dc-2-jobs", 4, 256, loss=0.25, dup=0.1, reorder_ms=30, seed=11,
                   repair=0.1)
    ev = np.sum([s.events for s in sim.switches.values()], axis=0)
    assert ev[14] > 0 and ev[13] > 0     # partial sums re-sent by timers, timers ended


def test_float_gradients_within_quantization_bound():
    """float32 gradients -> per-block exponents -> P4 aggregation -> dequantized sum
    within n * 2^-(e+1) of the float64 reference, for every block."""
    from workers.quantize import block_exponents, dequantize, quantize, sum_error_bound
    g = _graph("geo-3-level")
    tree = build_tree(g, job=1, root=1, window=4)
    n = len(tree.workers)
    sim = build_sim(g, factory("softswitch"), [tree], Faults(0.05, 0.05, 10.0, 3),
                    initial_rto=0.3, min_rto=0.05, max_rto=2.0)
    rng = np.random.default_rng(5)
    grads = {h: (rng.standard_normal(300) * np.geomspace(1e-4, 10, 300)).astype(np.float32)
             for h in tree.workers}
    agreed_max = np.max(np.abs(np.array(list(grads.values()))), axis=0)   # agreed out of band
    exps = block_exponents(agreed_max, 32, n)
    tensors = {(1, h): np.concatenate([quantize(x[i * 32:(i + 1) * 32], int(e), n)[0]
                                       for i, e in enumerate(exps)]) for h, x in grads.items()}
    sim.start(tensors, exponent=exps)
    results = sim.run(until=3000)
    ref = np.sum([x.astype(np.float64) for x in grads.values()], axis=0)
    for key, q in results.items():
        got = np.concatenate([dequantize(q[i * 32:(i + 1) * 32], int(e)) for i, e in enumerate(exps)])
        bound = np.repeat([sum_error_bound(int(e), n) for e in exps], 32)[:300]
        assert np.all(np.abs(got - ref) <= bound)
    assert exps.max() - exps.min() >= 10      # the blocks really use different exponents


def test_pcap_of_a_simulated_run_dissects(tmp_path):
    from scapy.utils import rdpcap, wrpcap
    from scapy.layers.l2 import Ether
    from workers.agg_packet import AggHeader, RESULT
    g = _graph("geo-3-level")
    tree = build_tree(g, job=1, root=1, window=4)
    sim = build_sim(g, factory("softswitch"), [tree], Faults(0.1, 0.0, 0.0, 9),
                    initial_rto=0.3, min_rto=0.05)
    captured = []
    send = sim._send
    sim._send = lambda frm, to, frame, faults=True: (
        captured.append(frame) if {frm, to} == {"g1", "g2"} else None, send(frm, to, frame, faults))[1]
    sim.start(random_tensors([tree], 100, 2))
    sim.run()
    path = tmp_path / "wan.pcap"
    wrpcap(str(path), [Ether(f) for f in captured])
    pkts = rdpcap(str(path))
    assert len(pkts) == len(captured) > 0
    hdrs = [p[AggHeader] for p in pkts]
    assert all(h.k == 32 and len(h.values) == 32 and h.shadow == h.gen & 1 for h in hdrs)
    assert any(h.flags & RESULT for h in hdrs) and any(not h.flags & RESULT for h in hdrs)


@pytest.mark.parametrize("scheme,per_chunk", [("geo-ina", 2 * 2), ("ina", 2 * 8)])
def test_wan_packets_per_chunk(scheme, per_chunk):
    """L3DML's point: hierarchical aggregation sends one partial sum up and one result
    down per remote datacenter, flat INA one packet each way per remote worker."""
    g = graph(3, 2, 2, delays={(1, 2): 20, (1, 3): 35, (2, 3): 25})
    tree = build_tree(g, job=1, scheme=scheme, root=1, window=8)
    sim = build_sim(g, factory("softswitch"), [tree], Faults(),
                    initial_rto=5.0, min_rto=5.0, max_rto=10.0)   # no spurious retransmissions
    wan = [0]
    send = sim._send
    def counting(frm, to, frame, faults=True):
        wan[0] += sim.g.edges[frm, to]["kind"] == "wan"
        send(frm, to, frame, faults)
    sim._send = counting
    sim.start(random_tensors([tree], 32 * 20, 1))
    sim.run()
    assert sum(c.stats.retransmissions for c in sim.clients.values()) == 0
    assert wan[0] == per_chunk * 20
