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


def run_case(kind, layout, window, length, loss, dup, reorder_ms, seed, iterations=2):
    g = _graph(layout)
    trees = [build_tree(g, job=j, scheme=s, root=r, window=window) for j, s, r in LAYOUTS[layout][3]]
    sim = build_sim(g, factory(kind), trees, Faults(loss, dup, reorder_ms, seed),
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


def test_heavy_loss_recovers_through_retransmissions():
    sim = run_case("model", "geo-3-level", 4, 256, loss=0.25, dup=0.1, reorder_ms=30, seed=11)
    assert sum(c.stats.retransmissions for c in sim.clients.values()) > 0
    ev = np.sum([s.events for s in sim.switches.values()], axis=0)
    assert ev[5] > 0 and ev[6] > 0     # answered from stored results, partial sums re-sent up
