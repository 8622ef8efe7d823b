"""Aggregation trees from the topology graph (pure functions, docs/protocol.md).

geo-ina (hierarchical, L3DML-like): every rack with workers of the job aggregates at
its rack switch (address 10.D.R.254); every datacenter other than the root's
aggregates its racks' partial sums at its gateway (10.D.0.254); the root datacenter's
gateway aggregates everything at the global address 10.0.0.<root D>. The root
datacenter's racks send straight to the global point, so no switch hosts two levels
and no packet has to be recirculated.

ina (flat, SwitchML-like): one aggregation point at the root gateway; every worker
is its child, wherever it is.

Rooted at a server (InArt, `build_server_tree`): the root point is a host running
schemes/inart/root_server.py; every worker is a child either of that host directly or of
one switch point (its rack or datacenter aggregation address, one level), as a planner
assigned them. A switch point's parent is the host's IP. A switch point may have memory for
fewer slots than the job's window (`point_slots`): contributions for its other slots go on to
the server unaggregated (p4/aggregation.p4's agg_point_bypass), each worker the server's child
`bypass_base + its index at the point`, so the server's children differ by slot range
(`root_slot_ranges`).

The root is a scenario option; by default the datacenter whose gateway has the
smallest total RTT to the other gateways (ties: lowest index).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from topologies import addressing as addr

MAX_FAN_IN = 32          # width of the switch's bitmap register
LEVELS = ("rack", "dc", "global", "server")


@dataclass(frozen=True)
class Child:
    node: str            # host or switch node id
    address: str         # where results for it are sent (host IP or its aggregation address)
    mac: str
    point: str | None    # child aggregation point id, None for a worker


@dataclass
class AggPoint:
    id: str              # "<job>:<level>:<switch>"
    job: int
    level: str
    switch: str
    address: str
    children: list[Child] = field(default_factory=list)
    parent: str | None = None
    index_at_parent: int = 0
    num_slots: int | None = None     # slots this point holds; None: the tree's window
    bypass_base: int = 0             # first index at the parent of its bypassed workers

    @property
    def fan_in(self) -> int:
        return len(self.children)

    @property
    def is_root(self) -> bool:
        return self.parent is None


@dataclass(frozen=True)
class WorkerBinding:
    """What a worker's client needs: where to send and its index there."""
    host: str
    ip: str
    agg_address: str
    sender: int
    fan_in: int


@dataclass
class AggTree:
    job: int
    scheme: str
    root: str                       # id of the root point
    window: int                     # slots of the job at every point
    points: dict[str, AggPoint]
    workers: dict[str, WorkerBinding]

    def slots_at(self, point: AggPoint) -> int:
        """Slots `point` holds in its switch's registers (the rest, if any, it bypasses)."""
        return self.window if point.num_slots is None else point.num_slots

    def point_at(self, switch: str) -> list[AggPoint]:
        return [p for p in self.points.values() if p.switch == switch]

    def depth(self) -> int:
        """Number of aggregation levels a worker's contribution passes through."""
        return max(self._depth_of(pid) for pid in self.points if self._is_leaf_point(pid))

    def _is_leaf_point(self, pid: str) -> bool:
        return all(c.point is None for c in self.points[pid].children)

    def _depth_of(self, pid: str) -> int:
        n = 1
        while self.points[pid].parent is not None:
            pid, n = self.points[pid].parent, n + 1
        return n


def way_up(tree, worker: str):
    """The legs of `worker`'s contribution up `tree`, leaf to root: (the node it leaves,
    the point it reaches, the id of the point it leaves: None for the worker itself). The
    result comes back down the same legs."""
    here = next((p for p in tree.points.values()
                 if any(c.node == worker and c.point is None for c in p.children)), None)
    node, leaving = worker, None
    while here is not None:
        yield node, here, leaving
        node, leaving = here.switch, here.id
        here = tree.points[here.parent] if here.parent is not None else None


def _gateways(g: nx.Graph) -> dict[int, str]:
    return {a["dc_index"]: n for n, a in g.nodes(data=True) if a["role"] == "gateway"}


def _rtt_ms(g: nx.Graph, a: str, b: str) -> float:
    return 2 * nx.shortest_path_length(g, a, b, weight="delay_ms")


def default_root_dc(g: nx.Graph, dcs: list[int] | None = None) -> int:
    """The datacenter (index) whose gateway has the best total RTT to the others."""
    gws = _gateways(g)
    dcs = sorted(dcs or gws)

    def total(d):   # one Dijkstra per datacenter, not one per pair (hundreds of DCs)
        dist = nx.single_source_dijkstra_path_length(g, gws[d], weight="delay_ms")
        return sum(2 * dist[gws[o]] for o in dcs if o != d)
    return min(dcs, key=lambda d: (total(d), d))


def resolve_root(g: nx.Graph, root, dcs: list[int]) -> int:
    """root: None (default rule), a dc index, or a dc name."""
    if root is None:
        return default_root_dc(g, dcs)
    by_name = {a["dc"]: a["dc_index"] for _, a in g.nodes(data=True) if a["role"] == "gateway"}
    if isinstance(root, str) and root in by_name:
        root = by_name[root]
    if root not in _gateways(g):
        raise ValueError(f"aggregation root {root!r} is not a datacenter of this topology "
                         f"(names: {sorted(by_name)}; indices: {sorted(_gateways(g))})")
    if root not in dcs:
        raise ValueError(f"aggregation root {root!r} has no workers of this job; pick one of {dcs}")
    return root


def _check_fan_in(p: AggPoint) -> None:
    if not 1 <= p.fan_in <= MAX_FAN_IN:
        raise ValueError(f"aggregation point {p.id} has fan-in {p.fan_in}; the switch bitmap holds "
                         f"1..{MAX_FAN_IN} children: use scheme geo-ina or fewer workers per rack")


def build_tree(g: nx.Graph, job: int = 1, scheme: str = "geo-ina", workers: list[str] | None = None,
               root=None, window: int = 64) -> AggTree:
    """The aggregation tree of one job over `workers` (default: every host)."""
    if scheme not in ("geo-ina", "ina"):
        raise ValueError(f"unknown aggregation scheme {scheme!r}: use 'geo-ina' or 'ina'")
    if not 0 <= job <= 255:
        raise ValueError(f"job id must fit a byte (0..255), got {job}")
    hosts = list(workers) if workers is not None else \
        [n for n, a in g.nodes(data=True) if a["role"] == "host"]
    if not hosts:
        raise ValueError("a job needs at least one worker")
    for h in hosts:
        if h not in g or g.nodes[h]["role"] != "host":
            raise ValueError(f"worker {h!r} is not a host of this topology")
    hosts.sort(key=lambda n: g.nodes[n]["worker_index"])
    dcs = sorted({g.nodes[h]["dc_index"] for h in hosts})
    root_dc = resolve_root(g, root, dcs)
    gws = _gateways(g)
    points: dict[str, AggPoint] = {}

    def new_point(level: str, switch: str, address: str) -> AggPoint:
        p = AggPoint(f"{job}:{level}:{switch}", job, level, switch, address)
        points[p.id] = p
        return p

    def host_child(h: str) -> Child:
        a = g.nodes[h]
        return Child(h, a["ip"], a["mac"], None)

    def adopt(parent: AggPoint, child: AggPoint) -> None:
        child.parent, child.index_at_parent = parent.id, parent.fan_in
        parent.children.append(Child(child.switch, child.address, g.nodes[child.switch]["mac"], child.id))

    root_pt = new_point("global", gws[root_dc], addr.global_aggregation_ip(root_dc))
    if scheme == "ina":
        for h in hosts:
            root_pt.children.append(host_child(h))
    else:
        for d in dcs:
            dc_pt = root_pt if d == root_dc else new_point("dc", gws[d], addr.dc_aggregation_ip(d))
            racks = sorted({g.nodes[h]["rack"] for h in hosts if g.nodes[h]["dc_index"] == d})
            for r in racks:
                rack_hosts = [h for h in hosts if g.nodes[h]["dc_index"] == d and g.nodes[h]["rack"] == r]
                sw = next(n for n in g.neighbors(rack_hosts[0]) if g.nodes[n]["role"] == "rack_switch")
                rack_pt = new_point("rack", sw, addr.rack_aggregation_ip(d, r))
                rack_pt.children = [host_child(h) for h in rack_hosts]
                adopt(dc_pt, rack_pt)
            if dc_pt is not root_pt:
                adopt(root_pt, dc_pt)
    for p in points.values():
        _check_fan_in(p)
    bindings = {}
    for p in points.values():
        for i, c in enumerate(p.children):
            if c.point is None:
                bindings[c.node] = WorkerBinding(c.node, c.address, p.address, i, p.fan_in)
    return AggTree(job, scheme, root_pt.id, window, points, bindings)



def switch_aggregation_address(g: nx.Graph, switch: str) -> str:
    """The aggregation address a switch owns: 10.D.R.254 at a rack switch, 10.D.0.254 at a
    gateway (both inside prefixes the switch already owns, so routing reaches them)."""
    a = g.nodes[switch]
    if a["role"] == "rack_switch":
        return addr.rack_aggregation_ip(a["dc_index"], a["rack"])
    if a["role"] == "gateway":
        return addr.dc_aggregation_ip(a["dc_index"])
    raise ValueError(f"{switch!r} is a {a['role']}, not a switch that can aggregate")


def build_server_tree(g: nx.Graph, job: int, server: str, assignment: dict[str, str],
                      window: int = 64, point_slots: dict[str, int] | None = None) -> AggTree:
    """The tree of one job rooted at host `server`: `assignment` maps every worker to its
    aggregation node, `server` itself (the worker sends straight to the server) or a
    switch (the worker is a child of that switch's point, whose parent is the server).
    `point_slots` maps switches to the slots their point holds, 0..window (default: the
    window); slots beyond fall back to the server (module doc)."""
    if not 0 <= job <= 255:
        raise ValueError(f"job id must fit a byte (0..255), got {job}")
    if server not in g or g.nodes[server]["role"] != "host":
        raise ValueError(f"server {server!r} is not a host of this topology")
    if not assignment:
        raise ValueError("a job needs at least one worker")
    if server in assignment:
        raise ValueError(f"server {server} cannot also be a worker of its own job (both ends of "
                         "the protocol bind the same UDP port): place the server on another host")
    for w, node in assignment.items():
        if w not in g or g.nodes[w]["role"] != "host":
            raise ValueError(f"worker {w!r} is not a host of this topology")
        if node != server and (node not in g or g.nodes[node]["role"] == "host"):
            raise ValueError(f"worker {w}: aggregation node {node!r} is neither the server "
                             f"{server} nor a switch")
    workers = sorted(assignment, key=lambda n: g.nodes[n]["worker_index"])
    sa = g.nodes[server]
    root = AggPoint(f"{job}:server:{server}", job, "server", server, sa["ip"])
    points = {root.id: root}
    switch_points: dict[str, AggPoint] = {}
    for w in workers:
        node = assignment[w]
        child = Child(w, g.nodes[w]["ip"], g.nodes[w]["mac"], None)
        if node == server:
            root.children.append(child)
            continue
        if node not in switch_points:
            level = "rack" if g.nodes[node]["role"] == "rack_switch" else "dc"
            p = AggPoint(f"{job}:{level}:{node}", job, level, node, switch_aggregation_address(g, node))
            switch_points[node] = points[p.id] = p
        switch_points[node].children.append(child)
    # children of the server in worker order: direct workers first, then the switch points
    # by their first worker
    for p in sorted(switch_points.values(), key=lambda p: g.nodes[p.children[0].node]["worker_index"]):
        p.parent, p.index_at_parent = root.id, root.fan_in
        root.children.append(Child(p.switch, p.address, g.nodes[p.switch]["mac"], p.id))
    for p in points.values():
        _check_fan_in(p)
    _limit_slots(root, switch_points, window, point_slots or {})
    bindings = {}
    for p in points.values():
        for i, c in enumerate(p.children):
            if c.point is None:
                bindings[c.node] = WorkerBinding(c.node, c.address, p.address, i, p.fan_in)
    return AggTree(job, "inart", root.id, window, points, bindings)


def _limit_slots(root: AggPoint, switch_points: dict[str, AggPoint], window: int,
                 point_slots: dict[str, int]) -> None:
    """Give the points of `point_slots` their slots and, where fewer than the window, a block
    of indices at the server for their workers after the server's own children."""
    next_index = root.fan_in
    for sw, n in sorted(point_slots.items(), key=lambda kv: switch_points[kv[0]].index_at_parent
                        if kv[0] in switch_points else -1):
        if sw not in switch_points:
            raise ValueError(f"point_slots: {sw!r} aggregates no worker of job {root.job} "
                             f"(switch points: {sorted(switch_points)})")
        if not isinstance(n, int) or not 0 <= n <= window:
            raise ValueError(f"point_slots.{sw}: {n!r} slots; give 0..{window} (the job's window)")
        p = switch_points[sw]
        p.num_slots = n
        if n < window:
            p.bypass_base, next_index = next_index, next_index + p.fan_in
    if next_index > MAX_FAN_IN:
        raise ValueError(f"point_slots: the server would have {next_index} children where switch "
                         f"points bypass it (its own {root.fan_in} and their workers), more than "
                         f"the bitmap's {MAX_FAN_IN}: give those switches the whole window or send "
                         "fewer workers through them")


def root_slot_ranges(tree: AggTree) -> list[tuple[int, int, list[tuple[int, str]]]]:
    """The root's children per slot range, [(start, end, [(index, address)])] covering the
    window: a child switch point where it holds the slots, its workers (indices bypass_base
    + i) where it bypasses them. One range when no point bypasses."""
    root = tree.points[tree.root]
    kids = [tree.points[c.point] for c in root.children if c.point is not None]
    cuts = sorted({0, tree.window} | {tree.slots_at(p) for p in kids})
    out = []
    for start, end in zip(cuts, cuts[1:]):
        children = []
        for i, c in enumerate(root.children):
            p = tree.points[c.point] if c.point is not None else None
            if p is None or tree.slots_at(p) >= end:
                children.append((i, c.address))
            else:
                children += [(p.bypass_base + j, w.address) for j, w in enumerate(p.children)]
        out.append((start, end, sorted(children)))
    return out


def bypass_fan_in(tree: AggTree, point: AggPoint) -> int:
    """The fan-in a bypassing point writes into the packets it forwards (informational, as
    every header fan_in: the root uses its range's): the root's at the first bypassed slot."""
    n = tree.slots_at(point)
    return next(len(kids) for start, end, kids in root_slot_ranges(tree) if start <= n < end)


def hosted_by_switch(g: nx.Graph, point: AggPoint) -> bool:
    """False for a point a host runs (the root of a server tree)."""
    return g.nodes[point.switch]["role"] != "host"
