"""A straggler policy's allocation (schemes/l3dml/policies.py, on the flow model of the
run's scenario) turned into switch entries (pure): each datacenter's share of its partial
sums per candidate path becomes a contiguous slot range per path (a slot is a fixed share
of every tensor: slot = chunk number mod window), and every range off the route gets
agg_path entries along its path (control/agg_entries.slot_path_commands); a datacenter's
rate cap paces each of its workers (a chunk's partial sum leaves the gateway when the last
of its workers' chunks is in, so the workers' rate is the partial sums' rate)."""
from __future__ import annotations

import math

import networkx as nx

from control.agg_entries import TimerLoop, slot_path_commands
from workers.agg_packet import frame_bytes


def real_graph(g: nx.Graph) -> nx.Graph:
    """The real-world graph a dilated one came from (testbed/dilation.py keeps the real
    values as real_*): the flow model takes real-world rates and delays."""
    if g.graph.get("dilated", 1.0) == 1.0:
        return g
    out = g.copy()
    for _, _, a in out.edges(data=True):
        a["bandwidth_mbps"], a["delay_ms"], a["jitter_ms"] = \
            a["real_bandwidth_mbps"], a["real_delay_ms"], a["real_jitter_ms"]
    out.graph["dilated"] = 1.0
    return out


def slot_ranges(split, window: int) -> list[tuple[int, int, int]]:
    """[(lo, hi, path index)]: contiguous slot ranges of 0..window-1 in the split's
    proportions (largest remainder, so they add up to the window; a path whose share rounds
    to no slot gets none), in path order."""
    if window < 1:
        raise ValueError(f"window must be >= 1 slot (got {window})")
    if any(f < 0 for f in split) or not math.isclose(sum(split), 1.0, rel_tol=1e-6):
        raise ValueError(f"split {tuple(split)} must be fractions >= 0 adding up to 1")
    exact = [f * window for f in split]
    counts = [math.floor(x) for x in exact]
    for i in sorted(range(len(split)), key=lambda i: (counts[i] - exact[i], i))[:window - sum(counts)]:
        counts[i] += 1
    out, lo = [], 0
    for i, n in enumerate(counts):
        if n:
            out.append((lo, lo + n - 1, i))
            lo += n
    return out


def worker_caps_pps(graph, allocation, k: int, dilation: float) -> dict[int, float]:
    """{datacenter: packets/s on the emulation's clock} of the allocation's rate caps
    (real-world bps of the partial sums: frames of k values; the emulation runs 1/dilation
    of real rates). Datacenters without a cap are left out."""
    return {dc: a.rate_bps / dilation / (8 * frame_bytes(k))
            for dc, a in allocation.items() if a.rate_bps is not None}


def chunk_synchronous(iteration, allocation) -> tuple[dict[int, float], dict[int, float]]:
    """({dc: start delay, s}, {dc: rate cap, bps}) that make every datacenter's chunk j reach
    the root with the last datacenter's chunk j, in real-world units: the datacenter whose
    first chunk arrives last (start + route delay) sets the pace; the others wait until their
    first chunk would arrive with its, and all are capped at its rate (its allocation's cap,
    its paths' sum with a split). The allocation's own caps aim at one common arrival of the
    *last* chunk from each one's own start, which geo-ina's shared slot window cannot honour:
    a paced datacenter that starts early runs chunks ahead of the last one, and the root holds
    their slots."""
    arrive = {s.dc: s.start_s + iteration.path_delay_s(s.paths[0]) for s in iteration.streams}
    last = max(iteration.streams, key=lambda s: arrive[s.dc])
    a = allocation[last.dc]
    rate = a.rate_bps if a.rate_bps is not None else \
        sum(f * iteration.path_rate_bps(p) for f, p in zip(a.split, last.paths) if f > 0)
    delays = {s.dc: arrive[last.dc] - arrive[s.dc] for s in iteration.streams}
    return delays, {s.dc: rate for s in iteration.streams}


def path_entries(graph, tree, iteration, allocation, loops: dict[str, TimerLoop]) -> tuple[dict, list]:
    """(switch -> agg_path commands, [per datacenter: its split, slot ranges and rate cap])
    for a flow-model iteration's allocation on geo-ina's tree (the same gateways)."""
    commands: dict[str, list[str]] = {}
    record = []
    for s in iteration.streams:
        a = allocation[s.dc]
        point = next((p for p in tree.points.values() if p.switch == s.gateway and p.parent), None)
        ranges = slot_ranges(a.split, tree.window) if point else []
        record.append({"dc": s.dc, "gateway": s.gateway, "split": [round(f, 4) for f in a.split],
                       "paths": [list(p) for p in s.paths],
                       "slot_ranges": [[lo, hi, list(s.paths[i])] for lo, hi, i in ranges],
                       "rate_cap_mbps": None if a.rate_bps is None else a.rate_bps / 1e6})
        off_route = [(lo, hi, list(s.paths[i])) for lo, hi, i in ranges if i > 0]
        if off_route:
            for sw, cmds in slot_path_commands(graph, tree, point.id, off_route,
                                               loops.get(s.gateway)).items():
                commands.setdefault(sw, []).extend(cmds)
    return commands, record
