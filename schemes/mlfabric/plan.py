"""Placement of scheme mlfabric (pure): the primary PS on the first host of server_dc, the
replica on the first host of replica_dc (another datacenter), every host a worker."""
from __future__ import annotations

from schemes.base import Plan, Server, datacenter_index
from schemes.mlfabric.options import MlfabricOptions
from topologies.graph import hosts_by_dc
from workers.workload import WorkloadSpec

COMMUNICATOR = "schemes.mlfabric.communicator:MlfabricCommunicator"
SERVER = "schemes.mlfabric.server"
REPLICA = "schemes.mlfabric.replica"


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
    info = {"server_hosts": [s.host for s in servers], "lr": lr, "training": {"mode": "asp"},
            "mlfabric": {"tau_max": o.tau_max, "on_late": o.on_late, "slots": o.slots,
                         "d_rep": o.d_rep if replica else None, "agg_window": o.agg_window,
                         "aggregators": "none on the wire (README.md)"}}
    return Plan(workers, comm, servers, info=info, communicator=COMMUNICATOR)
