"""The client core in C (workers/ina_core.py over workers/native/ina_core.c) against the
reference, workers/ina_client.py's InaClient.

Both are driven by the same simulated network (a bottleneck link with a tail-drop queue,
random loss, duplicates, reordering delays, malformed packets; results of one tick read as
one batch), with the reference's sends fed to the network. At every event both must send
the same bytes and agree on the counters, next_deadline(), cwnd, srtt and the RTO; over
several tensors in a row (cwnd, the RTT estimate and the pacing rate carry over) both end
with numpy's sum, or both fail with the same AggregationFailed.
"""
import heapq

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.ina_results import malformed, next_batch, result_for
from workers import agg_batch
from workers import agg_packet as ap
from workers.ina_client import AggregationFailed, ClientConfig, InaClient
from workers.ina_core import InaCoreClient, make_client


def _outcome(call):
    """What a call returned (its payloads), or the error it raised."""
    try:
        return [r.tobytes() for r in call().payloads]
    except AggregationFailed as e:
        return ("failed", str(e))


def _same_state(py, c):
    assert vars(py.stats) == vars(c.stats.snapshot())
    assert py.next_deadline() == c.next_deadline()
    assert (py.cc.cwnd, py.cc.ssthresh) == (c.cc.cwnd, c.cc.ssthresh)
    assert (py.rtt.srtt, py.rtt.rttvar, py.rtt.min_rtt, py.rtt.rto) == \
        (c.rtt.srtt, c.rtt.rttvar, c.rtt.min_rtt, c.rtt.rto)
    assert py.pacer.rate == c.pacer.rate
    assert (py.done, py.overflow) == (c.done, c.overflow)


def drive(cfg, seed, tensors=3, loss=0.03, dup=0.03, bad=0.02, mbps=None, queue_s=0.02,
          black_hole=None, chunks=(30, 90), granularity=None):
    """Run both clients over `tensors` tensors; returns the reference client, or the
    AggregationFailed message both raised. black_hole: a chunk offset whose contributions
    are all dropped from then on (needs the RTO, then fails)."""
    rng = np.random.default_rng(seed)
    py, c = InaClient(cfg), InaCoreClient(cfg)
    if granularity is not None:
        py.rtt.granularity = c.rtt.granularity = granularity
    k, tick, t = cfg.k, 0.002, 0.0
    frame_s = None if mbps is None else ap.frame_bytes(k) * 8 / (mbps * 1e6)
    for it in range(tensors):
        n = int(rng.integers(*chunks)) * k - int(rng.integers(0, k))
        parts = [rng.integers(-2**20, 2**20, size=n).astype(np.int32) for _ in range(3)]
        want = np.sum(parts, axis=0, dtype=np.int64)
        total = np.zeros(-(-n // k) * k, np.int32)
        total[:n] = want
        total = total.reshape(-1, k)
        net, tie, link_free = [], 0, t

        def transmit(payloads):
            nonlocal tie, link_free
            for p in payloads:
                f = ap.decode(p)
                if rng.random() < loss or (black_hole is not None and f.offset == black_hole):
                    continue
                at = t
                if frame_s is not None:         # the bottleneck: serialized, tail drop
                    start = max(t, link_free)
                    if start - t > queue_s:
                        continue
                    link_free = at = start + frame_s
                late = bool(rng.random() < loss)     # another worker's re-send completed it
                for _ in range(2 if rng.random() < dup else 1):
                    due = at + 0.01 + float(rng.uniform(0, 0.01))
                    heapq.heappush(net, (np.ceil(due / tick) * tick, tie, result_for(p, total, k, late)))
                    tie += 1
                if rng.random() < bad:
                    heapq.heappush(net, (np.ceil((t + 0.01) / tick) * tick, tie, malformed(rng, p)))
                    tie += 1

        a = _outcome(lambda: py.start_batch(parts[1], t, exponent=-2, overflow=it == 1))
        assert _outcome(lambda: c.start_batch(parts[1], t, exponent=-2, overflow=it == 1)) == a
        _same_state(py, c)
        transmit(a)
        if a:       # one truncated packet per tensor whatever the draws: the bad-packet path runs
            heapq.heappush(net, (np.ceil((t + 0.01) / tick) * tick, tie, a[0][:10]))
            tie += 1
        while not py.done:
            d = py.next_deadline()
            assert net or d is not None, "deadlock: nothing in flight and no timer"
            if net and (d is None or net[0][0] <= d):
                t, batch = next_batch(net)
                # kernel receive stamps, now and then none (the client then takes `now`)
                arrivals = [None if rng.random() < 0.05 else t - float(rng.uniform(0, tick))
                            for _ in batch]
                rows, lengths = agg_batch.rows_of(batch, agg_batch.payload_len(k) + 8)
                a = _outcome(lambda: py.on_packets(rows, lengths, t, arrivals))
                b = _outcome(lambda: c.on_packets(rows, lengths, t, arrivals))
            else:
                t = d
                a = _outcome(lambda: py.on_timer_batch(t))
                b = _outcome(lambda: c.on_timer_batch(t))
            assert b == a
            if isinstance(a, tuple):
                return a[1]
            _same_state(py, c)
            transmit(a)
        np.testing.assert_array_equal(c.result(), py.result())
        np.testing.assert_array_equal(c.result().astype(np.int64), want)
        np.testing.assert_array_equal(c.result_exponents(), py.result_exponents())
    return py


def config(**opts):
    base = dict(job=4, agg_ip="10.0.0.254", sender=1, fan_in=3, window=16, k=32,
                initial_rto=0.05, min_rto=0.01)
    return ClientConfig(**{**base, **opts})


MATRIX = [
    {},
    {"congestion_law": "reno"},
    {"rack": False},
    {"pacing": False},
    {"loss_response": "backlog"},
    {"loss_response": "backlog", "congestion_law": "reno", "rack": False},
    {"congestion_control": False, "pacing": False},
    {"k": 64, "time_dilation": 3.0},
    {"initial_cwnd": 2, "k": 64},
    {"reorder_extra": 0.05},
    {"max_rate_pps": 300.0},
    {"max_rate_pps": 5000.0, "pacing": False},
]


@pytest.mark.parametrize("opts", MATRIX, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
@pytest.mark.parametrize("window", [1, 3, 128])
def test_c_sends_what_python_sends_over_a_lossy_network(opts, window):
    stats = drive(config(window=window, **opts), seed=window,
                  chunks=(20, 60) if window < 8 else (150, 300)).stats
    assert stats.results > 0 and stats.retransmissions > 0 and stats.bad_packets > 0


@pytest.mark.parametrize("opts", [{}, {"congestion_law": "reno"}, {"loss_response": "backlog"}])
def test_through_a_bottleneck_pacing_and_congestion_cuts_agree(opts):
    """A 20 Mbps bottleneck with a 20 ms queue: the window overflows it (cuts, undos),
    and from the second tensor on the pacer paces at the measured rate."""
    cfg = config(window=128, k=64, initial_cwnd=64, **opts)
    py = drive(cfg, seed=5, tensors=4, loss=0.005, mbps=20, chunks=(300, 400), granularity=0.02)
    assert py.pacer.rate is not None and py.stats.cwnd_decreases > 0 and py.stats.cwnd_undos > 0
    assert (py.stats.random_losses > 0) == (cfg.loss_response == "backlog")


def test_a_tail_loss_needs_the_rto_and_both_give_up_alike():
    """One chunk's contributions are all lost: both re-send it on their RTO, back off, and
    raise the same AggregationFailed after max_retransmissions."""
    msg = drive(config(window=4, max_retransmissions=4), seed=3, black_hole=32 * 7, loss=0.0,
                dup=0.0, bad=0.0, chunks=(10, 20))
    assert "chunk at offset 224 got no result after 4 retransmissions to 10.0.0.254" in msg


def test_per_packet_calls_match_too():
    """start/on_packet/on_timer of the C client are its batch calls one packet at a time."""
    cfg = config(window=2, initial_rto=0.1)
    py, c = InaClient(cfg), InaCoreClient(cfg)
    x = np.arange(5 * 32, dtype=np.int32)
    a, b = py.start(x, 0.0), c.start(x, 0.0)
    assert a == b and len(a) == 2
    a = py.on_timer(0.1)                                         # both time out
    assert a == c.on_timer(0.1) and a
    t, total = 0.1, x.reshape(-1, 32) * 3
    while a:
        t += 0.01
        sent, a = a, []
        for s in sent:
            res = result_for(s.payload, total, 32)
            got = py.on_packet(res, t, t - 0.001)
            assert got == c.on_packet(res, t, t - 0.001)
            a += got
    assert c.done and vars(py.stats) == vars(c.stats.snapshot())
    np.testing.assert_array_equal(c.result(), x * 3)
    assert c.on_packet(b"\x01", t) == [] and c.stats.bad_packets == 1
    empty = np.zeros((0, 2048), np.uint8)
    assert len(c.on_packets(empty, [], t, [])) == len(py.on_packets(empty, [], t, [])) == 0


def test_the_communicators_knobs_reach_the_c_state():
    c = InaCoreClient(config(window=4))
    assert c.rtt.srtt is None and c.rtt.rto == 0.05 and c.pacer.rate is None and c.cc.cwnd == 4.0
    (s,) = c.start(np.ones(32, np.int32), 1.0)[:1]
    c.on_packet(result_for(s.payload, np.full((1, 32), 3, np.int32), 32), 1.02)
    c.rtt.granularity = 0.5
    assert c.rtt.srtt == pytest.approx(0.02) and c.rtt.rto == pytest.approx(0.52)


def test_a_cap_set_at_run_time_reaches_the_c_state_like_pythons():
    """set_max_rate between tensors (l3dml's controller re-pacing a worker): both clients
    pace the next tensor at the new cap and send the same packets."""
    cfg = config(window=2, pacing=False, max_rate_pps=100.0)
    py, c = InaClient(cfg), InaCoreClient(cfg)
    x = np.arange(3 * 32, dtype=np.int32)
    t = 0.0
    for cap in (100.0, 400.0, 0.0):
        for client in (py, c):
            client.set_max_rate(cap)
        a = py.start(x, t)
        assert a == c.start(x, t)
        assert py.pacer.rate == c.pacer.rate == (cap or None)
        while not py.done:             # answer every send; both clients send the same
            t += 0.01
            sent, a = a + py.on_timer(t), []
            c.on_timer(t)
            for s in sent:
                res = result_for(s.payload, x.reshape(-1, 32) * 3, 32)
                got = py.on_packet(res, t, t - 0.001)
                assert got == c.on_packet(res, t, t - 0.001)
                a += got
        assert c.done
        np.testing.assert_array_equal(c.result(), x * 3)
    with pytest.raises(ValueError, match=">= 0"):
        c.set_max_rate(-5.0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), window=st.sampled_from([1, 2, 4, 16, 64]),
       k=st.sampled_from([32, 64]), law=st.sampled_from(["reno", "cubic"]), rack=st.booleans(),
       pacing=st.booleans(), response=st.sampled_from(["cut", "backlog"]), cc=st.booleans(),
       loss=st.sampled_from([0.0, 0.02, 0.1]), mbps=st.sampled_from([None, 5, 50]),
       black_hole=st.sampled_from([None, None, None, 0, 3]))
def test_random_options_and_networks_agree(seed, window, k, law, rack, pacing, response, cc,
                                           loss, mbps, black_hole):
    """black_hole: a chunk whose contributions are all lost, so both must give up alike."""
    cfg = config(window=window, k=k, congestion_law=law, rack=rack, pacing=pacing,
                 loss_response=response, congestion_control=cc, initial_cwnd=1 + seed % 8,
                 max_retransmissions=3 + seed % 4)
    out = drive(cfg, seed, tensors=3, loss=loss, mbps=mbps, chunks=(5, 40),
                black_hole=None if black_hole is None else black_hole * k)
    assert black_hole is None or isinstance(out, str)     # (heavy loss may also give up, alike)


def test_make_client_follows_the_core_option():
    assert type(make_client(config(core="python"))) is InaClient
    assert type(make_client(config(core="c"))) is InaCoreClient
    assert type(make_client(config())) is InaCoreClient         # auto: gcc is there
    with pytest.raises(ValueError, match="core must be"):
        config(core="rust")


def test_without_gcc_auto_falls_back_to_python_with_one_warning(monkeypatch, tmp_path):
    from workers import ina_core
    from workers.native import build
    monkeypatch.setenv("GDML_CACHE_DIR", str(tmp_path))        # no cached build to find
    monkeypatch.setattr(build, "CC", "no-such-gcc")
    for name, value in [("_lib", None), ("_lib_error", None), ("_warned", False)]:
        monkeypatch.setattr(ina_core, name, value)
    with pytest.warns(RuntimeWarning, match="using the Python one: cannot run no-such-gcc") as seen:
        assert type(make_client(config())) is InaClient
        assert type(make_client(config())) is InaClient
    assert len(seen) == 1
    with pytest.raises(build.CompileError, match="no-such-gcc"):
        make_client(config(core="c"))


def test_the_build_is_cached_by_source_and_command(monkeypatch, tmp_path):
    from workers.native import build
    monkeypatch.setenv("GDML_CACHE_DIR", str(tmp_path))
    src = tmp_path / "twice.c"
    src.write_text("int twice(int x) { return 2 * x; }\n")
    assert build.shared_library(src).twice(21) == 42
    assert len(list(tmp_path.glob("twice-*.so"))) == 1
    build.shared_library(src)                                   # found, not rebuilt
    src.write_text("int twice(int x) { return x + x; }\n")
    build.shared_library(src)
    assert len(list(tmp_path.glob("twice-*.so"))) == 2
    src.write_text("int twice(int x) { return x +; }\n")
    with pytest.raises(build.CompileError, match="gcc failed on twice.c"):
        build.shared_library(src)
    assert not list(tmp_path.glob("tmp*"))                      # no half-written object left


@pytest.mark.parametrize("opts", [{}, {"congestion_law": "reno", "loss_response": "backlog"}])
def test_whole_simulated_network_runs_the_same_with_either_core(opts):
    """Two jobs on geo trees of in-process model switches (tests/agg_sim.py), loss,
    duplicates and reordering on every link, bottleneck queues: every worker's
    client in C gives the run the reference's, counter for counter."""
    from control.agg_tree import build_tree
    from tests.agg_sim import Faults, build_sim, expected_sums, random_tensors
    from tests.agg_switches import factory
    from tests.agg_topo import graph
    g = graph(3, 1, 2, delays={(1, 2): 20, (1, 3): 35, (2, 3): 25})
    trees = [build_tree(g, job=1, scheme="geo-ina", window=8),
             build_tree(g, job=2, scheme="geo-ina", root=3, window=4)]
    faults = Faults(0.05, 0.05, 10.0, 11, rate_pps=300, queue_pkts=4, queue_kinds=("access", "wan"))
    runs = {}
    for core in ("python", "c"):
        sim = build_sim(g, factory("model"), trees, faults, initial_rto=0.2, min_rto=0.05,
                        core=core, **opts)
        for it in range(3):
            tensors = random_tensors(trees, 700, it)
            sim.start(tensors)
            for (job, _), got in sim.run(until=sim.now + 600).items():
                np.testing.assert_array_equal(got.astype(np.int64), expected_sums(trees, tensors)[job])
        runs[core] = (sim.now, vars(sim.stats),
                      {key: (str(c.stats), c.cc.cwnd, c.rtt.srtt) for key, c in sim.clients.items()})
    assert runs["c"] == runs["python"]
    assert runs["python"][1]["lost"] > 0 and runs["python"][1]["queue_drops"] > 0


def test_the_cpu_bench_runs_both_cores():
    from bench.client_core import us_per_result
    for core in ("python", "c"):
        assert 0 < us_per_result(core, batch=4, chunks=300, tensors=2) < 1000


def test_a_clock_going_backwards_is_refused_alike():
    cfg = config(window=2)
    errors = []
    for c in (InaClient(cfg), InaCoreClient(cfg)):
        (s,) = c.start(np.ones(32, np.int32), 1.0)
        with pytest.raises(ValueError, match="negative RTT sample") as e:
            c.on_packet(result_for(s.payload, np.full((1, 32), 3, np.int32), 32), 0.5)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("make", [InaClient, InaCoreClient])
def test_a_result_another_workers_resend_completed_gives_no_round_trip_sample(make):
    """Karn's rule over the job (docs/protocol.md): a RETX result waited for someone's loss
    recovery, so neither SRTT nor RACK nor the delivery rate take it; a clean one does."""
    c = make(config(window=2))
    a, b = [r.tobytes() for r in c.start_batch(np.ones(64, np.int32), 0.0).payloads]
    total = np.full((2, 32), 3, np.int32)
    rows, lengths = agg_batch.rows_of([result_for(a, total, 32, late=True)], agg_batch.payload_len(32))
    c.on_packets(rows, lengths, 5.0)
    assert c.stats.results == 1 and c.rtt.srtt is None and c.rtt.min_rtt is None
    rows, lengths = agg_batch.rows_of([result_for(b, total, 32)], agg_batch.payload_len(32))
    c.on_packets(rows, lengths, 5.25)
    assert c.done and c.rtt.srtt == pytest.approx(5.25)


class _Peer:
    """Answers a client's chunks when told: the latest copy of each, by chunk index."""

    def __init__(self, c):
        self.c, self.copies, self.answered = c, {}, set()
        self.total = np.full((256, 32), 3, np.int32)

    def take(self, sends):
        for s in sends:
            p = s if isinstance(s, (bytes, bytearray)) else s.payload
            self.copies[ap.decode(p).offset // 32] = bytes(p)

    def answer(self, now, skip=(), only=None):
        """Results for every chunk sent and unanswered but `skip` (or the newest `only`),
        oldest chunk first."""
        sends = []
        for j in sorted(set(self.copies) - self.answered - set(skip))[-only if only else 0:]:
            self.answered.add(j)
            sends += self.c.on_packet(result_for(self.copies[j], self.total, 32), now)
        self.take(sends)
        return sends

    def tick(self, now):
        self.take(self.c.on_timer(now))


@pytest.mark.parametrize("make", [InaClient, InaCoreClient])
def test_one_cut_per_recovery_episode_however_often_its_chunk_is_declared_lost(make):
    """TCP's rule (RFC 6582, 6675): no second cut while a chunk that was unanswered at the
    last cut still is. A chunk waiting for another worker's slow recovery is declared lost
    again and again; each had cut the window (docs/protocol.md, "Window")."""
    c = make(config(window=64, initial_cwnd=8, pacing=False, initial_rto=10.0, min_rto=10.0))
    peer = _Peer(c)
    peer.take(c.start(np.ones(256 * 32, np.int32), 0.0))
    for step in range(1, 8):                 # chunk 0 never answered: declared lost, re-sent,
        now = 0.1 * step                     # declared lost again by later results
        peer.answer(now, skip={0})
        peer.tick(now + 0.05)
    assert c.stats.retransmissions >= 3      # chunk 0, again and again
    assert c.stats.cwnd_decreases == 1       # one episode
    peer.answer(0.85)                        # chunk 0 answered: the episode is over
    lost = min(set(peer.copies) - peer.answered)
    for step in range(9, 12):                # a chunk sent after the episode: lost
        peer.answer(0.1 * step, skip={lost})
        peer.tick(0.1 * step + 0.05)
    assert c.stats.cwnd_decreases == 2       # a new loss after it cuts again


@pytest.mark.parametrize("make", [InaClient, InaCoreClient])
def test_a_resent_chunk_waits_srtt_a_first_copy_only_the_later_ones_round_trip(make):
    """RACK's wait (docs/protocol.md, "Loss detection"): the round trip of the newest answered
    chunk + min RTT / 4 (RFC 8985); for a re-sent chunk at least SRTT. A worker whose copy
    completes a chunk sees its own short path only (4 ms here, against SRTT > 0.1 s)."""
    c = make(config(window=64, initial_cwnd=4, pacing=False, initial_rto=10.0, min_rto=10.0))
    peer = _Peer(c)
    peer.take(c.start(np.ones(64 * 32, np.int32), 0.0))
    peer.answer(0.3, skip={0})               # SRTT 0.3
    peer.tick(0.3 + 0.3 / 4 + 0.001)         # chunk 0 lost (first copy): 0.3 + min RTT / 4
    peer.answer(0.4, skip={0})               # room: chunk 0 re-sent at 0.4
    assert c.stats.retransmissions == 1
    peer.answer(0.401, skip={0}, only=1)     # a chunk sent with it: one more goes at 0.401
    # that one answered 4 ms later: the first copies sent with chunk 0's re-send at 0.4,
    # still unanswered, are lost (4 ms + min RTT / 4 passed); chunk 0, re-sent, waits SRTT
    # (4 ms would have declared it again) and does not hold them back, though it was sent
    # just before them
    resent = _resent(peer.answer(0.405, skip={0}, only=1))
    assert c.rtt.srtt > 0.1                  # (its samples: 0.3 s, 0.1 s, 1 ms and 4 ms)
    assert resent and 0 not in resent
    assert 0 not in _resent(c.on_timer(0.42))
    assert 0 in _resent(c.on_timer(0.4 + c.rtt.srtt + c.rtt.min_rtt / 4 + 0.001))   # past SRTT


def _resent(sends) -> set:
    return {ap.decode(s.payload).offset // 32 for s in sends if ap.decode(s.payload).flags & ap.RETX}
