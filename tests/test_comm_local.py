"""TCP baseline communicators on 127.0.0.1 (no root, fast): ps (sharded), hier-ps, ring.

Each gives numpy's sum within float32 tolerance, the same bits on every worker, and the
bits its documented summation order gives; a dead or silent peer is a clear error
within the timeout, never a hang.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import schemes
from schemes.alltoall.communicator import AllToAllCommunicator
from schemes.hier_ps.plan import expected_sum_order, hier_plan
from schemes.ps.communicator import PSCommunicator
from schemes.ps.server import AggregationServer
from schemes.ring.communicator import RingCommunicator
from schemes.ring.plan import ring_order, wan_crossings
from workers import framing as fr
from workers.communicator import Me, float_sum_bound
from workers.framing import shard_bounds, sum_in_order

REPO = Path(__file__).resolve().parent.parent
LO = "127.0.0.1"
# peer timeouts of the failure-path tests: far above what a loaded machine adds, so "noticed
# the closed connection" (well under half of it) cannot be confused with "timed out"
SLOW_TIMEOUT_S = 20.0


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind((LO, 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def grads(w: int, n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    # mixed magnitudes so that summation order changes the float32 bits
    return [(rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3, n)).astype(np.float32) for _ in range(w)]


def run_threads(fns) -> list:
    out, errs = [None] * len(fns), [None] * len(fns)

    def wrap(i):
        try:
            out[i] = fns[i]()
        except BaseException as e:  # collected and re-raised by the test
            errs[i] = e
    ts = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(len(fns))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert not any(t.is_alive() for t in ts), "a communicator hung"
    return out, errs


def close_to_numpy(res: np.ndarray, g: list[np.ndarray]) -> None:
    exact = np.sum(np.array(g, dtype=np.float64), axis=0)
    assert res.dtype == np.float32 and res.shape == exact.shape
    bound = float_sum_bound([x.astype(np.float64) for x in g])
    assert np.max(np.abs(res - exact)) <= bound


def start_servers(specs):
    """specs: list of (children, upstream_index or None, rank); returns servers, threads, results."""
    servers = []
    for children, up, rank in specs:
        upstream = (LO, servers[up].address[1]) if up is not None else None
        servers.append(AggregationServer(LO, 0, children, timeout_s=SLOW_TIMEOUT_S, upstream=upstream,
                                          rank=rank))
    results, threads = [None] * len(servers), []
    for i, s in enumerate(servers):
        def serve(i=i, s=s):
            try:
                results[i] = s.serve()
            except fr.PeerError as e:
                results[i] = e
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        threads.append(t)
    return servers, threads, results


def PSClient(addrs, rank, timeout_s, chunk_values=fr.DEFAULT_CHUNK_VALUES):
    return PSCommunicator({"servers": addrs, "child_rank": rank, "timeout_s": timeout_s},
                          Me(f"w{rank}", rank, 0, LO), chunk_values=chunk_values)


def ring(rank, w, ports, timeout):
    return RingCommunicator({"ring_rank": rank, "ring_size": w, "listen": [LO, ports[rank]],
                             "right": [LO, ports[(rank + 1) % w]], "timeout_s": timeout},
                            Me(f"w{rank}", rank, w, LO))


def ps_run(g, shards, iterations=2, chunk=16384):
    servers, threads, stats = start_servers([(len(g), None, 0)] * shards)
    addrs = [(LO, s.address[1]) for s in servers]

    def worker(r):
        c = PSClient(addrs, r, timeout_s=5, chunk_values=chunk)
        res = [c.allreduce(g[r] * (it + 1), it) for it in range(iterations)]
        c.close()
        return res
    out, errs = run_threads([lambda r=r: worker(r) for r in range(len(g))])
    for t in threads:
        t.join(10)
    assert not any(errs), errs
    return out, stats


# ---------------------------------------------------------------- ps
@pytest.mark.parametrize("w,n,shards", [(4, 10_001, 1), (4, 10_001, 3), (3, 2, 3), (1, 17, 1)])
def test_ps_sum_matches_numpy_and_is_identical_everywhere(w, n, shards):
    g = grads(w, n)
    out, stats = ps_run(g, shards)
    for it in range(2):
        ref = sum_in_order([x * (it + 1) for x in g])
        for r in range(w):
            assert np.array_equal(out[r][it], ref), "fixed order: the same bits on every worker"
        close_to_numpy(out[0][it], [x * (it + 1) for x in g])
    assert all(s["iterations"] == 2 for s in stats)
    # each server saw its range of every worker's gradient, twice, plus the frame headers
    assert sum(s["bytes_received"] for s in stats) == 2 * w * 4 * n + fr.HEADER.size * (w * shards * 4)


def test_ps_shards_and_chunks_give_the_same_bits_as_one_server():
    g = grads(5, 4099, seed=3)
    one, _ = ps_run(g, 1, iterations=1)
    three, _ = ps_run(g, 3, iterations=1)
    chunked, stats = ps_run(g, 2, iterations=2, chunk=100)   # many chunks in flight
    assert np.array_equal(one[0][0], three[0][0]) and np.array_equal(one[0][0], chunked[4][0])
    assert [s["iterations"] for s in stats] == [2, 2]


def test_shard_bounds_cover_the_tensor():
    assert shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_bounds(2, 3) == [(0, 1), (1, 2), (2, 2)]
    with pytest.raises(ValueError):
        shard_bounds(10, 0)


def test_order_matters_so_the_fixed_order_is_meaningful():
    g = grads(6, 5000, seed=1)
    assert not np.array_equal(sum_in_order(g), sum_in_order(g[::-1]))


# ---------------------------------------------------------------- hier-ps
def test_hier_ps_sums_locally_then_globally():
    worker_dcs = [1, 1, 2, 2, 2, 3]
    plan = hier_plan(worker_dcs, global_dc=2)
    g = grads(len(worker_dcs), 3001, seed=2)
    specs = [(len(plan.dcs), None, 0)] + [(len(plan.members[dc]), 0, plan.server_rank(dc)) for dc in plan.dcs]
    servers, threads, stats = start_servers(specs)

    def worker(r):
        dc, child = plan.local_rank(r)
        c = PSClient([(LO, servers[1 + plan.server_rank(dc)].address[1])], child, timeout_s=5,
                     chunk_values=500)
        res = c.allreduce(g[r], 0)
        c.close()
        return res
    out, errs = run_threads([lambda r=r: worker(r) for r in range(len(g))])
    for t in threads:
        t.join(10)
    assert not any(errs), errs
    ref = sum_in_order([sum_in_order([g[r] for r in grp]) for grp in expected_sum_order(plan)])
    for r in range(len(g)):
        assert np.array_equal(out[r], ref)
    close_to_numpy(out[0], g)
    # only one partial sum per datacenter reached the global server (7 chunks of <= 500)
    assert stats[0]["bytes_received"] == 3 * (4 * 3001 + 7 * fr.HEADER.size) + 3 * fr.HEADER.size * 2


def test_hier_plan_rejects_a_global_dc_without_workers():
    with pytest.raises(ValueError, match="global_dc"):
        hier_plan([1, 2], global_dc=3)


# ---------------------------------------------------------------- ring
def ring_run(g, iterations=1, timeout=5):
    w = len(g)
    ports = free_ports(w)

    def worker(r):
        c = ring(r, w, ports, timeout)
        res = [c.allreduce(g[r], it) for it in range(iterations)]
        c.close()
        return res
    out, errs = run_threads([lambda r=r: worker(r) for r in range(w)])
    assert not any(errs), errs
    return out


@pytest.mark.parametrize("w,n", [(5, 10_007), (2, 9), (4, 3), (1, 5)])
def test_ring_allreduce_matches_numpy_and_its_order(w, n):
    g = grads(w, n, seed=w)
    out = ring_run(g, iterations=2)
    b = shard_bounds(n, w)
    ref = np.empty(n, dtype=np.float32)
    for c, (lo, hi) in enumerate(b):   # chunk c is summed starting at rank c, around the ring
        ref[lo:hi] = sum_in_order([g[(c + k) % w][lo:hi] for k in range(w)])
    for r in range(w):
        for it in range(2):
            assert np.array_equal(out[r][it], ref)
    close_to_numpy(out[0][0], g)


def test_ring_order_keeps_datacenters_contiguous():
    workers = [(2, 3, "b1"), (1, 0, "a0"), (3, 5, "c1"), (1, 1, "a1"), (2, 2, "b0"), (3, 4, "c0")]
    order = ring_order(workers)
    assert order == ["a0", "a1", "b0", "b1", "c0", "c1"]
    dc_of = {n: d for d, _, n in workers}
    assert wan_crossings(order, dc_of) == 3
    assert wan_crossings(["a0", "b0", "a1", "c0", "b1", "c1"], dc_of) == 6


# ---------------------------------------------------------------- failure paths
def test_ps_worker_dying_is_an_error_for_everyone_not_a_hang():
    g = grads(3, 1000)
    servers, threads, stats = start_servers([(3, None, 0)])
    addr = [(LO, servers[0].address[1])]

    def good(r):
        c = PSClient(addr, r, timeout_s=SLOW_TIMEOUT_S)
        c.allreduce(g[r], 0)
        return c.allreduce(g[r], 1)

    def dies():
        c = PSClient(addr, 2, timeout_s=SLOW_TIMEOUT_S)
        c.allreduce(g[2], 0)
        c.chans[0].sock.close()     # the process dies between iterations
    t0 = time.monotonic()
    out, errs = run_threads([lambda: good(0), lambda: good(1), dies])
    for t in threads:
        t.join(10)
    assert time.monotonic() - t0 < SLOW_TIMEOUT_S / 2, "the server noticed the closed connection, no timeout"
    assert isinstance(stats[0], fr.PeerError) and "child 2" in str(stats[0])
    for e in errs[:2]:
        assert isinstance(e, fr.PeerError) and "check its log" in str(e)


def test_silent_peer_times_out_with_a_clear_message():
    ports = free_ports(2)
    lsock = fr.listen(LO, ports[1])   # a "server" that accepts and never answers
    c = fr.connect(LO, ports[1], "server X", timeout_s=0.5)
    c.send(fr.DATA, 0, np.ones(4, np.float32))
    t0 = time.monotonic()
    with pytest.raises(fr.PeerError, match=r"server X: nothing received for 0.5 s"):
        c.recv(fr.RESULT, 0, what="the sum")
    assert time.monotonic() - t0 < 2
    lsock.close()


def test_connect_to_nobody_fails_within_the_connect_timeout():
    (port,) = free_ports(1)
    t0 = time.monotonic()
    with pytest.raises(fr.PeerError, match="cannot connect"):
        fr.connect(LO, port, "server Y", timeout_s=5, connect_timeout_s=0.5)
    assert time.monotonic() - t0 < 2


def test_ring_neighbour_dying_is_an_error_not_a_hang():
    w = 3
    ports = free_ports(w)
    g = grads(w, 30_000)

    def worker(r):
        c = ring(r, w, ports, SLOW_TIMEOUT_S)
        c.allreduce(g[r], 0)
        if r == 1:
            c.close()               # dies after the first iteration
            return None
        return c.allreduce(g[r], 1)
    t0 = time.monotonic()
    out, errs = run_threads([lambda r=r: worker(r) for r in range(w)])
    assert time.monotonic() - t0 < SLOW_TIMEOUT_S / 2, "the closed connection was noticed, no timeout"
    assert isinstance(errs[0], fr.PeerError) and isinstance(errs[2], fr.PeerError)
    assert "closed" in str(errs[0]) + str(errs[2]) or "failed" in str(errs[0]) + str(errs[2])


def test_out_of_step_children_are_reported():
    servers, threads, stats = start_servers([(2, None, 0)])
    addr = [(LO, servers[0].address[1])]
    a, b = PSClient(addr, 0, timeout_s=3), PSClient(addr, 1, timeout_s=3)
    a.chans[0].send(fr.DATA, 0, np.ones(3, np.float32))
    b.chans[0].send(fr.DATA, 7, np.ones(3, np.float32))
    threads[0].join(5)
    assert isinstance(stats[0], fr.PeerError) and "out of step" in str(stats[0])


def test_frames_survive_partial_reads_and_bad_headers_are_caught():
    lsock = socket.create_server((LO, 0))
    a = socket.create_connection(lsock.getsockname())
    b, _ = lsock.accept()
    lsock.close()
    rx = fr.Channel(b, "peer", timeout_s=2)
    arr = np.arange(1000, dtype=np.float32)
    frame = fr.HEADER.pack(fr.MAGIC, fr.DATA, 0, 42, arr.size) + arr.tobytes()

    def dribble():
        for i in range(0, len(frame), 333):   # the kernel hands it over in small pieces
            a.sendall(frame[i:i + 333])
            time.sleep(0.001)
    t = threading.Thread(target=dribble)
    t.start()
    kind, tag, got = rx.recv(fr.DATA, 42)
    t.join()
    assert (kind, tag) == (fr.DATA, 42) and np.array_equal(got, arr)
    a.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + bytes(8))
    with pytest.raises(fr.PeerError, match="malformed frame header"):
        rx.recv()
    a.close()
    b.close()


def test_hello_with_a_bad_rank_is_refused():
    servers, threads, stats = start_servers([(2, None, 0)])
    c = fr.connect(LO, servers[0].address[1], "server", timeout_s=3)
    c.send(fr.HELLO, 5)
    threads[0].join(5)
    assert isinstance(stats[0], fr.PeerError) and "out of range" in str(stats[0])


# ---------------------------------------------------------------- alltoall (the worked example)
@pytest.mark.parametrize("w,n", [(4, 10_001), (2, 3), (1, 5)])
def test_alltoall_sums_in_rank_order_everywhere(w, n):
    g = grads(w, n, seed=7)
    ports = free_ports(w)
    peers = [[LO, p] for p in ports]

    def worker(r):
        c = AllToAllCommunicator({"rank": r, "peers": peers, "timeout_s": 5}, Me(f"w{r}", r, w, LO))
        res = [c.allreduce(g[r].astype(np.float64), it) for it in range(2)]
        counts = c.counters()
        c.close()
        return res, counts
    out, errs = run_threads([lambda r=r: worker(r) for r in range(w)])
    assert not any(errs), errs
    ref = sum_in_order(g)
    for res, counts in out:
        assert all(np.array_equal(x, ref) for x in res)
        assert counts.bytes_sent == 2 * (w - 1) * (4 * n + fr.HEADER.size) + (w - 1) * fr.HEADER.size
    close_to_numpy(out[0][0][0], g)


def test_alltoall_peer_dying_is_an_error_not_a_hang():
    w, ports = 3, free_ports(3)
    peers = [[LO, p] for p in ports]
    g = grads(w, 1000)

    def worker(r):
        c = AllToAllCommunicator({"rank": r, "peers": peers, "timeout_s": SLOW_TIMEOUT_S},
                                 Me(f"w{r}", r, w, LO))
        c.allreduce(g[r], 0)
        if r == 2:
            c.close()
            return None
        return c.allreduce(g[r], 1)
    t0 = time.monotonic()
    out, errs = run_threads([lambda r=r: worker(r) for r in range(w)])
    assert time.monotonic() - t0 < SLOW_TIMEOUT_S / 2, "the closed connection was noticed, no timeout"
    assert all(isinstance(e, fr.PeerError) for e in errs[:2])


# ---------------------------------------------------------------- real processes
def test_worker_processes_train_through_a_ps_process(tmp_path):
    """The real path: a server process and worker processes (workers/worker.py) with the
    shared workload and event schema, verification on, a duration limit agreed by all."""
    w = 3
    (port,) = free_ports(1)
    srv = subprocess.Popen([sys.executable, "-m", "schemes.ps.server", "--host", LO, "--port", str(port),
                            "--children", str(w), "--timeout", "20"], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs = []
    for r in range(w):
        cfg = {"worker": f"w{r}", "host_id": f"h1r1w{r + 1}", "index": r, "n_workers": w,
               "dc": "a", "ip": LO, "seed": 5, "iterations": 100, "duration_s": 0.5,
               "workload": {"kind": "synthetic", "parameters": 5000},
               "compute_time": {"model": "constant", "value_ms": 20.0 * (r + 1)}, "stragglers": {},
               "scheme": "ps", "communicator": schemes.get("ps").communicator,
               "comm": {"servers": [[LO, port]], "child_rank": r, "timeout_s": 20},
               "events": str(tmp_path / f"w{r}.jsonl"), "verify": True,
               "go_file": str(tmp_path / "go")}
        (tmp_path / f"w{r}.json").write_text(json.dumps(cfg))
        procs.append(subprocess.Popen([sys.executable, "-m", "workers.worker", str(tmp_path / f"w{r}.json")],
                                      cwd=REPO, stderr=subprocess.PIPE, text=True))
    from workers.events import read_events
    deadline = time.monotonic() + 60
    while not all(any(e["event"] == "worker_ready" for e in read_events(tmp_path / f"w{r}.jsonl"))
                  for r in range(w)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "workers not ready"
        time.sleep(0.05)
    (tmp_path / "go").touch()
    for p in procs:
        assert p.wait(60) == 0, p.stderr.read()
    out, err = srv.communicate(timeout=20)
    assert srv.returncode == 0, err
    ev = {f"w{r}": read_events(tmp_path / f"w{r}.jsonl") for r in range(w)}
    its = [[e for e in ev[k] if e["event"] == "iteration_end"] for k in ev]
    assert len({len(i) for i in its}) == 1 and len(its[0]) >= 3, "all stop after the same iteration"
    assert len({e["result_sha1"] for i in its for e in i if e["iteration"] == 0}) == 1
    for r, i in enumerate(its):
        for e in i:
            assert e["max_error"] <= e["error_bound"]
            assert e["gradient_bytes"] == 4 * 5000 and e["bytes_sent"] == 4 * 5001 + 2 * fr.HEADER.size   # 2 chunks
            assert e["compute_s"] >= 0.02 * (r + 1) and e["comm_s"] > 0
    for k in ev:
        assert ev[k][-1]["event"] == "worker_end" and ev[k][-1]["reason"] == "duration reached"
        ready = next(e for e in ev[k] if e["event"] == "comm_ready")
        assert ready["comm"]["tcp_congestion_control"]          # what the kernel reports
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["iterations"] == len(its[0])


# ---------------------------------------------------------------- placement (pure)
def geo_plan(scheme, opts, prefix=""):
    from testbed.scenario import load_scenario
    from topologies.graph import build_graph
    modes = schemes.get(scheme).modes   # a scheme without bsp (mlfabric) plans in its first mode
    mode = [] if "bsp" in modes else [f"training.mode={modes[0]}"]
    scn = load_scenario(str(REPO / "scenarios" / "geo-3dc.yaml"), [f"scheme={scheme}", *mode])
    g = build_graph(scn, prefix=prefix)
    sch = schemes.get(scheme)
    return g, sch.plan(g, scn, sch.parse_options(opts))


def test_placement_of_each_scheme():
    g, p = geo_plan("ps", {"server_dc": "fra", "shards": 2})
    dc = lambda h: g.nodes[h]["dc"]
    args = lambda s: dict(zip(s.args[::2], s.args[1::2]))
    assert len(p.workers) == 12 and [dc(s.host) for s in p.servers] == ["fra", "fra"]
    assert len({s.host for s in p.servers}) == 2 and all(args(s)["--children"] == "12" for s in p.servers)
    assert all(s.module == "schemes.ps.server" for s in p.servers)
    g, h = geo_plan("hier-ps", {"global_dc": "tok", "dedicated_servers": True})
    assert len(h.workers) == 9 and not {s.host for s in h.servers} & set(h.workers)
    glob = h.servers[0]
    assert dc(glob.host) == "tok" and args(glob)["--children"] == "3"
    for w in h.workers:   # every worker talks to the server of its own datacenter
        srv = next(s for s in h.servers[1:]
                   if [args(s)["--host"], int(args(s)["--port"])] == h.comm[w]["servers"][0])
        assert dc(srv.host) == dc(w) and args(srv)["--upstream"].endswith(":7100")
    g, r = geo_plan("ring", {})
    assert wan_crossings(r.workers, {n: dc(n) for n in r.workers}) == 3 == r.info["wan_crossings"]
    assert [r.comm[w]["ring_rank"] for w in r.workers] == list(range(12))
    g, a = geo_plan("alltoall", {"base_port": 9000})
    assert len(a.workers) == 12 and all(c["peers"][c["rank"]][1] == 9000 for c in a.comm.values())


# ---------------------------------------------------------------- mxnet-ps
def test_mxnet_parts_follow_kvstore_dist():
    """MXNet's EncodeDefaultKey: below the bound the whole tensor on server (key*9973) mod k
    (key 0: server 0); at or above it server i gets round(n/k*(i+1)) - round(n/k*i) values,
    with C's round (halves up: 10 over 4 is 3, 2, 3, 2, not Python's 2, 3, 2, 3)."""
    from schemes.mxnet_ps.plan import key_server, mxnet_parts
    assert mxnet_parts(999_999, 9, 1_000_000) == [(0, 0, 999_999)]               # below: whole
    big = mxnet_parts(1_000_000, 9, 1_000_000)                                    # at the bound: split
    assert [i for i, _, _ in big] == list(range(9)) and big[0][1] == 0 and big[-1][2] == 1_000_000
    assert all(a[2] == b[1] for a, b in zip(big, big[1:]))
    assert {hi - lo for _, lo, hi in big} == {111_111, 111_112}
    assert [hi - lo for _, lo, hi in mxnet_parts(10, 4, 1)] == [3, 2, 3, 2]
    assert mxnet_parts(262144, 3, 1000) == [(0, 0, 87381), (1, 87381, 174763), (2, 174763, 262144)]
    assert mxnet_parts(2, 3, 1) == [(0, 0, 1), (2, 1, 2)]      # an empty part: no server
    assert key_server(0, 9) == 0 and key_server(1, 9) == 9973 % 9 == 1 and key_server(3, 4) == 3


def test_mxnet_ps_places_one_server_per_datacenter():
    from topologies.graph import hosts_by_dc
    from workers.workload import parameter_count
    g, p = geo_plan("mxnet-ps", {"bigarray_bound": 1000})          # geo-3dc: 262144 values
    dc = lambda h: g.nodes[h]["dc"]
    args = lambda s: dict(zip(s.args[::2], s.args[1::2]))
    assert [dc(s.host) for s in p.servers] == ["wdc", "fra", "tok"]
    assert [s.host for s in p.servers] == [hs[0] for hs in hosts_by_dc(g).values()]
    assert all(s.module == "schemes.ps.server" and args(s)["--children"] == "12" for s in p.servers)
    assert [int(args(s)["--port"]) for s in p.servers] == [7100, 7101, 7102]
    assert len(p.workers) == 12 and p.info["split"] is True
    bounds = [[0, 87381], [87381, 174763], [174763, 262144]]
    for r, w in enumerate(p.workers):
        c = p.comm[w]
        assert c["bounds"] == bounds and c["child_rank"] == r
        assert c["servers"] == [[args(s)["--host"], int(args(s)["--port"])] for s in p.servers]
    # below the bound (the default 1,000,000 > 262144): one server, the first datacenter's
    g, p = geo_plan("mxnet-ps", {})
    assert [dc(s.host) for s in p.servers] == ["wdc"] and p.info["split"] is False
    assert p.comm[p.workers[0]]["bounds"] == [[0, parameter_count({"kind": "synthetic", "parameters": 262144})]]
    # dedicated servers: the three server hosts run no worker
    g, p = geo_plan("mxnet-ps", {"bigarray_bound": 1000, "dedicated_servers": True})
    assert len(p.workers) == 9 and not {s.host for s in p.servers} & set(p.workers)
    assert all(args(s)["--children"] == "9" for s in p.servers)


def test_mxnet_ps_sum_with_mxnet_bounds_matches_numpy():
    """ps's server and communicator with MXNet's uneven parts: the same bits as one server."""
    from schemes.mxnet_ps.plan import mxnet_parts
    g = grads(4, 10, seed=5)
    servers, threads, stats = start_servers([(4, None, 0)] * 4)
    addrs = [(LO, s.address[1]) for s in servers]
    bounds = [[lo, hi] for _, lo, hi in mxnet_parts(10, 4, 1)]

    def worker(r):
        c = PSCommunicator({"servers": addrs, "bounds": bounds, "child_rank": r, "timeout_s": 5},
                           Me(f"w{r}", r, 0, LO))
        res = c.allreduce(g[r], 0)
        c.close()
        return res
    out, errs = run_threads([lambda r=r: worker(r) for r in range(4)])
    for t in threads:
        t.join(10)
    assert not any(errs), errs
    for r in range(4):
        assert np.array_equal(out[r], sum_in_order(g))
    close_to_numpy(out[0], g)
    # each server got its part of every gradient: HELLO, one DATA_END frame, BYE per worker
    assert [s["bytes_received"] for s in stats] == [4 * (4 * n + 3 * fr.HEADER.size) for n in (3, 2, 3, 2)]
    with pytest.raises(ValueError, match="2 shard bounds for 1 servers"):
        PSCommunicator({"servers": [(LO, 9)], "bounds": [[0, 5], [5, 10]], "child_rank": 0,
                        "timeout_s": 1}, Me("w0", 0, 0, LO))


def test_bad_options_say_what_is_known():
    from testbed.scenario import ScenarioError, load_scenario
    path = str(REPO / "scenarios" / "geo-3dc.yaml")
    with pytest.raises(ScenarioError, match="scheme_options.server_dc: unknown option 'server_dc' "
                                            "for scheme ring"):
        load_scenario(path, ["scheme=ring", "scheme_options.server_dc=fra"])
    with pytest.raises(ScenarioError, match="scheme_options.shards"):
        load_scenario(path, ["scheme=ps", "scheme_options.shards=0"])
    with pytest.raises(ValueError, match="no datacenter 'mars'.*wdc"):
        geo_plan("ps", {"server_dc": "mars"})


def test_every_registered_scheme_loads_and_plans():
    for name in schemes.NAMES:
        s = schemes.get(name)
        assert s.name == name and ":" in s.communicator
        _, p = geo_plan(name, {})
        dedicated = {srv.host for srv in p.servers} - set(p.workers)   # inart's PS hosts
        assert sorted(p.workers) == sorted(p.comm) and len(p.workers) + len(dedicated) == 12


# ---------------------------------------------------------------- the scenario's TCP settings
def test_sockets_take_the_scenarios_congestion_control(monkeypatch):
    available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    want = "reno" if "reno" in available else available[0]
    monkeypatch.setenv(fr.TCP_CONGESTION_ENV, want)
    lsock = fr.listen(LO, 0)
    c = fr.connect(LO, lsock.getsockname()[1], "peer", timeout_s=2)
    a = fr.accept(lsock, 2, "peer", 2)
    for sock in (c.sock, a.sock):
        got = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
        assert got == want
    for x in (c, a):
        x.close()
    lsock.close()
    monkeypatch.setenv(fr.TCP_CONGESTION_ENV, "no_such_cc")
    t0 = time.monotonic()
    with pytest.raises(fr.PeerError, match="cannot set TCP congestion control 'no_such_cc'"):
        fr.connect(LO, 9, "peer", timeout_s=5)          # refused at once, not retried
    assert time.monotonic() - t0 < 1


def test_tcp_section_becomes_host_sysctls_and_is_checked(tmp_path):
    from testbed import tcp
    from testbed.scenario import load_scenario
    scn = load_scenario(str(REPO / "scenarios" / "quickstart.yaml"),
                        ["tcp.slow_start_after_idle=false", "tcp.rmem_bytes=[4096, 87380, 33554432]"])
    assert tcp.sysctl_commands(scn.tcp) == [
        "sysctl -q -w net.ipv4.tcp_slow_start_after_idle=0",
        "sysctl -q -w net.ipv4.tcp_rmem='4096 87380 33554432'",
        "sysctl -q -w net.ipv4.tcp_wmem='4096 16384 4194304'"]          # stock Linux default
    assert scn.tcp.congestion_control == "cubic" and tcp.process_env(scn.tcp) == {fr.TCP_CONGESTION_ENV: "cubic"}
    avail = tmp_path / "avail"
    avail.write_text("reno bbr\n")
    with pytest.raises(ValueError, match="'cubic' is not available.*modprobe tcp_cubic"):
        tcp.check_available(scn.tcp, avail)
    avail.write_text("reno cubic\n")
    tcp.check_available(scn.tcp, avail)
