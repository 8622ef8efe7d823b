"""Plan of scheme inart (pure): InArt's two phases turned into trees, switch entries, root
servers and the workers' client configurations.

    servers   K parameter server hosts (options.servers, else placement below); they run no
              worker: a root server and a worker would both bind the protocol's UDP port
    phases    split.plan_inart (phase 1 split <-> phase 2 routing; baselines.py's routers
              for routing "shortest_path" and "none") -> shares alpha_k, and per PS each
              worker's aggregation node (a switch or the PS) and the paths
    trees     PS k's tree is job `job + k`, rooted at the PS host (control/agg_tree
              .build_server_tree): the switches it uses aggregate their workers' streams
              and send the partial sum to the PS, which completes the sum and sends the
              RESULT back down (root_server.py)
    entries   control/agg_entries for the switch points; with paths "planned" also /32
              routes that carry every stream along its planned path (control/path_routes)
    comm      per worker: one ina ClientConfig per PS (same order as shares) and the
              shares; the worker cuts its quantized gradient into value ranges by them
    banks     with replan_interval_s set, a plan is bank 0 of two (switchover.bank_layout):
              its jobs, half of each switch's slots, groups and ids; `materialize` turns a
              later plan into the other bank's entries for controller.py
"""
from __future__ import annotations

import json
import math
from dataclasses import replace

import networkx as nx
import numpy as np

from control.agg_entries import DEFAULT_SLOTS, fit_slots, switch_commands
from control.agg_tree import build_server_tree, root_slot_ranges, switch_aggregation_address
from control.path_routes import Stream, path_routes, routed_path, with_base_routes
from schemes.base import Plan, Server
from schemes.ina.plan import (AUTO_WINDOW_MAX, AUTO_WINDOW_MIN, check_program, client_config,
                              program_k, rto_margin_ms, tree_record)
from schemes.inart.baselines import route_shortest
from schemes.inart.options import InartOptions
from schemes.inart.routing import aggregation_switches
from schemes.inart.split import InartPlan, plan_inart
from schemes.inart.switchover import bank_layout
from topologies.graph import hosts_by_dc
from workers.agg_packet import frame_bytes

COMMUNICATOR = "schemes.inart.communicator:InartCommunicator"
PROGRAM = "p4/aggregation.p4"
ROOT_SERVER = "schemes.inart.root_server"


def server_hosts(graph, o: InartOptions) -> list[str]:
    """The PS hosts: options.servers, else the last host of each datacenter in turn (then
    the next-to-last, ...) until num_servers; at least one host must stay a worker."""
    by_dc = hosts_by_dc(graph)
    every = [h for hs in by_dc.values() for h in hs]
    if o.servers is not None:
        unknown = [h for h in o.servers if h not in every]
        if unknown:
            raise ValueError(f"scheme_options.servers: {unknown} are not hosts of this topology "
                             f"(hosts: {', '.join(every)})")
        if len(set(o.servers)) != len(o.servers) or not o.servers:
            raise ValueError("scheme_options.servers: name each server host once, at least one")
        chosen = list(o.servers)
    else:
        queues = [list(reversed(hs)) for hs in by_dc.values()]
        chosen = []
        while len(chosen) < o.num_servers and any(queues):
            for q in queues:
                if q and len(chosen) < o.num_servers:
                    chosen.append(q.pop(0))
    if len(chosen) >= len(every):
        raise ValueError(f"scheme_options: {len(chosen)} parameter servers leave no host for a "
                         f"worker ({len(every)} hosts): lower num_servers or add hosts")
    return chosen


def phases(graph, workers, servers, o: InartOptions, seed: int) -> InartPlan:
    """Phase 1 and 2 with the router options.routing names (rounding drawn from seed)."""
    rng = np.random.default_rng(seed)
    if o.routing == "none":
        return plan_inart(graph, workers, servers, o, rng, switches={})
    switches = None
    if o.fallback == "ps":
        # memory is no limit to the plan: a switch may serve every PS, and the slots it
        # lacks fall back to the PS in the data plane (build: fit_slots)
        switches = {n: replace(b, points=len(servers))
                    for n, b in aggregation_switches(graph, o.model_copy(update={"window": 1})).items()}
    if o.routing == "shortest_path":
        return plan_inart(graph, workers, servers, o, rng, router=route_shortest, switches=switches)
    return plan_inart(graph, workers, servers, o, rng, switches=switches)


def auto_window(graph, workers, servers, k: int, slots: int) -> int:
    """ina's window rule (schemes/ina/plan.auto_window) over the longest worker-server round
    trip, then capped so that a switch holds one point per PS: slots // K as a power of two."""
    dist = {s: nx.single_source_dijkstra_path_length(graph, s, weight="delay_ms") for s in servers}
    rtt_s = max(2 * dist[s][w] for s in servers for w in workers) / 1000.0
    wan = [a["bandwidth_mbps"] for _, _, a in graph.edges(data=True) if a["kind"] == "wan"]
    rate = min(wan) if wan else min(a["bandwidth_mbps"] for _, _, a in graph.edges(data=True))
    bdp = rate * 1e6 / 8 * rtt_s / frame_bytes(k)
    w = 2 ** math.ceil(math.log2(max(bdp, 1.0)))
    fit = 2 ** int(math.log2(max(1, slots // len(servers))))
    return int(min(AUTO_WINDOW_MAX, fit, max(AUTO_WINDOW_MIN, w)))


def build(graph, scenario, o: InartOptions):
    """(workers, servers, InartPlan, trees, k, options with the window resolved): what plan
    and model share."""
    check_program(scenario)
    k = program_k(scenario)
    if o.k is not None and o.k != k:
        raise ValueError(f"scheme_options.k is {o.k} but the switches are compiled with "
                         f"AGG_K={k}: set switch.defines.AGG_K: {o.k} or drop one")
    if o.job + o.num_servers - 1 > 255 or (o.servers and o.job + len(o.servers) - 1 > 255):
        raise ValueError(f"scheme_options.job: {o.job} + one job per server must stay <= 255")
    servers = server_hosts(graph, o)
    every = [h for hs in hosts_by_dc(graph).values() for h in hs]
    bad = [h for h in o.idle_hosts if h not in every or h in servers]
    if bad:
        raise ValueError(f"scheme_options.idle_hosts: {bad} are not hosts of this topology or are "
                         f"servers (servers: {', '.join(servers)})")
    workers = sorted((h for h in every if h not in servers and h not in o.idle_hosts),
                     key=lambda n: graph.nodes[n]["worker_index"])
    if not workers:
        raise ValueError("scheme_options: servers and idle_hosts leave no host for a worker")
    slots = bank_slots(scenario, o, len(servers))
    if o.replan_interval_s is not None:   # the planning's switch memory: one bank's
        o = o.model_copy(update={"slots": min(o.slots, slots)})
    if o.window == "auto":
        o = o.model_copy(update={"window": auto_window(graph, workers, servers, k, slots)})
    ip = phases(graph, workers, servers, o, scenario.seed)
    trees = server_trees(graph, ip, o, bank_jobs(o, len(servers), 0), slots)
    return workers, servers, ip, trees, k, o


def bank_slots(scenario, o: InartOptions, k: int) -> int:
    """Slots of a switch one plan may use: all of them, or with re-planning on, one bank's
    half (the other is the next plan's, switchover.py)."""
    slots = int(scenario.switch.defines.get("AGG_SLOTS", DEFAULT_SLOTS))
    return slots if o.replan_interval_s is None else bank_layout(o.job, k, slots, 0).slots


def bank_jobs(o: InartOptions, k: int, bank: int) -> tuple[int, ...]:
    """PS k's job in bank `bank` (bank 0 without re-planning)."""
    return tuple(range(o.job + bank * k, o.job + (bank + 1) * k))


def server_trees(graph, ip: InartPlan, o: InartOptions, jobs, slots: int):
    """PS k's tree as job jobs[k], rooted at its host. With fallback "ps", a point gets the
    slots left at its switch (of `slots`, in PS order: fit_slots) and bypasses the rest of
    its window to the PS."""
    def trees(short):
        return [build_server_tree(graph, jobs[i], srv, dict(ip.routing.node[srv]), o.window,
                                  point_slots=short[i])
                for i, srv in enumerate(ip.servers)]
    whole = trees([{}] * len(ip.servers))
    short = fit_slots(graph, whole, slots=slots)
    return trees(short) if any(short) and o.fallback == "ps" else whole


def streams(graph, routing, servers) -> list[Stream]:
    """Every planned stream, PS by PS: workers to their node, then used switches to the PS."""
    out = []
    for srv in servers:
        srv_ip = graph.nodes[srv]["ip"]
        for w, node in routing.node[srv].items():
            dst = srv_ip if node == srv else switch_aggregation_address(graph, node)
            out.append(Stream(tuple(routing.worker_path[srv][w]), dst))
        for _, path in sorted(routing.switch_path[srv].items()):
            out.append(Stream(tuple(path), srv_ip))
    return out


def root_server(graph, tree, k: int) -> Server:
    """The PS process of a tree: one set of children, or per slot range where switch points
    hold fewer slots than the window (the rest falls back to the PS: root_slot_ranges)."""
    root = tree.points[tree.root]
    ranges = root_slot_ranges(tree)
    if len(ranges) == 1:    # (a point with no slots at all makes its workers the children)
        (_, _, kids), = ranges
        children = [{"index": i, "address": a} for i, a in kids]
        who = ("--fan-in", str(len(kids)), "--children", json.dumps(children, separators=(",", ":")))
    else:
        spec = [{"start": a, "end": b, "children": [{"index": i, "address": ad} for i, ad in kids]}
                for a, b, kids in ranges]
        who = ("--ranges", json.dumps(spec, separators=(",", ":")))
    return Server(f"ps{tree.job}", root.switch, ROOT_SERVER,
                  ("--ip", root.address, "--job", str(tree.job), "--slots", str(tree.window),
                   "--k", str(k), *who), ends_by_signal=True)


def plan(graph, scenario, o: InartOptions) -> Plan:
    workers, servers, ip, _, k, o = build(graph, scenario, o)
    p = materialize(graph, scenario, o, ip, k, bank=0)
    for sw, es in p.runtime["routes"].items():   # the first plan's routes go in with it
        p.switch_commands.setdefault(sw, []).extend(e.command() for e in es)
    p.runtime.update(options=o, k=k)
    return p


def materialize(graph, scenario, o: InartOptions, ip: InartPlan, k: int, bank: int = 0) -> Plan:
    """One plan's trees as bank `bank`'s jobs: their switch entries (switch_commands: the
    aggregation points only), root servers, the workers' configurations and the record;
    runtime["routes"]: the /32 path routes (switch -> RouteEntry), apart because a new plan
    replaces the old one's instead of adding beside them."""
    servers, workers = list(ip.servers), list(ip.workers)
    total = int(scenario.switch.defines.get("AGG_SLOTS", DEFAULT_SLOTS))
    if o.replan_interval_s is None:
        trees = server_trees(graph, ip, o, bank_jobs(o, len(servers), 0), total)
        commands = switch_commands(graph, trees, slots=total)
    else:
        lay = bank_layout(o.job, len(servers), total, bank)
        trees = server_trees(graph, ip, o, lay.jobs, lay.slots)
        commands = switch_commands(graph, trees, slots=lay.slots, slot_base=lay.slot_base,
                                   first_group=lay.first_group, first_rid=lay.first_rid)
    info_paths: dict = {"mode": o.paths}
    route_entries: dict = {}
    if o.paths == "planned":
        planned = streams(graph, ip.routing, servers)
        routes = path_routes(graph, planned)
        route_entries = routes.entries
        tables = with_base_routes(graph, routes)
        off = [{"planned": list(s.path), "routed": list(routed_path(graph, tables, s.path[0], s.dst_ip))}
               for s in planned]
        info_paths.update(route_entries=sum(len(es) for es in routes.entries.values()),
                          conflicts=routes.conflicts,
                          off_plan=[x for x in off if x["planned"] != x["routed"]])
    margin_s = rto_margin_ms(o, graph, trees[0]) / 1000.0
    comm = {w: {"clients": [client_config(graph, scenario, t, o, w, k) for t in trees],
                "shares": list(ip.shares), "clip": scenario.workload.clip,
                "rto_margin_s": margin_s} for w in workers}
    fallback = {t.job: {p.switch: t.slots_at(p) for p in t.points.values()
                        if p.level != "server" and t.slots_at(p) < t.window} for t in trees}
    info = {"k": k, "window": o.window, "fallback_slots": fallback,
            "jobs": [t.job for t in trees], "server_hosts": servers,
            "shares": list(ip.shares), "streams": ip.routing.streams(), "routing": o.routing,
            "fan_in": ip.routing.fan_in(), "paths": info_paths,
            "trees": [r for t in trees for r in tree_record(t)],
            "planning": {"converged": ip.converged, "chosen_round": ip.chosen,
                         "ingress_mbps": list(ip.ingress_mbps), "method": ip.routing.method,
                         "repaired": [list(r) for r in ip.routing.repaired]}}
    return Plan(workers, comm, [root_server(graph, t, k) for t in trees],
                switch_commands=commands, info=info,
                runtime={"inart": ip, "routes": route_entries, "bank": bank,
                         "agg_commands": {sw: list(c) for sw, c in commands.items()}})
