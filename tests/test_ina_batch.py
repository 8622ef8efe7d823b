"""The worker's batched packet path against the per-packet one and the reference codec.

- workers/agg_batch.py packs the same bytes as agg_packet.encode and reads what
  agg_packet.decode reads;
- InaClient fed results in batches (on_packets, one `now` per batch) sends the same
  bytes at the same events as the same client fed them one by one (on_packet), under
  loss, duplicates, reordering and malformed packets, and both end with numpy's sum;
- workers/mmsg.py's sendmmsg/recvmmsg path and its plain fallback carry the same
  datagrams, with their kernel receive timestamps.
"""
import heapq
import socket
import time

import numpy as np
import pytest

from tests.ina_results import malformed, next_batch, result_for
from workers import agg_batch, mmsg
from workers import agg_packet as ap
from workers.ina_client import ClientConfig, InaClient


@pytest.mark.parametrize("k", [32, 64])
def test_packed_tensor_is_byte_for_byte_the_reference_encoding(k):
    rng = np.random.default_rng(k)
    n, window, base = 37, 5, 2**15 * 3 + 11      # generations past the 15-bit slot range
    values = rng.integers(-2**31, 2**31, size=(n, k), dtype=np.int64).astype(np.int32)
    exps = rng.integers(-128, 128, size=n)
    flags = ap.DATA | ap.OVERFLOW
    rows = agg_batch.pack_tensor(7, flags, base, window, 3, 9, exps, values)
    rows = rows.view(np.uint8).reshape(n, -1)
    for j in range(n):
        seq = base + j
        want = ap.encode(7, flags, seq % window, seq // window + 1, j * k, 3, 9, int(exps[j]), values[j])
        assert rows[j].tobytes() == want
    for j, h in enumerate(agg_batch.headers(rows)):
        f = ap.decode(rows[j].tobytes())
        assert h == (f.job, f.flags, f.shadow << 15 | f.slot, f.gen, f.offset, f.sender, f.fan_in,
                     f.exponent, k)
    for index in ([4, 0, 4], [3, 1, 2, 5, 6, 7]):           # one by one, and gathered
        dest = np.zeros((n + 9, k), np.int32)
        chunks = [j + 9 for j in range(len(index))]
        agg_batch.store_values(dest, chunks, rows, index, k)
        np.testing.assert_array_equal(dest[chunks], values[index])
        assert not dest[:9].any()


def test_pack_refuses_what_the_header_cannot_carry():
    with pytest.raises(ValueError, match="signed byte"):
        agg_batch.pack_tensor(1, ap.DATA, 0, 4, 0, 2, np.array([128]), np.zeros((1, 32), np.int32))


def test_rows_of_cuts_and_pads_to_the_payload_size():
    rows, lengths = agg_batch.rows_of([b"\x01" * 300, b"\x02" * 3], 272)
    assert rows.shape == (2, 272) and lengths.tolist() == [300, 3]
    assert rows[0].tobytes() == b"\x01" * 272 and rows[1].tobytes() == b"\x02" * 3 + bytes(269)


# ------------------------------------------------------------------ the state machine
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("opts", [{}, {"congestion_law": "reno"}, {"rack": False},
                                  {"pacing": False, "congestion_control": False}])
def test_batches_send_what_single_packets_send(seed, opts):
    """Two clients, one fed per packet, one per batch, driven by the same lossy network
    (5% loss, 5% duplicates, delays that reorder, malformed packets): at every event the
    same bytes leave both, the counters agree, and both sums are numpy's, over 3 tensors."""
    rng = np.random.default_rng(seed)
    k = 32 if seed % 2 else 64
    cfg = ClientConfig(job=4, agg_ip="10.0.0.254", sender=1, fan_in=3, window=16, k=k,
                       initial_rto=0.05, min_rto=0.01, **opts)
    one, many = InaClient(cfg), InaClient(cfg)
    t, tick, biggest = 0.0, 0.005, 0                     # results of one tick are read as one batch
    for it in range(3):
        n = int(rng.integers(40, 90)) * k - int(rng.integers(0, k))
        tensors = [rng.integers(-2**20, 2**20, size=n).astype(np.int32) for _ in range(3)]
        total = np.sum(tensors, axis=0, dtype=np.int64).astype(np.int32)
        padded = np.zeros(-(-n // k) * k, np.int32)
        padded[:n] = total
        total = padded.reshape(-1, k)
        net, tie = [], 0                     # (arrival tick, tie, payload)

        def transmit(payloads):
            nonlocal tie
            for p in payloads:
                if rng.random() < 0.05:
                    continue                 # lost (either way)
                for _ in range(2 if rng.random() < 0.05 else 1):
                    at = t + float(rng.uniform(0.005, 0.04))
                    heapq.heappush(net, (np.ceil(at / tick) * tick, tie, result_for(p, total, k)))
                    tie += 1
                if rng.random() < 0.03:
                    heapq.heappush(net, (np.ceil((t + 0.01) / tick) * tick, tie, malformed(rng, p)))
                    tie += 1

        a = [s.payload for s in one.start(tensors[1], t, exponent=-2, overflow=it == 1)]
        b = many.start_batch(tensors[1], t, exponent=-2, overflow=it == 1)
        assert [r.tobytes() for r in b.payloads] == a
        transmit(a)
        # one truncated packet per tensor whatever the draws: the bad-packet path is always run
        heapq.heappush(net, (np.ceil((t + 0.01) / tick) * tick, tie, a[0][:10]))
        tie += 1
        while not one.done:
            d = one.next_deadline()
            assert d == many.next_deadline()
            if net and (d is None or net[0][0] <= d):
                t, batch = next_batch(net)
                biggest = max(biggest, len(batch))
                arrivals = [t - float(rng.uniform(0, tick)) for _ in batch]
                a = []
                for p, arr in zip(batch, arrivals):
                    a += [s.payload for s in one.on_packet(p, t, arr)]
                rows, lengths = agg_batch.rows_of(batch, agg_batch.payload_len(k) + 8)
                b = many.on_packets(rows, lengths, t, arrivals)
            else:
                t = d
                a = [s.payload for s in one.on_timer(t)]
                b = many.on_timer_batch(t)
            assert [r.tobytes() for r in b.payloads] == a
            transmit(a)
        assert many.done
        np.testing.assert_array_equal(one.result(), many.result())
        want = np.sum(tensors, axis=0, dtype=np.int64)
        np.testing.assert_array_equal(many.result().astype(np.int64), want)
        assert vars(one.stats) == vars(many.stats)
        assert one.overflow == many.overflow == (it == 1)
    assert one.stats.retransmissions > 0 and one.stats.duplicate_results > 0
    assert one.stats.bad_packets > 0 and biggest >= 4, (one.stats, biggest)


def test_a_batch_counts_bad_packets_and_duplicates_as_single_packets_do():
    cfg = ClientConfig(job=9, agg_ip="10.1.1.254", sender=1, fan_in=3, window=4)
    one, many = InaClient(cfg), InaClient(cfg)
    out = one.start(np.ones(64, dtype=np.int32), 0.0)
    many.start(np.ones(64, dtype=np.int32), 0.0)
    good = result_for(out[0].payload, np.full((2, 32), 3, np.int32), 32)
    f = ap.decode(out[1].payload)
    batch = [good, good, b"", b"\x01\x02",
             ap.encode(8, ap.RESULT, f.slot, f.gen, f.offset, 0, 3, 0, np.zeros(32, np.int32)),
             ap.encode(9, ap.RESULT, f.slot, f.gen, 999, 0, 3, 0, np.zeros(32, np.int32)),
             ap.encode(9, ap.DATA, f.slot, f.gen, f.offset, 0, 3, 0, np.zeros(32, np.int32)),
             ap.encode(9, ap.RESULT, f.slot, f.gen, f.offset, 0, 3, 0, np.zeros(64, np.int32))]
    for p in batch:
        one.on_packet(p, 0.01)
    many.on_packets(*agg_batch.rows_of(batch, 2048), 0.01)
    assert vars(one.stats) == vars(many.stats)
    assert many.stats.bad_packets == 6 and many.stats.duplicate_results == 1 and many.stats.results == 1


# ------------------------------------------------------------------ system calls
@pytest.mark.parametrize("plain", [False, True])
def test_sender_and_receiver_carry_batches_with_timestamps(plain):
    from workers.ina_udp import open_socket
    rx = open_socket("127.0.0.7", 0, rcvbuf=8 << 20)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.setblocking(False)
    try:
        port = rx.getsockname()[1]
        rows = np.random.default_rng(1).integers(0, 256, size=(1500, 80), dtype=np.uint8)
        s = mmsg.Sender(tx, plain=plain)
        before = time.time()
        s.send(("127.0.0.7", port), rows)            # more than UIO_MAXIOV in one call
        assert s.batched == (not plain and mmsg._SENDMMSG is not None)
        assert not s.batched or s.calls == 2
        r = mmsg.Receiver(rx, size=64, batch=100, plain=plain)
        got, lengths, stamps = [], [], []
        while True:
            data, n, st = r.recv()
            if not len(data):
                break
            got.append(data.copy())
            lengths += n
            stamps += st
        got = np.concatenate(got)
        assert len(got) == 1500 and r.calls >= 15
        np.testing.assert_array_equal(got, rows[:, :64])      # cut to the receiver's size
        assert set(lengths) == {64}
        assert all(before - 1 < x < time.time() + 1 for x in stamps)
        s.send(("127.0.0.7", port), rows[:0])                 # nothing: no call
    finally:
        rx.close()
        tx.close()


def test_sockaddr_layout():
    b = mmsg.sockaddr_in("10.9.0.254", 48879)
    assert len(b) == 16 and b[2:4] == b"\xbe\xef" and b[4:8] == bytes([10, 9, 0, 254])
    assert int.from_bytes(b[:2], "little" if np.little_endian else "big") == socket.AF_INET
