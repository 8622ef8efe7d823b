"""Pacing of the aggregation worker (workers/pacing.py): the delivery-rate estimate, the
token bucket, and in the simulated network a flat tree whose synchronized first flights
overflow a WAN queue of one bandwidth-delay product unless paced."""
import numpy as np
import pytest

from control.agg_tree import build_tree
from tests.agg_sim import Faults, build_sim, expected_sums, random_tensors
from tests.agg_switches import factory
from tests.agg_topo import graph
from tests.test_ina_client import client, result_for
from workers.pacing import Pacer


def test_first_tensor_is_not_paced_then_gain_times_the_best_delivery_rate():
    p = Pacer()
    p.start(0.0)
    assert p.rate is None and all(p.may_send(0.0) for _ in range(100))
    # 100 results/s for 1 s, then 400/s for 0.2 s; intervals of one srtt = 0.1 s
    times = [0.01 * i for i in range(100)] + [1.0 + 0.0025 * i for i in range(80)]
    for t in times:
        p.on_result(t, srtt=0.1)
    p.start(2.0)
    assert p.rate == pytest.approx(1.25 * 400, rel=0.05)


def test_too_few_results_say_nothing():
    p = Pacer()
    p.start(0.0)
    for t in (0.0, 0.001, 0.002):       # fewer than MIN_SAMPLES results
        p.on_result(t, srtt=1.0)
    p.start(1.0)
    assert p.rate is None


def test_a_tensor_shorter_than_a_round_trip_is_estimated_packet_pair_style():
    p = Pacer()
    p.start(0.0)
    for i in range(80):                 # 80 results at 400/s, all within srtt = 0.5 s
        p.on_result(0.2 + i / 400, srtt=0.5)
    p.start(1.0)
    assert p.rate == pytest.approx(1.25 * 400, rel=0.01)


def test_rate_over_n_arrivals_is_n_minus_1_intervals():
    p = Pacer()
    p.start(0.0)
    for i in range(200):                # exactly 100/s, srtt 0.8 s: 81 arrivals per span
        p.on_result(i / 100, srtt=0.8)
    p.start(3.0)
    assert p.rate == pytest.approx(1.25 * 100, rel=1e-6)


def test_batched_reads_with_arrival_times_measure_the_link_not_the_batches():
    """A worker that gets a CPU every 50 ms reads 20 results at once; with their kernel
    arrival times the estimate is the 400/s they arrived at."""
    c = client(window=128, initial_cwnd=128, initial_rto=5.0, min_rto=1.0)
    x = np.arange(128 * 32, dtype=np.int32)
    out = c.start(x, 0.0)
    for i, s in enumerate(out):
        arrival = 0.1 + i / 400
        read = 0.1 + 0.05 * (1 + i // 20)
        out += c.on_packet(result_for(s.payload), read, arrival)
        if c.done:
            break
    c.start(x, 2.0)
    assert c.pacer.rate == pytest.approx(1.25 * 400, rel=0.02)


def test_arrival_time_reads_the_kernel_timestamp_onto_the_callers_clock():
    import struct
    from workers.ina_udp import SO_TIMESTAMPNS, arrival_time
    import socket
    anc = [(socket.SOL_SOCKET, SO_TIMESTAMPNS, struct.pack("@qq", 1000, 250_000_000))]
    # realtime - clock = 900 s: realtime 1000.25 is 100.25 on the caller's clock
    assert arrival_time(anc, 900.0, now=101.0) == pytest.approx(100.25)
    assert arrival_time(anc, 900.0, now=100.0) == 100.0       # never after it was read
    assert arrival_time([], 900.0, now=5.0) is None


def test_a_real_socket_stamps_arrivals():
    import socket
    import time
    from workers.ina_udp import ANC_BYTES, arrival_time, open_socket
    rx = open_socket("127.0.0.1", port=0)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Linux turns receive timestamps on for the first socket that asks through a deferred
    # static key: until that work item ran, arrivals carry no stamp and recvmsg stamps them
    # with its own time (seen twice in the full suite: stamp = now). Let it run first.
    time.sleep(0.2)
    try:
        for _ in range(3):
            # the stamp is wall-clock time: a step of the wall clock during the sleep (a VM's
            # clock sync) would move it, so the offset is read before and after, and a try
            # with a stepped clock, or whose datagram still came unstamped, is repeated
            before = time.time() - time.monotonic()
            tx.sendto(b"x", rx.getsockname())
            time.sleep(0.2)                 # read late: the stamp is from before the sleep
            now = time.monotonic()
            _, anc, _, _ = rx.recvmsg(64, ANC_BYTES)
            offset = time.time() - now
            t = arrival_time(anc, offset, now)
            if abs(offset - before) < 0.01 and t is not None and now - t > 0.15:
                break
        assert t is not None and 0.15 < now - t < 5.0, (now - t if t else None, offset - before)
    finally:
        rx.close()
        tx.close()


def test_token_bucket_sends_quanta_at_the_rate():
    p = Pacer(rate=None)
    p.start(0.0)
    p.rate = 100.0                      # packets/s
    sent = 0
    while p.may_send(0.0):
        p.sent(0.0)
        sent += 1
    assert sent == p.quantum            # a full bucket, then wait
    assert p.next_send_time(0.0) == pytest.approx(p.quantum / 100.0)
    t, n = 0.0, 0
    while t < 1.0:
        t = p.next_send_time(t)
        while p.may_send(t):
            p.sent(t)
            n += 1
    assert 95 <= n <= 100 + p.quantum


def test_disabled_never_paces():
    p = Pacer(enabled=False)
    p.start(0.0)
    for i in range(200):
        p.on_result(0.01 * i, srtt=0.2)
    p.start(3.0)
    assert p.rate is None


def test_client_paces_the_second_tensor_and_wakes_for_it():
    c = client(window=64, initial_cwnd=64, initial_rto=5.0, min_rto=1.0)
    x = np.arange(64 * 32, dtype=np.int32)
    out = c.start(x, 0.0)
    assert len(out) == 64               # first tensor: no estimate, whole window
    more = []
    for i, s in enumerate(out):         # results at 640/s, round trip 0.1 s
        more += c.on_packet(result_for(s.payload), 0.1 + i / 640)
    assert c.done and more == []
    out = c.start(x, 1.0)
    assert len(out) == c.pacer.quantum  # then one quantum, the rest paced
    assert c.pacer.rate == pytest.approx(1.25 * 640, rel=0.1)
    assert c.next_deadline() == pytest.approx(1.0 + c.pacer.quantum / c.pacer.rate)
    assert len(c.on_timer(c.next_deadline())) == c.pacer.quantum


def _flat_bottleneck(pacing: bool, seed=5):
    """Flat ina, 2 datacenters x 4 workers, root in datacenter 1; WAN 2000 packets/s per
    direction, round trip 40 ms, queue one BDP (80 packets); window 32 slots per worker, so
    the 4 remote workers' 128 chunks fit the path (BDP + queue: 160) when spread over a
    round trip, but their synchronized first flights are a burst of 128 into 80."""
    g = graph(2, 1, 4, delays={(1, 2): 20})
    tree = build_tree(g, job=1, scheme="ina", root=1, window=32)
    faults = Faults(seed=seed, rate_pps=2000, queue_pkts=80)
    sim = build_sim(g, factory("model"), [tree], faults, pacing=pacing, initial_cwnd=32,
                    initial_rto=0.3, min_rto=0.1, max_rto=2.0, max_retransmissions=200)
    times, drops = [], []
    for it in range(4):
        tensors = random_tensors([tree], 500 * 32, seed + it)
        t0, d0 = sim.now, sim.stats.queue_drops
        sim.start(tensors)
        got = sim.run(until=sim.now + 600)
        want = expected_sums([tree], tensors)
        for (job, host), r in got.items():
            np.testing.assert_array_equal(r.astype(np.int64), want[job], err_msg=host)
        times.append(sim.now - t0)
        drops.append(sim.stats.queue_drops - d0)
    return times, drops


def test_pacing_keeps_synchronized_first_flights_inside_the_wan_queue():
    t_burst, d_burst = _flat_bottleneck(pacing=False)
    t_paced, d_paced = _flat_bottleneck(pacing=True)
    print(f"unpaced: {t_burst} s, drops {d_burst}; paced: {t_paced} s, drops {d_paced}")
    assert sum(d_burst[1:]) > 100                   # the queue does overflow unpaced
    assert sum(d_paced[1:]) == 0                    # paced: no drop once the rate is known
    assert sum(t_paced[1:]) < sum(t_burst[1:])
    # floor: 4 workers x 500 frames over 2000 packets/s, plus one round trip
    assert min(t_paced[1:]) > 2000 / 2000 + 0.04
    assert max(t_paced[1:]) < 1.2 * (2000 / 2000 + 0.04)


def test_a_late_wake_up_catches_up():
    # a worker woken two quantum periods late may send what it owed (up to 4 quanta),
    # else the effective rate falls below the nominal one and the next estimate with it
    p = Pacer()
    p.start(0.0)
    p.rate = 800.0
    while p.may_send(0.0):
        p.sent(0.0)
    late = p.next_send_time(0.0) + 2 * p.quantum / 800.0
    n = 0
    while p.may_send(late):
        p.sent(late)
        n += 1
    assert n == 3 * p.quantum


def test_a_cap_paces_every_tensor_at_most_at_it():
    from workers.pacing import MIN_SAMPLES, Pacer
    p = Pacer(max_rate=100.0)
    p.start(0.0)
    assert p.rate == 100.0                       # the first tensor too, with no estimate yet
    for i in range(MIN_SAMPLES + 10):            # results at 1000/s: the estimate is above the cap
        p.on_result(i / 1000.0, srtt=0.001)
    p.start(1.0)
    assert p.rate == 100.0
    q = Pacer(max_rate=10_000.0)
    for i in range(MIN_SAMPLES + 10):
        q.on_result(i / 1000.0, srtt=0.001)
    q.start(1.0)
    assert q.rate == pytest.approx(q.gain * 1000.0)   # below the cap: the estimate's
    assert Pacer(enabled=False, max_rate=50.0).rate is None
    r = Pacer(enabled=False, max_rate=50.0)
    r.start(0.0)
    assert r.rate == 50.0


def test_a_new_cap_takes_effect_at_the_next_tensor_and_a_removed_one_lets_go():
    from workers.pacing import MIN_SAMPLES, Pacer
    p = Pacer(enabled=False, max_rate=50.0)
    p.start(0.0)
    assert p.rate == 50.0
    p.set_max_rate(200.0)                      # a controller raises the cap between tensors
    p.start(1.0)
    assert p.rate == 200.0                     # not stuck at the old cap
    p.set_max_rate(0.0)
    p.start(2.0)
    assert p.rate is None                      # no cap, no pacing: unpaced
    q = Pacer(max_rate=100.0)
    for i in range(MIN_SAMPLES + 10):          # measured 1000/s under the cap's tensor
        q.on_result(i / 1000.0, srtt=0.001)
    q.set_max_rate(0.0)
    q.start(1.0)
    assert q.rate == pytest.approx(q.gain * 1000.0)   # pacing's own estimate again
    with pytest.raises(ValueError, match=">= 0"):
        q.set_max_rate(-1.0)
