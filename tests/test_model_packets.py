"""The segment-level simulation of TCP streams through shared drop-tail queues
(schemes/model_packets.py) against hand-worked cases, and the models that take it (no root)."""
from __future__ import annotations

import dataclasses
import logging

import pytest

from schemes import model as M
from schemes import model_chain as ch
from schemes import model_packets as mp
from tests.test_model import predict, scn

SEG = 8 * (M.MSS + M.SEG_OVERHEAD)             # bits of a full segment on the wire
TCP = ch.Tcp("cubic", 0.7, 10, 0.02, 1.0, False, SEG)
RATE, DELAY = 50e6, 0.050                       # a 50 Mbps link, one-way 50 ms
BIG = 10 ** 9                                   # a queue that never fills


def link(limit=BIG, loss=0.0, rate=RATE, delay=DELAY):
    return mp.Queue(rate, delay, limit, loss)


def alone(segments, iterations=1, queues=None, tcp=TCP, seed=0):
    """One stream a -> b over queue 0, its ACKs over queue 1; its arrival ends the worker's
    iteration. (ends, the simulation)."""
    s = mp.PacketStream((0,), (1,), 2 * DELAY, tuple(segments), (), "w")
    sim = mp.Sim([s], queues or [link(), link()], {"w": [0]}, 0.0, tcp, iterations, seed)
    return sim.run(), sim


def retransmitted(sim) -> int:
    return sum(sum(f.sends) - len(f.sends) for f in sim.flows if f.s.data)


def test_slow_start_doubles_the_window_each_round_trip():
    # 70 segments from a 10-segment window, one ACK per two segments (each acknowledging
    # 2: +2 per ACK): rounds of 10, 20, 40 segments; the last of them arrives 2 round trips
    # after the first round left, plus the one-way delay and its serialization
    (end,), sim = alone([70])
    rtt = 2 * DELAY
    assert end == pytest.approx(2 * rtt + DELAY + 40 * SEG / RATE, rel=0.02)
    assert retransmitted(sim) == 0


def test_a_grown_window_sends_an_iteration_at_the_links_rate():
    # after the first iterations the window holds a whole iteration: the link's
    # serialization plus the one-way delay (the next iteration starts on arrival)
    ends, _ = alone([100] * 4, iterations=8)
    steady = ends[-1] - ends[-2]
    assert steady == pytest.approx(400 * SEG / RATE + DELAY, rel=0.03)


def test_a_drop_tail_queue_drops_the_excess_and_tcp_repairs_it():
    # a queue of 20 frames at 5 Mbps: slow start's bursts overflow it; every segment still
    # arrives (RACK and the probe timer repair), later than through a queue that holds all
    small = dict(rate=5e6)
    (full,), a = alone([400], queues=[link(**small), link(**small)])
    (short,), b = alone([400], queues=[link(limit=20 * 1514, **small), link(**small)])
    assert retransmitted(a) == 0 and retransmitted(b) > 0
    assert all(f.rcv_nxt == 400 for f in b.flows)
    assert short > full


def test_streams_sharing_a_queue_share_its_rate():
    # two streams of 300 segments into one queue: together no faster than the link
    # serializes 600 segments; one alone takes about half
    a = mp.PacketStream((0,), (1,), 2 * DELAY, (300,), (), "u")
    b = mp.PacketStream((0,), (1,), 2 * DELAY, (300,), (), "v")
    ends = mp.Sim([a, b], [link(), link()], {"u": [0], "v": [1]}, 0.0, TCP, 6).run()
    both = ends[-1] - ends[-2]
    one, _ = alone([300], 6)
    solo = one[-1] - one[-2]
    assert both >= 600 * SEG / RATE
    assert both > 1.6 * (solo - DELAY)


def test_acks_wait_behind_the_other_directions_data():
    # two-way traffic (Zhang, Shenker and Clark, 1991): both streams start with a
    # 300-segment window (set here); b -> a's burst occupies queue 1 for its 73 ms of
    # serialization, and the ACKs of a -> b's burst (from 50 ms on) wait behind it there:
    # a's next round, and so its 400 segments, end about 23 ms later than alone
    a = mp.PacketStream((0,), (1,), 2 * DELAY, (400,), (), "u")
    b = mp.PacketStream((1,), (0,), 2 * DELAY, (300,), (), "v")
    tcp = dataclasses.replace(TCP, init_cwnd=300)
    both = mp.Sim([a, b], [link(), link()], {"u": [0], "v": [1]}, 0.0, tcp, 1)
    both.run()
    solo = mp.Sim([a], [link(), link()], {"u": [0]}, 0.0, tcp, 1)
    solo.run()
    burst = 300 * SEG / RATE
    late = both.worker_ends["u"][0] - solo.worker_ends["u"][0]
    assert late == pytest.approx(burst - DELAY, abs=0.005)
    assert both.flows[0].srtt > solo.flows[0].srtt


def test_random_loss_is_repaired_and_seeded():
    q = [link(loss=0.02), link()]
    (e1,), s1 = alone([2000], queues=q, seed=1)
    (e2,), s2 = alone([2000], queues=q, seed=1)
    (e3,), s3 = alone([2000], queues=q, seed=2)
    assert e1 == e2 and retransmitted(s1) == retransmitted(s2)
    assert e3 != e1
    assert 0.01 * 2000 < retransmitted(s1) < 0.05 * 2000
    assert all(f.rcv_nxt == 2000 for f in s1.flows)


def test_restart_after_idle_costs_round_trips():
    # compute of 1 s between iterations (idle >> RTO): the window halves per RTO idle down
    # to the initial window, so each iteration slow-starts again; without the restart it
    # sends at the grown window
    s = mp.PacketStream((0,), (1,), 2 * DELAY, (200,), (), "w")
    run = lambda tcp: mp.Sim([s], [link(), link()], {"w": [0]}, 1.0, tcp, 6).run()
    on = run(dataclasses.replace(TCP, restart_after_idle=True))
    off = run(TCP)
    assert (on[-1] - on[-2]) - (off[-1] - off[-2]) > 2 * DELAY


def test_a_pull_chunk_waits_for_every_push_of_it():
    # two pushes into a server, one pull back: the pull's chunk goes after both pushes' chunk
    p1 = mp.PacketStream((0,), (1,), 2 * DELAY, (10,), (), "u")
    p2 = mp.PacketStream((2,), (3,), 2 * DELAY, (10,), (), "v")
    pull = mp.PacketStream((1,), (0,), 2 * DELAY, (10,), (0, 1), None)
    slow = link(rate=1e6)                      # v's push crawls
    sim = mp.Sim([p1, p2, pull], [link(), link(), slow, link()], {"u": [2], "v": [2]}, 0.0, TCP, 1)
    (end,) = sim.run()
    assert end > 10 * SEG / 1e6 + 2 * DELAY


def test_ps_without_loss_takes_the_queued_simulation_with_the_gated_pull_in_it():
    sc = scn("ps", dcs=3, per_dc=2)
    p, closed = predict(sc), predict(sc, closed=True)
    (term,) = [k for k in p.terms if k.startswith("streams through the links' drop-tail queues")]
    assert "schemes/model_packets.py" in term
    assert p.iteration_s >= closed.iteration_s
    assert not [c for c in p.caveats if "the pull follows the slowest push stream" in c]
    assert [c for c in closed.caveats if "the pull follows the slowest push stream" in c]
    # the same scenario again: the same number (no randomness without loss)
    assert predict(sc).iteration_s == p.iteration_s


def test_beyond_the_budget_the_round_level_simulation_or_the_closed_form_stays(monkeypatch):
    monkeypatch.setattr(mp, "PACKET_BUDGET", 10)
    p = predict(scn("hier-ps", per_dc=2))
    assert not [k for k in p.terms if "drop-tail queues" in k]
    assert any("schemes/model_chain.py" in k for k in p.terms) or \
        any("schemes/model_chain.py" in n for n in p.notes)


def test_under_random_loss_the_round_level_simulation_binds():
    p = predict(scn("ps", loss=1.0))
    assert any(k.startswith("streams under loss") and "model_chain" in k for k in p.terms)


def test_a_ring_whose_queues_stay_short_is_its_max_plus_cycle():
    # 2 DCs x 1 worker, 50 Mbps, one-way 50 ms: each hop's 512 KiB step crosses its WAN
    # direction alone and its ACKs the other's mostly idle queue; the simulated steady pace
    # is the cycle of the closed form
    p, c = predict(scn("ring", dcs=2, per_dc=1)), predict(scn("ring", dcs=2, per_dc=1), closed=True)
    assert any("schemes/model_packets.py" in k for k in p.terms)
    assert p.iteration_s == pytest.approx(c.iteration_s, rel=0.01)


def test_a_ring_at_ten_bdps_waits_for_acks_behind_its_neighbours_data():
    # 2 DCs x 2 at 20 Mbps, 20 ms (the fidelity test's point): both directions of the WAN
    # link carry a hop's steps, each hop's ACKs queue behind the other's data; measured
    # 1.23-1.37 x the cycles there (docs/model.md), which the simulation has
    sc = scn("ring", dcs=2, per_dc=2, mbps=20, delay=20)
    p, c = predict(sc), predict(sc, closed=True)
    assert any(k.startswith("ring hops through the links' drop-tail queues") for k in p.terms)
    assert 1.15 < p.iteration_s / c.iteration_s < 1.5


def test_a_large_job_simulates_fewer_iterations_within_the_budget(monkeypatch):
    s = mp.PacketStream((0, 1), (2, 3), 0.1, (100,) * 10, (), "w")   # 1000 segments, 2 + 1 hops each
    assert mp.iterations_for([s], 6) == 6
    monkeypatch.setattr(mp, "PACKET_BUDGET", 3000 * 4)
    assert mp.iterations_for([s], 6) == 4 and mp.iterations_for([s], None) == 4
    monkeypatch.setattr(mp, "PACKET_BUDGET", 3000 * 2)
    assert mp.iterations_for([s], 6) is None and not mp.fits([s], 6)
    assert mp.iterations_for([s], 2) == 2          # a 2-iteration run needs no more


def test_a_long_simulation_says_seed_by_seed_where_it_is(monkeypatch):
    # a simulation of more than PROGRESS_HOPS packet-hops a seed logs a line per seed (the
    # command line shows them on stderr: testbed.fidelity.show_model_progress); a smaller
    # one stays quiet. The lines are collected on the module's logger itself, whatever
    # logging configuration other code left behind
    lines = []
    h = logging.Handler(logging.DEBUG)
    h.emit = lambda r: lines.append(r.getMessage())
    monkeypatch.setattr(mp.log, "handlers", [h])
    monkeypatch.setattr(mp.log, "disabled", False)
    monkeypatch.setattr(mp.log, "level", logging.INFO)
    tcp = dataclasses.replace(TCP, send_jitter_s=10e-6)
    ss = [mp.PacketStream((0,), (1,), 2 * DELAY, (300,), (), f"w{i}") for i in range(4)]
    args = (ss, [link(limit=60 * 1514), link()], {f"w{i}": [i] for i in range(4)}, 0.0, tcp, 3)
    mp.pace(*args)
    assert lines == []
    monkeypatch.setattr(mp, "PROGRESS_HOPS", 1)
    mp.pace(*args)
    assert lines == [f"model: simulating 4 streams segment by segment, 3 iterations (0.0 M "
                     f"packet-hops): seed {i} of {mp.JITTER_SEEDS}" for i in range(1, mp.JITTER_SEEDS + 1)]


def test_the_command_line_shows_the_models_progress_once(monkeypatch):
    import testbed.fidelity as fid
    lg = logging.getLogger("schemes")
    monkeypatch.setattr(lg, "handlers", [])
    monkeypatch.setattr(lg, "level", lg.level)
    fid.show_model_progress()
    fid.show_model_progress()
    assert len(lg.handlers) == 1 and lg.level == logging.INFO


def test_lost_acks_are_covered_by_the_next_cumulative_ack():
    # 5 % of the ACKs lost, no data lost: the next ACK's cumulative point tells the sender,
    # so nothing is sent twice (an ACK that only listed its own segments would make RACK
    # call them lost)
    (end,), sim = alone([2000], queues=[link(), link(loss=0.05)], seed=3)
    assert retransmitted(sim) == 0 and all(f.rcv_nxt == 2000 for f in sim.flows)


def one_flow(segments=1000, tcp=TCP):
    sim = mp.Sim([mp.PacketStream((0,), (1,), 2 * DELAY, (segments,), (), "w")],
                 [link(), link()], {"w": [0]}, 0.0, tcp, 1)
    return sim, sim.flows[0]


def test_hystart_rounds_start_with_the_first_window_so_an_empty_queue_does_not_end_slow_start():
    # one stream alone on a 50 Mbps, 100 ms path with a queue that never fills: each slow
    # start round's first samples see the queue empty until the window passes the path's
    # BDP (413 segments), so HyStart lets slow start run past it (to the round whose first
    # samples wait 12.5 ms; rounds counted from the first window on, Linux since
    # 25c1a9ca53db); rounds counted from a window of 16 start mid-burst and end it at 24-32
    (_,), sim = alone([3000])
    f = sim.flows[0]
    bdp = RATE * 2 * DELAY / SEG
    assert f.hystart_found and bdp < f.ssthresh < 4 * bdp


def test_hystart_acts_once_until_a_timeout():
    # ca->found: once HyStart has ended a slow start, a later one (after idle) runs to its
    # threshold; an RTO (TCP_CA_Loss, bictcp_reset) arms it again
    sim, f = one_flow()
    f.cwnd, f.ssthresh, f.nxt = 100.0, 400.0, 500
    for _ in range(12):                               # a round of samples 20 ms above base
        sim.sample(f, 2 * DELAY + 0.02, 2 * DELAY + 0.02, 1)
    assert f.hystart_found and f.ssthresh == 100
    f.cwnd, f.ssthresh, f.round_end = 50.0, 400.0, 0
    for _ in range(12):
        sim.sample(f, 2 * DELAY + 0.02, 2 * DELAY + 0.02, 600)
    assert f.ssthresh == 400                          # latched: no second exit
    f.add(1)
    f.out, f.probed, f.deadline = 1, True, 5.0
    f.state[0], f.order = 1, mp.deque([(0.0, 0)])
    sim.timer(5.0, 0, 5.0)                            # the RTO
    assert not f.hystart_found and f.cwnd == 1


def test_the_rto_keeps_a_rounds_largest_deviation_like_linux():
    # tcp_rtt_estimator: rttvar is the largest mean deviation of a round trip's samples and
    # decays by a quarter a round toward the next round's largest; a falling RTT moves the
    # deviation 8 x slower. After a 200 ms spike on a 100 ms path the RTO stays up for the
    # rest of the round (an EWMA of the deviation is back near rto_min after a dozen
    # ACKs), then decays round by round
    sim, f = one_flow()
    f.nxt = 10
    for k in range(1, 40):                             # settle: rounds of base samples
        f.nxt = 10 * k
        sim.sample(f, 0.1, 0.1, 10 * k + 1)
    assert f._rto() == pytest.approx(f.srtt + TCP.rto_min_s, rel=0.05)
    f.nxt = 1000
    sim.sample(f, 0.3, 0.3, 400)                        # the spike, inside a new round
    up = f._rto() - f.srtt
    for _ in range(12):
        sim.sample(f, 0.1, 0.1, 400)
    assert f._rto() - f.srtt == pytest.approx(up)      # held for the round
    assert up > 0.15
    rounds = []
    for k in range(1, 12):                              # rounds of base samples
        f.nxt = 1000 + 10 * k
        for _ in range(12):
            sim.sample(f, 0.1, 0.1, 1000 + 10 * (k - 1) + 1)
        rounds.append(f._rto() - f.srtt)
    assert rounds[0] > 0.7 * up and rounds[1] < rounds[0]
    assert rounds[-1] < TCP.rto_min_s + 0.2 * up


def test_the_ack_leaves_before_the_data_its_segment_lets_the_application_write():
    # the kernel acknowledges a segment as it comes in; the server's pull chunk, written
    # once the application has read that segment, goes after that ACK on the shared queue
    # (so the push's last RTT sample is the path's, not behind the pull's 10-segment burst)
    push = mp.PacketStream((0,), (1,), 2 * DELAY, (2,), (), "w")
    pull = mp.PacketStream((1,), (0,), 2 * DELAY, (10,), (0,), None)
    sim = mp.Sim([push, pull], [link(), link()], {"w": [1]}, 0.0, TCP, 1)
    sim.run()
    assert sim.flows[0].rack_rtt == pytest.approx(2 * DELAY + 2 * SEG / RATE, abs=1e-4)


def test_a_sender_holds_no_more_than_its_send_buffer_unacknowledged():
    # the send buffer keeps every segment until it is acknowledged (tcp_wmem max 4 MiB at
    # SNDBUF_PER_SEGMENT each: 1727 segments, what a capture showed a ring hop hold for 30 s
    # where its window would have overflowed the queue); a 100-segment cap on a 50 Mbps,
    # 100 ms path sends 100 segments a round trip whatever the window: slow start's 10, 20,
    # 40, 80 in four round trips, then the other 1850 at 100 a round trip
    capped = dataclasses.replace(TCP, max_flight=100)
    (end,), sim = alone([2000], tcp=capped)
    (free,), _ = alone([2000])
    assert end == pytest.approx((4 + 1850 / 100) * 2 * DELAY + DELAY, rel=0.05)
    assert free < end / 2
    assert M.max_flight(scn()) == pytest.approx(4194304 / M.SNDBUF_PER_SEGMENT)
    big = scn(extra="tcp: {wmem_bytes: [4096, 16384, 67108864]}")
    assert M.max_flight(big) == pytest.approx(M.RWND_MAX / M.MSS)   # then the receive window


def test_a_window_that_limited_the_sender_grows_on_all_its_acks():
    # tcp_cwnd_validate keeps is_cwnd_limited for the window it was seen in (until snd_una
    # passes cwnd_usage_seq): a sender that filled its window of 10, then sends the one
    # segment more its application has, grows on every ACK of that window, not only until
    # that send; the window after, which it does not fill, does not grow (a capture of a
    # hier-ps pull at 100 Mbps: restarts from 245 and 463 segments, where the model that
    # forgot the window at each application-limited send had 177 and 290)
    sim, f = one_flow(tcp=dataclasses.replace(TCP, law="reno"))
    f.cwnd = f.ssthresh = 10.0
    f.add(10)
    sim.send(0.0, 0)                        # fills the window
    sim.ack(0.10, 0, [], 2)
    f.add(1)
    sim.send(0.10, 0)                       # the application's one segment more
    before = f.cwnd
    sim.ack(0.12, 0, [], 4)
    assert f.cwnd > before                  # still the limited window's ACKs
    sim.ack(0.14, 0, [], 11)                # that window is in
    f.add(1)
    sim.send(0.14, 0)
    after = f.cwnd
    sim.ack(0.30, 0, [], 12)
    assert f.cwnd == after


def test_acks_of_new_data_keep_an_application_limited_window():
    # tcp_cong_avoid stamps the window as in use on every ACK of new data (snd_cwnd_stamp),
    # whether or not it may grow, so RFC 2861's shrink (tcp_cwnd_application_limited) needs
    # an RTO without such an ACK: a sender that never fills its window of 100 but hears
    # ACKs keeps it; one that hears nothing for an RTO shrinks halfway to what it used
    def window_after(acks):
        sim, f = one_flow(tcp=dataclasses.replace(TCP, restart_after_idle=True))
        f._rto = lambda: 0.3
        f.cwnd, f.ssthresh = 100.0, 50.0
        f.add(10)
        sim.send(0.0, 0)
        for k, t in enumerate(acks, 1):
            sim.ack(t, 0, [], 2 * k)
        f.add(1)
        sim.send(1.0, 0)
        return f.cwnd

    assert window_after([0.25, 0.5, 0.75, 0.95]) == 100
    assert window_after([]) == pytest.approx((100 + 11) / 2)


def _four_into_one_queue(jitter: float, seed: int = 0):
    """Four identical streams of 300 segments, each its own worker's result, into one
    60-frame queue: their iteration ends (the last worker's) over 4 iterations."""
    tcp = dataclasses.replace(TCP, send_jitter_s=jitter)
    ss = [mp.PacketStream((0,), (1,), 2 * DELAY, (300,), (), f"w{i}") for i in range(4)]
    sim = mp.Sim(ss, [link(limit=60 * 1514), link()], {f"w{i}": [i] for i in range(4)}, 0.0, tcp, 4, seed)
    return sim.run()


def test_without_send_noise_identical_streams_keep_in_step_and_with_it_they_lose_it():
    # without the hosts' send-time noise nothing is random: every seed gives the same ends
    # (the streams' bursts stay phase-locked at the queue); with 10 us of noise the seeds
    # differ, each seed is reproducible, and the streams, no longer in step, lose more at
    # the queue and take longer (alltoall's runs: docs/model.md, "Send-time noise")
    assert _four_into_one_queue(0.0, 0) == _four_into_one_queue(0.0, 1)
    noisy = [_four_into_one_queue(10e-6, s) for s in (0, 1)]
    assert noisy[0] != noisy[1] and noisy[0] == _four_into_one_queue(10e-6, 0)
    assert min(n[-1] for n in noisy) > 1.1 * _four_into_one_queue(0.0)[-1]


def test_the_pace_averages_the_seeds_of_the_noise():
    ss = [mp.PacketStream((0,), (1,), 2 * DELAY, (300,), (), f"w{i}") for i in range(4)]
    results = {f"w{i}": [i] for i in range(4)}
    queues = [link(limit=60 * 1514), link()]
    noisy = dataclasses.replace(TCP, send_jitter_s=10e-6)
    k = mp.iterations_for(ss, 4)
    per_seed = [ch.pace(mp.tree_ends(ss, queues, results, 0.0, noisy, k, s), 4) for s in range(mp.JITTER_SEEDS)]
    assert len(set(per_seed)) > 1
    assert mp.pace(ss, queues, results, 0.0, noisy, 4) == pytest.approx(sum(per_seed) / len(per_seed))
    # without the noise one run of the loop: seed 0's
    assert mp.pace(ss, queues, results, 0.0, TCP, 4) == ch.pace(mp.tree_ends(ss, queues, results, 0.0, TCP, k), 4)
