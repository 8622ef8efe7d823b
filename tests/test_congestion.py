"""Congestion control of the aggregation worker: the AIMD rule alone, the client's
pipe accounting, and the whole protocol in the simulated network where loss comes
from a finite drop-tail queue at a WAN bottleneck (tests/agg_sim.py)."""
import numpy as np
import pytest

from control.agg_tree import build_tree
from tests.agg_sim import Faults, build_sim, expected_sums, random_tensors
from tests.agg_switches import factory
from tests.agg_topo import graph
from tests.test_ina_client import client, result_for
from workers import agg_packet as ap
from workers.congestion import Aimd


def test_slow_start_doubles_then_additive_increase():
    cc = Aimd(cwnd=2, ssthresh=8, max_cwnd=64)
    for _ in range(2):
        cc.on_result()
    assert cc.cwnd == 4                              # +1 per result: x2 per window
    for _ in range(4):
        cc.on_result()
    assert cc.cwnd == 8
    for _ in range(8):                               # one window of results: about +1
        cc.on_result()
    assert 8.9 < cc.cwnd < 9.0


def test_one_decrease_per_round_trip_never_below_one_never_above_max():
    cc = Aimd(cwnd=40, ssthresh=64, max_cwnd=64)
    assert cc.on_loss(sent_at=1.0, now=2.0) and cc.cwnd == 20 and cc.ssthresh == 20
    assert not cc.on_loss(sent_at=1.5, now=2.1)      # same window: same congestion event
    assert cc.cwnd == 20
    for t in range(3, 20):                           # each loss of a later copy halves
        cc.on_loss(sent_at=t, now=t + 0.5)
    assert cc.cwnd == 1 and cc.allowed() == 1
    for _ in range(10000):
        cc.on_result()
    assert cc.cwnd == 64
    with pytest.raises(ValueError, match="cwnd"):
        Aimd(cwnd=0, ssthresh=8, max_cwnd=8)


def test_disabled_is_a_fixed_window():
    cc = Aimd(cwnd=32, ssthresh=32, max_cwnd=32, enabled=False)
    assert not cc.on_loss(0.0, 1.0)
    cc.on_result()
    assert cc.allowed() == 32


def test_client_starts_with_initial_cwnd_and_grows_with_results():
    c = client(window=64, initial_cwnd=4)
    out = c.start(np.arange(100 * 32, dtype=np.int32), 0.0)
    assert len(out) == 4
    more = c.on_packet(result_for(out[0].payload), 0.1)
    assert len(more) == 2                            # one replaces the result, one is growth
    assert client(window=64, congestion_control=False).start(
        np.arange(100 * 32, dtype=np.int32), 0.0).__len__() == 64
    with pytest.raises(ValueError, match="initial_cwnd"):
        client(initial_cwnd=0)


def test_timeouts_halve_once_and_retransmit_within_cwnd():
    c = client(window=64, initial_cwnd=8, initial_rto=0.5, min_rto=0.01, congestion_law="reno")
    out = c.start(np.arange(100 * 32, dtype=np.int32), 0.0)
    assert len(out) == 8
    retx = c.on_timer(0.5)                           # all 8 time out together: one loss event
    assert c.cc.cwnd == 4 and c.stats.cwnd_decreases == 1
    assert len(retx) == 4 and all(ap_flags(s) & ap.RETX for s in retx)
    assert c.stats.retransmissions == 4
    # a late result of a copy still waiting to be re-sent: accepted, never re-sent
    late = c.on_packet(result_for(out[6].payload), 0.6)
    assert 6 in c._it.results and all(offset(s) != 6 * 32 for s in late)


def ap_flags(s):
    return ap.decode(s.payload).flags


def offset(s):
    return ap.decode(s.payload).offset


def _bottleneck_run(cc: bool, seed=3):
    """2 datacenters x 4 workers, geo-ina, window 128 slots; WAN 2000 packets/s per
    direction behind a 24-packet drop-tail queue (BDP of the 40 ms round trip: 80)."""
    g = graph(2, 1, 4, delays={(1, 2): 20})
    tree = build_tree(g, job=1, scheme="geo-ina", root=1, window=128)
    faults = Faults(seed=seed, rate_pps=2000, queue_pkts=24)
    # unpaced, so the comparison is AIMD's alone (pacing: tests/test_pacing.py)
    sim = build_sim(g, factory("model"), [tree], faults, congestion_control=cc, pacing=False,
                    initial_rto=0.3, min_rto=0.05, max_rto=2.0, max_retransmissions=200)
    for it in range(2):
        tensors = random_tensors([tree], 600 * 32, seed + it)
        t0 = sim.now
        sim.start(tensors)
        got = sim.run(until=sim.now + 600)
        want = expected_sums([tree], tensors)
        for (job, host), r in got.items():
            np.testing.assert_array_equal(r.astype(np.int64), want[job], err_msg=host)
    retx = sum(c.stats.retransmissions for c in sim.clients.values())
    sent = sum(c.stats.sent for c in sim.clients.values())
    return sim.now - t0, sim.stats.queue_drops, retx / sent


def test_aimd_avoids_queue_overflow_at_a_wan_bottleneck():
    t_fixed, drops_fixed, retx_fixed = _bottleneck_run(cc=False)
    t_aimd, drops_aimd, retx_aimd = _bottleneck_run(cc=True)
    print(f"fixed window: {t_fixed:.3f} s, {drops_fixed} queue drops, {retx_fixed:.1%} retx; "
          f"AIMD: {t_aimd:.3f} s, {drops_aimd} drops, {retx_aimd:.1%} retx")
    assert drops_fixed > 100                         # the model does overflow without cc
    assert drops_aimd < drops_fixed / 4
    assert retx_aimd < retx_fixed / 4
    # Not asserted: which is faster. Since a slot's next chunk goes as soon as that slot
    # is free, the fixed window no longer stalls behind its lost chunks (1.43 -> 0.51 s,
    # 5207 -> 2201 drops); AIMD took 0.68 s before and after.
    # the floor: 600 partials up + 600 results down over 2000 pkt/s, plus one RTT
    assert t_aimd > 600 / 2000


def test_decrease_undone_when_every_timed_out_chunk_was_only_late():
    c = client(window=64, initial_cwnd=16, initial_rto=0.5, min_rto=0.01, rack=False, congestion_law="reno")
    out = c.start(np.arange(100 * 32, dtype=np.int32), 0.0)
    for s in out[:12]:                               # 12 answered: slow start sends 24 more
        c.on_packet(result_for(s.payload), 0.3)
    assert c.cc.cwnd == 28 and c._it.in_flight == 28
    assert c.on_timer(0.5) == []                     # 4 time out; 24 in flight >= cwnd 14
    assert c.cc.cwnd == 14 and c.stats.cwnd_decreases == 1
    sent = []
    for s in out[12:]:                               # ... and answer late: delay, not loss
        sent += c.on_packet(result_for(s.payload), 0.55)
    assert c.stats.cwnd_undos == 1 and c.cc.cwnd >= 28 and c.cc.ssthresh == 64
    assert c.stats.retransmissions == 0 and not any(ap_flags(s) & ap.RETX for s in sent)


def test_no_undo_once_a_timed_out_chunk_was_resent():
    c = client(window=64, initial_cwnd=4, initial_rto=0.5, min_rto=0.01, congestion_law="reno")
    out = c.start(np.arange(100 * 32, dtype=np.int32), 0.0)
    rx = c.on_timer(0.5)                             # 4 time out, cwnd 2: 2 re-sent
    assert len(rx) == 2 and c.cc.cwnd == 2
    for s in out:
        c.on_packet(result_for(s.payload), 0.7)
    assert c.stats.cwnd_undos == 0 and c.cc.ssthresh == 2    # the cut stands


# ---------------------------------------------------------------- RACK (RFC 8985 adapted)
def _answer(c, sends, now):
    out = []
    for s in sends:
        out += c.on_packet(result_for(s.payload), now)
    return out


def test_a_growing_queue_is_not_a_loss_while_results_keep_coming():
    """Slow start into a deep queue: each result comes a frame time (10 ms) later than the
    last, so round trips grow past the RTO learnt from the first samples. With the timer
    restarted by results nothing times out; with per-chunk timers alone chunks are re-sent."""
    def run(rack):
        c = client(window=256, initial_cwnd=16, initial_rto=0.2, min_rto=0.05, rack=rack)
        c.rtt.granularity = 0.05
        pending = list(c.start(np.arange(200 * 32, dtype=np.int32), 0.0))
        t = 0.0
        while not c.done:
            t += 0.01                                # the link drains a frame per 10 ms
            pending += c.on_timer(t)
            s = pending.pop(0)
            if ap_flags(s) & ap.RETX:
                continue                             # a re-sent copy: its answer is a duplicate
            pending += c.on_packet(result_for(s.payload), t)
        return c.stats.retransmissions
    assert run(rack=True) == 0
    assert run(rack=False) >= 10                     # 12: the spurious re-sends it replaces


def test_a_chunk_is_lost_once_a_later_one_is_answered_and_the_reordering_window_passed():
    c = client(window=64, initial_cwnd=2, initial_rto=2.0, min_rto=1.0)
    c0, c1 = c.start(np.arange(100 * 32, dtype=np.int32), 0.0)
    c2, c3 = _answer(c, [c0], 0.10)                  # slow start: two more sent at 0.10
    c4, c5 = _answer(c, [c1], 0.12)                  # and two at 0.12
    c6, c7 = _answer(c, [c4], 0.22)                  # c2, c3 (sent before c4) not answered
    # the wait (RFC 8985): the answered chunk's round trip (0.10 s) + min RTT / 4; no
    # SRTT floor for a chunk sent once
    wait = 0.10 + c.rtt.min_rtt / 4
    assert c.next_deadline() == pytest.approx(0.10 + wait)
    assert c.on_timer(0.10 + wait - 0.001) == []                         # not yet
    c.on_timer(0.10 + wait)
    assert sorted(c._it.lost) == [2, 3] and c.stats.cwnd_decreases == 1    # one event
    assert c.stats.retransmissions == 0 and len(c._it.outstanding) == 3   # > cwnd 2.5: wait
    rx = _answer(c, [c5, c6], 0.25)                   # room again: the lost go first
    offsets = [ap.decode(s.payload).offset for s in rx if ap_flags(s) & ap.RETX]
    assert offsets == [ap.decode(c2.payload).offset, ap.decode(c3.payload).offset]
    assert c.stats.retransmissions == 2              # at 0.25 s, long before any RTO (>= 1 s)


def test_reordering_within_the_window_is_not_a_loss():
    c = client(window=64, initial_cwnd=2, initial_rto=2.0, min_rto=1.0)
    c0, c1 = c.start(np.arange(100 * 32, dtype=np.int32), 0.0)
    c2, c3 = _answer(c, [c0], 0.10)
    c4, c5 = _answer(c, [c1], 0.12)
    _answer(c, [c4], 0.22)
    _answer(c, [c2, c3], 0.22 + 0.01)                # later than c4, by less than min RTT / 4
    c.on_timer(0.3)
    assert c.stats.retransmissions == 0 and c.stats.cwnd_decreases == 0


def test_a_tail_loss_times_out_one_rto_after_the_last_result():
    c = client(window=64, initial_cwnd=4, initial_rto=0.5, min_rto=0.5)
    out = c.start(np.arange(4 * 32, dtype=np.int32), 0.0)
    _answer(c, out[:3], 0.3)                         # the last chunk's answer never comes
    assert c.on_timer(0.5) == []                     # its own timer (0 + 0.5) restarted
    assert c._stalls == 0                            # a restart is not a stall
    assert c.next_deadline() == pytest.approx(0.3 + 0.5)
    rx = c.on_timer(0.3 + 0.5)
    assert len(rx) == 1 and ap_flags(rx[0]) & ap.RETX    # the RTO it was sent with


# ---------------------------------------------------------------- CUBIC (RFC 8312)
def test_cubic_cuts_to_beta_and_regrows_to_w_max_in_k_real_world_seconds():
    cc = Aimd(cwnd=1000, ssthresh=100, max_cwnd=4096, law="cubic", c=0.4, time_dilation=10.0)
    assert cc.on_loss(sent_at=0.0, now=1.0) and cc.cwnd == 700 and cc.ssthresh == 700
    k = (1000 * 0.3 / 0.4) ** (1 / 3)                # 9.09 real-world s
    assert cc.cubic_target(1.0) == pytest.approx(700)
    assert cc.cubic_target(1.0 + 10 * k) == pytest.approx(1000)   # dilated 10 x
    t, rtt = 1.0, 16.5                               # 1.65 s real round trips, dilated
    while t < 1.0 + 10 * k:
        t += rtt
        for _ in range(int(cc.cwnd)):                # a window of results per round trip
            cc.on_result(t)
    assert cc.cwnd >= 990                            # back near W_max in ~K
    reno = Aimd(cwnd=1000, ssthresh=100, max_cwnd=4096)
    reno.on_loss(0.0, 1.0)
    for _ in range(int(10 * k / rtt) + 1):
        for _ in range(int(reno.cwnd)):
            reno.on_result()
    assert reno.cwnd < 520                           # Reno: +1 per round trip from 500


def test_cubic_undo_restores_the_window_and_its_epoch():
    cc = Aimd(cwnd=100, ssthresh=50, max_cwnd=256, law="cubic")
    cc.on_loss(0.0, 1.0)
    cc.on_loss(2.0, 3.0)
    assert cc.cwnd == pytest.approx(49) and cc.w_max == 70
    cc.undo()
    assert cc.cwnd == 70 and cc.w_max == 100 and cc.epoch == 1.0
    with pytest.raises(ValueError, match="reno"):
        Aimd(cwnd=1, ssthresh=1, max_cwnd=1, law="vegas")


def test_cubic_c_is_rfc_8312s_in_bytes_on_the_wire():
    from workers.agg_packet import frame_bytes
    from workers.congestion import cubic_c
    assert cubic_c(1514) == pytest.approx(0.4)
    assert cubic_c(frame_bytes(64)) == pytest.approx(0.4 * 1514 / 314)
    assert client(k=32).cc.c == pytest.approx(0.4 * 1514 / 186)


def _lossy_wan_run(loss: float, seed=5, **client_opts):
    """geo-ina, 2 datacenters x 4 workers, WAN 2000 packets/s per direction (40 ms round
    trip) behind a one-BDP queue, window 128 slots, unpaced; `loss` on the WAN links only.
    (time of the iteration, losses the workers took as random)."""
    g = graph(2, 1, 4, delays={(1, 2): 20})
    tree = build_tree(g, job=1, scheme="geo-ina", root=1, window=128)
    faults = Faults(seed=seed, rate_pps=2000, queue_pkts=80, loss=loss, kinds=("wan",))
    sim = build_sim(g, factory("model"), [tree], faults, pacing=False,
                    initial_rto=0.3, min_rto=0.05, max_rto=2.0, max_retransmissions=200, **client_opts)
    tensors = random_tensors([tree], 2000 * 32, seed)
    t0 = sim.now
    sim.start(tensors)
    got = sim.run(until=sim.now + 600)
    want = expected_sums([tree], tensors)
    for (_job, host), r in got.items():
        np.testing.assert_array_equal(r.astype(np.int64), want[_job], err_msg=host)
    return sim.now - t0, sum(c.stats.random_losses for c in sim.clients.values())


def test_veno_backlog_is_the_queue_the_round_trip_shows():
    from workers.congestion import queue_backlog, veno_threshold
    assert queue_backlog(30, 0.05, 0.04) == pytest.approx(6.0)      # 30 x 10 ms / 50 ms
    assert queue_backlog(30, 0.04, 0.04) == 0.0
    assert queue_backlog(30, None, None) == float("inf")           # no sample: congestion
    assert veno_threshold(314) == pytest.approx(3 * 1514 / 314)    # 3 segments' bytes


def test_backlog_loss_response_keeps_the_window_through_random_wan_loss():
    """1% random WAN loss, one-BDP queue: cutting on every loss holds each worker's window
    near the loss-rate limit (5.3 s against 1.1 s without loss); with Veno's backlog test
    the random losses are only re-sent (1.57 s)."""
    clean, _ = _lossy_wan_run(0.0)
    cut, none = _lossy_wan_run(0.01)
    backlog, random_losses = _lossy_wan_run(0.01, loss_response="backlog")
    print(f"no loss {clean:.3f} s; 1% WAN loss: cut {cut:.3f} s, backlog {backlog:.3f} s "
          f"({random_losses} losses taken as random)")
    assert none == 0 and random_losses > 0
    assert cut > 3 * clean and backlog < 1.5 * clean


def _bench_point_flat_ina(chunks: int, tensors: int, seed: int = 5, **client_opts):
    """Flat ina, 3 datacenters x 4 workers at bench schemes' point (WAN 19,900 frames/s,
    round trips 91-233 ms, one-BDP queues), 1 % loss on every WAN link, 1024 slots, the
    plan's timeouts. (tensor times, the simulation)."""
    g = graph(3, 1, 4, delays={(1, 2): 45.5, (1, 3): 82.5, (2, 3): 116.5})
    tree = build_tree(g, job=1, scheme="ina", root=1, window=1024)
    faults = Faults(seed=seed, rate_pps=19900, queue_pkts=4637, loss=0.01, kinds=("wan",))
    sim = build_sim(g, factory("model", k=64), [tree], faults, k=64, initial_rto=1.0,
                    min_rto=0.35, max_rto=10.0, max_retransmissions=200, **client_opts)
    for c in sim.clients.values():
        c.rtt.granularity = 0.1165      # the plan's margin: half the longest round trip
    times = []
    for i in range(tensors):
        tensors_in = random_tensors([tree], chunks * 64, seed=i)
        t0 = sim.now
        sim.start(tensors_in)
        got = sim.run(until=sim.now + 600)
        times.append(sim.now - t0)
        want = expected_sums([tree], tensors_in)[1]
        for (_job, host), r in got.items():
            np.testing.assert_array_equal(r.astype(np.int64), want, err_msg=host)
        sim.drain(until=sim.now + 1.0)
    print("tensor times", [f"{t:.2f}" for t in times])
    return times, sim


def test_a_fixed_window_stays_fast_through_random_wan_loss_with_karn_over_the_job():
    """256 KiB tensors (1024 chunks), fixed window. 8.6 % of chunks lose a frame, and a
    chunk's result then waits for the worker whose frame was lost to find it and re-send.
    Without Karn's rule over the job (RETX on such results, docs/protocol.md) the other
    workers took that wait as a round-trip sample: SRTT grew to 12 s, the RTO to its
    10 s ceiling, and the third tensor took 31 s instead of 1.1 s (seed 5)."""
    times, sim = _bench_point_flat_ina(1024, 4, congestion_control=False)
    assert sim.stats.lost > 500                     # the loss happened
    assert max(times[1:]) < 2.5, times              # no collapse (0.37 s each without loss)
    assert max(c.rtt.srtt for c in sim.clients.values()) < 1.0


def test_a_lost_chunk_holds_back_only_its_own_slot():
    """1 MB tensors (4096 chunks, four generations of the 1024 slots), fixed window. When
    a chunk's next could go only after every earlier chunk, one lost chunk stopped every
    new send a window later: 16.4 s for the second tensor (3.6-16 s; 0.99 s without
    loss). Now 1.5-1.8 s (docs/protocol.md, "Window")."""
    times, _ = _bench_point_flat_ina(4096, 2, congestion_control=False, core="c")
    assert times[1] < 2.5, times
