"""Placement of scheme mxnet-ps (pure): MXNet's distributed kvstore with one server per
datacenter, its default key placement (src/kvstore/kvstore_dist.h, EncodeDefaultKey).

MXNet gives every server a range of the key space and places each tensor (key) by size:
  - fewer values than MXNET_KVSTORE_BIGARRAY_BOUND (default 1,000,000): the whole tensor
    goes to server (key * 9973) mod num_servers;
  - otherwise: split over all servers, server i taking round(n / k * (i + 1)) -
    round(n / k * i) values (C's round: halves away from zero).
The testbed's workloads are one flat gradient vector (workers/workload.py), i.e. key 0: below
the bound it lives whole on server 0 (the first datacenter), at or above it every datacenter's
server holds a contiguous part. A server that holds nothing carries no traffic and is not
started (MXNet would start it idle).

The servers are schemes/ps/server.py processes and the workers ps's communicator, which
takes the parts as explicit shard bounds.
"""
from __future__ import annotations

import math

from schemes.base import Plan
from schemes.mxnet_ps.options import MxnetPsOptions
from schemes.ps.plan import need_workers, server
from topologies.graph import hosts_by_dc

KEY = 0                 # the one tensor of the testbed's workloads
KEY_HASH = 9973         # MXNet's multiplier for placing a small tensor


def _round(x: float) -> int:
    """C's round() for x >= 0: halves go up (away from zero), unlike Python's round."""
    return math.floor(x + 0.5)


def key_server(key: int, num_servers: int) -> int:
    """The server of a tensor below the bound."""
    return (key * KEY_HASH) % num_servers


def mxnet_parts(n: int, num_servers: int, bound: int, key: int = KEY) -> list[tuple[int, int, int]]:
    """(server, lo, hi) for each server holding a non-empty part of an n-value tensor, in
    server order, as kvstore_dist.h places it."""
    if num_servers < 1:
        raise ValueError(f"mxnet-ps needs at least one server (got {num_servers})")
    if n < bound:
        return [(key_server(key, num_servers), 0, n)]
    ends = [_round(float(n) / num_servers * i) for i in range(num_servers + 1)]
    ends[-1] = n   # (n / k) * k may round below n in floating point; MXNet checks the sum is n
    return [(i, ends[i], ends[i + 1]) for i in range(num_servers) if ends[i + 1] > ends[i]]


def plan(graph, scenario, o: MxnetPsOptions) -> Plan:
    """Server i on the first host of the i-th datacenter (in datacenter order); every other
    host (every host unless dedicated_servers) a worker, child of each server that holds a part."""
    from workers.workload import parameter_count
    by_dc = hosts_by_dc(graph)
    srv_host = [hs[0] for hs in by_dc.values()]          # server i: datacenter i's first host
    n = parameter_count(scenario.workload.model_dump())
    parts = mxnet_parts(n, len(srv_host), o.bigarray_bound)
    busy = {srv_host[i] for i, _, _ in parts} if o.dedicated_servers else set()
    workers = [h for hs in by_dc.values() for h in hs if h not in busy]
    need_workers(workers, "mxnet-ps")
    timeout = o.emulated_timeout_s(scenario)
    ip = lambda h: graph.nodes[h]["ip"]
    servers = [server(f"mx{i}", srv_host[i], ip(srv_host[i]), o.base_port + i, len(workers), timeout)
               for i, _, _ in parts]
    addrs = [[ip(srv_host[i]), o.base_port + i] for i, _, _ in parts]
    bounds = [[lo, hi] for _, lo, hi in parts]
    comm = {w: {"servers": addrs, "bounds": bounds, "child_rank": r, "timeout_s": timeout}
            for r, w in enumerate(workers)}
    info = {"server_hosts": [srv_host[i] for i, _, _ in parts],
            "parts": [[srv_host[i], lo, hi] for i, lo, hi in parts],
            "num_servers": len(srv_host), "split": n >= o.bigarray_bound}
    return Plan(workers, comm, servers, info=info)
