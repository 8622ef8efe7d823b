"""What the network figure shows and where (pure): `describe(graph, scenario, plan)`.

Datacenters at their longitude/latitude (or on a circle, the caption saying why), their
label blocks (name, region, racks x workers, what the scheme's plan runs there, stragglers),
WAN links with "rate / RTT" (configured real-world values, also on a dilated graph), the
scheme's tree between datacenters, the caption sentence by sentence, and where every label
goes (analysis/netlayout.py); what the plan puts where is analysis/netscheme.py.
analysis/netrender.py draws the result; analysis/netfigure.py is the entry point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from analysis import netlayout as L
from analysis.netscheme import SchemeView, scheme_view
from analysis.style import scheme_style

MAP_WIDTH_IN = 7.0             # two columns: a world map needs the width
NAME_PT, LINE_PT, LINK_PT, NOTE_PT = 7.0, 6.0, 6.0, 6.0
TREE_BULGE_IN = 0.1            # how far the tree's arrows bend off the straight links
SAME_PLACE_DEG = 0.5           # datacenters closer than this are at one place


# ---------------------------------------------------------------- the description
@dataclass(frozen=True)
class DcMark:
    index: int                      # dc_index (1-based, scenario order)
    name: str
    region: str | None
    lat: float | None               # where it is (None: no coordinates)
    lon: float | None
    at_in: tuple[float, float]      # where its marker is drawn (inches on the map)
    true_in: tuple[float, float] | None   # where it is, when drawn apart from it
    lines: tuple[tuple[str, str], ...]     # (text, kind): kind name, place, size, scheme or straggler
    label: L.NodeLabelSpot
    straggler: bool
    root: bool


@dataclass(frozen=True)
class LinkMark:
    a: str                          # datacenter names, a before b in scenario order
    b: str
    bandwidth_mbps: float           # configured, real-world (before time dilation)
    rtt_ms: float                   # 2 x configured one-way delay, real-world
    text: str                       # "100 Mbps / 91 ms", "sched. 50-150 Mbps / 91 ms", ...
    shown: str | None               # what the map shows on the link (None: its number, `tag`)
    p_in: tuple[float, float]
    q_in: tuple[float, float]
    spot: L.LinkLabelSpot
    tag: int | None                 # its number when the label went to the table


@dataclass(frozen=True)
class TreeArrow:
    child: str                      # datacenter names
    parent: str
    p_in: tuple[float, float]
    q_in: tuple[float, float]

    @property
    def rad(self) -> float:
        """Curvature (matplotlib's arc3) bending every arrow by the same distance on the page."""
        return min(0.35, 2 * TREE_BULGE_IN / max(math.dist(self.p_in, self.q_in), 1e-9))


@dataclass(frozen=True)
class NetDrawing:
    title: str
    scenario: str
    scheme: str
    layout: str                     # "geographic" or "circular"
    frame: L.Frame
    dcs: tuple[DcMark, ...]
    links: tuple[LinkMark, ...]
    tree: tuple[TreeArrow, ...]
    tree_kind: str                  # "aggregation", "server" or "" (no tree)
    root: str | None
    notes: tuple[str, ...]          # the caption, sentence by sentence
    dilation: float = 1.0
    table: tuple[tuple[int, str, str], ...] = field(default=())   # (tag, "a-b", text)

    @property
    def caption(self) -> str:
        return " ".join(self.notes)

    def texts(self) -> list[str]:
        """Every text the figure shows besides the axes' tick labels."""
        out = [self.title] + [t for d in self.dcs for t, _ in d.lines]
        out += [lk.shown for lk in self.links if lk.shown is not None]
        out += [str(t) for t, _, _ in self.table] + [f"{ab}: {txt}" for _, ab, txt in self.table]
        return out + list(self.notes)


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.3g}"


def real_link(graph, attrs: dict) -> dict:
    """The configured real-world values of a link: a dilated graph (testbed/dilation.py)
    keeps them as real_*; an undilated one has them as they are."""
    s = float(graph.graph.get("dilated", 1.0) or 1.0)
    if s != 1.0:
        return {"bandwidth_mbps": attrs["real_bandwidth_mbps"], "delay_ms": attrs["real_delay_ms"],
                "jitter_ms": attrs["real_jitter_ms"], "scale": s}
    return {"bandwidth_mbps": attrs["bandwidth_mbps"], "delay_ms": attrs["delay_ms"],
            "jitter_ms": attrs.get("jitter_ms", 0.0), "scale": 1.0}


def rate_text(graph, u: str, v: str, attrs: dict) -> tuple[str, str | None]:
    """(rate label, caption sentence or None) of a WAN link: its rate; per direction when
    they differ; "sched." with the range of a bandwidth schedule."""
    real = real_link(graph, attrs)
    base = float(real["bandwidth_mbps"])
    sched = attrs.get("bandwidth_schedule")
    if isinstance(sched, dict):
        lo, hi = float(sched["min_mbps"]), float(sched["max_mbps"])
        each = " per direction" if sched.get("per_direction") else ""
        return (f"sched. {lo:g}-{hi:g} Mbps{each}",
                f"sched.: a random bandwidth schedule, the rate redrawn in that range every "
                f"{float(sched['every_s']):g} s{each}.")
    if isinstance(sched, list) and sched:
        pts = sorted(sched, key=lambda p: p["t_s"])
        rates = [float(p["mbps"]) for p in pts] + ([] if pts[0]["t_s"] == 0 else [base])
        return (f"sched. {min(rates):g}-{max(rates):g} Mbps",
                "sched.: an explicit bandwidth schedule, the range of its rates "
                f"({len(pts)} step{'s' if len(pts) > 1 else ''}).")
    per = attrs.get("direction_mbps") or {}
    if per and len({float(per.get(n, attrs["bandwidth_mbps"])) for n in (u, v)}) > 1:
        name = lambda n: graph.nodes[n]["dc"]
        r = lambda n: float(per.get(n, attrs["bandwidth_mbps"])) * real["scale"]
        return f"{name(u)}>{name(v)} {r(u):g}, {name(v)}>{name(u)} {r(v):g} Mbps", None
    return f"{base:g} Mbps", None


def _stragglers(scenario, graph) -> dict[int, list[str]]:
    """dc_index -> straggler lines, from the scenario's persistent stragglers."""
    hosts = {n: a for n, a in graph.nodes(data=True) if a["role"] == "host"}
    out: dict[int, list[str]] = {}
    for rule in scenario.stragglers.persistent:
        if rule.dc is not None:
            out.setdefault(scenario.dc_index(rule.dc), []).append(f"straggler: every worker x{rule.factor:g}")
            continue
        for a in hosts.values():
            hid = f"h{a['dc_index']}r{a['rack']}w{a['worker']}"
            if rule.worker == a["worker_index"] or rule.worker == hid:
                out.setdefault(a["dc_index"], []).append(f"straggler: {hid} x{rule.factor:g}")
    return out


def _place(dc, lat, lon) -> str:
    if dc.region:
        from topologies import catalog
        return f"{dc.region} ({catalog.get_region(dc.region).city})"
    if lat is None or lon is None:
        return "no coordinates"
    return f"{abs(lat):.1f}{'N' if lat >= 0 else 'S'} {abs(lon):.1f}{'E' if lon >= 0 else 'W'}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _layout(gws: list[dict], names: list[str]) -> tuple[str, str]:
    """("geographic", "") or ("circular", why)."""
    missing = [nm for g, nm in zip(gws, names) if g.get("lat") is None or g.get("lon") is None]
    if missing:
        why = ("no datacenter has coordinates" if len(missing) == len(names) else
               f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no coordinates")
        return "circular", why
    lats, lons = [g["lat"] for g in gws], [g["lon"] for g in gws]
    if max(lats) - min(lats) < SAME_PLACE_DEG and max(lons) - min(lons) < SAME_PLACE_DEG:
        return "circular", "all datacenters are at one place"
    return "geographic", ""


def describe(graph, scenario, plan=None, plan_error: str | None = None) -> NetDrawing:
    """What the network figure shows and where (pure). graph: build_graph's (or a dilated
    copy: labels show the configured real-world values either way); plan: the scheme's
    Plan on that graph, None when there is none (plan_error: why)."""
    from topologies.graph import wan_edges
    gw_nodes = sorted((n for n, a in graph.nodes(data=True) if a["role"] == "gateway"),
                      key=lambda n: graph.nodes[n]["dc_index"])
    gws = [graph.nodes[n] for n in gw_nodes]
    by_index = {g["dc_index"]: g["dc"] for g in gws}
    label = scheme_style(scenario.scheme)["label"]
    view = scheme_view(graph, plan, label, by_index) if plan is not None else SchemeView()

    frame, true, at, notes = _positions(gws)
    wan = wan_edges(graph)
    wl = wan_labels(graph, wan, float(scenario.time_dilation))
    notes += wl.notes
    pos = {n: at[k] for k, n in enumerate(gw_nodes)}
    segments = [[pos[u], pos[v]] for u, v in wan]

    # datacenter labels first, clear of the links and the tree's arrows
    strag = _stragglers(scenario, graph)
    lines_of = [_dc_lines(scenario.datacenters[g["dc_index"] - 1], g, view, strag) for g in gws]
    arrows = [TreeArrow(by_index[c], by_index[p], at[c - 1], at[p - 1]) for c, p in view.tree]
    arrow_segs = [seg for ar in arrows for seg in L.polyline_segments(L.arc_points(ar.p_in, ar.q_in, ar.rad))]
    spots = L.place_node_labels(at, [_block_size(ls) for ls in lines_of], segments + arrow_segs,
                                frame.width_in, frame.height_in, [L.middle_half(sg) for sg in segments])
    # then the links' labels, clear of markers and datacenter labels, crossing few lines
    # and arrows (a label's white box may hide a short piece of an arrow, never text)
    markers = [L.marker_shape(p) for p in at]
    shown, lspots, link_notes = _label_links(wl, segments, segments + arrow_segs, markers,
                                             [sp.box.corners() for sp in spots], frame)
    notes += link_notes
    links, table = [], []
    for k, (u, v) in enumerate(wan):
        tag = None
        if lspots[k].tag:
            tag = len(table) + 1
            table.append((tag, f"{graph.nodes[u]['dc']}-{graph.nodes[v]['dc']}", wl.texts[k]))
        links.append(LinkMark(graph.nodes[u]["dc"], graph.nodes[v]["dc"], wl.rates[k], wl.rtts[k],
                              wl.texts[k], None if tag else shown[k], pos[u], pos[v], lspots[k], tag))
    if table:
        notes.append("Numbered links have no room for their label on the map: their values are in "
                     "the table under it.")

    notes.append(view.note if plan is not None else
                 f"No placement of {label}: {plan_error or 'no plan given'}.")
    notes += _transient_note(scenario)
    dcs = tuple(DcMark(g["dc_index"], g["dc"], g.get("region"), g.get("lat"), g.get("lon"), at[k],
                       true[k] if true[k] != at[k] else None, lines_of[k], spots[k],
                       g["dc_index"] in strag, view.root == g["dc_index"])
                for k, g in enumerate(gws))
    n_workers = len(plan.workers) if plan is not None else scenario.total_workers
    title = (f"{scenario.name}: {_plural(len(gws), 'datacenter')}, {_plural(n_workers, 'worker')}, "
             f"{label}")
    return NetDrawing(title, scenario.name, scenario.scheme, "geographic" if frame.geographic else "circular",
                      frame, dcs, tuple(links), tuple(arrows), view.tree_kind, by_index.get(view.root),
                      tuple(notes), float(scenario.time_dilation), tuple(table))


def _positions(gws: list[dict]):
    """(frame, where each datacenter is, where its marker is drawn, caption sentences)."""
    names = [g["dc"] for g in gws]
    layout, why = _layout(gws, names)
    if layout == "geographic":
        frame = L.geographic_frame([(g["lon"], g["lat"]) for g in gws], MAP_WIDTH_IN)
        true = [frame.to_in(g["lon"], g["lat"]) for g in gws]
        at = L.spread_apart(true)
        moved = [nm for nm, t, a in zip(names, true, at) if t != a]
        notes = ["Datacenters at their longitude and latitude (plain frame)."]
        if moved:
            notes.append(f"{', '.join(moved)} are drawn apart from where they are (dot and thin line): "
                         "they are too close to tell apart.")
        return frame, true, at, notes
    circle = L.circle_positions(len(gws))
    frame = L.circle_frame(circle, MAP_WIDTH_IN * 0.8, 3.4)
    at = [frame.to_in(x, y) for x, y in circle]
    return frame, at, list(at), [f"Datacenters on a circle in scenario order, clockwise from the top: {why}."]


@dataclass(frozen=True)
class WanLabels:
    rate_texts: list[str]           # per link, in wan_edges order
    rtt_texts: list[str]            # "91 ms" (+ jitter/loss when they differ between links)
    rates: list[float]              # configured real-world Mbps
    rtts: list[float]               # ms
    notes: list[str]

    @property
    def texts(self) -> list[str]:
        return [f"{r} / {t}" for r, t in zip(self.rate_texts, self.rtt_texts)]


def wan_labels(graph, wan, dilation: float) -> WanLabels:
    """The label parts of every WAN link and the caption sentences they need (pure)."""
    rate_texts, rtt_texts, rates, rtts, notes = [], [], [], [], []
    sched_notes, jitters, losses = [], [], []
    for u, v in wan:
        a = graph.edges[u, v]
        real = real_link(graph, a)
        rate, sched_note = rate_text(graph, u, v, a)
        if sched_note and sched_note not in sched_notes:
            sched_notes.append(sched_note)
        rtts.append(2 * float(real["delay_ms"]))
        rate_texts.append(rate)
        rtt_texts.append(f"{_fmt(rtts[-1])} ms")
        rates.append(float(real["bandwidth_mbps"]))
        jitters.append(float(real["jitter_ms"]))
        losses.append(float(a.get("loss_pct", 0.0)))
    if len(set(jitters)) > 1 or len(set(losses)) > 1:    # they differ between links: on each label
        rtt_texts = [t + (f", jitter {j:g} ms" if j else "") + (f", loss {lo:g}%" if lo else "")
                     for t, j, lo in zip(rtt_texts, jitters, losses)]
    notes.append("WAN links: configured rate / round-trip time (twice the one-way delay), real-world "
                 "values" + (f"; emulated with time dilation s = {dilation:g} (rates / s, delays x s)."
                             if dilation != 1 else "."))
    notes += sched_notes
    extras = []
    if len(set(jitters)) == 1 and jitters[0]:
        extras.append(f"jitter {jitters[0]:g} ms")
    if len(set(losses)) == 1 and losses[0]:
        extras.append(f"loss {losses[0]:g}%")
    if extras:
        notes.append(f"Every WAN link also has {' and '.join(extras)} per direction.")
    return WanLabels(rate_texts, rtt_texts, rates, rtts, notes)


def _label_size(text: str) -> tuple[float, float]:
    lines = text.split("\n")
    w = max(L.text_width_in(t, LINK_PT) for t in lines)
    return w + 2 * L.LABEL_PAD_IN, L.line_height_in(LINK_PT) * (len(lines) - 0.15) + 2 * L.LABEL_PAD_IN


def _label_links(wl: WanLabels, segments, lines, markers, texts, frame):
    """(text drawn on each link, its spot, caption sentences). Each link's label in full on
    one line, else on two; when every link has the same rate and some label found no room,
    the rate goes to the caption and the links carry their RTT, if that labels more links."""
    def place(options):
        spots = L.place_link_labels(segments, [[_label_size(t) for t in opts] for opts in options],
                                    markers, texts, lines, frame.width_in, frame.height_in)
        shown = [None if sp.tag else opts[sp.variant] for sp, opts in zip(spots, options)]
        return shown, spots, sum(sp.tag for sp in spots)

    full = [[f"{r} / {t}", f"{r}\n{t}"] for r, t in zip(wl.rate_texts, wl.rtt_texts)]
    shown, spots, tags = place(full)
    if tags and len(set(wl.rate_texts)) == 1 and len(segments) > 1:
        short_shown, short_spots, short_tags = place([[t] for t in wl.rtt_texts])
        if short_tags < tags:
            return short_shown, short_spots, [f"Every WAN link has the rate {wl.rate_texts[0]}; the "
                                              "labels on the links give their round-trip times."]
    return shown, spots, []


def _dc_lines(dc, g: dict, view: SchemeView, strag: dict[int, list[str]]) -> tuple[tuple[str, str], ...]:
    """A datacenter's label block: name, place, size, what the scheme runs there, stragglers."""
    lines = [(dc.name, "name"), (_place(dc, g.get("lat"), g.get("lon")), "place"),
             (f"{_plural(dc.racks, 'rack')} x {_plural(dc.workers_per_rack, 'worker')}", "size")]
    if dc.compute_speed != 1:
        lines.append((f"compute speed x{dc.compute_speed:g}", "size"))
    lines += [(t, "scheme") for t in view.roles.get(g["dc_index"], ())]
    idle = view.server_only_hosts.get(g["dc_index"], 0)
    if idle:
        lines.append((f"({_plural(idle, 'host')} without a worker)", "size"))
    lines += [(t, "straggler") for t in strag.get(g["dc_index"], [])]
    return tuple(lines)


def _transient_note(scenario) -> list[str]:
    tr = scenario.stragglers.transient
    if tr is None or tr.probability <= 0:
        return []
    if tr.distribution == "uniform":
        how = f"x{tr.low:g}-{tr.high:g}"
    elif tr.distribution == "pareto":
        how = f"x{tr.factor:g} or more (Pareto, shape {tr.shape:g})"
    else:
        how = f"x{tr.factor:g}"
    return [f"Transient stragglers: each worker, each iteration, with probability {tr.probability:g}, "
            f"computes {how} slower."]


def _block_size(lines) -> tuple[float, float]:
    w = max(L.text_width_in(t, NAME_PT if k == "name" else LINE_PT, bold=k == "name") for t, k in lines)
    h = sum(L.line_height_in(NAME_PT if k == "name" else LINE_PT) for _, k in lines)
    return w + 0.02, h
