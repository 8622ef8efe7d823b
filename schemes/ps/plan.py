"""Placement of scheme ps (pure): k shard servers in one datacenter, every worker a child
of each of them; with push touched_rows, the workload's row-sparse blocks for the workers.
In training modes ssp and asp: one asynchronous server holding the model (async_server.py)."""
from __future__ import annotations

from schemes.base import Plan, Server, datacenter_index
from schemes.ps.options import PsOptions
from topologies.graph import hosts_by_dc
from workers.workload import WorkloadSpec, row_blocks

SERVER = "schemes.ps.server"
COMMUNICATOR = "schemes.ps.communicator:PSCommunicator"
ASYNC_SERVER = "schemes.ps.async_server"
ASYNC_COMMUNICATOR = "schemes.ps.async_communicator:AsyncPSCommunicator"


def server(name: str, host: str, ip: str, port: int, children: int, timeout_s: float,
           upstream: str | None = None, rank: int = 0) -> Server:
    """A schemes.ps.server process (upstream "IP:PORT" makes it a lower server, hier-ps)."""
    args = ["--host", ip, "--port", str(port), "--children", str(children), "--name", name,
            "--timeout", str(timeout_s)]
    if upstream:
        args += ["--upstream", upstream, "--rank", str(rank)]
    return Server(name, host, SERVER, tuple(args))


def need_workers(workers: list[str], scheme: str) -> None:
    if not workers:
        raise ValueError(f"{scheme}: dedicated_servers leaves no host for a worker; add hosts or "
                         f"set scheme_options.dedicated_servers: false")


def plan(graph, scenario, o: PsOptions) -> Plan:
    by_dc = hosts_by_dc(graph)
    dc = datacenter_index(graph, o.server_dc, "server_dc")
    hosts = by_dc[dc]
    srv_hosts = [hosts[i % len(hosts)] for i in range(o.shards)]
    busy = set(srv_hosts) if o.dedicated_servers else set()
    workers = [h for hs in by_dc.values() for h in hs if h not in busy]
    need_workers(workers, "ps")
    timeout = o.emulated_timeout_s(scenario)
    ip = lambda h: graph.nodes[h]["ip"]
    if scenario.training.mode != "bsp":
        return async_plan(graph, scenario, o, workers, srv_hosts[0], timeout)
    servers = [server(f"ps{i}", h, ip(h), o.base_port + i, len(workers), timeout)
               for i, h in enumerate(srv_hosts)]
    addrs = [[ip(h), o.base_port + i] for i, h in enumerate(srv_hosts)]
    comm = {w: {"servers": addrs, "child_rank": r, "timeout_s": timeout} for r, w in enumerate(workers)}
    info = {"server_hosts": srv_hosts, "push": o.push}
    if o.push == "touched_rows":
        blocks = [list(b) for b in row_blocks(scenario.workload.model_dump())]
        for c in comm.values():
            c.update(push=o.push, row_blocks=blocks)
        info["row_blocks"] = blocks
    return Plan(workers, comm, servers, info=info)


def async_plan(graph, scenario, o: PsOptions, workers: list[str], host: str, timeout: float) -> Plan:
    """ssp / asp: one schemes.ps.async_server on `host` (options checked by
    schemes.ps.options.mode_problems when the scenario loaded)."""
    t = scenario.training
    lr = WorkloadSpec.from_scenario(scenario.workload.model_dump()).lr
    ip, port = graph.nodes[host]["ip"], o.base_port
    args = ["--host", ip, "--port", str(port), "--children", str(len(workers)), "--lr", repr(lr),
            "--name", "ps0", "--timeout", str(timeout)]
    if t.mode == "ssp":
        args += ["--staleness", str(t.staleness)]
    comm = {w: {"servers": [[ip, port]], "child_rank": r, "timeout_s": timeout, "mode": t.mode}
            for r, w in enumerate(workers)}
    info = {"server_hosts": [host], "push": o.push, "training": {"mode": t.mode, "staleness": t.staleness},
            "lr": lr}
    return Plan(workers, comm, [Server("ps0", host, ASYNC_SERVER, tuple(args))], info=info,
                communicator=ASYNC_COMMUNICATOR)
