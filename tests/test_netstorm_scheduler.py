"""NetStorm's scheduler decisions (schemes/netstorm/scheduler.SchedulerCore): a throughput
change re-plans at once for paths and only at the next barrier for trees and shards; the
barrier releases each iteration exactly once, to everyone, with one version."""
from __future__ import annotations

import pytest

from schemes.netstorm.scheduler import SchedulerCore
from schemes.netstorm.wire import ProtocolError

ADJ = {0: frozenset({1, 2}), 1: frozenset({0, 2}), 2: frozenset({0, 1})}


def core(**kw) -> SchedulerCore:
    tps = {(i, j): 100.0 for i in ADJ for j in ADJ[i]}
    return SchedulerCore(ADJ, tps, total=1000, block=100, roots=None, multipath=True,
                         update_rate=kw.pop("update_rate", 0.0), **kw)


def barrier(c: SchedulerCore, t: int):
    answers = [c.checkin(d, t) for d in (2, 0, 1)]
    assert answers[:2] == [None, None], "nobody is released before everyone checked in"
    return answers[2]


def test_trees_change_only_at_the_next_barrier_paths_at_once():
    c = core()
    kind, p0 = barrier(c, 0)
    assert kind == "policy" and p0.version == 0 and p0.routes[(0, 1)][0] == (0, 1)
    c.speed(0, 1, 1.0)                       # link 0 -> 1 collapses mid-iteration 1
    c.checkin(0, 1)                          # server 0 already started iteration 1
    routes = c.tick()
    assert routes is not None and routes[(0, 1)][0] == (0, 2, 1), "paths change at once"
    assert c.policy.version == 1 and c.released_at == {0: 0}
    c.checkin(1, 1)
    kind, p1 = c.checkin(2, 1)
    # iteration 1 was not released before the re-plan, so it gets the new policy; the
    # server that checked in early waits for it like everyone else
    assert kind == "policy" and p1.version == 1 and c.released_at == {0: 0, 1: 1}
    assert c.tick() is None                  # nothing changed since: no re-plan
    assert barrier(c, 2) == ("go", None) and c.released_at[2] == 1


def test_a_replan_between_barriers_waits_for_the_next_one():
    c = core()
    barrier(c, 0)
    barrier(c, 1)
    c.speed(1, 2, 3.0)
    assert c.tick() is not None and c.released_at[1] == 0, "iteration 1 keeps version 0"
    kind, p = barrier(c, 2)
    assert kind == "policy" and p.version == 1


def test_update_rate_and_awareness_gate_the_replan():
    c = core(update_rate=0.5)
    barrier(c, 0)
    c.speed(0, 1, 80.0)                      # a 20% change: below the 50% threshold
    assert c.tick() is None and c.policy.version == 0
    c.speed(0, 1, 10.0)
    assert c.tick() is not None and c.policy.version == 1
    off = core(awareness=False)
    off.speed(0, 1, 1.0)
    assert off.tick() is None and off.policy.version == 0


def test_protocol_errors():
    c = core()
    c.checkin(0, 0)
    with pytest.raises(ProtocolError, match="twice"):
        c.checkin(0, 0)
    with pytest.raises(ProtocolError, match="unknown datacenter"):
        c.checkin(7, 0)
    c.checkin(1, 0)
    c.checkin(2, 0)
    with pytest.raises(ProtocolError, match="released already"):
        c.checkin(0, 0)
    with pytest.raises(ProtocolError, match="not an overlay link"):
        c.speed(0, 0, 5.0)
