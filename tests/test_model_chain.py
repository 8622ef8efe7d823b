"""The simulated chain of dependent chunk transfers over lossy TCP (schemes/model_chain.py)
and the ring's model under loss (schemes/ring/model.py), against hand-worked cases (no root)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from schemes import model as M
from schemes import model_chain as ch
from tests.test_model import predict, scn
from topologies.graph import build_graph

BITS = 8 * (M.MSS + M.SEG_OVERHEAD)


def ring_period(hops, segs, steps, compute_s, tcp, iterations=48, seed=0):
    """The steady pace of a long ring job: the last iterations after 8 of warm-up."""
    ends = ch.ring_ends(hops, segs, steps, compute_s, tcp, iterations, seed)
    return ch.pace(ends, None, steady_last=iterations - 8)


def tree_period(streams, results, compute_s, tcp, iterations=20):
    return ch.pace(ch.tree_ends(streams, results, compute_s, tcp, iterations), None, steady_last=10)


def tcp(law="cubic", restart=True, dilation=1.0):
    return ch.Tcp(law, 0.7 if law == "cubic" else 0.5, 10, 0.2 / dilation, dilation, restart, BITS)


def test_without_loss_the_chain_is_the_larger_max_plus_cycle():
    # by hand: 4 hops; the ring cycle (each hop its serialization + one-way delay) advances
    # 4 steps, 6 steps per iteration -> 1.5 rounds; a hop's own sends: 6 serializations
    hops = [ch.Hop(0.04, 0.02, 20e6, 0.0), ch.Hop(0.0, 0.0, 1e9, 0.0)] * 2
    for segs in (20, 40):     # 20: the ring cycle binds; 40: the WAN hop's own sends do
        weights = [h.delay_s + segs * BITS / h.rate_bps for h in hops]
        expect = max(1.5 * sum(weights), 6 * segs * BITS / 20e6)
        period = ring_period(hops, [segs] * 4, 6, 0.0, tcp())
        assert period == pytest.approx(expect, rel=1e-6)
    assert 1.5 * sum(h.delay_s + 20 * BITS / h.rate_bps for h in hops) > 6 * 20 * BITS / 20e6
    assert 1.5 * sum(h.delay_s + 40 * BITS / h.rate_bps for h in hops) < 6 * 40 * BITS / 20e6


def test_compute_adds_to_each_iteration_without_loss():
    hops = [ch.Hop(0.04, 0.02, 20e6, 0.0)] * 2
    base = ring_period(hops, [10, 10], 2, 0.0, tcp(restart=False))
    assert ring_period(hops, [10, 10], 2, 0.3, tcp(restart=False)) == pytest.approx(base + 0.3)


class Scripted:
    """An rng whose draws are given: per burst, the positions in it that are lost."""

    def __init__(self, *bursts):
        self.bursts = list(bursts)

    def random(self, n):
        lost = self.bursts.pop(0) if self.bursts else []
        return np.array([0.0 if i in lost else 1.0 for i in range(n)])


RTT, D, RATE = 0.1, 0.05, 10e6
SER = BITS / RATE


def test_a_lost_tail_waits_for_the_probe():
    s = ch.Sender(ch.Hop(RTT, D, RATE, 0.01), tcp(restart=False))
    # one segment, lost once: sent, probe after 2 round trips, sent again, arrives
    done = s.send(0.0, 1, Scripted([0], []))
    assert done == pytest.approx(SER + 2 * RTT + SER + D)


def test_a_lost_segment_before_the_tail_is_found_by_rack():
    # 5 segments in one window. The second lost: three later segments are in, so RACK
    # finds it at the third one's ACK (Linux's reordering window is 0 then), it is sent
    # again behind the burst and arrives
    s = ch.Sender(ch.Hop(RTT, D, RATE, 0.01), tcp(restart=False))
    done = s.send(0.0, 5, Scripted([1], []))
    assert done == pytest.approx(5 * SER + RTT + SER + D)
    # the fourth lost: one later segment only, found a quarter round trip after the
    # burst's ACKs
    s = ch.Sender(ch.Hop(RTT, D, RATE, 0.01), tcp(restart=False))
    done = s.send(0.0, 5, Scripted([3], []))
    assert done == pytest.approx(5 * SER + 1.25 * RTT + SER + D)


def test_a_chunk_larger_than_the_window_takes_round_trips_and_a_loss_cuts_the_window():
    s = ch.Sender(ch.Hop(RTT, D, 1e9, 0.01), tcp(restart=False))
    fast = BITS / 1e9
    # 30 segments from the initial window of 10: 10, then 20 (slow start) sent from the
    # first ACK on, one round trip after the first segment (the ACK clock spaces them)
    assert s.send(0.0, 30, Scripted()) == pytest.approx(fast + RTT + 20 * fast + D)
    # window 40 once the last ACKs are in: one burst of 30 with a loss; its ACKs come back
    # before the repair is sent: cut once, x beta
    s.send(10.0, 30, Scripted([4]))
    assert s.cwnd == pytest.approx(40 * 0.7)


def test_same_inputs_same_period_and_more_loss_is_slower():
    hops = lambda p: [ch.Hop(0.1, 0.05, 50e6, p), ch.Hop(0.0, 0.0, 1e9, 0.0)] * 3
    segs = [60] * 6
    a = ring_period(hops(0.01), segs, 10, 0.0, tcp(dilation=10))
    assert a == ring_period(hops(0.01), segs, 10, 0.0, tcp(dilation=10))
    clean = ring_period(hops(0.0), segs, 10, 0.0, tcp(dilation=10))
    assert clean < a < ring_period(hops(0.03), segs, 10, 0.0, tcp(dilation=10))


def test_reno_regrows_slower_than_cubic_on_a_dilated_clock():
    hops = [ch.Hop(0.2, 0.1, 50e6, 0.01), ch.Hop(0.0, 0.0, 1e9, 0.0)] * 3
    cubic = ring_period(hops, [60] * 6, 10, 0.0, tcp("cubic", dilation=10))
    reno = ring_period(hops, [60] * 6, 10, 0.0, tcp("reno", dilation=10))
    assert reno > 1.3 * cubic


def test_restart_after_idle_costs_round_trips_when_compute_leaves_the_hop_idle():
    hops = [ch.Hop(0.1, 0.05, 1e9, 0.0), ch.Hop(0.0, 0.0, 1e9, 0.0)]
    # idle 5 s, RTO 0.3 s: halved down to the initial window, slow start 10, 20, 40, 30:
    # three round trips more than one window of 100
    kept = ring_period(hops, [100, 100], 2, 5.0, tcp(restart=False))
    restarted = ring_period(hops, [100, 100], 2, 5.0, tcp(restart=True))
    assert restarted - kept == pytest.approx(3 * 0.1, abs=0.005)


def test_ring_model_under_loss_is_the_simulated_chain_and_above_the_lossless_cycle():
    clean = predict(scn("ring", 2, 2, mbps=20, delay=20))
    lossy = predict(scn("ring", 2, 2, mbps=20, delay=20, loss=1.0))
    (term,) = [k for k in lossy.terms if k.startswith("ring under loss")]
    assert "simulated chain of 6 dependent chunk transfers" in term
    assert lossy.iteration_s > 2 * clean.iteration_s
    assert not any(k.startswith("ring cycle") for k in lossy.limits)
    # the backlogged stream's response is a candidate too, and never above the chain by much
    (resp,) = [v for k, v in lossy.limits.items() if k.startswith("loss (")]
    assert resp <= lossy.iteration_s


def test_a_ring_hop_is_one_stream_not_one_per_step():
    # the fair share of a ring hop is its link's rate: its chunks go one after the other
    p = predict(scn("ring", 2, 2, mbps=20, delay=20, loss=1.0))
    (resp,) = [k for k in p.limits if k.startswith("loss (")]
    assert "stream" in resp


def test_a_ring_too_large_to_simulate_keeps_the_cycles_and_says_so(monkeypatch):
    from schemes.ring import model as rm
    monkeypatch.setattr(rm, "CHAIN_BUDGET", 10)
    p = predict(scn("ring", 2, 2, mbps=20, delay=20, loss=1.0))
    assert any(k.startswith("ring cycle") for k in p.limits)
    assert any("not simulated (too large" in c for c in p.caveats)


def test_a_pull_chunk_waits_for_the_slowest_push_of_it():
    # workers a (20 ms one way) and b (50 ms) push one chunk of 5 segments to a server on
    # its own host; the sum goes back once both are in. b's cycle binds: compute + push
    # + pull over its 50 ms path; a waits for b's push before its pull can start.
    ser = 5 * BITS / RATE
    ha, hb = ch.Hop(0.04, 0.02, RATE, 0.0), ch.Hop(0.1, 0.05, RATE, 0.0)
    streams = [ch.Stream(ha, (5,), (), "a"), ch.Stream(hb, (5,), (), "b"),
               ch.Stream(ha, (5,), (0, 1)), ch.Stream(hb, (5,), (0, 1))]
    period = tree_period(streams, {"a": [2], "b": [3]}, 0.3, tcp(restart=False))
    assert period == pytest.approx(0.3 + 2 * (ser + 0.05), rel=1e-6)


def test_chunks_of_a_stream_pipeline_through_a_server():
    # one worker, two chunks through a server on the worker's own host (no network) and
    # back over one hop: with the window open, the tree is a push and a pull of 2 chunks
    h = ch.Hop(0.04, 0.02, RATE, 0.0)
    streams = [ch.Stream(h, (5, 5), (), "a"), ch.Stream(None, (5, 5), (0,)), ch.Stream(h, (5, 5), (1,))]
    period = tree_period(streams, {"a": [2]}, 0.0, tcp(restart=False))
    ser = 5 * BITS / RATE
    # the pull's first chunk goes while the push's second is on the wire (other direction)
    assert period == pytest.approx(ser + 0.02 + 2 * ser + 0.02, rel=1e-6)


def test_a_whole_message_is_stored_then_forwarded_and_arrives_at_once():
    # the same two chunks, but relayed as one message (netstorm): the relay forwards
    # nothing before all of it is in, and its receiver has none of it before the last
    # segment; streamed, the relay would forward chunk 0 while chunk 1 is on the wire
    h = ch.Hop(0.04, 0.02, RATE, 0.0)
    ser = 5 * BITS / RATE
    whole = [ch.Stream(h, (5, 5), (), "a"), ch.Stream(h, (5, 5), (0,), whole=True)]
    streamed = [ch.Stream(h, (5, 5), (), "a"), ch.Stream(h, (5, 5), (0,))]
    t = tcp(restart=False)
    assert tree_period(whole, {"a": [1]}, 0.0, t) == pytest.approx(2 * (2 * ser + 0.02), rel=1e-6)
    assert tree_period(streamed, {"a": [1]}, 0.0, t) == pytest.approx(3 * ser + 2 * 0.02, rel=1e-6)
    ends = ch.tree_ends(whole + [ch.Stream(None, (5, 5), (1,))], {"a": [2]}, 0.0, t, 1)
    assert ends == pytest.approx([2 * (2 * ser + 0.02)], rel=1e-6)


def test_a_gated_stream_waits_for_the_first_chunk_of_every_gate_plus_its_delay():
    # netstorm's barrier: b's message waits until a's first chunk is in + 0.3 s, though its
    # own input (b's push) is in earlier
    ha, hb = ch.Hop(0.04, 0.02, RATE, 0.0), ch.Hop(0.2, 0.1, RATE, 0.0)
    ser = 5 * BITS / RATE
    streams = [ch.Stream(ha, (5,), (), "a"), ch.Stream(hb, (5,), (), "b"),
               ch.Stream(ha, (5,), (1,), whole=True, gate=(0,), gate_s=0.3)]
    ends = ch.tree_ends(streams, {"a": [0], "b": [2]}, 0.0, tcp(restart=False), 1)
    gate_open = ser + 0.02 + 0.3
    assert ser + 0.1 < gate_open
    assert ends == pytest.approx([gate_open + ser + 0.02], rel=1e-6)


def test_chunk_segments_cut_a_byte_stream_where_each_chunk_ends():
    assert ch.chunk_segments(4096, 1024, 24, 1448) == (3, 3, 3, 3)   # 4120, 8240, 12360, 16480 B
    assert sum(ch.chunk_segments(262144, 4096, 24, 1448)) == math.ceil((4 * 262144 + 64 * 24) / 1448)


@pytest.mark.parametrize("scheme", ["ps", "hier-ps"])
def test_streamed_push_pull_under_loss_is_simulated(scheme):
    clean = predict(scn(scheme, 3, 2, mbps=20, delay=20))
    lossy = predict(scn(scheme, 3, 2, mbps=20, delay=20, loss=1.0))
    (term,) = [k for k in lossy.terms if k.startswith("streams under loss")]
    assert "simulated push and gated pull" in term
    assert lossy.iteration_s > 1.5 * clean.iteration_s
    assert not any(k.startswith("propagation") for k in lossy.terms)   # inside the simulation


def test_pace_is_what_measure_reports_of_the_run():
    ends = [1.0, 2.0, 2.5, 3.0, 3.5]
    assert ch.pace(ends, 5) == pytest.approx((3.5 - 1.0) / 4)      # after the warm-up one
    assert ch.pace(ends, 3) == pytest.approx((2.5 - 1.0) / 2)      # a shorter run
    assert ch.pace(ends, None, steady_last=2) == pytest.approx(0.5)  # a long job: steady
    # a run longer than simulated: the rest at the steady pace
    assert ch.pace(ends, 9, steady_last=2) == pytest.approx((3.5 - 1.0 + 4 * 0.5) / 8)


def test_mean_pace_takes_one_seed_without_loss():
    seen = []
    ch.mean_pace(lambda n, seed: seen.append(seed) or [float(i) for i in range(n)], 5, lossy=False)
    assert seen == [0]
    seen.clear()
    ch.mean_pace(lambda n, seed: seen.append(seed) or [float(i) for i in range(n)], 5, lossy=True)
    assert seen == list(range(10))          # 4 steady iterations each: 40 in all


def test_each_worker_pushes_after_its_own_compute():
    # a computes 0.1 s behind a 200 ms one-way path, b 0.3 s behind 10 ms; the server sums
    # both. By hand: the sums come every 0.5 s + two serializations (a's compute and round
    # trip), not 0.7 s (the slowest compute plus the longest round trip)
    ser = 5 * BITS / RATE
    ha, hb = ch.Hop(0.4, 0.2, RATE, 0.0), ch.Hop(0.02, 0.01, RATE, 0.0)
    streams = [ch.Stream(ha, (5,), (), "a"), ch.Stream(hb, (5,), (), "b"),
               ch.Stream(ha, (5,), (0, 1)), ch.Stream(hb, (5,), (0, 1))]
    own = {"a": 0.1, "b": 0.3}
    period = tree_period(streams, {"a": [2], "b": [3]}, lambda w, i: own[w], tcp(restart=False))
    assert period == pytest.approx(0.5 + 2 * ser, rel=1e-6)
    slowest = tree_period(streams, {"a": [2], "b": [3]}, 0.3, tcp(restart=False))
    assert slowest == pytest.approx(0.7 + 2 * ser, rel=1e-6)


def test_a_schedule_step_takes_the_closed_forms():
    from schemes import model_schedule as MS
    sc = scn("ring", 2, 2, mbps=20, delay=20, loss=1.0)
    step = MS.predict_at("ring", build_graph(sc), sc, {})
    assert not any("simulated" in k for k in step.prediction.terms)
    assert any("not simulated" in c for c in step.prediction.caveats)
    sc = scn("hier-ps", 3, 2, mbps=20, delay=20)
    assert not any("simulated" in k for k in MS.predict_at("hier-ps", build_graph(sc), sc, {}).prediction.terms)


def test_a_large_gradient_falls_back_to_the_closed_form():
    # the budget counts segments, not chunk transfers: 1 GB in 6 steps of 4 chunks is far
    # beyond it (it once ran the simulation for minutes)
    sc = scn("ring", 2, 2, mbps=20, delay=20, loss=1.0)
    sc.workload.parameters = 250_000_000
    p = predict(sc)
    assert any("not simulated (too large" in c for c in p.caveats)
    assert not any("simulated" in k for k in p.terms)


def test_cubic_grows_by_at_most_half_its_window_a_round_trip():
    # tcp_cubic.c bictcp_update: cnt >= 2 ("cwnd grows at 1.5x per RTT") however far the
    # cubic target is; before a first loss it grows at least 5 % a round trip (cnt <= 20)
    assert ch.cubic_cnt(100, 10 ** 6, 0, True) == 2
    assert ch.cubic_cnt(100, 101, 0, True) == pytest.approx(100)
    assert ch.cubic_cnt(100, 101, 0, False) == 20
    assert ch.cubic_cnt(100, 90, 110, True) == pytest.approx(10)   # the TCP-friendly pace
    s = ch.Sender(ch.Hop(0.1, 0.05, math.inf, 0.0), tcp())
    s.cwnd, s.ssthresh, s.w_max = 100.0, 50.0, 100.0
    s._epoch(0.0, 0.0, 100.0)
    for _ in range(100):                      # a window of ACKs, 30 s into the epoch
        s._grow(30.0, 1)
    assert 140 < s.cwnd <= 150


def test_a_restart_keeps_a_threshold_never_set():
    # tcp_cwnd_restart sets ssthresh = tcp_current_ssthresh = max(ssthresh, 3/4 cwnd): a
    # stream that never left slow start (TCP_INFINITE_SSTHRESH) slow-starts again to
    # wherever its window takes it; one that did keeps at least 3/4 of its window
    s = ch.Sender(ch.Hop(0.1, 0.05, math.inf, 0.0), tcp())
    s.cwnd, s.last_send = 700.0, 0.0
    s._restart(5.0)
    assert s.cwnd == 10 and s.ssthresh == math.inf
    s.cwnd, s.ssthresh, s.last_send = 700.0, 100.0, 10.0
    s._restart(15.0)
    assert s.cwnd == 10 and s.ssthresh == 525


def test_an_application_limited_stream_that_hears_acks_keeps_its_window():
    # the round-level sender too: every ACK of new data stamps the window as in use
    # (tcp_cong_avoid), so a stream sending 5 segments every 50 ms on a 100 ms path, never
    # filling its window of 100, keeps it for 2 s (without the stamp, cwnd validation
    # took it down to 29 by halving toward what it used after each RTO of 0.3 s)
    s = ch.Sender(ch.Hop(0.1, 0.05, 1e9, 0.0), tcp("reno"))
    s.cwnd, s.ssthresh = 100.0, 50.0
    s.stream(np.arange(40) * 0.05, np.full(40, 5), np.random.default_rng(0))
    assert s.cwnd == 100


def test_the_acks_of_a_window_that_a_later_burst_filled_grow_it():
    # tcp_cwnd_validate's record: a window counts as cwnd-limited once a burst fills it,
    # until that burst is acknowledged, so the ACKs of an earlier burst the application ran
    # dry in grow it too (reno in congestion avoidance: + acked / cwnd per burst). 5
    # segments at t = 0, 5 more at 10 ms fill the window of 10: both bursts' ACKs count;
    # with 4 more the window is never filled and neither does
    grown = {}
    for second in (5, 4):
        s = ch.Sender(ch.Hop(0.1, 0.05, 1e9, 0.0), tcp("reno", restart=False))
        s.cwnd, s.ssthresh = 10.0, 5.0
        s.stream(np.array([0.0, 0.01]), np.array([5, second]), np.random.default_rng(0))
        s._acks(1.0)                     # both bursts' ACKs are back
        grown[second] = s.cwnd
    assert grown[5] == pytest.approx(10 + 5 / 10 + 5 / 10.5)
    assert grown[4] == 10


def test_needs_maps_chunks_onto_inputs_of_other_sizes():
    # a result stream of two chunks fed by two one-chunk blocks (netstorm's blocks are not
    # the workers' chunks): chunk 0 waits for block A only, chunk 1 for A and B. B's worker
    # computes 1 s, so chunk 0 has gone long before B is in and only chunk 1 is left after
    h = ch.Hop(0.04, 0.02, RATE, 0.0)
    ser = 5 * BITS / RATE
    compute = lambda w, it: 1.0 if w == "b" else 0.0
    streams = [ch.Stream(h, (5,), (), "a"), ch.Stream(h, (5,), (), "b"),
               ch.Stream(h, (5, 5), (0, 1), needs=((0, 0), (-1, 0)))]
    t = tcp(restart=False)
    b_in = 1.0 + ser + 0.02
    assert ch.tree_ends(streams, {"a": [2], "b": [2]}, compute, t, 1) == \
        pytest.approx([b_in + ser + 0.02], rel=1e-6)
    # waiting for both blocks for every chunk, both chunks would follow B
    both = [*streams[:2], ch.Stream(h, (5, 5), (0, 1), needs=((0, 0), (0, 0)))]
    assert ch.tree_ends(both, {"a": [2], "b": [2]}, compute, t, 1) == \
        pytest.approx([b_in + 2 * ser + 0.02], rel=1e-6)
    with pytest.raises(ValueError):     # inputs of other sizes without needs are refused
        ch.tree_ends([*streams[:2], ch.Stream(h, (5, 5), (0, 1))], {"a": [2], "b": [2]},
                     compute, t, 1)


def test_trace_records_when_each_stream_could_send_and_when_it_was_in():
    # one worker's push of one 5-segment chunk, then a whole message on: the message
    # could go once the push was in and was in one serialization and delay later
    h = ch.Hop(0.04, 0.02, RATE, 0.0)
    ser = 5 * BITS / RATE
    trace: dict = {}
    ch.tree_ends([ch.Stream(h, (5,), (), "a"), ch.Stream(h, (5,), (0,), whole=True)], {"a": [1]},
                 0.0, tcp(restart=False), 2, trace=trace)
    assert sorted(trace) == [0, 1] and len(trace[1]) == 2
    (s0, e0), (s1, e1) = trace[0][0], trace[1][0]
    assert (s0, e0) == pytest.approx((0.0, ser + 0.02)) and (s1, e1) == pytest.approx((e0, e0 + ser + 0.02))
