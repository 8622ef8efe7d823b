"""Placement of scheme netstorm (pure): a server per datacenter on its first host, the
scheduler beside the server of scheduler_dc, every host a worker of its datacenter's
server (as hier-ps; the authors ran one worker per datacenter). The overlay is the WAN:
datacenters 0..n-1 in scenario order, neighbours when a WAN link joins them."""
from __future__ import annotations

import json

import schemes.netstorm.policy as pol
from schemes import model as M
from schemes.base import Plan, Server, datacenter_index
from schemes.netstorm.options import NetstormOptions
from topologies.graph import hosts_by_dc, wan_edges
from workers.framing import DEFAULT_CHUNK_VALUES

SERVER = "schemes.netstorm.server"
SCHEDULER = "schemes.netstorm.scheduler"


def overlay(graph) -> tuple[list[int], dict[int, frozenset[int]], list[tuple[int, int, float]]]:
    """(dc_index of overlay node 0..n-1, adjacency, configured real-world Mbps per direction)."""
    dcs = sorted(hosts_by_dc(graph))
    pos = {d: i for i, d in enumerate(dcs)}
    adj: dict[int, set[int]] = {i: set() for i in range(len(dcs))}
    rates = []
    s = float(graph.graph.get("dilated", 1.0))   # rates back to real-world Mbps
    for u, v in wan_edges(graph):
        a, b = pos[graph.nodes[u]["dc_index"]], pos[graph.nodes[v]["dc_index"]]
        adj[a].add(b)
        adj[b].add(a)
        e = graph.edges[u, v]
        per = e.get("direction_mbps") or {}   # a step of a per-direction schedule (model)
        rates += [(a, b, float(per.get(u, e["bandwidth_mbps"])) * s),
                  (b, a, float(per.get(v, e["bandwidth_mbps"])) * s)]
    return dcs, {i: frozenset(n) for i, n in adj.items()}, rates


def plan(graph, scenario, o: NetstormOptions) -> Plan:
    by_dc = hosts_by_dc(graph)
    dcs, adj, rates = overlay(graph)
    if len(dcs) < 2:
        raise ValueError("netstorm needs at least 2 datacenters with hosts")
    pol.check_enumerable(adj)
    ip = lambda h: graph.nodes[h]["ip"]
    srv = {i: by_dc[d][0] for i, d in enumerate(dcs)}
    sched_i = dcs.index(datacenter_index(graph, o.scheduler_dc, "scheduler_dc"))
    timeout = o.emulated_timeout_s(scenario)
    opts = o.model_dump()
    sched_addr = [ip(srv[sched_i]), o.base_port + 1]
    workers, comm, servers = [], {}, []
    total = M.parameters(scenario)
    for i, d in enumerate(dcs):
        for r, h in enumerate(by_dc[d]):
            workers.append(h)
            comm[h] = {"servers": [[ip(srv[i]), o.base_port]], "child_rank": r, "timeout_s": timeout}
        cfg = {"dc": i, "ip": ip(srv[i]), "port": o.base_port, "workers": len(by_dc[d]),
               "neighbors": {str(j): [ip(srv[j]), o.base_port] for j in sorted(adj[i])},
               "scheduler": sched_addr, "total": total, "chunk_values": DEFAULT_CHUNK_VALUES,
               "timeout_s": timeout, "time_dilation": scenario.time_dilation, "options": opts}
        servers.append(Server(f"dc{i}", srv[i], SERVER, ("--config", json.dumps(cfg))))
    sched_cfg = {"ip": sched_addr[0], "port": sched_addr[1], "total": total,
                 "adj": {str(i): sorted(n) for i, n in adj.items()}, "configured_mbps": rates,
                 "timeout_s": timeout, "time_dilation": scenario.time_dilation, "options": opts}
    servers.append(Server("scheduler", srv[sched_i], SCHEDULER, ("--config", json.dumps(sched_cfg))))
    return Plan(workers, comm, servers,
                info={"server_hosts": [srv[i] for i in range(len(dcs))],
                      "scheduler_host": srv[sched_i], "overlay_datacenters": dcs})
