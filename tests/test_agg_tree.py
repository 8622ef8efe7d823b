"""Aggregation trees and the switch entries computed from the topology graph."""
import itertools

import networkx as nx
import pytest

from control.agg_entries import push, switch_commands
from control.agg_tree import build_tree, default_root_dc
from tests.agg_topo import graph


def _walk_to_root(tree, host):
    b = tree.workers[host]
    pid = next(p.id for p in tree.points.values() if p.address == b.agg_address)
    path = [pid]
    while tree.points[pid].parent:
        pid = tree.points[pid].parent
        path.append(pid)
    return path


def test_geo_tree_three_levels():
    g = graph(3, delays={(1, 2): 5, (1, 3): 50, (2, 3): 60})
    t = build_tree(g, job=4, window=8)
    # g1: 5 + 50 = 55 total one-way, g2: 65, g3: 110 -> root is datacenter 1.
    assert t.points[t.root].switch == "g1" and t.points[t.root].address == "10.0.0.1"
    levels = sorted((p.level, p.switch) for p in t.points.values())
    assert levels == [("dc", "g2"), ("dc", "g3"), ("global", "g1"),
                      ("rack", "s1r1"), ("rack", "s1r2"), ("rack", "s2r1"), ("rack", "s2r2"),
                      ("rack", "s3r1"), ("rack", "s3r2")]
    root = t.points[t.root]
    # Root's children: its own racks directly, then the other datacenters.
    assert [c.address for c in root.children] == ["10.1.1.254", "10.1.2.254", "10.2.0.254", "10.3.0.254"]
    assert t.points["4:dc:g2"].children[1].address == "10.2.2.254"
    assert t.points["4:dc:g2"].index_at_parent == 2
    assert len(t.workers) == 12
    assert t.workers["h2r2w2"].agg_address == "10.2.2.254"
    assert t.workers["h2r2w2"].sender == 1 and t.workers["h2r2w2"].fan_in == 2
    assert _walk_to_root(t, "h2r1w1") == ["4:rack:s2r1", "4:dc:g2", "4:global:g1"]
    assert _walk_to_root(t, "h1r2w1") == ["4:rack:s1r2", "4:global:g1"]
    assert t.depth() == 3


def test_child_indices_are_dense_and_match_parents():
    t = build_tree(graph(3), job=1)
    for p in t.points.values():
        for i, c in enumerate(p.children):
            if c.point:
                assert t.points[c.point].parent == p.id and t.points[c.point].index_at_parent == i
            else:
                assert t.workers[c.node].sender == i and t.workers[c.node].fan_in == p.fan_in
    # every worker contributes exactly once to the root
    leaves = [c.node for p in t.points.values() for c in p.children if c.point is None]
    assert sorted(leaves) == sorted(t.workers)


def test_default_root_minimises_total_rtt():
    delays = {(1, 2): 70, (1, 3): 80, (2, 3): 10}
    g = graph(3, delays=delays)
    totals = {d: sum(2 * nx.shortest_path_length(g, f"g{d}", f"g{o}", weight="delay_ms")
                     for o in (1, 2, 3) if o != d) for d in (1, 2, 3)}
    assert default_root_dc(g) == min(totals, key=totals.get) == 2   # 2*(70+10) beats 3's 2*(80+10)
    assert build_tree(g).points[build_tree(g).root].switch == "g2"


@pytest.mark.parametrize("root,switch", [("euro", "g3"), (3, "g3"), ("east", "g1")])
def test_root_option(root, switch):
    t = build_tree(graph(3), root=root)
    assert t.points[t.root].switch == switch
    assert t.points[t.root].address == f"10.0.0.{switch[1]}"


def test_bad_root_is_named():
    with pytest.raises(ValueError, match="'mars' is not a datacenter.*names: \\['east', 'euro', 'west'\\]"):
        build_tree(graph(3), root="mars")


def test_root_must_have_workers():
    g = graph(3)
    with pytest.raises(ValueError, match="no workers of this job"):
        build_tree(g, workers=["h1r1w1", "h2r1w1"], root=3)


def test_flat_ina_single_point():
    t = build_tree(graph(2), scheme="ina", root=2)
    assert len(t.points) == 1
    root = t.points[t.root]
    assert root.switch == "g2" and root.fan_in == 8
    assert {b.agg_address for b in t.workers.values()} == {"10.0.0.2"}
    assert sorted(b.sender for b in t.workers.values()) == list(range(8))


def test_subset_of_workers_prunes_racks():
    t = build_tree(graph(2), workers=["h1r1w2", "h2r2w1", "h2r2w2"], root=1)
    assert sorted(p.id for p in t.points.values()) == ["1:dc:g2", "1:global:g1", "1:rack:s1r1", "1:rack:s2r2"]
    assert t.workers["h1r1w2"].sender == 0 and t.workers["h1r1w2"].fan_in == 1


def test_fan_in_limit():
    g = nx.Graph()
    g.add_node("g1", role="gateway", dc="a", dc_index=1, mac="00:00:0a:01:00:fd")
    for w in range(33):
        g.add_node(f"h{w}", role="host", dc="a", dc_index=1, rack=1, ip=f"10.1.1.{w + 1}",
                   mac="00:00:00:00:00:01", worker_index=w)
        g.add_edge(f"h{w}", "g1", delay_ms=0.1, ports={"g1": w + 1})
    with pytest.raises(ValueError, match="fan-in 33.*1..32"):
        build_tree(g, scheme="ina")


def test_unknown_scheme_and_worker():
    with pytest.raises(ValueError, match="geo-ina"):
        build_tree(graph(2), scheme="ring")
    with pytest.raises(ValueError, match="not a host"):
        build_tree(graph(2), workers=["s1r1"])


# ------------------------------------------------------------------ entries
def _agg_entries(cmds):
    out = []
    for c in cmds:
        if c.startswith("table_add MyIngress.agg_points"):
            match, args = c.split(" => ")
            out.append((match.split()[3:], [x for x in args.split()]))
    return out


def test_entries_for_two_jobs_do_not_collide():
    g = graph(2)
    t1 = build_tree(g, job=1, window=16, root=1)
    t2 = build_tree(g, job=2, window=8, root=2)
    cmds = switch_commands(g, [t1, t2])
    for sw, cs in cmds.items():
        ranges, groups = [], []
        for (job, address), args in _agg_entries(cs):
            is_root, base, n, fan_in, grp = (int(x) for x in args[:5])
            ranges.append(range(base, base + n))
            groups.append(grp)
        for a, b in itertools.combinations(ranges, 2):
            assert not set(a) & set(b), f"{sw}: slot ranges overlap"
        assert len(groups) == len(set(groups))
        rids = [c.split()[3] for c in cs if c.startswith("table_add MyEgress.agg_children")]
        assert len(rids) == len(set(rids)), f"{sw}: replication ids reused"
    # g1 is the global point of job 1 and the datacenter point of job 2
    g1 = dict((tuple(m), a) for m, a in _agg_entries(cmds["g1"]))
    assert g1[("1", "10.0.0.1")][:5] == ["1", "0", "16", "3", "1"]
    assert g1[("2", "10.1.0.254")] == ["0", "16", "8", "2", "2", "10.0.0.2", "0", "3"]
    # every switch but the root routes each global address toward the root
    for sw in ("g2", "s1r1", "s2r2"):
        assert any(c.startswith("table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.1/32")
                   for c in cmds[sw])
    assert not any("10.0.0.1/32" in c for c in cmds["g1"])
    # generation registers of every slot copy are reset
    resets = [c for c in cmds["s1r1"] if c.startswith("register_write MyIngress.r_gen")]
    assert len(resets) == 2 * (16 + 8)


def test_slot_exhaustion_is_an_error_with_advice():
    g = graph(2)
    with pytest.raises(ValueError, match="lower scheme_options.window or .*AGG_SLOTS"):
        switch_commands(g, [build_tree(g, job=1, window=1500), build_tree(g, job=2, window=1000)])


def test_duplicate_job_ids_rejected():
    g = graph(2)
    with pytest.raises(ValueError, match="unique"):
        switch_commands(g, [build_tree(g, job=1), build_tree(g, job=1)])


class FakeClient:
    def __init__(self, fail_on=None):
        self.lines, self.fail_on, self.n = [], fail_on, 40

    def execute(self, line):
        self.lines.append(line)
        if self.fail_on and line.startswith(self.fail_on):
            return "Error: Invalid table operation (DUPLICATE_ENTRY)"
        if line.startswith("mc_node_create"):
            self.n += 1
            return f"Creating node with rid 1 and with port map 1\nnode was created with handle {self.n}"
        return "ok"


def test_push_substitutes_node_handles():
    g = graph(2)
    cmds = switch_commands(g, [build_tree(g, job=1, window=2)])["s1r1"]
    c = FakeClient()
    push(c, cmds)
    assert [l for l in c.lines if l.startswith("mc_node_associate")] == \
        ["mc_node_associate 1 41", "mc_node_associate 1 42"]


def test_push_stops_at_error_reply():
    g = graph(2)
    cmds = switch_commands(g, [build_tree(g, job=1, window=2)])["s1r1"]
    with pytest.raises(RuntimeError, match="switch rejected `table_add MyIngress.agg_points.*DUPLICATE"):
        push(FakeClient(fail_on="table_add MyIngress.agg_points"), cmds)

