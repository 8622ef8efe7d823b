"""What a scheme's plan puts where, per datacenter, for the network figure (pure).

Read from the plan (schemes/base.Plan), never re-derived: its server processes and their
hosts (a server started with --upstream is a child of the server listening there: the
hier-ps tree), the aggregation tree that ina/geo-ina record in the plan's info ("tree":
points, their switches, parents and children), the ring order ("ring_order").
"""
from __future__ import annotations

from dataclasses import dataclass, field

LEVEL_WORDS = {"rack": "rack", "dc": "DC", "global": "global"}


@dataclass(frozen=True)
class SchemeView:
    roles: dict[int, tuple[str, ...]] = field(default_factory=dict)   # dc_index -> label lines
    tree: tuple[tuple[int, int], ...] = ()      # (child dc_index, parent dc_index) between datacenters
    root: int | None = None                     # dc_index of the tree's root
    tree_kind: str = ""                         # "aggregation" (switches) or "server"
    note: str = ""                              # one sentence for the caption
    server_only_hosts: dict[int, int] = field(default_factory=dict)   # dc_index -> hosts running no worker


def _dc(graph, node: str) -> int:
    return graph.nodes[node]["dc_index"]


def _arg(args: tuple[str, ...], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def _unique(pairs) -> tuple:
    seen, out = set(), []
    for p in pairs:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return tuple(out)


def aggregation_tree(graph, points: list[dict]) -> tuple[tuple[tuple[int, int], ...], int | None]:
    """Datacenter edges of a recorded aggregation tree: wherever a point's child (worker or
    child point) is in another datacenter than the point, child dc -> point's dc."""
    edges = []
    root = None
    for p in points:
        d = _dc(graph, p["switch"])
        if p.get("parent") is None:
            root = d
        edges += [(_dc(graph, c), d) for c in p["children"] if _dc(graph, c) != d]
    return _unique(edges), root


def server_tree(graph, servers) -> tuple[tuple[tuple[int, int], ...], int | None]:
    """Datacenter edges between servers started with --upstream IP:PORT and the server
    listening there (--host IP --port PORT)."""
    listening = {f"{_arg(s.args, '--host')}:{_arg(s.args, '--port')}": s for s in servers
                 if _arg(s.args, "--host") is not None}
    edges, parents = [], set()
    for s in servers:
        up = _arg(s.args, "--upstream")
        if up is None or up not in listening:
            continue
        parent = listening[up]
        parents.add(parent.name)
        if _dc(graph, s.host) != _dc(graph, parent.host):
            edges.append((_dc(graph, s.host), _dc(graph, parent.host)))
    roots = [s for s in servers if s.name in parents and _arg(s.args, "--upstream") is None]
    return _unique(edges), (_dc(graph, roots[0].host) if roots else None)


def _aggregation_roles(graph, points: list[dict]) -> dict[int, list[str]]:
    by_dc: dict[int, dict[str, int]] = {}
    for p in points:
        levels = by_dc.setdefault(_dc(graph, p["switch"]), {})
        levels[p["level"]] = levels.get(p["level"], 0) + 1
    out = {}
    for d, levels in by_dc.items():
        parts = []
        for level in ("rack", "dc", "global"):
            n = levels.get(level, 0)
            if n:
                parts.append(LEVEL_WORDS[level] + (f" x{n}" if n > 1 else ""))
        out[d] = ["aggregation: " + " + ".join(parts)]
    return out


def scheme_view(graph, plan, scheme_label: str, dc_names: dict[int, str]) -> SchemeView:
    """Per datacenter what the plan runs there, and the tree between datacenters if any."""
    roles: dict[int, list[str]] = {}
    servers_at: dict[int, list[str]] = {}
    for s in plan.servers:
        servers_at.setdefault(_dc(graph, s.host), []).append(s.name)
    for d, names in servers_at.items():
        roles.setdefault(d, []).append(("server: " if len(names) == 1 else "servers: ") + ", ".join(names))
    points = plan.info.get("tree") if isinstance(plan.info, dict) else None
    if points:
        for d, lines in _aggregation_roles(graph, points).items():
            roles.setdefault(d, []).extend(lines)
        tree, root = aggregation_tree(graph, points)
        kind = "aggregation"
        note = (f"Arrows: {scheme_label}'s aggregation tree between datacenters (child -> parent; "
                f"a logical edge, its packets follow the WAN's routes); the star marks the root.")
    else:
        tree, root = server_tree(graph, plan.servers)
        kind = "server" if tree else ""
        note = (f"Arrows: {scheme_label}'s server tree between datacenters (a datacenter's server "
                f"-> its parent server; logical edges); the star marks the top server's datacenter."
                if tree else _no_tree_note(graph, plan, scheme_label, dc_names))
    worker_set = set(plan.workers)
    hosts = [n for n, a in graph.nodes(data=True) if a["role"] == "host"]
    idle: dict[int, int] = {}
    for h in hosts:
        if h not in worker_set:
            idle[_dc(graph, h)] = idle.get(_dc(graph, h), 0) + 1
    return SchemeView({d: tuple(v) for d, v in roles.items()}, tree, root, kind, note, idle)


def _no_tree_note(graph, plan, label: str, dc_names: dict[int, str]) -> str:
    note = f"{label} has no aggregation tree in its plan"
    order = plan.info.get("ring_order") if isinstance(plan.info, dict) else None
    if order:
        visits = [_dc(graph, h) for h in order]
        seq = [d for k, d in enumerate(visits) if k == 0 or d != visits[k - 1]]
        if len(seq) > 1 and seq[-1] == seq[0]:
            seq.pop()
        names = [dc_names[d] for d in seq]
        note += f"; the ring visits the datacenters in the order {' -> '.join(names + names[:1])}"
    elif any(s.name == "scheduler" for s in plan.servers):
        note += "; its scheduler chooses the trees while the job runs"
    elif plan.servers:
        note += "; every worker sends to the servers named at their datacenters"
    return note + "."
