"""Plan of schemes ina and geo-ina (pure): the job's aggregation tree, the switch entries
that program it, and each worker's client configuration.

    tree      control/agg_tree.build_tree: flat (ina: every worker a child of one switch)
              or hierarchical by location (geo-ina: rack, datacenter, global levels)
    entries   control/agg_entries.switch_commands: runtime CLI lines for every switch
    comm      per worker: ClientConfig (aggregation address, child index, fan-in, window,
              timeouts in emulated seconds), clip, RTO margin

Switch program: these schemes need p4/aggregation.p4 (Scheme.program: chosen when the
scenario names none); a scenario that names p4/forward.p4 is refused with what to change.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import networkx as nx

from control.agg_entries import DEFAULT_SLOTS, switch_commands
from control.agg_tree import build_tree, way_up
from schemes.base import Plan
from schemes.ina.options import InaOptions
from workers.agg_packet import frame_bytes
from workers.ina_client import ClientConfig

COMMUNICATOR = "schemes.ina.communicator:InaCommunicator"
PROGRAM = "p4/aggregation.p4"


AUTO_WINDOW_MIN, AUTO_WINDOW_MAX = 64, 1024


def auto_window(graph, tree, k: int, slots: int | None = None) -> int:
    """Packets per worker in flight that fill the slowest WAN link over the longest
    worker -> root -> worker round trip (dilated graph), as a power of two in 64..1024,
    and no more than a switch's slots allow for the points it hosts (`slots`: the
    program's AGG_SLOTS). The congestion window (workers/congestion.py) keeps a large
    window from bursting into the WAN queues; without it 512 was the safe cap."""
    rtt_s = longest_rtt_ms(graph, tree) / 1000.0
    wan = [a["bandwidth_mbps"] for _, _, a in graph.edges(data=True) if a["kind"] == "wan"]
    rate = min(wan) if wan else min(a["bandwidth_mbps"] for _, _, a in graph.edges(data=True))
    bdp = rate * 1e6 / 8 * rtt_s / frame_bytes(k)
    w = 2 ** math.ceil(math.log2(max(bdp, 1.0)))
    per_switch = max(Counter(p.switch for p in tree.points.values()).values())
    fit = 2 ** int(math.log2((slots or DEFAULT_SLOTS) // per_switch))
    return int(min(AUTO_WINDOW_MAX, fit, max(AUTO_WINDOW_MIN, w)))


def longest_rtt_ms(graph, tree) -> float:
    """Longest worker -> root -> worker round trip through the tree (dilated graph, ms): up
    from aggregation point to aggregation point and back down them, each leg on its
    shortest path. For a tree whose points lie on the workers' paths to the root this is
    the direct round trip; a plan may aggregate a worker at another datacenter's point
    (inart at `bench schemes`' point: a Frankfurt worker on Tokyo's rack for the Washington
    server, 398 ms against 91 ms real-world), and with the direct one the other workers'
    timers fired every iteration on chunks that waited for its contributions."""
    return max(sum(2 * nx.shortest_path_length(graph, a, p.switch, weight="delay_ms")
                   for a, p, _ in way_up(tree, w)) for w in tree.workers)


def rto_floor_ms(opts: InaOptions, graph, tree) -> float:
    """No timeout below the tree's longest round trip + the margin (dilated ms).

    A worker whose chunk is the last of its slot gets the result within its own LAN
    round trip, so a lagging worker's SRTT (measured: 7 ms in a 1.65 s tree) says nothing
    about when its next chunk, sent earlier than someone else's, can complete. Without
    the floor such a worker times out early, cuts its congestion window, lags more, and
    the whole job waits for it (geo-ina bench at 50 Mbps: 4.4 s instead of 1.6 s)."""
    return longest_rtt_ms(graph, tree) + rto_margin_ms(opts, graph, tree)


def rto_margin_ms(opts: InaOptions, graph, tree) -> float:
    if opts.rto_margin_ms != "auto":
        return float(opts.rto_margin_ms)
    return max(100.0, 0.5 * longest_rtt_ms(graph, tree))


def program_k(scenario) -> int:
    """k the switches are compiled with (their AGG_K define, default 32)."""
    return int(scenario.switch.defines.get("AGG_K", 32))


def check_program(scenario) -> None:
    prog = Path(scenario.switch.program).name
    if prog == "forward.p4":
        raise ValueError(f"scheme {scenario.scheme} aggregates in the switches but switch.program is "
                         f"{scenario.switch.program}: remove switch.program from the scenario (then "
                         "p4/aggregation.p4 is chosen) or set it to p4/aggregation.p4")


MAX_RTO_S = 10.0   # real-world seconds: the backed-off timeout's ceiling (workers/rtt.py's default)


def client_config(graph, scenario, tree, o: InaOptions, host: str, k: int) -> dict:
    """One worker's ClientConfig fields; timeouts in emulated seconds, never below the
    tree's longest round trip + the margin (rto_floor_ms)."""
    s = scenario.time_dilation
    floor_s = rto_floor_ms(o, graph, tree) / 1000.0
    initial = max(o.timeout_ms * s / 1000.0, floor_s)
    return asdict(ClientConfig.for_worker(
        tree, host, k=k, initial_rto=initial,
        min_rto=max(min(o.min_rto_ms, o.timeout_ms * s) / 1000.0, floor_s),
        # the ceiling is real-world time too (10 s), else s > 10 puts it below the first RTO
        max_rto=max(MAX_RTO_S * s, initial),
        max_retransmissions=o.max_retransmissions, congestion_control=o.congestion_control,
        congestion_law=o.congestion_law, loss_response=o.loss_response, time_dilation=s,
        core=o.client_core))


def tree_for(shape: str, graph, scenario, o: InaOptions):
    """(aggregation tree with its window, k) of a tree shape: what plan and model share."""
    check_program(scenario)
    k = program_k(scenario)
    if o.k is not None and o.k != k:
        raise ValueError(f"scheme_options.k is {o.k} but the switches are compiled with "
                         f"AGG_K={k}: set switch.defines.AGG_K: {o.k} or drop one")
    tree = build_tree(graph, job=o.job, scheme=shape, root=o.root,
                      window=64 if o.window == "auto" else o.window)
    if o.window == "auto":
        tree.window = auto_window(graph, tree, k)
    return tree, k


def plan_for(shape: str):
    """The plan function of a tree shape: "ina" (flat) or "geo-ina" (by location)."""
    def plan(graph, scenario, o: InaOptions) -> Plan:
        tree, k = tree_for(shape, graph, scenario, o)
        workers = sorted(tree.workers, key=lambda n: graph.nodes[n]["worker_index"])
        margin_s = rto_margin_ms(o, graph, tree) / 1000.0
        comm = {h: {"client": client_config(graph, scenario, tree, o, h, k),
                    "clip": scenario.workload.clip, "rto_margin_s": margin_s} for h in workers}
        root = tree.points[tree.root]
        return Plan(workers, comm, switch_commands=switch_commands(graph, [tree]),
                    info={"k": k, "window": tree.window, "job": o.job, "root": root.switch,
                          "aggregation_points": len(tree.points), "levels": tree.depth(),
                          "tree": tree_record(tree)})
    return plan


def tree_record(tree) -> list[dict]:
    """The aggregation tree as plain data (summary.json's "app", the network figure):
    per point its switch, level, parent point and children (hosts or child switches)."""
    return [{"id": p.id, "switch": p.switch, "level": p.level, "parent": p.parent,
             "children": [c.node for c in p.children]} for p in tree.points.values()]
