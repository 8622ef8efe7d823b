"""Scenario -> topology graph (networkx), the shared contract described in docs/topology.md.

Pure: no Mininet, no side effects. Values are in real-world units; apply time dilation
with testbed.dilation.dilate_graph before handing the graph to the emulator.

The scenario is read by its fields only (testbed/schema_models.py defines them; this room
does not import the testbed): ``name``, ``seed``, ``time_dilation``, ``datacenters[]``
(``name``, ``region``, ``lat``, ``lon``, ``racks``, ``workers_per_rack``,
``compute_speed``), ``intra_dc.access`` and ``intra_dc.uplink`` (``bandwidth_mbps``,
``delay_ms``, ``jitter_ms``, ``loss_pct``), ``wan`` (``topology``, ``hub``, ``default``,
``edges[]``, ``bandwidth_schedule``) and ``dc_index(name)``.
"""
from __future__ import annotations

from typing import Any

import networkx as nx

from topologies import addressing as addr
from topologies import catalog
from topologies.ports import assign_ports

MAX_IFNAME = 15  # Linux IFNAMSIZ - 1
THRIFT_BASE_PORT = 9090


def host_id(d: int, r: int, w: int, prefix: str = "") -> str:
    return f"{prefix}h{d}r{r}w{w}"


def rack_switch_id(d: int, r: int, prefix: str = "") -> str:
    return f"{prefix}s{d}r{r}"


def gateway_id(d: int, prefix: str = "") -> str:
    return f"{prefix}g{d}"


def wan_edge_pairs(scn) -> list[tuple[int, int]]:
    """WAN edges as (i, j) pairs of 1-based datacenter indices, i < j, in a fixed order."""
    n = len(scn.datacenters)
    topo = scn.wan.topology
    if topo == "full-mesh":
        return [(i, j) for i in range(1, n + 1) for j in range(i + 1, n + 1)]
    if topo == "ring":
        pairs = {tuple(sorted((i, i % n + 1))) for i in range(1, n + 1)}
        return sorted(pairs)
    if topo == "star":
        hub = scn.dc_index(scn.wan.hub) if scn.wan.hub else 1
        return sorted(tuple(sorted((hub, j))) for j in range(1, n + 1) if j != hub)
    return [tuple(sorted((scn.dc_index(e.a), scn.dc_index(e.b)))) for e in scn.wan.edges]


def _plain(value: Any) -> Any:
    """A schedule as plain data (the scenario's models dump themselves)."""
    return value.model_dump() if hasattr(value, "model_dump") else value


def _link_attrs(kind: str, spec) -> dict:
    return {"kind": kind, "bandwidth_mbps": spec.bandwidth_mbps, "delay_ms": spec.delay_ms,
            "jitter_ms": spec.jitter_ms, "loss_pct": spec.loss_pct, "queue_bdp": spec.queue_bdp,
            "delay_source": "scenario"}


def _dc_rtt(scn, i: int, j: int) -> tuple[float, str]:
    a, b = scn.datacenters[i - 1], scn.datacenters[j - 1]
    if a.region and b.region:
        return catalog.rtt_ms(a.region, b.region)
    pa = catalog.get_region(a.region) if a.region else a
    pb = catalog.get_region(b.region) if b.region else b
    return catalog.estimate_rtt_ms(pa.lat, pa.lon, pb.lat, pb.lon), catalog.estimate_source()


def wan_link_attrs(scn, i: int, j: int) -> dict:
    """Attributes of the WAN edge between datacenters i and j (1-based): per-edge override,
    else the WAN default, else (delay) the catalog RTT / 2."""
    names = {scn.datacenters[i - 1].name, scn.datacenters[j - 1].name}
    override = next((e for e in scn.wan.edges if {e.a, e.b} == names), None)
    d = scn.wan.default

    def pick(field):
        v = getattr(override, field) if override is not None else None
        return v if v is not None else getattr(d, field)

    rtt, rtt_source = _dc_rtt(scn, i, j)
    delay = pick("delay_ms")
    if delay is None:
        delay, delay_source = rtt / 2.0, f"catalog RTT/2 ({rtt_source})"
    else:
        delay_source = "scenario"
    schedule = override.bandwidth_schedule if override is not None and \
        override.bandwidth_schedule is not None else scn.wan.bandwidth_schedule
    if schedule is not None:
        schedule = [_plain(p) for p in schedule] if isinstance(schedule, list) \
            else _plain(schedule)
    return {"kind": "wan", "bandwidth_mbps": pick("bandwidth_mbps"), "delay_ms": delay,
            "jitter_ms": pick("jitter_ms"), "loss_pct": pick("loss_pct"),
            "queue_bdp": pick("queue_bdp"), "delay_source": delay_source, "catalog_rtt_ms": rtt, "rtt_source": rtt_source,
            "bandwidth_schedule": schedule}


def build_graph(scenario, prefix: str = "", device_id_base: int = 0) -> nx.Graph:
    """The topology of a scenario. Node ids may carry `prefix` (parallel test runs);
    device ids start at device_id_base (thrift port = 9090 + device id)."""
    g = nx.Graph(name=scenario.name, prefix=prefix, seed=scenario.seed,
                 time_dilation=scenario.time_dilation, dilated=1.0)
    device_id = device_id_base
    worker_index = 0
    for d, dc in enumerate(scenario.datacenters, start=1):
        gw = gateway_id(d, prefix)
        where = catalog.get_region(dc.region) if dc.region else dc
        g.add_node(gw, role="gateway", dc=dc.name, dc_index=d, region=dc.region,
                   lat=where.lat, lon=where.lon, mac=addr.dc_gateway_mac(d),
                   device_id=device_id, thrift_port=THRIFT_BASE_PORT + device_id)
        device_id += 1
        for r in range(1, dc.racks + 1):
            sw = rack_switch_id(d, r, prefix)
            g.add_node(sw, role="rack_switch", dc=dc.name, dc_index=d, rack=r,
                       mac=addr.rack_gateway_mac(d, r), device_id=device_id,
                       thrift_port=THRIFT_BASE_PORT + device_id)
            device_id += 1
            g.add_edge(sw, gw, **_link_attrs("uplink", scenario.intra_dc.uplink))
            for w in range(1, dc.workers_per_rack + 1):
                h = host_id(d, r, w, prefix)
                ip = addr.host_ip(d, r, w)
                g.add_node(h, role="host", dc=dc.name, dc_index=d, rack=r, worker=w,
                           ip=ip, mac=addr.mac_from_ip(ip), worker_index=worker_index,
                           compute_speed=dc.compute_speed,
                           gateway_ip=addr.rack_gateway_ip(d, r),
                           gateway_mac=addr.rack_gateway_mac(d, r))
                worker_index += 1
                g.add_edge(h, sw, **_link_attrs("access", scenario.intra_dc.access))
    for i, j in wan_edge_pairs(scenario):
        g.add_edge(gateway_id(i, prefix), gateway_id(j, prefix), **wan_link_attrs(scenario, i, j))
    assign_ports(g)
    _check_interface_names(g, prefix)
    return g


def _check_interface_names(g: nx.Graph, prefix: str) -> None:
    """Every node's longest interface name must fit Linux's limit. Node ids are fixed but for
    the prefix, so all names too long share that one cause: one error, naming the longest
    and how many there are."""
    too_long = []
    for node in g.nodes:
        ports = [p for _, _, data in g.edges(node, data=True) for n, p in data["ports"].items() if n == node]
        name = f"{node}-eth{max(ports, default=0)}"
        if len(name) > MAX_IFNAME:
            too_long.append(name)
    if too_long:
        longest = max(too_long, key=len)
        others = f" (and {len(too_long) - 1} more)" if len(too_long) > 1 else ""
        raise ValueError(f"interface name {longest!r}{others} is longer than Linux's {MAX_IFNAME} "
                         f"characters: use a shorter node prefix (got {prefix!r})")


# ---------------------------------------------------------------- queries
def hosts(g: nx.Graph) -> list[str]:
    """Hosts in worker_index order."""
    return sorted((n for n, a in g.nodes(data=True) if a["role"] == "host"),
                  key=lambda n: g.nodes[n]["worker_index"])


def hosts_by_dc(g: nx.Graph) -> dict[int, list[str]]:
    """Hosts per datacenter index (keys in ascending order), each list in worker_index order."""
    out: dict[int, list[str]] = {}
    for h in hosts(g):
        out.setdefault(g.nodes[h]["dc_index"], []).append(h)
    return dict(sorted(out.items()))


def switches(g: nx.Graph) -> list[str]:
    """Switches in device_id order."""
    return sorted((n for n, a in g.nodes(data=True) if a["role"] != "host"),
                  key=lambda n: g.nodes[n]["device_id"])


def wan_edges(g: nx.Graph) -> list[tuple[str, str]]:
    """WAN edges as (u, v) with u, v in datacenter order."""
    out = []
    for u, v, a in g.edges(data=True):
        if a["kind"] == "wan":
            out.append(tuple(sorted((u, v), key=lambda n: g.nodes[n]["dc_index"])))
    return sorted(out, key=lambda e: (g.nodes[e[0]]["dc_index"], g.nodes[e[1]]["dc_index"]))
