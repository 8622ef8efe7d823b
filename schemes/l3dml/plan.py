"""Plan of scheme l3dml (pure): geo-ina's tree, entries and worker configurations
(schemes/ina/plan.py), plus a timer loop at every switch whose aggregation point has its
parent in another datacenter (the WAN links), the agg_repair entries that use it, workers
that leave the switches the time to repair a loss before they re-send (docs/protocol.md,
"Lossless links between aggregation points"), and the straggler policy's decision as
slot-range paths and pacing (routing.py)."""
from __future__ import annotations

import networkx as nx

from control.agg_entries import TimerLoop, switch_commands
from schemes.base import Plan
from schemes.ina.plan import plan_for, tree_for
from schemes.ina.repair_delay import repair_pass
import schemes.l3dml.flowmodel as flowmodel
import schemes.l3dml.policies as policies
import schemes.l3dml.replan as replan
import schemes.l3dml.routing as routing
from schemes.l3dml.options import L3dmlOptions
from topologies.ports import timer_loop_ports

MIN_TIMEOUT_MS = 20.0
TIMEOUT_RTTS = 1.5


def repaired_points(graph, tree) -> list:
    """The points that repair the link to their parent: those whose parent is in another
    datacenter (a datacenter's point below the global one), i.e. the WAN links, where a
    loss costs a worker hundreds of ms; LAN links keep the workers' end-to-end repair."""
    dc = lambda sw: graph.nodes[sw].get("dc_index")
    return [p for p in tree.points.values()
            if p.parent is not None and dc(tree.points[p.parent].switch) != dc(p.switch)]


def link_rtt_ms(graph, a: str, b: str) -> float:
    """Round trip between two switches along the shortest path (dilated ms)."""
    return 2 * nx.shortest_path_length(graph, a, b, weight="delay_ms")


def repair_rtt_ms(graph, tree, path_rtt_ms: float = 0.0) -> float:
    """The longest round trip a repaired point's partial sum and its result take (dilated
    ms): its route to the parent, or a longer path a policy sends part of them on."""
    rtts = [link_rtt_ms(graph, p.switch, tree.points[p.parent].switch) for p in repaired_points(graph, tree)]
    return max(rtts + [path_rtt_ms], default=0.0)


def repair_timeout_ms(graph, tree, o: L3dmlOptions, path_rtt_ms: float = 0.0) -> float:
    """The timer loops' delay (dilated ms): the option, or 1.5 x the longest round trip
    (repair_rtt_ms; at least 20 ms). Option values are emulated ms, as the graph's."""
    if o.repair_timeout_ms != "auto":
        return float(o.repair_timeout_ms)
    return max(MIN_TIMEOUT_MS, TIMEOUT_RTTS * repair_rtt_ms(graph, tree, path_rtt_ms))


def worker_wait_s(timeout_ms: float, rtt_ms: float, attempts: int, backoff_mask: int) -> float:
    """How long a worker gives the switches before it re-sends (s, same clock as the
    arguments' ms): the `attempts`-th repair goes on the timer loop's pass repair_pass()
    (1, 2, 4, ...: docs/protocol.md), and its result is back one round trip later."""
    return (repair_pass(attempts, backoff_mask) * timeout_ms + rtt_ms) / 1000.0


def used_path_rtt_ms(graph, iteration, allocation) -> float:
    """The longest round trip (dilated graph) of a path an allocation sends anything on."""
    rtt = 0.0
    for s in iteration.streams:
        for f, path in zip(allocation[s.dc].split, s.paths):
            if f > 0 and len(path) > 1:
                rtt = max(rtt, 2 * sum(graph.edges[u, v]["delay_ms"] for u, v in zip(path, path[1:])))
    return rtt


def plan(graph, scenario, o: L3dmlOptions) -> Plan:
    base = plan_for("geo-ina")(graph, scenario, o)
    tree, _ = tree_for("geo-ina", graph, scenario, o)
    base.info["policy"] = o.policy
    it = decision = None
    if o.policy != "none":     # decided first: the repair's timeout covers the paths it uses
        real = routing.real_graph(graph)
        it = flowmodel.iteration_for(real, scenario, o)
        decision = replan.decide(it, policies.policy(o.policy), tree.window, o.sync, o.pace)
    path_rtt = used_path_rtt_ms(graph, it, decision.allocation) if decision else 0.0
    loops = repair(graph, tree, o, base, path_rtt) if o.repair else {}
    if decision:
        cmds = route(graph, scenario, tree, o, base, loops, it, decision)
        base.runtime["l3dml"] = {"iteration": it, "decision": decision, "tree": tree, "loops": loops,
                                 "path_commands": cmds, "lead_s": flowmodel.leads_s(real),
                                 "options": o}
    return base


def route(graph, scenario, tree, o: L3dmlOptions, base: Plan, loops, it, d: replan.Decision) -> dict:
    """The policy's decision `d` on the flow model's iteration `it` of the scenario
    (real-world graph), as slot ranges per path: agg_path entries added to the plan (and
    returned: switch -> commands), the workers paced, the allocation recorded."""
    cmds, record = routing.path_entries(graph, tree, it, d.allocation, loops)
    for sw, cs in cmds.items():
        base.switch_commands.setdefault(sw, []).extend(cs)
    model = {name: flowmodel.simulate(it, d.allocation if name == o.policy else policies.none(it))
             for name in ("none", o.policy)}
    base.info["allocation"] = record
    base.info["flow_model"] = {name: {"spread_s": m.spread_s, "completion_s": m.completion_s}
                               for name, m in model.items()}
    if o.pace:
        for h, pace in worker_pacing(graph, base.comm, d, base.info["k"], scenario.time_dilation).items():
            base.comm[h]["client"]["max_rate_pps"] = pace["max_rate_pps"]
            base.comm[h]["start_delay_s"] = pace["start_delay_s"]
        base.info["sync"] = {"mode": o.sync, "start_delay_s": d.delays_s,
                             "rate_cap_mbps": {dc: c / 1e6 for dc, c in d.caps_bps.items()}}
    return cmds


def worker_pacing(graph, workers, d: replan.Decision, k: int, dilation: float) -> dict[str, dict]:
    """worker -> {max_rate_pps, start_delay_s} of a decision, on the emulation's clock (its
    datacenter's cap as packets of k values, 0: none; its start delay in emulated s)."""
    caps = routing.worker_caps_pps(graph, replan.paced_allocation(d), k, dilation)
    out = {}
    for h in workers:
        dc = graph.nodes[h]["dc_index"]
        out[h] = {"max_rate_pps": caps.get(dc, 0.0), "start_delay_s": d.delays_s.get(dc, 0.0) * dilation}
    return out


def repair(graph, tree, o: L3dmlOptions, base: Plan, path_rtt_ms: float = 0.0) -> dict:
    """Timer loops and agg_repair entries on the plan; workers wait for the repairs.
    path_rtt_ms: the longest round trip of a path the policy uses (0: the routes only)."""
    points = repaired_points(graph, tree)
    timeout = repair_timeout_ms(graph, tree, o, path_rtt_ms)
    mask = 2 ** o.repair_backoff - 1
    loops = {p.switch: TimerLoop(*timer_loop_ports(graph, p.switch), backoff_mask=mask) for p in points}
    # a worker gives the switches `worker_waits_repairs` attempts before it re-sends. Why
    # not one: at 1 % WAN loss each way ~2 % of repairs are lost again, and a worker that
    # gave only one attempt declared those chunks lost, re-sent them and cut its window
    # (1-3 cuts an iteration, Tokyo's windows at 330-600 of 1024 slots: 1.23-1.46 x the
    # model at 100 Mbps, bench schemes' 1 MB point)
    wait_s = worker_wait_s(timeout, repair_rtt_ms(graph, tree, path_rtt_ms), o.worker_waits_repairs, mask)
    for c in base.comm.values():
        cl = c["client"]
        cl["reorder_extra"] = wait_s
        cl["min_rto"] = cl["min_rto"] + wait_s
        cl["initial_rto"] = max(cl["initial_rto"], cl["min_rto"])
        cl["max_rto"] = max(cl["max_rto"], cl["initial_rto"])
    base.switch_commands = switch_commands(graph, [tree], loops=loops)
    base.timer_loops = {sw: timeout for sw in loops}
    base.info.update(repair_timeout_ms=timeout, repair_switches=sorted(loops),
                     repair_backoff=o.repair_backoff, worker_wait_s=wait_s)
    return loops
