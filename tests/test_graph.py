"""Topology graph contract (docs/topology.md): ids, attributes, ports, WAN shapes."""
import ipaddress

import networkx as nx
import pytest

from testbed.scenario import parse_scenario
from topologies import addressing as addr
from topologies import catalog
from topologies.graph import build_graph, hosts, switches, wan_edges
from topologies.ports import interface_name, port_to

REGIONS = ["ibm:us-east", "ibm:eu-de", "ibm:jp-tok", "ibm:au-syd", "aws:us-west-2",
           "gcp:europe-west4", "azure:southeastasia", "ibm:br-sao"]


def scenario(n=3, racks=2, wpr=2, extra="", sets=()):
    dcs = "\n".join(f'  - {{name: dc{i}, region: "{REGIONS[i]}", racks: {racks}, workers_per_rack: {wpr}}}'
                    for i in range(n))
    return parse_scenario(f"name: t\ndatacenters:\n{dcs}\n{extra}\nscheme: ps\niterations: 3\n", "t.yaml", sets)


def test_nodes_roles_and_ids():
    g = build_graph(scenario(3, 2, 2))
    roles = nx.get_node_attributes(g, "role")
    assert sorted(n for n, r in roles.items() if r == "gateway") == ["g1", "g2", "g3"]
    assert sorted(n for n, r in roles.items() if r == "rack_switch") == \
        ["s1r1", "s1r2", "s2r1", "s2r2", "s3r1", "s3r2"]
    assert hosts(g)[:5] == ["h1r1w1", "h1r1w2", "h1r2w1", "h1r2w2", "h2r1w1"]
    assert len(hosts(g)) == 12
    assert [g.nodes[h]["worker_index"] for h in hosts(g)] == list(range(12))


def test_host_attributes_follow_the_addressing_plan():
    g = build_graph(scenario(2, 2, 3))
    a = g.nodes["h2r2w3"]
    assert a["ip"] == "10.2.2.3" and a["mac"] == "00:00:0a:02:02:03"
    assert a["dc"] == "dc1" and a["dc_index"] == 2 and a["rack"] == 2 and a["worker"] == 3
    assert a["gateway_ip"] == "10.2.2.253" and a["gateway_mac"] == "00:00:0a:02:02:fd"
    assert a["compute_speed"] == 1.0
    assert g.nodes["s2r2"]["mac"] == a["gateway_mac"]       # the virtual gateway is the rack switch
    ips = [g.nodes[h]["ip"] for h in hosts(g)]
    assert len(set(ips)) == len(ips)
    for ip in ips:   # no host collides with reserved addresses
        assert not ip.endswith((".253", ".254")) and not addr.ip_in(ip, addr.GLOBAL_AGG_PREFIX)


def test_switch_device_ids_and_thrift_ports_unique():
    g = build_graph(scenario(3, 2, 1))
    ids = [g.nodes[s]["device_id"] for s in switches(g)]
    assert ids == list(range(len(ids)))
    assert all(g.nodes[s]["thrift_port"] == 9090 + g.nodes[s]["device_id"] for s in switches(g))
    g2 = build_graph(scenario(3, 2, 1), device_id_base=100)
    assert min(g2.nodes[s]["device_id"] for s in switches(g2)) == 100


def test_ports_are_deterministic_dense_and_unique():
    g = build_graph(scenario(4, 2, 3))
    for sw in switches(g):
        ports = sorted(port_to(g, sw, n) for n in g.neighbors(sw))
        assert ports == list(range(1, g.degree(sw) + 1))
    # rack switch: hosts first by worker number, then the uplink
    assert [port_to(g, "s1r2", f"h1r2w{w}") for w in (1, 2, 3)] == [1, 2, 3]
    assert port_to(g, "s1r2", "g1") == 4
    # gateway: racks first, then WAN neighbours by datacenter index
    assert port_to(g, "g2", "s2r1") == 1 and port_to(g, "g2", "s2r2") == 2
    assert [port_to(g, "g2", f"g{d}") for d in (1, 3, 4)] == [3, 4, 5]
    assert interface_name(g, "g2", "g4") == "g2-eth5"
    assert interface_name(g, "h1r1w1", "s1r1") == "h1r1w1-eth0"
    # pure: the same scenario gives the same ports
    g2 = build_graph(scenario(4, 2, 3))
    assert [d["ports"] for *_, d in g.edges(data=True)] == [d["ports"] for *_, d in g2.edges(data=True)]


def test_edge_kinds_and_link_attributes():
    g = build_graph(scenario(2, 1, 2, extra="intra_dc:\n  access: {bandwidth_mbps: 500, delay_ms: 0.2}\n"
                                          "  uplink: {bandwidth_mbps: 800, loss_pct: 0.5}"))
    e = g.edges["h1r1w1", "s1r1"]
    assert e["kind"] == "access" and e["bandwidth_mbps"] == 500 and e["delay_ms"] == 0.2
    u = g.edges["s1r1", "g1"]
    assert u["kind"] == "uplink" and u["bandwidth_mbps"] == 800 and u["loss_pct"] == 0.5
    for *_, d in g.edges(data=True):
        assert {"kind", "bandwidth_mbps", "delay_ms", "jitter_ms", "loss_pct", "ports"} <= set(d)
    assert g.edges["g1", "g2"]["kind"] == "wan"


def test_wan_delay_defaults_to_catalog_rtt_over_two():
    g = build_graph(scenario(3))
    for (u, v), (a, b) in [(("g1", "g2"), (0, 1)), (("g1", "g3"), (0, 2)), (("g2", "g3"), (1, 2))]:
        rtt, src = catalog.rtt_ms(REGIONS[a], REGIONS[b])
        assert g.edges[u, v]["delay_ms"] == rtt / 2
        assert g.edges[u, v]["rtt_source"] == src
    assert g.edges["g1", "g2"]["delay_ms"] == 45.5          # IBM published 91 ms


def test_wan_overrides_take_precedence():
    extra = ("wan:\n  default: {bandwidth_mbps: 40, delay_ms: 10, loss_pct: 1}\n"
             "  edges: [{a: dc0, b: dc2, bandwidth_mbps: 7, jitter_ms: 2}]")
    g = build_graph(scenario(3, extra=extra))
    assert g.edges["g1", "g2"]["bandwidth_mbps"] == 40 and g.edges["g1", "g2"]["delay_ms"] == 10
    e = g.edges["g1", "g3"]
    assert (e["bandwidth_mbps"], e["delay_ms"], e["jitter_ms"], e["loss_pct"]) == (7, 10, 2, 1)
    assert e["delay_source"] == "scenario"


def test_explicit_coordinates_use_the_estimate():
    g = build_graph(scenario(2, sets=["datacenters.1={name: x, lat: 48.86, lon: 2.35}"]))
    a = catalog.get_region(REGIONS[0])
    expected = catalog.estimate_rtt_ms(a.lat, a.lon, 48.86, 2.35)
    assert g.edges["g1", "g2"]["delay_ms"] == pytest.approx(expected / 2)
    assert g.edges["g1", "g2"]["rtt_source"].startswith("estimate:")
    assert g.nodes["g2"]["lat"] == 48.86 and g.nodes["g2"]["region"] is None


@pytest.mark.parametrize("topo,n,expected", [
    ("full-mesh", 5, [(1, 2), (1, 3), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5), (3, 4), (3, 5), (4, 5)]),
    ("ring", 4, [(1, 2), (1, 4), (2, 3), (3, 4)]),
    ("ring", 2, [(1, 2)]),
    ("star", 4, [(1, 2), (1, 3), (1, 4)]),
])
def test_wan_topologies(topo, n, expected):
    g = build_graph(scenario(n, 1, 1, sets=[f"wan.topology={topo}"]))
    got = [(g.nodes[u]["dc_index"], g.nodes[v]["dc_index"]) for u, v in wan_edges(g)]
    assert got == expected


def test_star_with_hub_and_explicit_edges():
    g = build_graph(scenario(4, 1, 1, sets=["wan.topology=star", "wan.hub=dc2"]))
    assert [(g.nodes[u]["dc_index"], g.nodes[v]["dc_index"]) for u, v in wan_edges(g)] == [(1, 3), (2, 3), (3, 4)]
    g = build_graph(scenario(3, 1, 1, sets=["wan.topology=edges",
                                            "wan.edges=[{a: dc2, b: dc0, bandwidth_mbps: 3}, {a: dc1, b: dc2}]"]))
    assert [(g.nodes[u]["dc_index"], g.nodes[v]["dc_index"]) for u, v in wan_edges(g)] == [(1, 3), (2, 3)]
    assert g.edges["g1", "g3"]["bandwidth_mbps"] == 3


def test_largest_supported_topology_fits_interface_names():
    g = build_graph(scenario(8, 4, 1, sets=["wan.topology=full-mesh"]), prefix="t9")
    assert len(hosts(g)) == 32 and all(n.startswith("t9") for n in g)
    longest = max((interface_name(g, n, m) for n, m in g.edges), key=len)
    assert len(longest) <= 15
    ips = {g.nodes[h]["ip"] for h in hosts(g)}
    assert all(ipaddress.IPv4Address(ip) in ipaddress.IPv4Network("10.0.0.0/8") for ip in ips)


def test_too_long_prefix_is_rejected():
    # every node's names are too long, for one cause: one error, the longest name, the count
    with pytest.raises(ValueError) as e:
        build_graph(scenario(2, 1, 1), prefix="verylongpfx")
    assert str(e.value) == ("interface name 'verylongpfxh1r1w1-eth0' (and 5 more) is longer than "
                            "Linux's 15 characters: use a shorter node prefix (got 'verylongpfx')")


def test_graph_metadata():
    g = build_graph(scenario(2, sets=["time_dilation=4", "seed=9"]))
    assert g.graph["time_dilation"] == 4 and g.graph["dilated"] == 1.0 and g.graph["seed"] == 9


def test_graph_reads_the_scenario_by_its_fields_only():
    """topologies/ imports nothing of testbed/: any object with the scenario's fields does,
    and the graph equals the one built from the validated pydantic scenario."""
    import json
    from types import SimpleNamespace as NS
    from topologies.graph import wan_edge_pairs
    scn = scenario(3, 2, 1, sets=["wan.topology=ring",
                                  "wan.bandwidth_schedule=[{t_s: 0, mbps: 5}, {t_s: 9, mbps: 7}]"])
    plain = json.loads(scn.model_dump_json(), object_hook=lambda d: NS(**d))
    plain.dc_index = scn.dc_index
    assert wan_edge_pairs(plain) == wan_edge_pairs(scn) == [(1, 2), (1, 3), (2, 3)]
    g, h = build_graph(scn), build_graph(plain)
    sched = [{"t_s": 0.0, "mbps": 5.0, "from_dc": None}, {"t_s": 9.0, "mbps": 7.0, "from_dc": None}]
    assert g.edges["g1", "g2"]["bandwidth_schedule"] == sched
    # the plain copy's schedule points are namespaces, not models: compare everything else
    drop = lambda d: {k: v for k, v in d.items() if k != "bandwidth_schedule"}
    assert {(u, v): drop(d) for u, v, d in g.edges(data=True)} == \
        {(u, v): drop(d) for u, v, d in h.edges(data=True)}
    assert dict(g.nodes(data=True)) == dict(h.nodes(data=True))
