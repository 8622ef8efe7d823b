"""IPv4 routes for p4/forward.p4, computed from the topology graph (pure).

Every destination prefix is owned by one switch: a rack's /24 by its rack switch, a
datacenter's 10.D.0.0/24 (gateway and DC aggregation address) by its gateway. For each
owner we take the shortest-path tree by one-way delay rooted at it; every other switch
forwards towards its parent in that tree. One tree per destination means next hops can
never form a loop, and each hop lies on a minimum-delay path. At the rack switch the
/24 is refined into one /32 per host that rewrites the destination MAC to the host's.

Entries are simple_switch_CLI commands, the language both switch backends speak:
  table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.1.1.1/32 => 00:00:0a:01:01:01 1
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import networkx as nx

from topologies import addressing as addr
from topologies.ports import port_to

TABLE = "MyIngress.ipv4_lpm"
ACTION = "MyIngress.ipv4_forward"
# Ties between equal-delay paths go to the path with fewer hops.
HOP_TIEBREAK_MS = 1e-6


@dataclass(frozen=True)
class RouteEntry:
    switch: str
    prefix: str        # "10.1.1.0/24" or "10.1.1.1/32"
    next_hop: str      # neighbour node id
    dst_mac: str       # MAC written into the frame (next switch's or the host's)
    port: int          # egress port of `switch`

    def command(self, table: str = TABLE, action: str = ACTION) -> str:
        return f"table_add {table} {action} {self.prefix} => {self.dst_mac} {self.port}"


def _weight(u, v, data) -> float:
    return data["delay_ms"] + HOP_TIEBREAK_MS


def _switch_graph(g: nx.Graph) -> nx.Graph:
    """Hosts are never transit nodes, so paths between switches use switches only."""
    return g.subgraph(n for n, a in g.nodes(data=True) if a["role"] != "host")


def tree_next_hops(g: nx.Graph, owner: str) -> dict[str, str]:
    """For every switch other than `owner`: its next hop on a minimum-delay path to owner."""
    sg = _switch_graph(g)
    if owner not in sg:
        raise ValueError(f"{owner!r} is not a switch of this topology")
    preds, _ = nx.dijkstra_predecessor_and_distance(sg, owner, weight=_weight)
    unreachable = [n for n in sg if n not in preds]
    if unreachable:
        raise ValueError(f"switches {unreachable} cannot reach {owner}: the topology is not connected")
    # Dijkstra from the owner: the predecessor of n is n's next hop towards the owner.
    # Several equal predecessors are possible; take the smallest id so results are stable.
    return {n: min(p) for n, p in preds.items() if n != owner}


def entries_towards(g: nx.Graph, prefix: str, owner: str) -> list[RouteEntry]:
    """Entries on every switch except `owner` that carry `prefix` towards switch `owner`.
    Use this for aggregation addresses: the owner is the switch that aggregates there."""
    ipaddress.IPv4Network(prefix)  # raises ValueError on a malformed prefix
    out = []
    for sw, nh in sorted(tree_next_hops(g, owner).items()):
        out.append(RouteEntry(sw, prefix, nh, g.nodes[nh]["mac"], port_to(g, sw, nh)))
    return out


def host_entries(g: nx.Graph, rack_switch: str) -> list[RouteEntry]:
    """/32 entries at a rack switch for the hosts attached to it."""
    out = []
    for h in sorted(g.neighbors(rack_switch)):
        a = g.nodes[h]
        if a["role"] == "host":
            out.append(RouteEntry(rack_switch, f"{a['ip']}/32", h, a["mac"], port_to(g, rack_switch, h)))
    return out


def compute_routes(g: nx.Graph) -> dict[str, list[RouteEntry]]:
    """All forwarding entries, per switch, in a deterministic order."""
    per_switch: dict[str, list[RouteEntry]] = {n: [] for n, a in g.nodes(data=True) if a["role"] != "host"}
    for n, a in sorted(g.nodes(data=True)):
        if a["role"] == "rack_switch":
            per_switch[n].extend(host_entries(g, n))
            for e in entries_towards(g, addr.rack_subnet(a["dc_index"], a["rack"]), n):
                per_switch[e.switch].append(e)
        elif a["role"] == "gateway":
            for e in entries_towards(g, f"10.{a['dc_index']}.0.0/24", n):
                per_switch[e.switch].append(e)
    return per_switch


def table_commands(g: nx.Graph) -> dict[str, list[str]]:
    """simple_switch_CLI commands per switch."""
    return {sw: [e.command() for e in entries] for sw, entries in compute_routes(g).items()}


# ---------------------------------------------------------------- checking routes
def lpm_lookup(entries: list[RouteEntry], ip: str) -> RouteEntry | None:
    """Longest-prefix match, as the switch's ipv4_lpm table does."""
    a = ipaddress.IPv4Address(ip)
    best = None
    for e in entries:
        net = ipaddress.IPv4Network(e.prefix)
        if a in net and (best is None or net.prefixlen > ipaddress.IPv4Network(best.prefix).prefixlen):
            best = e
    return best


def trace(g: nx.Graph, routes: dict[str, list[RouteEntry]], src_host: str, dst_ip: str,
          max_hops: int = 64) -> list[str]:
    """Follow the tables from a host to dst_ip; returns the node path. Raises ValueError
    on a loop or a drop (no matching entry), naming where it happened."""
    first = next(iter(g.neighbors(src_host)))
    path, node, seen = [src_host], first, set()
    while g.nodes[node]["role"] != "host":
        if node in seen or len(path) > max_hops:
            raise ValueError(f"forwarding loop towards {dst_ip}: {' -> '.join(path + [node])}")
        seen.add(node)
        path.append(node)
        e = lpm_lookup(routes[node], dst_ip)
        if e is None:
            raise ValueError(f"{node} has no route to {dst_ip} (path {' -> '.join(path)})")
        node = e.next_hop
    path.append(node)
    return path
