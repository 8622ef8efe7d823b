"""Host-side network configuration (pure): addresses, static ARP, default route.

Hosts never ARP: every address a host can send to directly (its rack peers, its rack's
virtual gateway 10.D.R.253 and rack aggregation address 10.D.R.254) gets a permanent
neighbour entry, and everything else goes via the virtual gateway, whose MAC is the rack
switch's. Strings are arguments for `ip` inside the host, e.g.
  ip neigh replace 10.1.1.253 lladdr 00:00:0a:01:01:fd dev h1r1w1-eth0 nud permanent
"""
from __future__ import annotations

import networkx as nx

from topologies import addressing as addr

PREFIX_LEN = 24


def host_interface(host: str) -> str:
    return f"{host}-eth0"


def host_ip_config(g: nx.Graph, host: str) -> dict:
    a = g.nodes[host]
    if a["role"] != "host":
        raise ValueError(f"{host!r} is a {a['role']}, not a host")
    return {"intf": host_interface(host), "ip": a["ip"], "prefix_len": PREFIX_LEN, "mac": a["mac"],
            "gateway_ip": a["gateway_ip"], "gateway_mac": a["gateway_mac"]}


def host_neighbours(g: nx.Graph, host: str) -> list[tuple[str, str]]:
    """(ip, mac) pairs this host resolves statically."""
    a = g.nodes[host]
    d, r = a["dc_index"], a["rack"]
    out = [(a["gateway_ip"], a["gateway_mac"]),
           (addr.rack_aggregation_ip(d, r), a["gateway_mac"])]
    rack_switch = next(n for n in g.neighbors(host))
    for peer in sorted(g.neighbors(rack_switch)):
        p = g.nodes[peer]
        if p["role"] == "host" and peer != host:
            out.append((p["ip"], p["mac"]))
    return out


def host_arp_commands(g: nx.Graph, host: str) -> list[str]:
    intf = host_interface(host)
    return [f"neigh replace {ip} lladdr {mac} dev {intf} nud permanent"
            for ip, mac in host_neighbours(g, host)]


def host_route_commands(g: nx.Graph, host: str) -> list[str]:
    a = g.nodes[host]
    return [f"route replace default via {a['gateway_ip']} dev {host_interface(host)}"]
