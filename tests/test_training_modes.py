"""The sans-I/O core of the training modes (workers/training_modes.py): a hand-worked SSP
trace, the bound under random arrival orders, ASP's unbounded staleness, BSP == SSP(0),
leaving workers, protocol errors."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from workers.training_modes import Applied, Release, SspCore, bsp_applied, mode_bound


def test_hand_worked_ssp_trace_three_workers_bound_one():
    """3 workers, s = 1. Worker 0 is fast, 2 is the straggler. Every row worked by hand:
    staleness = iteration - clock read, delay = version applied - version read."""
    core = SspCore(3, 1)
    # 1. w0 pushes it 0 (read v0 k0) -> v1; clock 0; w0 may start 1 (1-1 <= 0) on (v1, k0)
    a, r = core.push(0, 0)
    assert a == Applied(0, 0, 0, 0, 0) and (a.staleness, a.delay) == (0, 0)
    assert r == [Release(0, 1, 1, 0)]
    # 2. w0 pushes it 1 (read v1 k0) -> v2; it 2 needs clock 1: w1, w2 have done nothing: blocked
    a, r = core.push(0, 1)
    assert a == Applied(0, 1, 1, 0, 1) and (a.staleness, a.delay) == (1, 0)
    assert r == [] and core.waiting == {0: 2}
    # 3. w1 pushes it 0 (read v0 k0) -> v3; clock still 0 (w2); w1 may start 1 on (v3, k0)
    a, r = core.push(1, 0)
    assert a == Applied(1, 0, 0, 0, 2) and (a.staleness, a.delay) == (0, 2)
    assert r == [Release(1, 1, 3, 0)] and core.waiting == {0: 2}
    # 4. the straggler w2 pushes it 0 -> v4; clock 1: w0 (it 2) and w2 (it 1) go, on (v4, k1)
    a, r = core.push(2, 0)
    assert a == Applied(2, 0, 0, 0, 3) and (a.staleness, a.delay) == (0, 3)
    assert r == [Release(0, 2, 4, 1), Release(2, 1, 4, 1)] and core.waiting == {}
    # 5. w1 pushes it 1 (read v3 k0) -> v5; clock 1; w1 may start 2 (2-1 <= 1) on (v5, k1)
    a, r = core.push(1, 1)
    assert a == Applied(1, 1, 3, 0, 4) and (a.staleness, a.delay) == (1, 1)
    assert r == [Release(1, 2, 5, 1)]
    # 6. w0 pushes it 2 (read v4 k1) -> v6; it 3 needs clock 2: w2 is at 1: blocked
    a, r = core.push(0, 2)
    assert a == Applied(0, 2, 4, 1, 5) and (a.staleness, a.delay) == (1, 1)
    assert r == [] and core.waiting == {0: 3}
    # 7. w2 pushes it 1 (read v4 k1) -> v7; clock 2: w0 (it 3) and w2 (it 2) go on (v7, k2)
    a, r = core.push(2, 1)
    assert a == Applied(2, 1, 4, 1, 6) and (a.staleness, a.delay) == (0, 2)
    assert r == [Release(0, 3, 7, 2), Release(2, 2, 7, 2)]
    assert core.version == 7 and core.done == [3, 2, 2] and core.clock == 2
    assert [x.version_applied for x in core.log] == list(range(7))


def test_a_leaving_worker_no_longer_holds_the_others_back():
    core = SspCore(2, 0)
    core.push(0, 0)
    a, r = core.push(1, 0)
    assert r == [Release(0, 1, 2, 1), Release(1, 1, 2, 1)]
    _, r = core.push(0, 1)
    assert r == []                      # waits for w1's clock 2
    assert core.leave(1) == [Release(0, 2, 3, 2)]   # w1 ended: the clock is w0's alone
    _, r = core.push(0, 2)
    assert r == [Release(0, 3, 4, 3)]
    assert core.leave(0) == [] and core.clock == 1   # all gone: the smallest clock


def test_protocol_errors_name_the_worker_and_what_is_wrong():
    core = SspCore(2, 0)
    with pytest.raises(ValueError, match="pushed iteration 1, expected 0"):
        core.push(0, 1)
    core.push(0, 0)
    with pytest.raises(ValueError, match="before it was released to start iteration 1"):
        core.push(0, 1)
    with pytest.raises(ValueError, match="out of range 0..1"):
        core.push(2, 0)
    core.leave(1)
    with pytest.raises(ValueError, match="worker 1 already left"):
        core.push(1, 0)
    with pytest.raises(ValueError, match="training.staleness: the bound must be >= 0"):
        SspCore(2, -1)
    with pytest.raises(ValueError, match="at least one worker"):
        SspCore(0, None)


def test_mode_bounds():
    assert mode_bound("bsp", None) == 0 and mode_bound("ssp", 3) == 3 and mode_bound("asp", None) is None
    with pytest.raises(ValueError, match="training.staleness: ssp needs a bound"):
        mode_bound("ssp", None)
    with pytest.raises(ValueError, match="training.mode: unknown mode 'sync'"):
        mode_bound("sync", None)


def simulate(workers: int, bound: int | None, iterations: int, rng: random.Random,
             speeds: list[float] | None = None) -> SspCore:
    """Drive the core to the end in a random order: at each step one runnable worker (one
    not waiting, with iterations left) pushes, picked with weights `speeds`; a worker that
    finished its iterations (and was released past its last one) leaves."""
    core = SspCore(workers, bound)
    running = set(range(workers))
    speeds = speeds or [1.0] * workers
    while running:
        runnable = [w for w in sorted(running) if w not in core.waiting]
        assert runnable, f"deadlock: everyone waits ({core.waiting}, clock {core.clock})"
        w = rng.choices(runnable, [speeds[x] for x in runnable])[0]
        applied, releases = core.push(w, core.done[w])
        for r in releases:   # the gate held at every release
            assert bound is None or r.clock >= r.iteration - bound
        for x in [r.worker for r in releases] + [w]:
            if x in running and core.done[x] == iterations and x not in core.waiting:
                running.discard(x)
                core.leave(x)
    return core


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), workers=st.integers(1, 6), bound=st.integers(0, 4),
       iterations=st.integers(1, 12))
def test_ssp_never_exceeds_its_bound_under_random_arrival_orders(seed, workers, bound, iterations):
    rng = random.Random(seed)
    speeds = [rng.uniform(0.1, 10.0) for _ in range(workers)]   # stragglers and fast workers
    core = simulate(workers, bound, iterations, rng, speeds)
    assert len(core.log) == workers * iterations and core.version == workers * iterations
    assert max(a.staleness for a in core.log) <= bound
    assert all(a.staleness >= 0 and a.delay >= 0 for a in core.log)
    # every update of the iterations below the read clock is in the model read
    applied_before = {a.version_applied: a for a in core.log}
    for a in core.log:
        inside = [applied_before[v] for v in range(a.version_read)]
        for w in range(workers):
            its = {b.iteration for b in inside if b.worker == w}
            assert set(range(a.clock_read)) <= its


def test_asp_staleness_is_unbounded_and_counted_exactly():
    """A fast worker runs its 5 iterations before the other starts: its iteration c read
    clock 0 (staleness c, delay 0); the slow worker's first update waited for 5 (delay 5)."""
    core = SspCore(2, None)
    for c in range(5):
        a, r = core.push(0, c)
        assert (a.staleness, a.delay) == (c, 0) and r == [Release(0, c + 1, c + 1, 0)]
    a, r = core.push(1, 0)
    assert a == Applied(1, 0, 0, 0, 5) and (a.staleness, a.delay) == (0, 5)
    assert r == [Release(1, 1, 6, 1)]
    a, _ = core.push(1, 1)
    assert (a.staleness, a.delay) == (0, 0)   # read v6 (clock 1) and applied to v6


def test_asp_staleness_grows_past_any_bound_with_a_straggler():
    core = simulate(3, None, 30, random.Random(7), speeds=[20.0, 20.0, 0.05])
    assert max(a.staleness for a in core.log) > 10


def test_bsp_equals_ssp_zero():
    """SSP(0), whatever the arrival order, is BSP's schedule: iteration c always reads the
    model holding exactly the N c updates of iterations < c (clock c): staleness 0 like
    bsp_applied; only the delay differs (per-arrival versions: 0 .. N-1 within a round)."""
    for seed in range(20):
        n = 4
        core = simulate(n, 0, 6, random.Random(seed), [random.Random(seed).uniform(0.1, 5) for _ in range(n)])
        for a in core.log:
            b = bsp_applied(a.worker, a.iteration)
            assert a.staleness == b.staleness == 0
            assert (a.version_read, a.clock_read) == (n * a.iteration, a.iteration)
            assert 0 <= a.delay <= n - 1
        rounds = [sorted(a.worker for a in core.log[n * c:n * (c + 1)]) for c in range(6)]
        assert rounds == [list(range(n))] * 6   # round c's updates are versions n c .. n c + n - 1
    assert bsp_applied(2, 5).record() == {"worker": 2, "iteration": 5, "version_read": 5, "clock_read": 5,
                                          "version_applied": 5, "staleness": 0, "delay": 0}
