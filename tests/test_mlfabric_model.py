"""mlfabric's model (schemes/mlfabric/model.py): the scheduler's order of transfers,
hand-worked on two datacenters."""
from __future__ import annotations

import math

import pytest

from schemes import model as M
from schemes import model_chain as ch
from tests.test_model import predict, scn
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER

BITS = 8 * (M.MSS + M.SEG_OVERHEAD)
ASP = "training: {mode: asp}\nscheme_options: {replicate: false}"


def small(extra: str, values: int = 2048, per_dc: int = 1, **kw):
    return predict(scn("mlfabric", dcs=2, per_dc=per_dc, mbps=50.0, delay=50.0, extra=extra,
                       values=values, **kw))


def test_a_remote_update_asks_waits_for_its_grant_then_sends_and_gets_the_model_by_hand():
    # worker 0 shares the primary's host (no network); worker 1 is 50 ms away. Each
    # iteration: 1 s compute, REQUEST (50 ms), GRANT back (50 ms), the update (6 segments:
    # inside the initial window) and the model back, each serialized and 50 ms away. The
    # two never wait for each other's slot (worker 0 is done in no time), so worker 1's
    # cycle is the pace: ps's push and pull plus the request's round trip
    p = small(ASP + "\ncompute_time: {model: constant, value_ms: 1000}")
    segs = sum(ch.chunk_segments(2048, DEFAULT_CHUNK_VALUES, HEADER.size, M.MSS))
    assert segs == 6
    ser = segs * BITS / 50e6
    assert p.iteration_s == pytest.approx(1.0 + 4 * 0.05 + 2 * ser, rel=1e-6)
    assert max(p.limits, key=p.limits.get).startswith("scheduled transfers: slots 1, tau_max 8 (drop), "
                                                      "no replica")


def test_replication_bound_pauses_grants_until_the_replica_acknowledges():
    # the replica sits in the other datacenter: with d_rep 1 every grant waits for the
    # previous version's replication round trip; with d_rep 4 it mostly does not
    base = "training: {mode: asp}\ncompute_time: {model: constant, value_ms: 0}\n"
    tight = small(base + "scheme_options: {d_rep: 1}")
    loose = small(base + "scheme_options: {d_rep: 4}")
    assert tight.iteration_s > loose.iteration_s
    assert "d_rep 1" in tight.largest_term()[0]


def test_under_loss_the_order_is_simulated_over_seeds():
    p = small(ASP, loss=1.0)
    assert "seeds" in p.largest_term()[0] and p.largest_term()[0].startswith("scheduled transfers")


def test_what_is_not_simulated_is_named():
    p = small("training: {mode: asp}\nscheme_options: {replicate: false, slots: 2}")
    assert any("slots 2" in c for c in p.caveats)


def test_the_replication_and_the_models_going_back_take_turns_on_their_link():
    # primary in datacenter 0, replica beside worker 1 in datacenter 1, 1 ms away, 1 MB:
    # serialization binds. Each round of both workers' updates puts on the link 0 -> 1 the
    # model going back to worker 1 and the replications of both versions: three 1 MB
    # messages one after another (measured at bench schemes' point with 4 MB: 10.8 s per
    # iteration, 8.4 s in a model that let them overlap at the full rate each)
    n = 262144
    p = predict(scn("mlfabric", dcs=2, per_dc=1, mbps=50.0, delay=1.0, values=n,
                         extra="training: {mode: asp}\ncompute_time: {model: constant, value_ms: 0}"))
    segs = sum(ch.chunk_segments(n, DEFAULT_CHUNK_VALUES, HEADER.size, M.MSS))
    ser = segs * BITS / 50e6
    assert 3 * ser <= p.iteration_s <= 3.5 * ser
    # its WAN bytes: worker 1's update and model, and two replications, ACKs included
    data, acks = M.tcp_wire(math.ceil(M.framed(n, DEFAULT_CHUNK_VALUES, HEADER.size) / M.MSS) * M.MSS)
    assert p.wan_bytes_per_iteration == pytest.approx(4 * (data + acks), rel=1e-9)
