"""Scheme libra: hot-set identification, the layout, the split and merge of a gradient (pure),
the plan, the model, and the communicator on loopback (the switch part through the P4
program in the in-process softswitch, the cold part through a real ps server)."""
from __future__ import annotations

import numpy as np
import pytest

from schemes.libra.hot import (hot_rows_for_slots, id_counts, identify, sample_indices, top_ids,
                               warmup_ids)
from schemes.libra.layout import Layout, build_layout, cooccurrence_order, job_layout
from workers.ctr_data import CtrSpec, ctr_dataset
from workers.workload import Workload, WorkloadSpec, minibatch_indices

SPARSE = {"kind": "sparse", "vocabulary": 3000, "embedding_dim": 4, "fields": 4, "hidden": 8,
          "batch_size": 16}
HOT = {"rows": 100, "source": "sample", "sample_fraction": 0.05, "warmup_iterations": 3,
       "order": "frequency"}


# ---------------------------------------------------------------- hot set
def brute_force_top(ids: np.ndarray, vocabulary: int, h: int) -> list[int]:
    counts = {}
    for i in ids.reshape(-1).tolist():
        counts[i] = counts.get(i, 0) + 1
    return sorted(counts, key=lambda i: (-counts[i], i))[:h]


@pytest.mark.parametrize("seed,h", [(0, 50), (3, 400), (1, 0)])
def test_hot_set_of_a_seeded_sample_is_the_brute_force_top(seed, h):
    spec = CtrSpec(vocabulary=3000, fields=4)
    data = ctr_dataset(seed, spec)
    hot, counts, samples = identify(data.x_train, spec.vocabulary, h, "sample", seed, sample_fraction=0.05)
    idx = sample_indices(len(data.x_train), 0.05, seed)
    assert len(idx) == int(np.ceil(0.05 * len(data.x_train))) and len(set(idx.tolist())) == len(idx)
    assert np.array_equal(samples, data.x_train[idx])
    assert hot.tolist() == brute_force_top(data.x_train[idx], spec.vocabulary, h)
    assert counts.sum() == samples.size
    # the same seed gives the same set in another process's view; another seed another sample
    again, _, _ = identify(ctr_dataset(seed, spec).x_train, spec.vocabulary, h, "sample", seed)
    assert np.array_equal(again, hot)
    assert not np.array_equal(sample_indices(len(data.x_train), 0.05, seed + 1), idx)


def test_ties_go_to_the_smaller_id_and_unseen_ids_are_never_hot():
    counts = id_counts(np.array([[5, 2], [2, 5], [7, 9]]), 10)
    assert top_ids(counts, 3).tolist() == [2, 5, 7]
    assert top_ids(counts, 10).tolist() == [2, 5, 7, 9]       # 0, 1, 3, ... never occurred
    with pytest.raises(ValueError, match="hot_rows"):
        top_ids(counts, -1)
    with pytest.raises(ValueError, match="vocabulary"):
        id_counts(np.array([10]), 10)


def test_warmup_counts_exactly_the_ids_the_workers_train_on():
    spec = WorkloadSpec.from_scenario(SPARSE)
    w = Workload(spec, seed=2, n_workers=3)
    got = warmup_ids(w.data.x_train, 2, 3, 2, spec.batch_size)
    want = []
    for worker in range(3):
        x, _ = w.data.shard(worker, 3)
        for it in range(2):
            want.append(x[minibatch_indices(2, worker, it, len(x), spec.batch_size)])
    assert np.array_equal(got, np.concatenate(want)) and got.shape == (3 * 2 * 16, 4)
    # and those are the rows the gradients touch
    touched = set()
    for worker in range(3):
        for it in range(2):
            g = w.gradient(worker, it)[0][:3000 * 4].reshape(3000, 4)
            touched |= set(np.flatnonzero(np.any(g != 0, axis=1)).tolist())
    assert touched == set(got.reshape(-1).tolist())
    with pytest.raises(ValueError, match="warmup_iterations"):
        warmup_ids(w.data.x_train, 2, 3, 0, 16)


def test_bad_sample_fraction_and_source_are_named():
    with pytest.raises(ValueError, match="sample_fraction"):
        sample_indices(100, 0.0, 1)
    with pytest.raises(ValueError, match="hot_source"):
        identify(np.zeros((4, 2), np.int64), 10, 3, "guess", 0)


@pytest.mark.parametrize("slots,k,dense,width,rows,want", [
    (64, 32, 1057, 8, 20000, (64 * 32 - 1057) // 8),   # quickstart's window, the CTR defaults
    (2048, 32, 1057, 8, 5000, 5000),                  # memory above the table: all of it
    (16, 32, 1057, 8, 20000, 0),                      # the dense part alone fills the slots
    (64, 64, 0, 3, 10**6, 64 * 64 // 3)])
def test_hot_rows_are_sized_to_the_switch_memory(slots, k, dense, width, rows, want):
    assert hot_rows_for_slots(slots, k, dense, width, rows) == want


# ---------------------------------------------------------------- layout
def layout_and_grad(hot, size=40, block=(0, 8, 4), seed=0):
    lay = Layout(size, block, np.array(hot))
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(size)
    off, rows, width = block
    t = g[off:off + rows * width].reshape(rows, width)
    t[[1, 6]] = 0.0                            # two untouched rows
    return lay, g


def test_gather_scatter_is_identity_on_hot_rows_and_zero_elsewhere():
    lay, g = layout_and_grad([5, 2, 7], size=45, block=(3, 8, 4))
    v = lay.switch_vector(g)
    assert v.size == lay.switch_values == 3 * 4 + (45 - 32)
    assert np.array_equal(v[:4], g[3 + 20:3 + 24]) and lay.position(2) == 4
    assert np.array_equal(v[12:], np.r_[g[:3], g[35:]])      # the dense parts, in order
    back = lay.merge(v, np.zeros(32, np.float32))
    hot_idx = [3 + r * 4 + j for r in (5, 2, 7) for j in range(4)]
    dense_idx = list(range(3)) + list(range(35, 45))
    assert np.array_equal(back[hot_idx + dense_idx], g[hot_idx + dense_idx])
    others = np.setdiff1d(np.arange(45), hot_idx + dense_idx)
    assert not back[others].any()
    with pytest.raises(KeyError):
        lay.position(0)


def test_split_and_merge_give_back_the_gradient():
    lay, g = layout_and_grad([0, 3], seed=4)
    g32 = g.astype(np.float32).astype(np.float64)   # the cold block travels as float32
    cold = lay.cold_block(g32)
    assert cold.dtype == np.float32
    rows = cold.reshape(8, 4)
    assert not rows[[0, 3]].any() and np.array_equal(rows[[2, 4]], g32[:32].reshape(8, 4)[[2, 4]])
    out = lay.merge(lay.switch_vector(g32), cold)
    assert np.array_equal(out, g32)


def test_a_dense_workload_goes_whole_through_the_switch():
    lay = Layout(10, None, np.zeros(0))
    g = np.arange(10.0)
    assert lay.cold_block(g) is None and np.array_equal(lay.switch_vector(g), g)
    assert np.array_equal(lay.merge(g, None), g)
    with pytest.raises(ValueError, match="dense workload"):
        Layout(10, None, np.array([1]))


def test_layout_refuses_what_cannot_be_right():
    with pytest.raises(ValueError, match="distinct"):
        Layout(40, (0, 8, 4), np.array([1, 1]))
    with pytest.raises(ValueError, match="outside"):
        Layout(20, (0, 8, 4), np.array([1]))
    lay = Layout(40, (0, 8, 4), np.array([1]))
    with pytest.raises(ValueError, match="same scenario"):
        lay.merge(np.zeros(3), np.zeros(32))
    with pytest.raises(ValueError, match="cold block"):
        lay.merge(np.zeros(lay.switch_values), np.zeros(31))
    with pytest.raises(ValueError, match="order"):
        build_layout(40, (0, 8, 4), np.array([1]), order="random")


def test_cooccurrence_puts_ids_seen_together_in_one_packet():
    # ids 1 and 9 always together, 2 and 8 together; frequency order 1, 2, 8, 9
    samples = np.array([[1, 9], [1, 9], [2, 8], [2, 8], [1, 2], [8, 8]])
    hot = np.array([8, 1, 2, 9])
    got = cooccurrence_order(hot, samples, 2)
    assert got.tolist() == [8, 2, 1, 9]
    assert sorted(got.tolist()) == sorted(hot.tolist())
    # nothing co-occurs: frequency order stays
    assert cooccurrence_order(np.array([4, 3, 5]), np.array([[4], [3], [5]]), 2).tolist() == [4, 3, 5]


def test_every_worker_builds_the_same_layout():
    a = job_layout(SPARSE, 7, 4, HOT, 32)
    b = job_layout(dict(SPARSE), 7, 4, dict(HOT), 32)
    assert np.array_equal(a.hot, b.hot) and a.hot.size == 100 and a.block == (0, 3000, 4)
    co = job_layout(SPARSE, 7, 4, {**HOT, "order": "cooccurrence"}, 32)
    assert sorted(co.hot.tolist()) == sorted(a.hot.tolist()) and co.hot.tolist() != a.hot.tolist()
    dense = job_layout({"kind": "synthetic", "parameters": 1000}, 7, 4, HOT, 32)
    assert dense.block is None and dense.switch_values == 1000


# ---------------------------------------------------------------- communicator on loopback
AGG_IP = "127.0.46.1"
WORKER_IPS = ["127.0.46.2", "127.0.46.3", "127.0.46.4"]


@pytest.fixture
def loopback_switch():
    """p4/aggregation.p4 in the in-process softswitch behind a UDP bridge at AGG_IP (2 % loss
    each way, so the INA part retransmits)."""
    from tests.agg_switches import bridged_switch
    with bridged_switch(AGG_IP, WORKER_IPS, 32, loss=0.02, seed=5) as sw:
        yield sw


def libra_comm(rank, ps_port, hot=HOT, ps=True):
    from tests.test_comm_local import LO
    return {"workload": SPARSE, "seed": 3, "hot": hot,
            "ina": {"client": {"job": 1, "agg_ip": AGG_IP, "sender": rank, "fan_in": len(WORKER_IPS),
                               "window": 32, "k": 32, "initial_rto": 0.05, "min_rto": 0.02},
                    "clip": 4.0, "rto_margin_s": 0.03, "aggregate_timeout_s": 60},
            "ps": {"servers": [[LO, ps_port]], "child_rank": rank, "timeout_s": 20,
                   "push": "touched_rows", "row_blocks": [[0, 3000, 4]]} if ps else None}


def test_libra_sums_on_loopback_switch_and_server(loopback_switch):
    from schemes.libra.communicator import LibraCommunicator
    from tests.test_comm_local import run_threads, start_servers
    from workers import framing as fr
    from workers.communicator import Me
    n, iterations = len(WORKER_IPS), 3
    work = Workload(WorkloadSpec.from_scenario(SPARSE), seed=3, n_workers=n)
    grads = [[work.gradient(w, it)[0] for w in range(n)] for it in range(iterations)]
    servers, threads, stats = start_servers([(n, None, 0)])
    port = servers[0].address[1]

    def worker(r):
        c = LibraCommunicator(libra_comm(r, port), Me(f"w{r}", r, n, WORKER_IPS[r]))
        try:
            out = [(c.allreduce(grads[it][r], it), c.stats(), c.error_bound(grads[it]))
                   for it in range(iterations)]
            return out, c.describe(), c.counters()
        finally:
            c.close()
    out, errs = run_threads([lambda r=r: worker(r) for r in range(n)])
    for t in threads:
        t.join(10)
    assert not any(errs), errs
    lay = job_layout(SPARSE, 3, n, HOT, 32)
    hot_idx = (lay.hot[:, None] * 4 + np.arange(4)).reshape(-1)
    switch_idx = np.r_[hot_idx, np.arange(12000, lay.size)]
    cold_rows = np.setdiff1d(np.arange(3000), lay.hot)
    for it in range(iterations):
        exact = np.sum(grads[it], axis=0)
        cold_f32 = fr.sum_in_order([lay.cold_block(g) for g in grads[it]]).reshape(3000, 4)
        first = out[0][0][it][0]
        for r in range(n):
            total, st, bound = out[r][0][it]
            assert np.array_equal(total, first)                       # the same on every worker
            assert np.max(np.abs(total - exact)) <= bound
            assert np.max(np.abs(total[switch_idx] - exact[switch_idx])) <= out[r][1]["ina"]["quantization_bound"]
            # cold rows: the server's float32 sum, bit for bit
            assert np.array_equal(total[:12000].reshape(3000, 4)[cold_rows].astype(np.float32),
                                  cold_f32[cold_rows])
            assert st["switch_packets"] >= -(-lay.switch_values // 32) and st["rows_pushed"] > 0
            assert st["rows_pulled"] >= st["rows_pushed"]
    d = out[0][1]
    assert d["hot_rows"] == 100 and d["switch_values"] == 100 * 4 + lay.size - 12000
    assert out[0][2].bytes_sent > 0 and stats[0]["iterations"] == iterations


def test_libra_refuses_a_plan_that_disagrees_with_the_workload():
    from schemes.libra.communicator import LibraCommunicator
    from workers.communicator import Me
    with pytest.raises(ValueError, match="same scenario"):
        LibraCommunicator(libra_comm(0, 1, ps=False), Me("w0", 0, 3, WORKER_IPS[0]))


# ---------------------------------------------------------------- plan and model
def quickstart(*overrides):
    from pathlib import Path
    from testbed.scenario import load_scenario
    from topologies.graph import build_graph
    repo = Path(__file__).resolve().parent.parent
    scn = load_scenario(str(repo / "scenarios" / "quickstart.yaml"),
                        ["scheme=libra", "workload={kind: sparse}", *overrides])
    return build_graph(scn), scn


def libra_plan(*overrides):
    import schemes
    g, scn = quickstart(*overrides)
    s = schemes.get("libra")
    return g, scn, s.plan(g, scn, s.parse_options(scn.scheme_options))


def test_plan_sizes_the_hot_set_to_the_window_and_places_the_server_at_the_switch():
    g, scn, p = libra_plan()
    info = p.info
    assert info["hot_rows_budget"] == hot_rows_for_slots(info["window"], 32, 1057, 8, 20000) > 0
    # the 5 % sample saw fewer distinct ids than the budget: those are the hot set
    lay = job_layout(scn.workload.model_dump(), scn.seed, 4, p.comm[p.workers[0]]["hot"], 32)
    assert 0 < info["hot_rows"] == lay.hot.size <= info["hot_rows_budget"]
    assert info["switch_values"] == info["hot_rows"] * 8 + 1057 <= info["window"] * 32
    assert len(p.workers) == 4 and len(p.servers) == 1 and p.switch_commands
    assert g.nodes[p.servers[0].host]["dc"] == g.nodes[info["root"]]["dc"]
    c = p.comm[p.workers[1]]
    assert c["ps"]["push"] == "touched_rows" and c["ps"]["row_blocks"] == [[0, 20000, 8]]
    assert c["ina"]["client"]["window"] == info["window"] and c["hot"]["rows"] == info["hot_rows_budget"]


def test_plan_grows_an_auto_window_for_hot_rows_and_refuses_what_cannot_fit():
    _, _, p = libra_plan("scheme_options.hot_rows=5000")
    assert p.info["window"] == -(-(5000 * 8 + 1057) // 32)
    with pytest.raises(ValueError, match="scheme_options.hot_rows: 5000 hot rows.*window is 64"):
        libra_plan("scheme_options.hot_rows=5000", "scheme_options.window=64")
    with pytest.raises(ValueError, match="switch gives this job 2048"):
        libra_plan("scheme_options.hot_rows=15000")
    with pytest.raises(ValueError, match="embedding table has 20000"):
        libra_plan("scheme_options.hot_rows=20001")


def test_a_dense_workload_plans_as_ina():
    _, _, p = libra_plan("workload={kind: synthetic, parameters: 4096}")
    assert not p.servers and p.info["hot_rows"] == 0 and p.info["switch_values"] == 4096
    assert all(c["ps"] is None for c in p.comm.values()) and "degenerate" in p.info


def test_model_takes_the_slower_part():
    import schemes
    from schemes import model as M
    g, scn = quickstart()
    pred = M.predict("libra", g, scn)
    parts = pred.limits
    assert len(parts) == 2 and pred.iteration_s == pytest.approx(0.1 + max(parts.values()))
    small = M.predict("libra", g, scn, schemes.get("libra").parse_options({"hot_rows": 0}))
    # no hot rows: the switch carries only the dense part, the server nearly every touched row
    sw = lambda p: next(v for k, v in p.limits.items() if k.startswith("switch"))
    srv = lambda p: next(v for k, v in p.limits.items() if k.startswith("server"))
    assert sw(small) < sw(pred) and srv(small) > srv(pred)


def test_expected_cold_rows_follow_the_law_and_exclude_the_hot_set():
    from workers.ctr_data import expected_touched_ids, expected_touched_rows
    spec = CtrSpec()
    allrows = expected_touched_ids(spec, 1, 64)
    assert allrows == pytest.approx(expected_touched_rows(spec, 64), rel=0.03)
    assert allrows <= expected_touched_rows(spec, 64)
    data = ctr_dataset(1, spec)
    hot, _, _ = identify(data.x_train, spec.vocabulary, 500, "sample", 1)
    cold = expected_touched_ids(spec, 1, 64, hot)
    assert cold < 0.75 * allrows        # 500 of 20000 ids hold over a quarter of the touches
    # against a count on the data: rows the 64-sample minibatches touch outside the hot set
    rng = np.random.default_rng(0)
    seen = [len(np.setdiff1d(np.unique(data.x_train[rng.choice(len(data.x_train), 64, replace=False)]), hot))
            for _ in range(200)]
    assert np.mean(seen) == pytest.approx(cold, rel=0.1)
