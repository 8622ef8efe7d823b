"""Scheme inart without Mininet: trees rooted at a PS host, the switch entries they need,
/32 routes that carry streams along planned paths, the plan and model of the scheme, and
several aggregations at once over one socket (two root servers on loopback)."""
import json
import threading

import numpy as np
import pytest

import schemes
from control.agg_entries import switch_commands
from control.agg_tree import build_server_tree
from control.path_routes import Stream, path_routes, routed_path, with_base_routes
from schemes.inart.root_engine import RootEngine
from schemes.inart.root_server import RootServer
from testbed.scenario import parse_scenario
from topologies.graph import build_graph
from workers.ina_client import ClientConfig, InaClient
from workers.ina_udp import aggregate_many, open_socket

THREE_DC = """
name: inart-unit
seed: 4
datacenters:
  - {name: a, lat: 0, lon: 0, racks: 2, workers_per_rack: 2}
  - {name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 2}
  - {name: c, lat: 10, lon: 5, racks: 1, workers_per_rack: 2}
wan:
  topology: full-mesh
  default: {bandwidth_mbps: 50, delay_ms: 10}
intra_dc:
  access: {bandwidth_mbps: 100, delay_ms: 0}
  uplink: {bandwidth_mbps: 100, delay_ms: 0}
scheme: inart
iterations: 1
"""


def scenario(extra: str = ""):
    return parse_scenario(THREE_DC + extra, "<inart-unit>")


def graph():
    return build_graph(scenario())


# ---------------------------------------------------------------- trees rooted at a host

def test_server_tree_puts_direct_workers_and_switch_points_under_the_server():
    g = graph()
    a = {"h1r1w1": "s1r1", "h1r1w2": "s1r1", "h1r2w1": "h2r1w2", "h1r2w2": "g1", "h2r1w1": "g1"}
    t = build_server_tree(g, 3, "h2r1w2", a, window=16)
    root = t.points[t.root]
    assert (root.switch, root.address, root.level, root.job) == ("h2r1w2", g.nodes["h2r1w2"]["ip"], "server", 3)
    # direct workers first (worker order), then switch points by their first worker
    assert [c.node for c in root.children] == ["h1r2w1", "s1r1", "g1"]
    rack, dc = t.points["3:rack:s1r1"], t.points["3:dc:g1"]
    assert (rack.address, rack.parent, rack.index_at_parent) == ("10.1.1.254", root.id, 1)
    assert (dc.address, [c.node for c in dc.children], dc.index_at_parent) == \
        ("10.1.0.254", ["h1r2w2", "h2r1w1"], 2)
    b = t.workers
    assert (b["h1r2w1"].agg_address, b["h1r2w1"].sender, b["h1r2w1"].fan_in) == (root.address, 0, 3)
    assert (b["h1r1w2"].agg_address, b["h1r1w2"].sender, b["h1r1w2"].fan_in) == ("10.1.1.254", 1, 2)
    assert (b["h2r1w1"].agg_address, b["h2r1w1"].sender) == ("10.1.0.254", 1)


@pytest.mark.parametrize("server, assignment, message", [
    ("s1r1", {"h1r1w1": "s1r1"}, "not a host"),
    ("h2r1w2", {"h2r1w2": "s1r1"}, "cannot also be a worker"),
    ("h2r1w2", {"h1r1w1": "h1r1w2"}, "neither the server"),
    ("h2r1w2", {"nope": "s1r1"}, "'nope' is not a host"),
    ("h2r1w2", {}, "at least one worker"),
])
def test_server_tree_refuses_what_the_data_path_cannot_do(server, assignment, message):
    with pytest.raises(ValueError, match=message):
        build_server_tree(graph(), 1, server, assignment)


def test_switch_entries_skip_the_host_root_and_name_it_as_parent():
    g = graph()
    t1 = build_server_tree(g, 1, "h2r1w2", {"h1r1w1": "s1r1", "h1r1w2": "s1r1", "h3r1w1": "h2r1w2"})
    t2 = build_server_tree(g, 2, "h3r1w2", {"h1r1w1": "s1r1", "h1r1w2": "h3r1w2", "h3r1w1": "h3r1w2"})
    cmds = switch_commands(g, [t1, t2])
    assert "h2r1w2" not in cmds and "h3r1w2" not in cmds
    points = [c for c in cmds["s1r1"] if c.startswith("table_add MyIngress.agg_points")]
    ps1, ps2 = g.nodes["h2r1w2"]["ip"], g.nodes["h3r1w2"]["ip"]
    # job 1: fan-in 2, parent the PS (its child 1 of 2); job 2 in the next slot range, fan-in 1
    assert points == [f"table_add MyIngress.agg_points MyIngress.agg_point 1 10.1.1.254 => 0 0 64 2 1 {ps1} 1 2",
                      f"table_add MyIngress.agg_points MyIngress.agg_point 2 10.1.1.254 => 0 64 64 1 2 {ps2} 2 3"]
    assert not any("/32" in c for cs in cmds.values() for c in cs if "10.0.0." in c)   # no global address


# ---------------------------------------------------------------- planned paths

def test_planned_path_is_installed_and_the_tables_follow_it():
    g = graph()
    ps_ip = g.nodes["h2r1w2"]["ip"]
    detour = Stream(("h1r1w1", "s1r1", "g1", "g3", "g2", "s2r1", "h2r1w2"), ps_ip)
    tables = with_base_routes(g, path_routes(g, []))
    assert routed_path(g, tables, "h1r1w1", ps_ip) == ("h1r1w1", "s1r1", "g1", "g2", "s2r1", "h2r1w2")
    r = path_routes(g, [detour])
    assert {sw: [e.next_hop for e in es] for sw, es in r.entries.items()} == \
        {"s1r1": ["g1"], "g1": ["g3"], "g3": ["g2"], "g2": ["s2r1"]}   # s2r1's host route stays
    assert all(e.prefix == f"{ps_ip}/32" for es in r.entries.values() for e in es)
    assert routed_path(g, with_base_routes(g, r), "h1r1w1", ps_ip) == detour.path
    # to a switch's aggregation address: the path ends at the switch that owns it
    to_switch = Stream(("s1r2", "g1", "g3", "g2"), "10.2.0.254")
    r2 = path_routes(g, [to_switch])
    assert routed_path(g, with_base_routes(g, r2), "s1r2", "10.2.0.254") == to_switch.path


def test_two_paths_that_leave_a_switch_apart_keep_the_first_and_say_so():
    g = graph()
    ps_ip = g.nodes["h2r1w2"]["ip"]
    first = Stream(("h1r1w1", "s1r1", "g1", "g3", "g2", "s2r1", "h2r1w2"), ps_ip)
    second = Stream(("h1r2w1", "s1r2", "g1", "g2", "s2r1", "h2r1w2"), ps_ip)
    r = path_routes(g, [first, second])
    assert r.conflicts == [{"stream": 1, "switch": "g1", "dst": ps_ip, "planned_next": "g2",
                            "routed_next": "g3"}]
    assert routed_path(g, with_base_routes(g, r), "h1r2w1", ps_ip) == \
        ("h1r2w1", "s1r2", "g1", "g3", "g2", "s2r1", "h2r1w2")


# ---------------------------------------------------------------- the plan

def plan(opts: dict):
    scn = scenario()
    g = build_graph(scn)
    s = schemes.get("inart")
    o = s.parse_options(opts)
    return g, s.plan(g, scn, o), o


def test_plan_gives_every_worker_one_client_per_server_and_a_root_server_each():
    g, p, _ = plan({"num_servers": 2})
    assert p.info["server_hosts"] == ["h1r2w2", "h2r1w2"]   # the last host of a, then of b
    assert set(p.workers).isdisjoint(p.info["server_hosts"]) and len(p.workers) == 6
    assert sum(p.info["shares"]) == pytest.approx(1.0) and p.info["jobs"] == [1, 2]
    for w in p.workers:
        c = p.comm[w]
        assert [x["job"] for x in c["clients"]] == [1, 2] and c["shares"] == p.info["shares"]
    for srv, job in zip(p.servers, (1, 2)):
        args = dict(zip(srv.args[::2], srv.args[1::2]))
        assert srv.ends_by_signal and srv.module == "schemes.inart.root_server"
        assert args["--ip"] == g.nodes[srv.host]["ip"] and args["--job"] == str(job)
        children = json.loads(args["--children"])
        assert [c["index"] for c in children] == list(range(int(args["--fan-in"])))
        # each child is a worker sending straight to the PS or a switch point of this job
        for c in children:
            assert c["address"].endswith(".254") or c["address"] in {g.nodes[w]["ip"] for w in p.workers}
    assert p.info["paths"]["mode"] == "planned" and p.info["paths"]["off_plan"] == []


def test_idle_hosts_keep_the_workers_of_the_k_server_variant():
    _, three, _ = plan({"num_servers": 3})
    _, one, _ = plan({"servers": ["h1r2w2"], "idle_hosts": ["h2r1w2", "h3r1w2"]})
    assert one.workers == three.workers and len(one.servers) == 1


def test_without_ina_every_worker_is_a_direct_child_of_every_server():
    _, p, _ = plan({"num_servers": 2, "routing": "none"})
    assert not any("agg_points" in c for cs in p.switch_commands.values() for c in cs)
    for srv in p.servers:
        args = dict(zip(srv.args[::2], srv.args[1::2]))
        assert args["--fan-in"] == "6"
    assert p.info["streams"] == {"h1r2w2": 6, "h2r1w2": 6}


def test_a_one_child_fan_in_budget_sends_the_rest_straight_to_the_server():
    _, p, _ = plan({"num_servers": 1, "fan_in": 1})
    (fan,) = p.info["fan_in"].values()
    assert fan and all(n == 1 for n in fan.values())
    (srv,) = p.servers
    children = json.loads(dict(zip(srv.args[::2], srv.args[1::2]))["--children"])
    direct = [c for c in children if not c["address"].endswith(".254")]
    assert len(direct) == 7 - len(fan) and len(direct) > 0     # 8 hosts, one the server


def test_a_switch_short_of_memory_serves_part_of_a_window_and_the_rest_falls_back_to_the_ps():
    # 3 PS trees of 768 slots at one gateway: 2048 slots hold two whole and 512 of the third
    g, p, _ = plan({"num_servers": 3, "window": 768, "aggregate_at": "gateway"})
    assert p.info["fallback_slots"] == {1: {}, 2: {}, 3: {"g1": 512}}
    assert [c.split(" => ")[1].split()[2] for c in p.switch_commands["g1"] if "agg_point_bypass" in c] == ["512"]
    args = p.servers[2].args
    assert "--children" not in args
    ranges = json.loads(args[args.index("--ranges") + 1])
    assert [(r["start"], r["end"]) for r in ranges] == [(0, 512), (512, 768)]
    # below 512 the gateway's partial sum is one child; above, its 5 workers each are
    assert [len(r["children"]) for r in ranges] == [1, 5]
    # no memory at all for the third: every slot falls back, the workers are its children
    _, p0, _ = plan({"num_servers": 3, "window": 1024, "aggregate_at": "gateway"})
    assert p0.info["fallback_slots"][3] == {"g1": 0}
    args = p0.servers[2].args
    assert args[args.index("--fan-in") + 1] == "5"
    # "refuse": memory limits the plan instead (two points of 1024 per switch), nothing falls back
    _, pr, _ = plan({"num_servers": 3, "window": 1024, "aggregate_at": "gateway", "fallback": "refuse"})
    assert not any(pr.info["fallback_slots"].values())
    assert not any("agg_point_bypass" in c for cs in pr.switch_commands.values() for c in cs)


@pytest.mark.parametrize("opts, message", [
    ({"servers": ["h9r1w1"]}, "not hosts of this topology"),
    ({"servers": ["h1r1w1", "h1r1w1"]}, "each server host once"),
    ({"num_servers": 8}, "leave no host for a worker"),
    ({"job": 255, "num_servers": 2}, "one job per server"),
    ({"k": 64}, "AGG_K=32"),
    ({"num_servers": 1, "idle_hosts": ["h1r2w2"]}, "are servers"),
    ({"servers": ["h1r1w1"], "idle_hosts": [f"h{d}r{r}w{w}" for d in (1, 2, 3) for r in (1, 2) for w in (1, 2)
                                             if (d, r, w) != (1, 1, 1) and (d == 1 or r == 1)]},
     "no host for a worker"),
])
def test_plan_refuses_bad_placements(opts, message):
    with pytest.raises(ValueError, match=message):
        plan(opts)


def test_model_sees_the_server_ingress_that_aggregation_relieves():
    # 10 Mbps access links: without INA the 7 workers' streams queue at the PS's access link
    scn = parse_scenario(THREE_DC.replace("access: {bandwidth_mbps: 100", "access: {bandwidth_mbps: 10")
                         + "workload: {kind: synthetic, parameters: 65536}\n", "<inart-unit>")
    g = build_graph(scn)
    s = schemes.get("inart")
    t = {r: s.model(g, scn, s.parse_options({"num_servers": 2, "routing": r})) for r in ("none", "shortest_path", "lp")}
    assert t["lp"].scheme == "inart"
    assert t["none"].largest_term()[0] == "serialization at s1r2->h1r2w2 (access 10 Mbps)"
    assert t["none"].iteration_s > t["shortest_path"].iteration_s > t["lp"].iteration_s


# ---------------------------------------------------------------- several jobs on one socket

ROOTS = ["127.0.0.21", "127.0.0.22"]
WORKERS = ["127.0.0.23", "127.0.0.24", "127.0.0.25"]


def test_aggregate_many_sums_two_parts_through_two_root_servers_at_once():
    probe = open_socket(WORKERS[0], 0)
    port = probe.getsockname()[1]
    probe.close()
    servers = [RootServer(RootEngine(job, len(WORKERS), 8, list(enumerate(WORKERS))), ip, port,
                          poll_s=0.05, progress_s=0)
               for job, ip in zip((1, 2), ROOTS)]
    threads = [threading.Thread(target=s.serve, daemon=True) for s in servers]
    for t in threads:
        t.start()
    rng = np.random.default_rng(5)
    parts = [[rng.integers(-2**20, 2**20, size=n).astype(np.int32) for n in (700, 300)] for _ in WORKERS]
    results, clients, errors = {}, {}, []

    def worker(i, ip):
        try:
            cs = [InaClient(ClientConfig(job=job, agg_ip=root, sender=i, fan_in=len(WORKERS),
                                         window=8, initial_rto=0.2, min_rto=0.05))
                  for job, root in zip((1, 2), ROOTS)]
            clients[i] = cs
            with open_socket(ip, port) as s:
                results[i] = aggregate_many(s, list(zip(cs, parts[i])), port=port, timeout_s=60)
        except Exception as e:      # surfaced below
            errors.append(e)

    ws = [threading.Thread(target=worker, args=(i, ip)) for i, ip in enumerate(WORKERS)]
    try:
        for t in ws:
            t.start()
        for t in ws:
            t.join(90)
    finally:
        for s in servers:
            s.stop()
        for t in threads:
            t.join(2)
    assert not errors, errors
    for j in range(2):
        want = np.sum([p[j].astype(np.int64) for p in parts], axis=0)
        for i in range(len(WORKERS)):
            np.testing.assert_array_equal(results[i][j].astype(np.int64), want)
    # every result reached the client of its job: none was taken for another's
    assert all(c.stats.bad_packets == 0 for cs in clients.values() for c in cs)
    assert [s.engine.events[2] for s in servers] == [700 // 32 + 1, 300 // 32 + 1]   # "complete"


def test_aggregate_many_refuses_two_clients_of_one_job():
    c = [InaClient(ClientConfig(job=1, agg_ip=ROOTS[0], sender=0, fan_in=1, window=4)) for _ in range(2)]
    with open_socket(WORKERS[0], 0) as s, pytest.raises(ValueError, match="must be distinct"):
        aggregate_many(s, [(c[0], np.zeros(4, np.int32)), (c[1], np.zeros(4, np.int32))])
