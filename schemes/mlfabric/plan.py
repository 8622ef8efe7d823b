"""Placement of scheme mlfabric (pure): the primary PS on the first host of server_dc, the
replica on the first host of replica_dc (another datacenter), every host a worker; with
aggregation on, an aggregator process on every worker's host and/or on the last host of
each datacenter (its gateway side), ports base_port + 2 onwards."""
from __future__ import annotations

import json

from schemes.base import Plan, Server, datacenter_index
from schemes.mlfabric.options import MlfabricOptions
from schemes.mlfabric.placement import bandwidth_table
from topologies.graph import hosts_by_dc
from workers.workload import WorkloadSpec

COMMUNICATOR = "schemes.mlfabric.communicator:MlfabricCommunicator"
SERVER = "schemes.mlfabric.server"
REPLICA = "schemes.mlfabric.replica"
AGGREGATOR = "schemes.mlfabric.aggregator"


def aggregator_candidates(graph, o: MlfabricOptions, workers: list[str]) -> list[dict]:
    """[{name, host, worker (rank or None), port}] in the order the PS tries them (ties:
    the first): idle-worker aggregators in rank order, then the gateways by datacenter."""
    out = []
    if "workers" in o.aggregators:
        out += [{"name": f"agg-{w}", "host": w, "worker": r} for r, w in enumerate(workers)]
    if "gateways" in o.aggregators:
        out += [{"name": f"gw-{graph.nodes[hs[-1]]['dc']}", "host": hs[-1], "worker": None}
                for hs in hosts_by_dc(graph).values()]
    for i, c in enumerate(out):
        c["port"] = o.base_port + 2 + i
    return out


def replica_dc(graph, o: MlfabricOptions, primary: int) -> int | None:
    if not o.replicate:
        return None
    dcs = sorted(hosts_by_dc(graph))
    if o.replica_dc is None:
        if len(dcs) < 2:
            raise ValueError("scheme_options.replicate: the replica goes to another datacenter and "
                             "this topology has one; add one or set replicate: false")
        return dcs[(dcs.index(primary) + 1) % len(dcs)]
    dc = datacenter_index(graph, o.replica_dc, "replica_dc")
    if dc == primary:
        raise ValueError("scheme_options.replica_dc: the replica must be in another datacenter than "
                         "the primary (server_dc); choose another")
    return dc


def plan(graph, scenario, o: MlfabricOptions) -> Plan:
    by_dc = hosts_by_dc(graph)
    p_dc = datacenter_index(graph, o.server_dc, "server_dc")
    r_dc = replica_dc(graph, o, p_dc)
    workers = [h for hs in by_dc.values() for h in hs]
    timeout = o.emulated_timeout_s(scenario)
    ip = lambda h: graph.nodes[h]["ip"]
    lr = WorkloadSpec.from_scenario(scenario.workload.model_dump()).lr
    p_host = by_dc[p_dc][0]
    primary = [ip(p_host), o.base_port]
    args = ["--children", str(len(workers)), "--lr", repr(lr), "--tau-max", str(o.tau_max),
            "--on-late", o.on_late, "--slots", str(o.slots), "--agg-window", str(o.agg_window),
            "--d-rep", str(o.d_rep), "--timeout", str(timeout)]
    replica = None
    servers = []
    if r_dc is not None:
        r_host = by_dc[r_dc][0]
        replica = [ip(r_host), o.base_port + 1]
        # the primary connects only once every worker is in: the replica waits that long
        servers.append(Server("replica", r_host, REPLICA, ("--host", ip(r_host), "--port", str(replica[1]),
                                                           *args, "--accept-timeout", str(max(timeout, 600.0))),
                              ends_by_signal=True))
        args = [*args, "--replica", f"{replica[0]}:{replica[1]}"]
    servers.insert(0, Server("primary", p_host, SERVER, ("--host", primary[0], "--port", str(primary[1]),
                                                         *args), replaced_on_death=r_dc is not None))
    comm = {w: {"primary": primary, "replica": replica, "child_rank": r, "timeout_s": timeout}
            for r, w in enumerate(workers)}
    cands = aggregator_candidates(graph, o, workers) if o.aggregation else []
    if cands:
        agg_timeout = o.agg_timeout_s * scenario.time_dilation
        nodes = sorted({p_host, *workers})
        # bytes per second of the emulated links (configured rates / time dilation), so they
        # compare with the PS's measurements of real transfers
        bw = {a: {b: v / scenario.time_dilation for b, v in row.items()}
              for a, row in bandwidth_table(graph, nodes).items()}
        spec = {"ps": p_host, "workers": workers, "bandwidth": bw,
                "candidates": [{"name": c["name"], "host": c["host"], "worker": c["worker"],
                                "address": [ip(c["host"]), c["port"]]} for c in cands]}
        servers[0] = Server("primary", p_host, SERVER, (*servers[0].args, "--aggregation", json.dumps(spec),
                                                        "--agg-timeout", repr(agg_timeout)),
                            replaced_on_death=servers[0].replaced_on_death)
        # an aggregator's death does not end the run: its groups fall back to the PS
        servers += [Server(c["name"], c["host"], AGGREGATOR,
                           ("--host", ip(c["host"]), "--port", str(c["port"]), "--children", str(len(workers)),
                            "--name", c["name"], "--timeout", str(timeout)),
                           ends_by_signal=True, replaced_on_death=True) for c in cands]
        for w in workers:
            comm[w].update(aggregators=[[c["name"], ip(c["host"]), c["port"]] for c in cands],
                           agg_timeout_s=agg_timeout)
    info = {"server_hosts": [s.host for s in servers], "lr": lr, "training": {"mode": "asp"},
            "mlfabric": {"tau_max": o.tau_max, "on_late": o.on_late, "slots": o.slots,
                         "d_rep": o.d_rep if replica else None, "agg_window": o.agg_window,
                         "aggregation": o.aggregation, "agg_timeout_s": o.agg_timeout_s if cands else None,
                         "aggregators": [{"name": c["name"], "host": c["host"],
                                          "kind": "gateway" if c["worker"] is None else "idle worker"}
                                         for c in cands]}}
    return Plan(workers, comm, servers, info=info, communicator=COMMUNICATOR)
