"""Deterministic switch port numbers, so the control plane needs no Mininet.

Each switch numbers its links from 1 in this order: access links (to hosts, by worker
number), uplinks (rack switch to its gateway; gateway to racks by rack number), then WAN
links by the neighbouring datacenter's index. Mininet names the interface of port N of
switch S `S-ethN`; a host's only interface is `<host>-eth0`.
"""
from __future__ import annotations

import networkx as nx

_KIND_ORDER = {"access": 0, "uplink": 1, "wan": 2}


def _neighbour_key(g: nx.Graph, nbr: str) -> tuple:
    a = g.nodes[nbr]
    return (a.get("dc_index", 0), a.get("rack", 0), a.get("worker", 0), nbr)


def assign_ports(g: nx.Graph) -> None:
    """Set edge attribute `ports` = {switch_node: port} on every edge (in place)."""
    for _, _, data in g.edges(data=True):
        data["ports"] = {}
    for node, attrs in g.nodes(data=True):
        if attrs["role"] == "host":
            continue
        links = sorted(g.edges(node, data=True),
                       key=lambda e: (_KIND_ORDER[e[2]["kind"]], _neighbour_key(g, e[1])))
        for port, (_, _, data) in enumerate(links, start=1):
            data["ports"][node] = port


def timer_loop_ports(g: nx.Graph, switch: str) -> tuple[int, int]:
    """(out, in): the two ports of a switch's timer loop, after all its links. A frame
    sent on `out` comes back on `in` after the loop's delay (docs/protocol.md, "Lossless
    links between aggregation points"); the control plane and the network build both
    number it with this."""
    top = max((d["ports"][switch] for _, _, d in g.edges(switch, data=True)), default=0)
    return top + 1, top + 2


def port_to(g: nx.Graph, switch: str, neighbour: str) -> int:
    """Port of `switch` that faces `neighbour`."""
    return g.edges[switch, neighbour]["ports"][switch]


def interface_name(g: nx.Graph, node: str, neighbour: str) -> str:
    """Mininet interface name of `node` on its link to `neighbour`."""
    if g.nodes[node]["role"] == "host":
        return f"{node}-eth0"
    return f"{node}-eth{port_to(g, node, neighbour)}"
