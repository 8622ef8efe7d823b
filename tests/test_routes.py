"""Routes and host config: loop-free, on minimum-delay paths, in simple_switch_CLI syntax."""
import re

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from control.arp import host_arp_commands, host_ip_config, host_neighbours, host_route_commands
from control.routes import (compute_routes, entries_towards, lpm_lookup, table_commands,
                            trace, RouteEntry)
from testbed.scenario import parse_scenario
from topologies.graph import build_graph, hosts, switches

REGIONS = ["ibm:us-east", "ibm:eu-de", "ibm:jp-tok", "ibm:au-syd", "aws:us-west-2",
           "gcp:europe-west4", "azure:southeastasia", "ibm:br-sao"]
CMD = re.compile(r"^table_add MyIngress\.ipv4_lpm MyIngress\.ipv4_forward "
                 r"(\d+\.\d+\.\d+\.\d+/\d+) => ((?:[0-9a-f]{2}:){5}[0-9a-f]{2}) (\d+)$")


def make(n, racks, wpr, topo="full-mesh", extra_sets=()):
    dcs = "\n".join(f'  - {{name: d{i}, region: "{REGIONS[i]}", racks: {racks}, workers_per_rack: {wpr}}}'
                    for i in range(n))
    scn = parse_scenario(f"name: t\ndatacenters:\n{dcs}\nscheme: ps\niterations: 1\n", "t",
                         [f"wan.topology={topo}", *extra_sets])
    return build_graph(scn)


def path_delay(g, path):
    return sum(g.edges[u, v]["delay_ms"] for u, v in zip(path, path[1:]))


def check_all_pairs(g):
    routes = compute_routes(g)
    for src in hosts(g):
        for dst in hosts(g):
            if src == dst:
                continue
            path = trace(g, routes, src, g.nodes[dst]["ip"])
            assert path[-1] == dst
            assert len(set(path)) == len(path), f"loop {path}"
            best = nx.shortest_path_length(g, src, dst, weight="delay_ms")
            assert path_delay(g, path) == pytest.approx(best, abs=1e-3)


def test_quickstart_like_commands_exact():
    g = make(2, 1, 2)
    cmds = table_commands(g)
    assert "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.1.1.1/32 => 00:00:0a:01:01:01 1" in cmds["s1r1"]
    assert "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.2.1.0/24 => 00:00:0a:01:00:fd 3" in cmds["s1r1"]
    assert "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.2.1.0/24 => 00:00:0a:02:00:fd 2" in cmds["g1"]
    assert "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.2.1.0/24 => 00:00:0a:02:01:fd 1" in cmds["g2"]
    for sw, lines in cmds.items():
        assert lines, sw
        for line in lines:
            m = CMD.match(line)
            assert m, line
            port = int(m.group(3))
            assert 1 <= port <= g.degree(sw)
        prefixes = [CMD.match(l).group(1) for l in lines]
        assert len(prefixes) == len(set(prefixes)), f"duplicate prefixes on {sw}"


def test_last_hop_rewrites_to_host_mac_and_port():
    g = make(2, 2, 3)
    routes = compute_routes(g)
    for h in hosts(g):
        sw = next(iter(g.neighbors(h)))
        e = lpm_lookup(routes[sw], g.nodes[h]["ip"])
        assert e.prefix == g.nodes[h]["ip"] + "/32"
        assert e.dst_mac == g.nodes[h]["mac"] and e.port == g.edges[sw, h]["ports"][sw]


@pytest.mark.parametrize("topo", ["full-mesh", "ring", "star", "edges"])
def test_all_pairs_reach_on_shortest_delay_paths(topo):
    sets = ["wan.edges=[{a: d0, b: d1}, {a: d1, b: d2}, {a: d2, b: d3}, {a: d0, b: d3}, {a: d1, b: d3}]"] \
        if topo == "edges" else []
    check_all_pairs(make(4, 2, 2, topo, sets))


def test_routes_avoid_a_slow_direct_link():
    # d0-d2 direct is made slower than d0-d1-d2: traffic must go round.
    g = make(3, 1, 1, extra_sets=["wan.edges=[{a: d0, b: d1, delay_ms: 5}, {a: d1, b: d2, delay_ms: 5}, "
                                  "{a: d0, b: d2, delay_ms: 50}]"])
    path = trace(g, compute_routes(g), "h1r1w1", "10.3.1.1")
    assert path == ["h1r1w1", "s1r1", "g1", "g2", "g3", "s3r1", "h3r1w1"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 6), racks=st.integers(1, 2), wpr=st.integers(1, 2),
       topo=st.sampled_from(["full-mesh", "ring", "star"]),
       delays=st.lists(st.floats(0.5, 200), min_size=15, max_size=15))
def test_property_loop_free_minimum_delay(n, racks, wpr, topo, delays):
    g = make(n, racks, wpr, topo)
    for (u, v), d in zip(sorted(e for e in g.edges if g.edges[e]["kind"] == "wan"), delays):
        g.edges[u, v]["delay_ms"] = d      # random WAN delays: routes must follow them
    check_all_pairs(g)


def test_aggregation_addresses_route_to_their_owner():
    g = make(3, 2, 1)
    routes = compute_routes(g)
    # a datacenter aggregation address reaches its gateway through the 10.D.0.0/24 entries
    path = trace_to_switch(g, routes, "h1r1w1", "10.3.0.254")
    assert path[-1] == "g3"
    # a rack aggregation address reaches its rack switch through the rack's /24
    assert trace_to_switch(g, routes, "h1r1w1", "10.2.2.254")[-1] == "s2r2"
    # a global aggregation address placed at g2: /32 entries everywhere else
    extra = entries_towards(g, "10.0.0.1/32", "g2")
    assert {e.switch for e in extra} == set(switches(g)) - {"g2"}
    for sw, entries in routes.items():
        entries.extend(e for e in extra if e.switch == sw)
    assert trace_to_switch(g, routes, "h3r2w1", "10.0.0.1")[-1] == "g2"


def trace_to_switch(g, routes, src, ip):
    node, path = next(iter(g.neighbors(src))), [src]
    while True:
        path.append(node)
        e = lpm_lookup(routes[node], ip)
        if e is None:
            return path
        node = e.next_hop
        assert node not in path, path


def test_trace_reports_missing_route_and_loop():
    g = make(2, 1, 1)
    routes = compute_routes(g)
    with pytest.raises(ValueError, match="s1r1 has no route to 172.16.0.1"):
        trace(g, routes, "h1r1w1", "172.16.0.1")
    looped = {sw: list(es) for sw, es in routes.items()}
    looped["g2"] = [RouteEntry("g2", "10.2.1.0/24", "g1", "00:00:0a:01:00:fd", 2)]
    with pytest.raises(ValueError, match="forwarding loop towards 10.2.1.1"):
        trace(g, looped, "h1r1w1", "10.2.1.1")


def test_entries_towards_rejects_bad_input():
    g = make(2, 1, 1)
    with pytest.raises(ValueError, match="is not a switch"):
        entries_towards(g, "10.0.0.1/32", "h1r1w1")
    with pytest.raises(ValueError):
        entries_towards(g, "10.0.0.300/32", "g1")


def test_host_config_and_static_arp():
    g = make(2, 1, 3)
    cfg = host_ip_config(g, "h1r1w2")
    assert cfg == {"intf": "h1r1w2-eth0", "ip": "10.1.1.2", "prefix_len": 24, "mac": "00:00:0a:01:01:02",
                   "gateway_ip": "10.1.1.253", "gateway_mac": "00:00:0a:01:01:fd"}
    arp = host_arp_commands(g, "h1r1w2")
    assert arp[0] == "neigh replace 10.1.1.253 lladdr 00:00:0a:01:01:fd dev h1r1w2-eth0 nud permanent"
    assert "neigh replace 10.1.1.254 lladdr 00:00:0a:01:01:fd dev h1r1w2-eth0 nud permanent" in arp
    assert "neigh replace 10.1.1.1 lladdr 00:00:0a:01:01:01 dev h1r1w2-eth0 nud permanent" in arp
    # every address in the host's /24 that it may send to is resolved statically
    assert {ip for ip, _ in host_neighbours(g, "h1r1w2")} == {"10.1.1.1", "10.1.1.3", "10.1.1.253", "10.1.1.254"}
    assert host_route_commands(g, "h1r1w2") == ["route replace default via 10.1.1.253 dev h1r1w2-eth0"]
    with pytest.raises(ValueError, match="is a rack_switch, not a host"):
        host_ip_config(g, "s1r1")
