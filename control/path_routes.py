"""Routes that make aggregation streams follow planned paths (pure functions).

The data path forwards by destination (p4's ipv4_lpm, control/routes.py: one minimum-delay
tree per destination prefix). A planner that chooses paths (InArt's phase 2) names, per
stream, the node sequence from its source (a worker, or a switch sending its partial sum
up) to its destination (a switch's aggregation address, or a server host's IP). Here every
switch on such a path gets a /32 entry for the destination pointing to the next node on the
path; a /32 wins over the /24 tree by longest-prefix match.

One destination has one next hop per switch, so two planned paths to the same destination
that leave a switch by different links cannot both be honoured: the first stream given
keeps the switch (callers order streams, e.g. by server then worker), the other is recorded
in `PathRoutes.conflicts`, and `routed_path` says where its packets really go. A rack
switch's /32 for an attached host exists already (control/routes.py) and is left alone:
that last hop is the only one anyway.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import networkx as nx

from control.routes import ACTION, TABLE, RouteEntry, compute_routes, lpm_lookup
from topologies.ports import port_to


@dataclass(frozen=True)
class Stream:
    path: tuple[str, ...]      # nodes from the source to the destination node
    dst_ip: str                # the address its packets carry (aggregation address or host IP)


@dataclass
class PathRoutes:
    entries: dict[str, list[RouteEntry]] = field(default_factory=dict)   # switch -> /32 entries
    conflicts: list[dict] = field(default_factory=list)   # a stream a switch could not follow

    def commands(self) -> dict[str, list[str]]:
        return {sw: [e.command() for e in es] for sw, es in self.entries.items()}


def path_routes(g: nx.Graph, streams: Sequence[Stream]) -> PathRoutes:
    """The /32 entries that carry every stream along its path (first stream wins a switch)."""
    out = PathRoutes()
    chosen: dict[tuple[str, str], str] = {}        # (switch, dst_ip) -> next hop
    for i, st in enumerate(streams):
        for u, v in zip(st.path, st.path[1:]):
            if g.nodes[u]["role"] == "host":
                continue                           # a host has one link: its rack switch
            if g.nodes[v]["role"] == "host" and g.nodes[v]["ip"] == st.dst_ip:
                continue                           # the rack switch's host route does this
            key = (u, st.dst_ip)
            if key in chosen:
                if chosen[key] != v:
                    out.conflicts.append({"stream": i, "switch": u, "dst": st.dst_ip,
                                          "planned_next": v, "routed_next": chosen[key]})
                continue
            chosen[key] = v
            out.entries.setdefault(u, []).append(
                RouteEntry(u, f"{st.dst_ip}/32", v, g.nodes[v]["mac"], port_to(g, u, v)))
    return out


def routed_path(g: nx.Graph, routes: dict[str, list[RouteEntry]], src: str, dst_ip: str,
                max_hops: int = 64) -> tuple[str, ...]:
    """Where packets from node `src` (host or switch) to dst_ip go under `routes`, up to the
    node that owns dst_ip: a host with that IP, or the switch whose aggregation address it is
    (the first switch with no entry for it). Raises ValueError on a loop."""
    path = [src]
    node = next(iter(g.neighbors(src))) if g.nodes[src]["role"] == "host" else src
    if node != src:
        path.append(node)
    while g.nodes[node]["role"] != "host":
        e = lpm_lookup(routes.get(node, []), dst_ip)
        if e is None:
            return tuple(path)                     # this switch owns the address
        node = e.next_hop
        if node in path or len(path) > max_hops:
            raise ValueError(f"forwarding loop towards {dst_ip}: {' -> '.join(path + [node])}")
        path.append(node)
    return tuple(path)


def with_base_routes(g: nx.Graph, extra: PathRoutes) -> dict[str, list[RouteEntry]]:
    """The tables a switch ends up with: control/routes.py's entries plus `extra`."""
    tables = compute_routes(g)
    for sw, es in extra.entries.items():
        tables.setdefault(sw, []).extend(es)
    return tables


@dataclass(frozen=True)
class RouteUpdate:
    """One change of a switch's /32 path routes when a plan replaces another."""
    switch: str
    prefix: str
    kind: str                  # "add", "modify" or "delete"
    command: str               # the runtime command (simple_switch_CLI syntax, both backends)


def route_updates(old: Mapping[str, Sequence[RouteEntry]], new: Mapping[str, Sequence[RouteEntry]],
                  handles: Mapping[tuple[str, str], int]) -> list[RouteUpdate]:
    """The commands that turn switches holding the `old` /32 entries into ones holding the
    `new`: table_modify where a prefix's next hop changed, table_add for a new prefix,
    table_delete for one the new plan no longer routes. `handles` maps (switch, prefix) of
    every old entry to its table handle (from table_add's reply). One destination has one
    entry per switch, so a plan's entries cannot be added beside another's: they replace
    them. Updates come switch by switch; within a switch, additions and changes before
    deletions."""
    out: list[RouteUpdate] = []
    for sw in sorted(set(old) | set(new)):
        before = {e.prefix: e for e in old.get(sw, ())}
        after = {e.prefix: e for e in new.get(sw, ())}
        for prefix, e in after.items():
            was = before.get(prefix)
            if was is None:
                out.append(RouteUpdate(sw, prefix, "add", e.command()))
            elif (was.next_hop, was.dst_mac, was.port) != (e.next_hop, e.dst_mac, e.port):
                out.append(RouteUpdate(sw, prefix, "modify", f"table_modify {TABLE} {ACTION} "
                                       f"{_handle(handles, sw, prefix)} {e.dst_mac} {e.port}"))
        for prefix in before.keys() - after.keys():
            out.append(RouteUpdate(sw, prefix, "delete",
                                   f"table_delete {TABLE} {_handle(handles, sw, prefix)}"))
    return out


def _handle(handles: Mapping[tuple[str, str], int], sw: str, prefix: str) -> int:
    try:
        return handles[(sw, prefix)]
    except KeyError:
        raise ValueError(f"switch {sw}: no table handle recorded for the route to {prefix}; "
                         "record every path route's handle from its table_add reply") from None
