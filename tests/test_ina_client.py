"""The worker's sans-I/O state machine and its RTT estimator, without any switch."""
import numpy as np
import pytest

from workers import agg_packet as ap
from workers.ina_client import AggregationFailed, ClientConfig, InaClient
from workers.rtt import RttEstimator


def result_for(payload: bytes, values=None, flags=ap.RESULT) -> bytes:
    f = ap.decode(payload)
    vals = f.values * 3 if values is None else values
    return ap.encode(f.job, flags, f.slot, f.gen, f.offset, 0, f.fan_in, f.exponent, vals)


def client(window=4, **kw):
    return InaClient(ClientConfig(job=9, agg_ip="10.1.1.254", sender=1, fan_in=3, window=window, **kw))


def test_rtt_estimator_follows_rfc6298():
    r = RttEstimator(initial_rto=1.0, min_rto=0.001, max_rto=60)
    assert r.rto == 1.0
    r.sample(0.1)
    assert r.srtt == 0.1 and r.rttvar == 0.05 and r.rto == pytest.approx(0.1 + 4 * 0.05)
    r.sample(0.3)
    assert r.rttvar == pytest.approx(0.75 * 0.05 + 0.25 * 0.2)
    assert r.srtt == pytest.approx(0.875 * 0.1 + 0.125 * 0.3)
    assert r.backed_off(2) == pytest.approx(4 * r.rto)
    assert RttEstimator(initial_rto=1, min_rto=0.5, max_rto=2).backed_off(5) == 2


def test_rtt_estimator_learns_a_wan_rtt():
    r = RttEstimator()
    for _ in range(50):
        r.sample(0.2)
    assert 0.2 <= r.rto < 0.21


def test_rtt_rejects_bad_input():
    with pytest.raises(ValueError, match="monotonic"):
        RttEstimator().sample(-1)
    with pytest.raises(ValueError, match="min_rto"):
        RttEstimator(initial_rto=0.001, min_rto=0.01)


def test_window_limits_outstanding_chunks_and_slides():
    c = client(window=4)
    x = np.arange(10 * 32, dtype=np.int32)
    out = c.start(x, now=0.0)
    assert len(out) == 4 and all(s.dst_ip == "10.1.1.254" for s in out)
    fs = [ap.decode(s.payload) for s in out]
    assert [(f.slot, f.gen, f.offset, f.sender, f.flags) for f in fs] == \
        [(i, 1, 32 * i, 1, ap.DATA) for i in range(4)]
    # chunk 1's result frees its slot for chunk 5 (slot 1, generation 2): it goes at once,
    # though chunk 4 still waits for chunk 0 (a slot waiting for a re-send holds back
    # only its own next chunk)
    (f5,) = [ap.decode(s.payload) for s in c.on_packet(result_for(out[1].payload), 0.01)]
    assert (f5.slot, f5.gen, f5.offset) == (1, 2, 160)
    (f4,) = [ap.decode(s.payload) for s in c.on_packet(result_for(out[0].payload), 0.02)]
    assert (f4.slot, f4.gen, f4.offset) == (0, 2, 128)
    # chunk 3 answered before chunk 2: chunk 7 leaves before chunk 6
    more = c.on_packet(result_for(out[3].payload), 0.03) + c.on_packet(result_for(out[2].payload), 0.03)
    assert [ap.decode(s.payload).offset for s in more] == [224, 192]


def test_complete_iteration_and_sequence_continues():
    c = client(window=2)
    x = np.arange(70, dtype=np.int32)            # 3 chunks, last one padded
    pending = c.start(x, 0.0)
    t = 0.0
    while pending:
        t += 0.01
        nxt = []
        for s in pending:
            nxt += c.on_packet(result_for(s.payload), t)
        pending = nxt
    assert c.done and c.stats.results == 3 and c.stats.retransmissions == 0
    np.testing.assert_array_equal(c.result(), x * 3)
    out = c.start(x, t)                          # next iteration: seq 3, 4 -> slot 1 gen 2, slot 0 gen 3
    assert [(ap.decode(s.payload).slot, ap.decode(s.payload).gen) for s in out] == [(1, 2), (0, 3)]


def test_duplicates_wrong_job_and_offset_mismatch_are_not_accepted():
    c = client(window=4)
    out = c.start(np.ones(64, dtype=np.int32), 0.0)
    r0 = result_for(out[0].payload, values=np.full(32, 5, np.int32))
    c.on_packet(r0, 0.01)
    c.on_packet(result_for(out[0].payload, values=np.full(32, 99, np.int32)), 0.02)   # duplicate
    assert c.stats.duplicate_results == 1
    f = ap.decode(out[1].payload)
    c.on_packet(ap.encode(8, ap.RESULT, f.slot, f.gen, f.offset, 0, 3, 0, np.zeros(32, np.int32)), 0.03)
    c.on_packet(ap.encode(9, ap.RESULT, f.slot, f.gen, 999, 0, 3, 0, np.zeros(32, np.int32)), 0.03)
    c.on_packet(ap.encode(9, ap.DATA, f.slot, f.gen, f.offset, 0, 3, 0, np.zeros(32, np.int32)), 0.03)
    c.on_packet(b"\x01\x02", 0.03)
    assert c.stats.bad_packets == 4 and not c.done
    c.on_packet(result_for(out[1].payload, values=np.full(32, 7, np.int32)), 0.04)
    assert c.done
    np.testing.assert_array_equal(c.result(), [5] * 32 + [7] * 32)


def test_timeout_retransmits_with_backoff_and_karn():
    c = client(window=1, initial_rto=0.1, min_rto=0.01)
    (s,) = c.start(np.ones(32, dtype=np.int32), 0.0)
    assert c.next_deadline() == pytest.approx(0.1)
    assert c.on_timer(0.05) == []
    (r1,) = c.on_timer(0.1)
    f = ap.decode(r1.payload)
    assert f.flags == ap.DATA | ap.RETX and f.slot == 0 and f.gen == 1
    assert c.next_deadline() == pytest.approx(0.1 + 0.2)      # backed off
    t2 = c.next_deadline()
    (r2,) = c.on_timer(t2)
    assert c.next_deadline() == pytest.approx(t2 + 0.4)
    c.on_packet(result_for(s.payload), 0.35)
    assert c.done and c.stats.retransmissions == 2
    assert c.rtt.srtt is None                                # Karn: ambiguous sample skipped
    assert c.next_deadline() is None


def test_rtt_sample_from_clean_chunk():
    c = client(window=1, initial_rto=1.0, min_rto=0.001)
    (s,) = c.start(np.ones(32, dtype=np.int32), 2.0)
    c.on_packet(result_for(s.payload), 2.25)
    assert c.rtt.srtt == pytest.approx(0.25)


def test_gives_up_with_a_helpful_error():
    c = client(window=1, initial_rto=0.01, min_rto=0.01, max_rto=0.01, max_retransmissions=3)
    c.start(np.ones(32, dtype=np.int32), 0.0)
    t = 0.0
    with pytest.raises(AggregationFailed, match="offset 0 got no result after 3 retransmissions to 10.1.1.254"):
        for _ in range(10):
            t = c.next_deadline()
            c.on_timer(t)


def test_overflow_flag_travels_both_ways():
    c = client(window=2)
    out = c.start(np.ones(32, dtype=np.int32), 0.0, exponent=-3, overflow=True)
    f = ap.decode(out[0].payload)
    assert f.flags & ap.OVERFLOW and f.exponent == -3
    c.on_packet(result_for(out[0].payload, flags=ap.RESULT | ap.OVERFLOW), 0.1)
    assert c.overflow


def test_config_errors():
    with pytest.raises(ValueError, match="sender < fan_in"):
        ClientConfig(job=1, agg_ip="10.1.1.254", sender=3, fan_in=3, window=4)
    with pytest.raises(ValueError, match="AGG_K"):
        ClientConfig(job=1, agg_ip="10.1.1.254", sender=0, fan_in=3, window=4, k=48)
    c = client()
    c.start(np.ones(40, dtype=np.int32), 0.0)
    with pytest.raises(RuntimeError, match="still being aggregated"):
        c.start(np.ones(40, dtype=np.int32), 0.0)
    with pytest.raises(RuntimeError, match="not finished"):
        c.result()


def test_config_for_worker_from_tree():
    from control.agg_tree import build_tree
    from tests.agg_topo import graph
    t = build_tree(graph(2), job=3, root=1, window=16)
    cfg = ClientConfig.for_worker(t, "h2r2w2", k=64, initial_rto=0.3)
    assert (cfg.job, cfg.agg_ip, cfg.sender, cfg.fan_in, cfg.window, cfg.k) == (3, "10.2.2.254", 1, 2, 16, 64)
    with pytest.raises(ValueError, match="not a worker of job 3"):
        ClientConfig.for_worker(t, "h9r9w9")


def test_no_backoff_while_other_chunks_progress():
    """A timeout while results keep arriving is random loss, not a stall: RTO unchanged."""
    c = client(window=3, initial_rto=0.1, min_rto=0.01, rack=False,   # per-chunk timers
               congestion_law="reno")
    out = c.start(np.ones(3 * 32, dtype=np.int32), 0.0)
    c.on_timer(0.1)                                   # all three time out: a stall
    assert c.next_deadline() == pytest.approx(0.1 + 0.2)
    c.on_packet(result_for(out[0].payload), 0.15)     # progress resets the stall count
    t = c.next_deadline()
    (r,) = c.on_timer(t)[:1]
    assert c.rtt.srtt is None and c.next_deadline() > t
    # chunk 1's second retransmission is armed after a result: stall count 1, not its retry count 2
    assert c._it.deadline[1] == pytest.approx(t + 0.2)


def test_a_tensor_of_as_many_chunks_reuses_the_buffers_and_gets_only_its_own_sums():
    c = client(window=2)

    def aggregate(x, t):
        pending = c.start(x, t)
        while pending:
            t += 0.01
            pending = [s for p in pending for s in c.on_packet(result_for(p.payload), t)]
        return t

    x = np.arange(70, dtype=np.int32)
    t = aggregate(x, 0.0)
    sums, view = c._it.sums, c.result(copy=False)
    np.testing.assert_array_equal(view, x * 3)
    y = -7 * x[::-1].copy()
    aggregate(y, t)
    assert c._it.sums is sums                           # the same buffer, every row rewritten
    np.testing.assert_array_equal(c.result(), y * 3)
    np.testing.assert_array_equal(view, y * 3)          # a view follows its buffer
    aggregate(np.arange(200, dtype=np.int32), t + 1)    # another size: new buffers
    assert c._it.sums is not sums and c.result().size == 200
