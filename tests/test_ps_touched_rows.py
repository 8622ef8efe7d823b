"""ps with push touched_rows: the pure parts (touched rows of a vector, row frames, the
server's per-row merge, the pieces a shard is cut into), the loopback run on the sparse
workload's gradients (the same bits as push dense, far fewer bytes), the plan, the model,
and the failure paths (malformed frames, children disagreeing)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import schemes
from schemes import model as M
from schemes.ps.communicator import PSCommunicator
from schemes.ps.model import row_frame_bytes, stream_payloads
from schemes.ps.pieces import Dense, Rows, align_bounds, check_blocks, shard_pieces
from testbed.scenario import ScenarioError, parse_scenario
from tests.test_comm_local import LO, SLOW_TIMEOUT_S, run_threads, start_servers
from topologies.graph import build_graph
from workers import framing as fr
from workers.communicator import Me
from workers.ctr_data import expected_touched_rows
from workers.workload import Workload, WorkloadSpec, row_blocks

SPARSE = {"kind": "sparse", "vocabulary": 3000, "embedding_dim": 4, "fields": 4, "hidden": 8,
          "batch_size": 16}


# ---------------------------------------------------------------- touched rows, frames, merge
def test_touched_rows_are_the_rows_not_all_plus_zero():
    a = np.zeros((6, 3), np.float32)
    assert fr.touched_rows(a).tolist() == []                     # a worker touching no row
    a[1, 2], a[4, 0], a[5, 1] = 0.5, -0.0, np.nan
    assert fr.touched_rows(a).tolist() == [1, 4, 5]              # -0.0 is not +0.0: sent
    assert fr.touched_rows(np.zeros((0, 3), np.float32)).tolist() == []


@pytest.mark.parametrize("n,width", [(0, 8), (1, 1), (5, 3)])
def test_row_frames_round_trip(n, width):
    rng = np.random.default_rng(n)
    ids = np.sort(rng.choice(1000, n, replace=False)).astype(np.uint32)
    values = rng.standard_normal((n, width)).astype(np.float32)
    payload = fr.encode_rows(ids, values)
    assert payload.dtype == np.uint32 and payload.size == 2 + n * (1 + width)
    got_ids, got_values = fr.decode_rows(payload, "peer", width)
    assert np.array_equal(got_ids, ids) and np.array_equal(got_values.view(np.uint32), values.view(np.uint32))


def test_row_frames_travel_through_a_channel():
    lsock = fr.listen(LO, 0)
    ca = fr.connect(LO, lsock.getsockname()[1], "b", 5)
    cb = fr.accept(lsock, 5, "a", 5)
    lsock.close()
    values = np.array([[1.5, -0.0], [2.0, 3.0]], np.float32)
    ca.send(fr.ROWS, 7, fr.encode_rows(np.array([2, 9]), values))
    kind, tag, payload = cb.recv(fr.ROWS, 7)
    ids, got = fr.decode_rows(payload, "a", 2)
    assert (kind, tag, ids.tolist()) == (fr.ROWS, 7, [2, 9]) and np.signbit(got[0, 1])
    assert ca.bytes_sent == fr.HEADER.size + 4 * (2 + 2 + 4)
    ca.close(), cb.close()


def test_malformed_row_frames_name_the_peer():
    good = fr.encode_rows(np.array([1, 4]), np.ones((2, 3), np.float32))
    with pytest.raises(fr.PeerError, match="child 2: row frame of 9 words does not hold 2 rows of width 3 "
                                           r"\(expected width 4\)"):
        fr.decode_rows(good[:-1].copy(), "child 2", 4)
    with pytest.raises(fr.PeerError, match="child 2: row frame of 10 words .*expected width 4"):
        fr.decode_rows(good, "child 2", 4)
    with pytest.raises(fr.PeerError, match="must hold uint32 words"):
        fr.decode_rows(np.ones(4, np.float32), "child 2")
    twice = fr.encode_rows(np.array([4, 4]), np.ones((2, 3), np.float32))
    with pytest.raises(fr.PeerError, match="not strictly increasing"):
        fr.decode_rows(twice, "child 2")
    with pytest.raises(ValueError, match="2 ids for values of shape"):
        fr.encode_rows(np.array([1, 2]), np.ones((3, 3), np.float32))


def dense_rows(parts, rows, width):
    """Each part written into a dense (rows, width) array of +0.0."""
    out = []
    for ids, values in parts:
        d = np.zeros((rows, width), np.float32)
        d[ids.astype(np.int64)] = values
        out.append(d)
    return out


def test_row_sums_have_the_dense_sums_bits():
    rng = np.random.default_rng(3)
    rows, width = 50, 3
    parts = []
    for k in range(4):
        ids = np.sort(rng.choice(rows, rng.integers(0, 20), replace=False)).astype(np.uint32)
        v = (rng.standard_normal((len(ids), width)) * 10.0 ** rng.integers(-4, 4, (len(ids), width))).astype(np.float32)
        parts.append((ids, v))
    parts[2] = (np.empty(0, np.uint32), np.empty((0, width), np.float32))    # touches no row
    parts[0][1][0, 0] = -0.0
    union, sums = fr.sum_rows_in_order(parts, width)
    dense = fr.sum_in_order(dense_rows(parts, rows, width))
    assert union.tolist() == sorted(set(np.concatenate([p[0] for p in parts]).tolist()))
    rebuilt = np.zeros_like(dense)
    rebuilt[union.astype(np.int64)] = sums
    assert np.array_equal(rebuilt.view(np.uint32), dense.view(np.uint32))


def test_negative_zero_rows_sum_as_the_dense_arithmetic_does():
    z = np.array([[-0.0]], np.float32)
    none = (np.empty(0, np.uint32), np.empty((0, 1), np.float32))
    one = (np.array([0], np.uint32), z)
    # every child -0.0: -0.0 (as -0.0 + -0.0); one child lacking the row adds +0.0: +0.0
    assert np.signbit(fr.sum_rows_in_order([one, one], 1)[1][0, 0])
    assert not np.signbit(fr.sum_rows_in_order([one, none], 1)[1][0, 0])
    assert not np.signbit(fr.sum_in_order([z, np.zeros((1, 1), np.float32)])[0, 0])
    assert np.signbit(fr.sum_rows_in_order([one], 1)[1][0, 0])               # copied, like part 0
    union, sums = fr.sum_rows_in_order([none, none], 1)
    assert union.size == 0 and sums.shape == (0, 1)


# ---------------------------------------------------------------- pieces
def test_pieces_of_a_dense_shard_are_its_chunks():
    assert shard_pieces(0, 10, [], 4) == [Dense(0, 4), Dense(4, 8), Dense(8, 10)]
    assert shard_pieces(5, 5, [], 4) == [Dense(5, 5)]


def test_pieces_put_the_block_part_between_dense_chunks():
    blocks = [(3, 5, 2)]                       # values 3..12: rows of 2
    assert shard_pieces(0, 20, blocks, 4) == [Dense(0, 3), Rows(3, 2, 0, 5), Dense(13, 17), Dense(17, 20)]
    assert shard_pieces(5, 9, blocks, 4) == [Rows(3, 2, 1, 3)]
    assert Rows(3, 2, 1, 3).lo == 5 and Rows(3, 2, 1, 3).hi == 9
    with pytest.raises(ValueError, match="cuts a row of the block at 3; align the bounds first"):
        shard_pieces(0, 6, blocks, 4)


def test_bounds_align_to_rows():
    blocks = [(0, 10, 4)]                      # rows 0..9 of 4 values, then 3 dense values
    assert align_bounds(fr.shard_bounds(43, 3), blocks) == [(0, 12), (12, 28), (28, 43)]
    assert align_bounds([(0, 13), (13, 15), (15, 43)], blocks) == [(0, 12), (12, 12), (12, 43)]
    assert align_bounds([(0, 41), (41, 43)], blocks) == [(0, 41), (41, 43)]   # past the block
    assert check_blocks([[0, 10, 4]], 43) == blocks
    with pytest.raises(ValueError, match="lies outside the 39 values: the plan sized it for another workload"):
        check_blocks(blocks, 39)
    with pytest.raises(ValueError, match="overlaps another"):
        check_blocks([(0, 10, 4), (8, 2, 2)], 43)


# ---------------------------------------------------------------- loopback
def sparse_grads(n_workers=3, iteration=0, seed=2):
    w = Workload(WorkloadSpec.from_scenario(SPARSE), seed=seed, n_workers=n_workers)
    return [w.gradient(r, iteration)[0].astype(np.float32) for r in range(n_workers)]


def ps_run(g, shards, push, chunk=1000):
    servers, threads, stats = start_servers([(len(g), None, 0)] * shards)
    addrs = [(LO, s.address[1]) for s in servers]
    comm = {"servers": addrs, "timeout_s": 5, "push": push, "row_blocks": [list(b) for b in row_blocks(SPARSE)]}

    def worker(r):
        c = PSCommunicator({**comm, "child_rank": r}, Me(f"w{r}", r, len(g), LO), chunk_values=chunk)
        res = [c.allreduce(g[r] * (it + 1), it) for it in range(2)]
        info = (c.counters().bytes_sent, c.stats(), c.describe())
        c.close()
        return res, info
    out, errs = run_threads([lambda r=r: worker(r) for r in range(len(g))])
    for t in threads:
        t.join(10)
    assert not any(errs), errs
    return out, stats


@pytest.mark.parametrize("shards", [1, 3])
def test_touched_rows_give_the_dense_bits_with_far_fewer_bytes(shards):
    g = sparse_grads()
    g[1][:3000 * 4] = 0.0                           # worker 1 touches no row
    dense, _ = ps_run(g, shards, "dense")
    sparse, stats = ps_run(g, shards, "touched_rows")
    for it in range(2):
        ref = dense[0][0][it]
        for r in range(3):
            assert np.array_equal(sparse[r][0][it].view(np.uint32), ref.view(np.uint32)), (r, it)
            assert np.array_equal(dense[r][0][it].view(np.uint32), ref.view(np.uint32))
    assert all(s["iterations"] == 2 for s in stats)
    # bytes: per iteration the dense rest as chunks plus one row frame per shard holding the
    # rows the worker touched (n) as id + width values, 2 header words
    width, rows = 4, 3000
    touched = [len(fr.touched_rows(x[:rows * width].reshape(rows, width))) for x in g]
    assert touched[1] == 0 and min(touched[0], touched[2]) > 0
    union = len(set().union(*[fr.touched_rows(x[:rows * width].reshape(rows, width)).tolist() for x in g]))
    size = g[0].size
    for r in range(3):
        _, (sent, st, desc) = sparse[r]
        dense_sent = dense[r][1][0]
        assert st == {"rows_pushed": touched[r], "rows_pulled": union}
        assert desc["push"] == "touched_rows" and desc["row_blocks"] == [[0, rows, width]]
        assert dense[r][1][1] == {}                             # push dense: no row stats
        bounds = align_bounds(fr.shard_bounds(size, shards), [(0, rows, width)])
        frames = sum(len(shard_pieces(lo, hi, [(0, rows, width)], 1000)) for lo, hi in bounds)
        rest = size - rows * width
        # HELLO to every shard, then 2 iterations (the second pushes 2 x the gradient: same rows)
        expect = shards * fr.HEADER.size + \
            2 * (frames * fr.HEADER.size + 4 * (rest + shards * 2 + touched[r] * (1 + width)))
        assert sent == expect
        # far below dense: the touched rows' share of the table, plus ids and the dense rest
        assert sent < 0.1 * dense_sent, (sent, dense_sent)


def test_a_server_refuses_children_sending_rows_of_different_widths():
    (server,), threads, stats = start_servers([(2, None, 0)])
    port = server.address[1]
    chans = [fr.connect(LO, port, f"child {r}", SLOW_TIMEOUT_S) for r in range(2)]
    for r, c in enumerate(chans):
        c.send(fr.HELLO, r)
    chans[0].send(fr.ROWS_END, 0, fr.encode_rows(np.array([1]), np.ones((1, 4), np.float32)))
    chans[1].send(fr.ROWS_END, 0, fr.encode_rows(np.array([1]), np.ones((1, 2), np.float32)))
    threads[0].join(10)
    assert isinstance(stats[0], fr.PeerError) and "rows of widths [2, 4]" in str(stats[0])
    for c in chans:
        c.close()


def test_a_server_refuses_malformed_rows_naming_the_child():
    (server,), threads, stats = start_servers([(2, None, 0)])
    chans = [fr.connect(LO, server.address[1], f"child {r}", SLOW_TIMEOUT_S) for r in range(2)]
    for r, c in enumerate(chans):
        c.send(fr.HELLO, r)
    chans[0].send(fr.ROWS, 0, fr.encode_rows(np.array([1]), np.ones((1, 4), np.float32)))
    chans[1].send(fr.ROWS, 0, np.array([5, 4, 1], np.uint32))     # says 5 rows, holds 1 word
    threads[0].join(10)
    assert isinstance(stats[0], fr.PeerError) and "child 1" in str(stats[0]) and "5 rows" in str(stats[0])
    for c in chans:
        c.close()


def test_rows_outside_the_piece_are_refused_by_the_worker():
    """A server answering with rows the piece does not hold (another scenario's plan)."""
    lsock = fr.listen(LO, 0)
    port = lsock.getsockname()[1]
    errors = []

    def fake_server():
        ch = fr.accept(lsock, 10, "w0", 10)
        ch.recv(fr.HELLO)
        ch.recv(fr.ROWS_END)
        ch.send(fr.ROWS_RESULT, 0, fr.encode_rows(np.array([7]), np.ones((1, 2), np.float32)))
        try:
            ch.recv()      # BYE, unless the worker closed at once on the error
        except fr.PeerError:
            pass
        ch.close()
    t = threading.Thread(target=fake_server, daemon=True)
    t.start()
    c = PSCommunicator({"servers": [(LO, port)], "child_rank": 0, "timeout_s": 5, "push": "touched_rows",
                        "row_blocks": [[0, 5, 2]]}, Me("w0", 0, 1, LO))
    try:
        c.allreduce(np.ones(10), 0)
    except fr.PeerError as e:
        errors.append(str(e))
    c.close()
    t.join(10)
    lsock.close()
    assert errors and "summed rows 7..7 outside the piece's rows 0..4" in errors[0]


def test_unknown_push_mode_and_misplaced_blocks_are_refused():
    with pytest.raises(ValueError, match="ps: push 'sparse' is not one of dense, touched_rows"):
        PSCommunicator({"servers": [(LO, 1)], "child_rank": 0, "timeout_s": 1, "push": "sparse"},
                       Me("w0", 0, 1, LO))


# ---------------------------------------------------------------- plan, options, model
QUICK = """
name: q
seed: 1
datacenters:
  - {name: a, lat: 0, lon: 0, racks: 1, workers_per_rack: 2}
  - {name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 2}
wan: {default: {bandwidth_mbps: 20, delay_ms: 20}}
scheme: ps
workload: {kind: sparse}
iterations: 3
"""


def plan_of(overrides):
    sc = parse_scenario(QUICK, "q.yaml", overrides)
    s = schemes.get("ps")
    return sc, s.plan(build_graph(sc), sc, s.parse_options(sc.scheme_options))


def test_plan_passes_the_row_blocks_only_with_touched_rows():
    _, p = plan_of(["scheme_options.push=touched_rows"])
    for w in p.workers:
        assert p.comm[w]["push"] == "touched_rows" and p.comm[w]["row_blocks"] == [[0, 20000, 8]]
    assert p.info["push"] == "touched_rows" and p.info["row_blocks"] == [[0, 20000, 8]]
    _, p = plan_of([])
    assert "push" not in p.comm[p.workers[0]] and p.info["push"] == "dense"
    _, p = plan_of(["scheme_options.push=touched_rows", "workload={kind: synthetic, parameters: 1000}"])
    assert p.comm[p.workers[0]]["row_blocks"] == []            # a dense workload: all dense
    with pytest.raises(ScenarioError, match="scheme_options.push"):
        plan_of(["scheme_options.push=keys"])


def test_stream_payloads_hand_worked():
    chunk = fr.DEFAULT_CHUNK_VALUES
    assert stream_payloads(10_000, 1) == (4 * 10_000 + 3 * 24, 4 * 10_000 + 3 * 24)
    assert row_frame_bytes(10, 8) == 24 + 4 * (2 + 10 * 9)
    up, down = stream_payloads(1000 + 100 * 8, 1, [(0, 100, 8)], push_rows=10, pull_rows=30)
    assert up == 4 * 1000 + 24 + row_frame_bytes(10, 8) and down == 4 * 1000 + 24 + row_frame_bytes(30, 8)
    up, _ = stream_payloads(2 * chunk + 100 * 8, 2, [(0, 100, 8)], push_rows=10, pull_rows=30)
    assert up == 4 * chunk + 24 + row_frame_bytes(5, 8)
    assert stream_payloads(800, 1, [(0, 100, 8)], 0, 0) == (row_frame_bytes(0, 8),) * 2


def test_model_counts_touched_rows_from_the_zipf_law():
    dense_sc, _ = plan_of([])
    sparse_sc, _ = plan_of(["scheme_options.push=touched_rows"])
    d = M.predict("ps", build_graph(dense_sc), dense_sc)
    s = M.predict("ps", build_graph(sparse_sc), sparse_sc)
    spec = WorkloadSpec.from_scenario(sparse_sc.workload.model_dump()).ctr
    push, pull = expected_touched_rows(spec, 64), expected_touched_rows(spec, 4 * 64)
    assert 300 < push < 400 and push < pull < 4 * push
    # the server's datacenter a; b's 2 workers push to it over the WAN and pull back
    up, down = stream_payloads(M.parameters(sparse_sc), 1, [(0, 20000, 8)], push, pull)
    data_up, _ = M.tcp_wire(up)
    data_down, acks = M.tcp_wire(down)
    assert s.wan_bytes_per_iteration == pytest.approx(2 * (data_up + data_down + M.tcp_wire(up)[1] + acks))
    assert s.wan_bytes_per_iteration < d.wan_bytes_per_iteration / 10
    assert any("touched_rows" in n for n in s.notes)
