"""MLfabric's scheduler and aggregator choice as pure functions (schemes/mlfabric/
scheduler.py, placement.py) on hand-worked cases, and the replication bound as a
property over seeded random arrivals."""
from __future__ import annotations

import math
import random

import networkx as nx
import pytest

from schemes.mlfabric.placement import (Bandwidth, choose_aggregator, completion_time,
                                        path_bandwidth, serial_time)
from schemes.mlfabric.scheduler import Grant, MlfabricCore
from workers.training_modes import Release

S = 1000   # bytes per update


def kinds(outs):
    return [type(o).__name__ for o in outs]


def grant(outs) -> Grant:
    (g,) = [o for o in outs if isinstance(o, Grant)]
    return g


# ---------------------------------------------------------------- ordering
def test_transfers_are_serialized_oldest_version_first():
    c = MlfabricCore(3, tau_max=10)
    g0 = grant(c.request(0, 0, S))                  # nothing in flight: w0 goes at once
    assert g0.workers == (0,) and g0.via is None
    assert c.request(1, 0, S) == [] and c.request(2, 0, S) == []   # one slot: they wait
    rows, outs = c.arrived(g0.group)
    assert [(r.worker, r.version_applied, r.delay) for r in rows] == [(0, 0, 0)]
    assert outs[0] == Release(0, 1, 1, 0)           # w0 starts iteration 1 on version 1
    assert grant(outs).workers == (1,)              # read v0, asked before w2
    g1 = grant(outs)
    assert c.request(0, 1, S) == []                 # w0 now read v1: younger than w2's v0
    rows, outs = c.arrived(g1.group)
    assert rows[0].delay == 1 and grant(outs).workers == (2,)   # the oldest read goes first
    rows, outs = c.arrived(grant(outs).group)
    assert rows[0].version_read == 0 and rows[0].version_applied == 2 and rows[0].delay == 2
    assert grant(outs).workers == (0,) and c.version == 3


def test_two_slots_let_two_transfers_run_at_once():
    c = MlfabricCore(3, tau_max=10, slots=2)
    assert kinds(c.request(0, 0, S)) == ["Grant"] and kinds(c.request(1, 0, S)) == ["Grant"]
    assert c.request(2, 0, S) == []


def test_protocol_errors_are_refused_with_the_worker_named():
    c = MlfabricCore(2, tau_max=1)
    c.request(0, 0, S)
    with pytest.raises(ValueError, match="worker 0 asked to send iteration 1 while its previous"):
        c.request(0, 1, S)
    with pytest.raises(ValueError, match="worker 1 asked to send iteration 3, expected 0"):
        c.request(1, 3, S)
    with pytest.raises(ValueError, match="no such grant"):
        c.arrived(99)
    with pytest.raises(ValueError, match="on_late"):
        MlfabricCore(2, tau_max=1, on_late="ignore")


# ---------------------------------------------------------------- tau_max, both ways
def three_at_v0(on_late):
    """w0, w1, w2 all read v0; tau_max 1: w0 lands on v0, w1 on v1, w2 would land on v2."""
    c = MlfabricCore(3, tau_max=1, on_late=on_late)
    g0 = grant(c.request(0, 0, S))
    c.request(1, 0, S)
    c.request(2, 0, S)
    _, outs = c.arrived(g0.group)                   # version 1; w1 granted (delay 1 <= 1)
    g1 = grant(outs)
    assert g1.workers == (1,)
    return c, g1


def test_tau_max_drop_skips_the_late_update_and_releases_its_worker():
    c, g1 = three_at_v0("drop")
    _, outs = c.arrived(g1.group)                   # version 2: w2 would have delay 2 > 1
    assert kinds(outs) == ["Release", "Drop", "Release"]
    assert outs[1].request.worker == 2 and outs[2] == Release(2, 1, 2, 1)
    assert c.dropped[0].iteration == 0 and c.inflight == {}
    assert max(r.delay for r in c.log) <= 1         # every applied update within tau_max


def test_tau_max_aggregate_holds_the_late_update_until_a_fresher_one_comes():
    c, g1 = three_at_v0("aggregate")
    _, outs = c.arrived(g1.group)                   # version 2: w2 late, w0 and w1 computing
    assert kinds(outs) == ["Release"] and 2 in c.pending     # held, not dropped, not sent
    g = grant(c.request(0, 1, S))                   # w0 read v1: 2 - 1 <= 1, fresh
    assert g.workers == (0, 2) and g.late == (2,)
    rows, outs = c.arrived(g.group)
    assert {(r.worker, r.version_applied, r.delay) for r in rows} == {(0, 2, 1), (2, 2, 2)}
    assert c.version == 3 and c.late_merged == 1 and not c.dropped   # one version for both


def test_tau_max_aggregate_sends_late_updates_alone_when_nothing_fresher_can_come():
    c = MlfabricCore(2, tau_max=0, on_late="aggregate")
    g0 = grant(c.request(0, 0, S))
    c.request(1, 0, S)
    c.leave(0)                                      # w0 ends: nobody can bring a fresher one
    _, outs = c.arrived(g0.group)
    g = grant(outs)
    assert g.workers == (1,) and g.late == (1,)


# ---------------------------------------------------------------- replication bound
def test_grants_pause_while_the_replica_is_d_rep_versions_behind():
    c = MlfabricCore(2, tau_max=100, d_rep=2)
    _, outs = c.arrived(grant(c.request(0, 0, S)).group)
    _, outs = c.arrived(grant(c.request(1, 0, S)).group)   # version 2, replica at 0
    assert c.request(0, 1, S) == []                 # a third version would be 3 ahead
    assert grant(c.acked(1)).workers == (0,)        # replica caught up one: the grant goes
    with pytest.raises(ValueError, match="replica acknowledged version 9"):
        c.acked(9)


@pytest.mark.parametrize("seed", range(20))
def test_replication_bound_holds_for_random_arrivals(seed):
    rng = random.Random(seed)
    n, d_rep = rng.randint(1, 5), rng.randint(1, 4)
    c = MlfabricCore(n, tau_max=rng.randint(0, 6), on_late=rng.choice(["drop", "aggregate"]),
                     slots=rng.randint(1, 3), d_rep=d_rep, agg_window=rng.randint(0, 2),
                     choose=(lambda g, idle: "agg") if rng.random() < 0.5 else None)
    replica = 0
    for _ in range(400):
        computing = [w for w in range(n) if not c.busy(w)]
        move = rng.random()
        if move < 0.4 and computing:
            w = rng.choice(computing)
            c.request(w, c.done[w], S)
        elif move < 0.7 and c.inflight:
            c.arrived(rng.choice(sorted(c.inflight)))
        elif replica < c.version:                    # the replica applies one more version
            replica += 1
            c.acked(replica)
        # a crash of the primary now loses version - replica versions: never more than d_rep
        assert c.version - c.replica_acked <= d_rep
        assert c.version + len(c.inflight) - c.replica_acked <= d_rep
    while c.inflight or c.version > replica:        # drain: nothing is stuck
        if c.inflight:
            c.arrived(min(c.inflight))
        else:
            replica += 1
            c.acked(replica)
    assert c.version == len({r.version_applied for r in c.log}) and c.version > 0


# ---------------------------------------------------------------- aggregator choice
def bw_of(table):
    return lambda a, b: table[(a, b)]


def test_group_goes_through_the_aggregator_with_the_least_completion_time():
    bw = bw_of({("a", "ps"): 10, ("b", "ps"): 10, ("a", "gw"): 100, ("b", "gw"): 50, ("gw", "ps"): 20,
                ("b", "a"): 10, ("a", "ps"): 10})
    members = [("a", 100), ("b", 100)]
    assert serial_time(members, "ps", bw) == 20                 # 100/10 + 100/10
    assert completion_time(members, "gw", "ps", bw) == 7        # max(1, 2) + 100/20
    assert completion_time(members, "a", "ps", bw) == 20        # a is a member: max(0, 10) + 10
    assert choose_aggregator(members, ["a", "gw"], "ps", bw) == ("gw", 7)


def test_no_aggregator_when_none_beats_sending_straight_to_the_ps():
    bw = bw_of({("a", "ps"): 10, ("b", "ps"): 10, ("a", "gw"): 100, ("b", "gw"): 50, ("gw", "ps"): 5,
                ("b", "a"): 10})
    assert choose_aggregator([("a", 100), ("b", 100)], ["a", "gw"], "ps", bw) == (None, 20)


def test_scheduler_routes_a_same_version_group_through_the_chosen_aggregator():
    picked = []

    def choose(group, idle):
        picked.append(([r.worker for r in group], idle))
        return "gw"
    c = MlfabricCore(3, tau_max=10, choose=choose)
    g0 = grant(c.request(0, 0, S))                  # alone: no group to aggregate
    c.request(2, 0, S)
    c.request(1, 0, S)
    _, outs = c.arrived(g0.group)
    g = grant(outs)
    assert g.workers == (1, 2) and g.via == "gw" and picked == [([2, 1], [1, 2])]
    rows, _ = c.arrived(g.group)
    assert [r.version_applied for r in rows] == [1, 1] and c.version == 2


@pytest.mark.parametrize("window,expect", [(0, ((2,), None)), (1, ((0, 2), "gw"))])
def test_agg_window_groups_close_versions_only(window, expect):
    c = MlfabricCore(3, tau_max=10, agg_window=window, choose=lambda g, idle: "gw")
    g0 = grant(c.request(0, 0, S))
    c.request(1, 0, S)
    _, outs = c.arrived(g0.group)                   # version 1; w1 (read v0) goes alone
    g1 = grant(outs)
    c.request(0, 1, S)                              # reads v1
    c.request(2, 0, S)                              # reads v0: one version older
    _, outs = c.arrived(g1.group)
    g = grant(outs)
    assert (g.workers, g.via) == expect


def test_path_bandwidth_is_the_slowest_link_and_measurements_replace_it():
    g = nx.Graph()
    g.add_edge("h1", "s1", bandwidth_mbps=100)
    g.add_edge("s1", "s2", bandwidth_mbps=8)
    g.add_edge("s2", "h2", bandwidth_mbps=100)
    assert path_bandwidth(g, "h1", "h2") == 1e6 and path_bandwidth(g, "h1", "h1") == math.inf
    bw = Bandwidth({"h1": {"h2": 1e6}, "h2": {"h1": 1e6}}, ps="h2")
    bw.observe("h1", 1000, 0.01)                    # 100 kB/s measured
    assert bw("h1", "h2") == 1e5 and bw("h2", "h1") == 1e6
    bw.observe("h1", 1000, 0.005)
    assert bw("h1", "h2") == pytest.approx(0.5 * 2e5 + 0.5 * 1e5)
    with pytest.raises(ValueError, match="no planned bandwidth from h1 to gw"):
        bw("h1", "gw")


# ---------------------------------------------------------------- aggregation on the wire
def agg_choice(table, cands):
    from schemes.mlfabric.aggregation import AggregatorChoice
    hosts = ["a", "b", "c"]
    return AggregatorChoice(cands, hosts, "ps", Bandwidth(table, "ps"))


def full_table(rate, overrides=()):
    nodes = ["a", "b", "c", "gw", "ps"]
    t = {x: {y: rate for y in nodes if y != x} for x in nodes}
    for (x, y), v in dict(overrides).items():
        t[x][y] = v
    return t


def test_idle_worker_aggregator_only_while_its_worker_waits_and_gateway_always():
    from schemes.mlfabric.aggregation import Candidate
    table = full_table(100, {("a", "ps"): 10, ("b", "ps"): 10, ("c", "ps"): 10, ("gw", "ps"): 50})
    choice = agg_choice(table, [Candidate("agg-c", "c", 2), Candidate("gw-x", "gw")])
    group = [_req(0), _req(1)]
    # agg-c: gather 100/100 = 1, forward 100/10 = 10 -> 11; gw: 1 + 100/50 = 3; serial 20
    assert choice(group, [0, 1]) == "gw-x"                 # c computes: agg-c not eligible
    assert choice.predicted["gw-x"] == pytest.approx(3)
    choice.bw.table["gw"]["ps"] = 5                        # gw: 1 + 20 = 21 > 20 ...
    assert choice(group, [0, 1, 2]) == "agg-c"             # ... agg-c (c idle): 11 < 20
    choice.out.add("agg-c")                                # dead or timed out: never again
    assert choice(group, [0, 1, 2]) is None                # and gw loses to the PS: direct
    assert choice.index("gw-x") == 1


def _req(worker, size=100, version=0):
    from schemes.mlfabric.scheduler import Request
    return Request(worker, 0, size, version, 0, worker)


def test_measured_rates_to_the_ps_steer_the_choice():
    from schemes.mlfabric.aggregation import Candidate
    choice = agg_choice(full_table(10, {("gw", "ps"): 100, ("a", "gw"): 100, ("b", "gw"): 100}),
                        [Candidate("gw-x", "gw")])
    group = [_req(0), _req(1)]
    assert choice(group, []) == "gw-x"                     # 1 + 1 = 2 < 10 + 10
    for h in ("a", "b"):
        choice.bw.observe(h, 1000, 0.001)                  # measured: 1 MB/s straight to the PS
    assert choice(group, []) is None                       # 0.1 + 0.1 ms serial beats the gateway


def test_core_grants_the_chosen_aggregator_and_the_tracker_applies_each_group_once():
    from schemes.mlfabric.aggregation import GroupTracker
    c = MlfabricCore(3, tau_max=10, choose=lambda g, idle: "gw-x")
    g0 = grant(c.request(0, 0, S))
    c.request(1, 0, S)
    c.request(2, 0, S)
    _, outs = c.arrived(g0.group)
    g = grant(outs)
    assert (g.workers, g.via) == ((1, 2), "gw-x")
    t = GroupTracker()
    t.send(g.group, g.via, g.workers, now=0.0, timeout_s=1.0, predicted_s=0.5)
    with pytest.raises(ValueError, match="sent through an aggregator already"):
        t.send(g.group, g.via, g.workers, now=0.0, timeout_s=1.0, predicted_s=0.5)
    with pytest.raises(ValueError, match="came from gw-y with members \\[1\\]"):
        t.sum_arrived(g.group, "gw-y", (1,))
    assert t.expired(1.99) == [] and t.at_aggregator(g.group)   # deadline 0 + 1 + 2 x 0.5
    assert t.sum_arrived(g.group, "gw-x", (1, 2)) is True and t.applied == 1
    with pytest.raises(ValueError, match="never sent through an aggregator"):
        t.sum_arrived(g.group, "gw-x", (1, 2))                  # applied: a second sum is a bug


def test_a_timed_out_or_lost_group_falls_back_and_its_late_sum_is_discarded():
    from schemes.mlfabric.aggregation import GroupTracker
    t = GroupTracker()
    t.send(1, "gw-x", (0, 1), now=0.0, timeout_s=1.0, predicted_s=0.0)
    t.send(2, "agg-a", (2, 3), now=0.0, timeout_s=5.0, predicted_s=0.0)
    t.send(3, "agg-a", (4, 5), now=0.5, timeout_s=5.0, predicted_s=0.0)
    assert [(g, s.via) for g, s in t.expired(1.0)] == [(1, "gw-x")]
    assert t.sum_arrived(1, "gw-x", (0, 1)) is False and t.discarded == 1   # applied directly
    lost = t.aggregator_lost("agg-a", "agg-a: its connection broke")
    assert sorted(g for g, _ in lost) == [2, 3] and not t.sent and t.applied == 0
    assert t.fell_back == {1: "gw-x timed out", 2: "agg-a: its connection broke",
                           3: "agg-a: its connection broke"}
