"""The network figure (analysis/netfigure.py): its description checked against the scenario,
the catalog and the scheme's plan; the rendered figure read back (PNG pixels, SVG text);
the label layout on a dense WAN; the figure in a run's report, and why it is missing."""
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from analysis import netfigure as NF
from analysis import netlayout as L
from analysis.report import make_report
from control.agg_tree import build_tree
from testbed.dilation import dilate_graph
from testbed.scenario import ScenarioError, load_scenario
from topologies import catalog
from topologies.graph import build_graph, wan_edges

REPO = Path(__file__).resolve().parent.parent
SCN = REPO / "scenarios"
MESH9 = ["name=mesh9", "wan.topology=full-mesh", "wan.edges=[]", "wan.default.delay_ms=null"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def drawing(path, overrides=()):
    scn = load_scenario(SCN / path, list(overrides), emulation_limits=False)
    g = build_graph(scn)
    plan, err = NF.plan_of(g, scn)
    return NF.describe(g, scn, plan, err), scn, g, plan


def svg_texts(d, tmp_path) -> list[str]:
    """Every <text> of the figure rendered as SVG (text kept as text, not paths)."""
    fig = NF.render(d)
    with plt.rc_context({"svg.fonttype": "none"}):
        fig.savefig(tmp_path / "net.svg", format="svg")
    root = ET.parse(tmp_path / "net.svg").getroot()
    return ["".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")]


def shown_or_listed(d, link) -> None:
    """A link's values are on its line (in full, on two lines, or its RTT with the common
    rate in the caption) or, numbered, in the table under the map."""
    if link.tag is not None:
        assert link.shown is None
        assert (link.tag, f"{link.a}-{link.b}", link.text) in d.table
        return
    rate, rtt = link.text.split(" / ")
    if link.shown == rtt:
        assert f"Every WAN link has the rate {rate};" in d.caption
    else:
        assert link.shown in (link.text, f"{rate}\n{rtt}")


# ---------------------------------------------------------------- the description
def test_geo_3dc_datacenters_at_their_catalog_coordinates_with_size_scheme_and_stragglers():
    d, scn, g, plan = drawing("geo-3dc.yaml")
    assert d.layout == "geographic" and d.frame.geographic
    assert [dc.name for dc in d.dcs] == ["wdc", "fra", "tok"]
    for dc, spec in zip(d.dcs, scn.datacenters):
        r = catalog.get_region(spec.region)
        assert (dc.lat, dc.lon) == (r.lat, r.lon) and dc.region == spec.region
        # the marker is drawn where the frame puts its longitude/latitude
        assert dc.at_in == pytest.approx(d.frame.to_in(r.lon, r.lat)) and dc.true_in is None
        texts = [t for t, _ in dc.lines]
        assert texts[:3] == [spec.name, f"{spec.region} ({r.city})", "2 racks x 2 workers"]
    tok = {t: k for t, k in d.dcs[2].lines}
    assert tok["straggler: h3r2w2 x2"] == "straggler"          # scenario: persistent h3r2w2 x2
    assert not any(k == "straggler" for dc in d.dcs[:2] for _, k in dc.lines)
    assert d.dcs[2].straggler and not d.dcs[0].straggler
    assert "with probability 0.05, computes x1.5-3 slower" in d.caption
    assert "time dilation s = 4" in d.caption
    assert d.title == "geo-3dc: 3 datacenters, 12 workers, Geo-INA"


def test_geo_3dc_links_carry_the_configured_schedule_range_and_the_published_rtts():
    d, scn, g, plan = drawing("geo-3dc.yaml")
    # IBM's published inter-region latencies (the scenario's comment): 91, 165, 233 ms
    want = {("wdc", "fra"): 91, ("wdc", "tok"): 165, ("fra", "tok"): 233}
    assert {(lk.a, lk.b): lk.rtt_ms for lk in d.links} == pytest.approx(want)
    for lk in d.links:
        assert lk.text == f"sched. 50-150 Mbps / {want[lk.a, lk.b]} ms"
        assert lk.bandwidth_mbps == 100.0   # the configured rate before the schedule
        shown_or_listed(d, lk)
    assert "a random bandwidth schedule, the rate redrawn in that range every 5 s" in d.caption
    assert "Every WAN link also has jitter 1 ms per direction." in d.caption
    # three links on a world map: every label fits on its line, in full
    assert [lk.shown for lk in d.links] == [lk.text for lk in d.links] and d.table == ()


def test_geo_ina_tree_edges_are_the_plans_tree():
    d, scn, g, plan = drawing("geo-3dc.yaml")
    tree = build_tree(g, scheme="geo-ina")          # the tree the plan is made of
    dc = lambda node: g.nodes[node]["dc"]
    want = {(dc(c.node), dc(p.switch)) for p in tree.points.values() for c in p.children
            if dc(c.node) != dc(p.switch)}
    assert {(a.child, a.parent) for a in d.tree} == want == {("fra", "wdc"), ("tok", "wdc")}
    assert d.root == dc(tree.points[tree.root].switch) == "wdc" and d.tree_kind == "aggregation"
    assert [x.root for x in d.dcs] == [True, False, False]
    # the plan records its tree: the figure reads it, point by point
    assert [(p["switch"], p["parent"]) for p in plan.info["tree"]] == \
        [(p.switch, p.parent) for p in tree.points.values()]
    roles = {x.name: [t for t, k in x.lines if k == "scheme"] for x in d.dcs}
    assert roles == {"wdc": ["aggregation: rack x2 + global"], "fra": ["aggregation: rack x2 + DC"],
                     "tok": ["aggregation: rack x2 + DC"]}


def test_flat_ina_tree_and_a_named_root():
    d, _, g, plan = drawing("geo-3dc.yaml", ["scheme=ina", "scheme_options.root=tok"])
    assert {(a.child, a.parent) for a in d.tree} == {("wdc", "tok"), ("fra", "tok")}
    assert d.root == "tok" and plan.info["root"] == "g3"


def test_netstorm_9dc_every_datacenter_and_link_with_rate_and_rtt():
    d, scn, g, plan = drawing("netstorm-9dc.yaml")
    assert [x.name for x in d.dcs] == [f"n{k}" for k in range(9)]
    for x, spec in zip(d.dcs, scn.datacenters):
        r = catalog.get_region(spec.region)
        assert (x.lat, x.lon) == (r.lat, r.lon)
    pairs = {(e.a, e.b) for e in scn.wan.edges}
    assert {(lk.a, lk.b) for lk in d.links} == pairs and len(d.links) == 13
    for lk in d.links:   # delay_ms: 0 overrides the regions' RTTs
        assert lk.text == "150 Mbps / 0 ms" and lk.rtt_ms == 0 and lk.bandwidth_mbps == 150
        shown_or_listed(d, lk)
    # hier-ps: every datacenter's server is a child of the global server in n0
    assert {(a.child, a.parent) for a in d.tree} == {(f"n{k}", "n0") for k in range(1, 9)}
    assert d.tree_kind == "server" and d.root == "n0"
    lines = {x.name: [t for t, k in x.lines if k == "scheme"] for x in d.dcs}
    assert lines["n0"] == ["servers: global, local1"] and lines["n5"] == ["server: local6"]
    # n3, n4, n5 (London, Madrid, Frankfurt) are too close on a world map: drawn apart
    moved = {x.name for x in d.dcs if x.true_in is not None}
    assert moved == {"n3", "n4", "n5"}
    n3, n4, n5 = d.dcs[3].at_in, d.dcs[4].at_in, d.dcs[5].at_in    # London, Madrid, Frankfurt
    assert n4[1] < min(n3[1], n5[1]) and n3[0] < n5[0]            # Madrid south, London west
    assert "n3, n4, n5 are drawn apart from where they are" in d.caption
    at = [x.at_in for x in d.dcs]
    assert min(math.dist(p, q) for k, p in enumerate(at) for q in at[k + 1:]) >= L.MIN_SEPARATION_IN - 1e-9


def test_dense_nine_datacenter_mesh_keeps_every_label_readable():
    """36 links on a world map: no label covers another or a datacenter's text, each
    sits on its own line, and whatever has no room is numbered and listed."""
    d, scn, g, plan = drawing("netstorm-9dc.yaml", MESH9)
    assert len(d.links) == 36
    for lk in d.links:
        rate, rtt = lk.text.split(" / ")
        assert rate == "150 Mbps"
        assert lk.rtt_ms == pytest.approx(g.edges[f"g{d.dcs[[x.name for x in d.dcs].index(lk.a)].index}",
                                                  f"g{d.dcs[[x.name for x in d.dcs].index(lk.b)].index}"]
                                          ["catalog_rtt_ms"])
        shown_or_listed(d, lk)
    labels = [lk.spot.box.corners() for lk in d.links]
    blocks = [x.label.box.corners() for x in d.dcs]
    for k, a in enumerate(labels):
        assert not any(L.overlap(a, b) for b in labels[k + 1:]), d.links[k]
        assert not any(L.overlap(a, b) for b in blocks), d.links[k]
    for a, b in [(a, b) for k, a in enumerate(blocks) for b in blocks[k + 1:]]:
        assert not L.overlap(a, b)
    for lk in d.links:   # a label's centre is on its line or just beside it
        (x1, y1), (x2, y2), box = lk.p_in, lk.q_in, lk.spot.box
        dist = abs((x2 - x1) * (y1 - box.cy) - (x1 - box.cx) * (y2 - y1)) / math.dist(lk.p_in, lk.q_in)
        assert dist <= box.hh * 2 + 0.02, lk
    on_map = [lk for lk in d.links if lk.tag is None]
    assert len(on_map) >= 12 and len(d.table) == 36 - len(on_map)
    assert [t for t, _, _ in d.table] == list(range(1, len(d.table) + 1))


def test_labels_show_real_world_values_on_a_dilated_graph_too():
    scn = load_scenario(SCN / "geo-3dc.yaml")
    g = build_graph(scn)
    real = NF.describe(g, scn)
    dilated = NF.describe(dilate_graph(g), scn)
    assert [lk.text for lk in dilated.links] == [lk.text for lk in real.links]
    assert [lk.rtt_ms for lk in dilated.links] == [lk.rtt_ms for lk in real.links] == \
        pytest.approx([91, 165, 233])


def test_explicit_and_per_direction_schedules_and_per_direction_rates():
    d, *_ = drawing("goodput-schedule.yaml")   # 40 Mbps, then 20 at 15 s, 30 at 30 s
    assert all(lk.text.startswith("sched. 20-40 Mbps / ") for lk in d.links)
    assert "an explicit bandwidth schedule, the range of its rates (2 steps)" in d.caption
    d, *_ = drawing("netstorm-9dc-dynamic.yaml")
    assert all(lk.text == "sched. 20-155 Mbps per direction / 0 ms" for lk in d.links)
    scn = load_scenario(SCN / "quickstart.yaml")
    g = build_graph(scn)
    (u, v), = wan_edges(g)
    g.edges[u, v]["direction_mbps"] = {u: 20.0, v: 35.0}     # a step of a per-direction schedule
    assert NF.rate_text(g, u, v, g.edges[u, v]) == ("wdc>fra 20, fra>wdc 35 Mbps", None)


def test_loss_differing_between_links_goes_on_each_label():
    d, *_ = drawing("geo-5dc.yaml")
    texts = {(lk.a, lk.b): lk.text for lk in d.links}
    assert texts["dal", "tok"] == "50 Mbps / 143 ms, loss 0.1%"
    assert texts["wdc", "lon"] == "155 Mbps / 75 ms"


# ---------------------------------------------------------------- geometry
def test_overlap_tells_rotated_boxes_and_segments_apart():
    a = L.Box(0, 0, 1.0, 0.1, 45)
    b = L.Box(0.9, -0.9, 0.3, 0.1, 45)           # bounding boxes meet, the boxes do not
    assert not L.overlap(a.corners(), b.corners())
    assert L.overlap(a.corners(), L.Box(0.5, 0.5, 0.1, 0.1).corners())
    assert L.overlap(a.corners(), [(-1, 1), (1, -1)])              # a segment across it
    assert not L.overlap(a.corners(), [(1, -1), (2, -2)])
    assert L.overlap([(0, 0), (1, 0)], [(1.05, -1), (1.05, 1)], margin=0.1)
    assert not L.overlap([(0, 0), (1, 0)], [(1.05, -1), (1.05, 1)], margin=0.01)


def test_text_reads_left_to_right_and_arrows_are_where_matplotlib_draws_them():
    assert L.readable_angle((0, 0), (-1, 0)) == 0 and L.readable_angle((0, 0), (0, -1)) == 90
    assert L.readable_angle((1, 1), (0, 0)) == pytest.approx(45)
    from matplotlib.patches import ConnectionStyle
    p, q, rad = (1.0, 2.0), (4.0, 0.5), 0.2
    path = ConnectionStyle.Arc3(rad=rad).connect(p, q)
    pts = L.arc_points(p, q, rad, n=2)
    assert pts[0] == p and pts[-1] == q
    # the midpoint of a quadratic Bezier: halfway between the chord's midpoint and the control point
    ctrl = path.vertices[1]
    assert pts[1] == pytest.approx(((p[0] + q[0]) / 4 + ctrl[0] / 2, (p[1] + q[1]) / 4 + ctrl[1] / 2))


def test_node_labels_avoid_markers_each_other_and_the_frame():
    markers = [(1.0, 1.0), (1.3, 1.0), (1.15, 1.3)]
    spots = L.place_node_labels(markers, [(0.8, 0.3)] * 3, [], 4.0, 3.0)
    boxes = [s.box.corners() for s in spots]
    for k, a in enumerate(boxes):
        assert L.Box(*[getattr(spots[k].box, f) for f in ("cx", "cy", "hw", "hh")]).inside(4.0, 3.0)
        assert not any(L.overlap(a, L.marker_shape(m)) for m in markers)
        assert not any(L.overlap(a, b) for b in boxes[k + 1:])


# ---------------------------------------------------------------- layouts
def test_datacenters_at_one_place_are_drawn_on_a_circle_and_the_caption_says_why():
    same = [f"datacenters.{k}.region=ibm:us-south" for k in range(1, 5)]
    d, *_ = drawing("geo-5dc.yaml", same)
    assert d.layout == "circular" and not d.frame.geographic
    assert "Datacenters on a circle in scenario order, clockwise from the top: all datacenters " \
           "are at one place." in d.caption
    centre = np.mean([x.at_in for x in d.dcs], axis=0)
    radii = [math.dist(x.at_in, centre) for x in d.dcs]
    assert max(radii) - min(radii) < 1e-6 and radii[0] > 0.5
    assert d.dcs[0].at_in[1] == max(x.at_in[1] for x in d.dcs)    # the first one on top


def test_a_graph_without_some_coordinates_gets_the_circle_naming_them():
    scn = load_scenario(SCN / "geo-3dc.yaml")
    g = build_graph(scn)
    for n in ("g2", "g3"):
        g.nodes[n]["lat"] = g.nodes[n]["lon"] = None
    d = NF.describe(g, scn)
    assert d.layout == "circular"
    assert "clockwise from the top: fra, tok have no coordinates." in d.caption
    assert [t for t, k in d.dcs[1].lines if k == "place"] == ["ibm:eu-de (Frankfurt)"]
    for n in ("g1",):
        g.nodes[n]["lat"] = None
    assert "no datacenter has coordinates" in NF.describe(g, scn).caption


def test_explicit_coordinates_and_spreading_points_apart():
    from testbed.scenario import parse_scenario
    scn = parse_scenario("""
name: coords
datacenters:
  - {name: a, lat: 10.0, lon: -20.0}
  - {name: b, lat: -35.5, lon: 150.25}
scheme: ring
iterations: 2
""")
    d = NF.describe(build_graph(scn), scn, *NF.plan_of(build_graph(scn), scn))
    assert [t for t, k in d.dcs[0].lines if k == "place"] == ["10.0N 20.0W"]
    assert [t for t, k in d.dcs[1].lines if k == "place"] == ["35.5S 150.2E"]
    assert (d.dcs[1].lat, d.dcs[1].lon) == (-35.5, 150.25)
    assert "the ring visits the datacenters in the order a -> b -> a" in d.caption
    pts = L.spread_apart([(1.0, 1.0), (1.05, 1.0), (3.0, 1.0)], 0.3)
    assert pts[2] == (3.0, 1.0) and math.dist(pts[0], pts[1]) == pytest.approx(0.3)
    assert np.mean([pts[0], pts[1]], axis=0) == pytest.approx([1.025, 1.0])
    assert pts[0][0] < pts[1][0] and pts[0][1] == pytest.approx(pts[1][1])   # west stays west
    trio = [(0.0, 0.1), (0.1, 0.1), (0.05, 0.0)]      # two side by side, one below them
    a, b, c = L.spread_apart(trio, 0.4)
    assert a[0] < b[0] and c[1] < min(a[1], b[1])


# ---------------------------------------------------------------- schemes without a tree, no plan
def test_schemes_without_a_tree_say_so_and_show_their_servers():
    d, *_ = drawing("geo-3dc.yaml", ["scheme=ps", "scheme_options={server_dc: fra}"])
    assert d.tree == () and d.root is None and d.tree_kind == ""
    assert "PS has no aggregation tree in its plan; every worker sends to the servers named at " \
           "their datacenters." in d.caption
    assert [t for t, k in d.dcs[1].lines if k == "scheme"] == ["server: ps0"]
    d, *_ = drawing("geo-5dc.yaml", ["scheme=netstorm"])
    assert "its scheduler chooses the trees while the job runs" in d.caption
    assert [t for t, k in d.dcs[0].lines if k == "scheme"] == ["servers: dc0, scheduler"]
    d, *_ = drawing("geo-3dc.yaml", ["scheme=hier-ps", "scheme_options={dedicated_servers: true}"])
    assert "(1 host without a worker)" in [t for t, _ in d.dcs[0].lines]


def test_a_scheme_whose_plan_refuses_the_scenario_is_drawn_without_placement():
    d, scn, g, plan = drawing("geo-3dc.yaml", ["switch.program=p4/forward.p4"])
    assert plan is None and d.tree == ()
    assert "No placement of Geo-INA: scheme geo-ina aggregates in the switches but switch.program " \
           "is p4/forward.p4" in d.caption
    assert len(d.links) == 3 and len(d.dcs) == 3


# ---------------------------------------------------------------- rendering
def test_rendered_png_and_svg_text_carry_the_labels(tmp_path, capsys):
    assert NF.main(str(SCN / "geo-3dc.yaml"), [], str(tmp_path), "pdf,png") == 0
    out = capsys.readouterr().out
    png, pdf = tmp_path / "network-geo-3dc.png", tmp_path / "network-geo-3dc.pdf"
    assert f"{png}\n" in out and f"{pdf}\n" in out
    assert pdf.read_bytes().startswith(b"%PDF") and png.stat().st_size > 50_000
    img = plt.imread(png)
    assert img.shape[1] > 1500 and len(np.unique(img.reshape(-1, img.shape[2]), axis=0)) > 100
    d, *_ = drawing("geo-3dc.yaml")
    texts = svg_texts(d, tmp_path)
    for want in ["geo-3dc: 3 datacenters, 12 workers, Geo-INA", "wdc", "fra", "tok",
                 "ibm:jp-tok (Tokyo)", "2 racks x 2 workers", "straggler: h3r2w2 x2",
                 "aggregation: rack x2 + global", "sched. 50-150 Mbps / 91 ms",
                 "sched. 50-150 Mbps / 165 ms", "sched. 50-150 Mbps / 233 ms", "Longitude", "135E"]:
        assert want in texts, want
    assert d.texts()[0] in texts
    assert all(t in " ".join(texts) for t in d.texts() if "\n" not in t and len(t) < 60)


def test_rendered_dense_mesh_lists_the_numbered_links(tmp_path):
    d, *_ = drawing("netstorm-9dc.yaml", MESH9)
    texts = svg_texts(d, tmp_path)
    assert "Numbered links:" in texts
    for tag, ab, txt in d.table:
        assert f"{tag}  {ab}: {txt}" in texts and str(tag) in texts
    for lk in d.links:
        if lk.shown is not None:
            assert lk.shown in texts


def test_main_refuses_bad_formats_and_bad_scenarios(tmp_path):
    with pytest.raises(ValueError, match=r"--format gif: use pdf, png or svg, comma-separated"):
        NF.main(str(SCN / "geo-3dc.yaml"), [], str(tmp_path), "gif")
    with pytest.raises(ScenarioError, match=r"--set wan.nope=1: no field 'nope' in wan"):
        NF.main(str(SCN / "geo-3dc.yaml"), ["wan.nope=1"], str(tmp_path), "png")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- in a run's report
def _write(tmp_path, *overrides):
    from tests.synthetic_runs import write_run
    return write_run(tmp_path / "results", SCN / "geo-3dc-small.yaml", ["iterations=4", *overrides])


def test_run_report_links_the_network_figure(tmp_path):
    run = _write(tmp_path, "scheme=geo-ina")
    md = make_report(run, ["png"]).read_text()
    assert "![network-geo-3dc-small](figures/network-geo-3dc-small.png)" in md
    assert "## geo-3dc-small: 3 datacenters, 6 workers, Geo-INA" in md
    assert f"The emulated network (run {run.name}). Datacenters at their longitude" in md
    assert "Rebuilt from the run's scenario.yaml with today's code." in md
    png = run / "figures" / "network-geo-3dc-small.png"
    assert png.is_file() and png.stat().st_size > 20_000
    assert md.index("network-geo-3dc-small") < md.index("goodput_over_time")


def test_a_folder_of_runs_gets_one_figure_per_scenario(tmp_path):
    a = _write(tmp_path, "scheme=ps")
    b = _write(tmp_path, "scheme=ring")
    md = make_report(a.parent, ["png"]).read_text()
    for r in (a, b):
        assert f"](figures/network-geo-3dc-small-{r.name}.png)" in md


def test_a_run_without_a_usable_scenario_says_why_in_its_report(tmp_path):
    run = _write(tmp_path, "scheme=ps")
    (run / "scenario.yaml").write_text((run / "scenario.yaml").read_text() + "gone_field: 1\n")
    md = make_report(run, ["png"]).read_text()
    assert f"- No network figure for run {run.name}: {run / 'scenario.yaml'}: gone_field: unknown " \
           "field 'gone_field'" in md
    assert "(this run's scenario copy does not load with today's scenario schema)" in md
    assert "## Numbers" in md and not (run / "figures" / "network-geo-3dc-small.png").exists()
    (run / "scenario.yaml").unlink()
    d, why = NF.describe_run(run)
    assert d is None and why == f"{run / 'scenario.yaml'}: missing (the run did not record its scenario)"


def test_a_run_whose_recorded_placement_differs_is_said(tmp_path):
    run = _write(tmp_path, "scheme=ps")
    summary = json.loads((run / "summary.json").read_text())
    summary["app"]["servers"] = {"ps0": {"host": "h2r1w1"}}
    (run / "summary.json").write_text(json.dumps(summary))
    d, why = NF.describe_run(run)
    assert why == "" and "The run recorded another placement (server ps0 on h2r1w1, now h1r1w1); " \
                         "the figure shows today's plan." in d.caption


def test_a_sweep_file_draws_its_first_point(tmp_path, capsys):
    demo = Path(__file__).resolve().parent.parent / "scenarios" / "demo.yaml"
    assert NF.main(str(demo), [], str(tmp_path), "svg") == 0
    out = capsys.readouterr().out
    assert "is a sweep: drawing its first point" in out
    svg = (tmp_path / "network-geo-3dc-small.svg").read_text()
    # the sweep's fixed overrides apply (20 Mbps WAN, stragglers) and its first point's scheme
    assert "20 Mbps / 91 ms" in svg and "probability 0.2" in svg and "server: ps0" in svg
