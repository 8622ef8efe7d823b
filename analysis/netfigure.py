"""The figure of an emulated network: `gdml show SCENARIO` and every run's report.

    describe(graph, scenario, plan)  pure: what to draw and where (NetDrawing): datacenters
                                     at their longitude/latitude (or on a circle, said in
                                     the caption), their labels (name, region, racks x
                                     workers, what the scheme runs there, stragglers), WAN
                                     links with "rate / RTT" (configured real-world values),
                                     the scheme's tree between datacenters, the caption
    render(drawing)                  a matplotlib Figure in the paper style (no basemap: a
                                     plain lon/lat frame with a light graticule)
    main(scenario, overrides, out, formats)   network-<name>.pdf|png for a scenario file
    describe_run(run_dir)            the same from a run's results folder (its scenario.yaml;
                                     runs do not record the graph, so it is rebuilt), or why not

Placement of labels is analysis/netlayout.py; what the scheme's plan puts where is
analysis/netscheme.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from analysis import netlayout as L
from analysis.netscheme import SchemeView, scheme_view
from analysis.style import OKABE_ITO, paper_style, save, scheme_style

MAP_WIDTH_IN = 7.0             # two columns: a world map needs the width
NAME_PT, LINE_PT, LINK_PT, NOTE_PT = 7.0, 6.0, 6.0, 6.0
TREE_BULGE_IN = 0.1           # how far the tree's arrows bend off the straight links
LINK_COLOR, MARKER_COLOR, GRATICULE_COLOR = "#8C8C8C", "#333333", "#E4E4E4"
STRAGGLER_COLOR = OKABE_ITO["vermillion"]
SAME_PLACE_DEG = 0.5           # datacenters closer than this are at one place
FORMATS = ("pdf", "png", "svg")


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


# ---------------------------------------------------------------- rendering
MARGIN_LEFT_IN, MARGIN_RIGHT_IN, MARGIN_TOP_IN, AXIS_LABELS_IN = 0.5, 0.1, 0.3, 0.42


def _wrap(text: str, width_in: float, size_pt: float) -> list[str]:
    """Greedy word wrap by the font's measured widths."""
    out, cur = [], ""
    for word in text.split():
        trial = f"{cur} {word}".strip()
        if cur and L.text_width_in(trial, size_pt) > width_in:
            out.append(cur)
            cur = word
        else:
            cur = trial
    return out + ([cur] if cur else [])


def _table_lines(table, width_in: float) -> list[list[str]]:
    """The numbered links' values in as many columns as fit."""
    if not table:
        return []
    entries = [f"{t}  {ab}: {txt}" for t, ab, txt in table]
    col_w = max(L.text_width_in(e, NOTE_PT) for e in entries) + 0.2
    ncol = max(1, min(len(entries), int(width_in // col_w)))
    rows = -(-len(entries) // ncol)
    return [[entries[c * rows + r] for c in range(ncol) if c * rows + r < len(entries)] for r in range(rows)]


def _degrees(v: float, pos_word: str, neg_word: str) -> str:
    v = round(v, 6)
    return "0" if v == 0 else f"{abs(v):g}{pos_word if v > 0 else neg_word}"


def _graticule_step(span: float) -> float:
    for step in (5, 10, 15, 30, 45, 60):
        if span / step <= 9:
            return step
    return 90


def render(d: NetDrawing):
    """The figure of a description: the map axes first (its title names the figure)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.ticker import FixedLocator, FuncFormatter

    with paper_style():
        fr = d.frame
        width = MARGIN_LEFT_IN + fr.width_in + MARGIN_RIGHT_IN
        table_rows = _table_lines(d.table, width - 0.2)
        note_lines = [ln for n in d.notes for ln in _wrap(n, width - 0.2, NOTE_PT)]
        below = AXIS_LABELS_IN + L.line_height_in(NOTE_PT) * (len(table_rows) + (1 if table_rows else 0)
                                                              + len(note_lines)) + 0.15
        height = MARGIN_TOP_IN + fr.height_in + below
        fig = plt.figure(figsize=(width, height))
        ax = fig.add_axes([MARGIN_LEFT_IN / width, below / height, fr.width_in / width, fr.height_in / height])
        ax.set_xlim(fr.xmin, fr.xmax)
        ax.set_ylim(fr.ymin, fr.ymax)
        ax.set_aspect("equal", adjustable="box")
        ax.set_title(d.title)
        if d.layout == "geographic":
            step = _graticule_step(fr.xmax - fr.xmin)
            xs = [x for x in range(-180, 181, step) if fr.xmin <= x <= fr.xmax]
            ys = [y for y in range(-90, 91, step) if fr.ymin <= y <= fr.ymax]
            ax.xaxis.set_major_locator(FixedLocator(xs))
            ax.yaxis.set_major_locator(FixedLocator(ys))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _degrees(v, "E", "W")))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _degrees(v, "N", "S")))
            ax.grid(True, color=GRATICULE_COLOR, linewidth=0.5, alpha=1.0)
            ax.set_xlabel("Longitude")
            ax.set_ylabel("Latitude")
            for side in ("top", "right"):
                ax.spines[side].set_visible(True)
            for sp in ax.spines.values():
                sp.set_color("#BBBBBB")
                sp.set_linewidth(0.5)
            ax.tick_params(colors="#555555", length=2)
        else:
            ax.axis("off")
        data = lambda p: fr.to_data(*p)
        color = scheme_style(d.scheme)["color"]

        for lk in d.links:
            (x1, y1), (x2, y2) = data(lk.p_in), data(lk.q_in)
            ax.plot([x1, x2], [y1, y2], color=LINK_COLOR, linewidth=0.9, zorder=2, solid_capstyle="round")
        for ar in d.tree:
            ax.add_patch(FancyArrowPatch(data(ar.p_in), data(ar.q_in), connectionstyle=f"arc3,rad={ar.rad}",
                                         arrowstyle="-|>", mutation_scale=8, color=color, linewidth=1.1,
                                         shrinkA=5, shrinkB=6, zorder=3))
        for dc in d.dcs:
            x, y = data(dc.at_in)
            if dc.true_in is not None:
                tx, ty = data(dc.true_in)
                ax.plot([tx, x], [ty, y], color=MARKER_COLOR, linewidth=0.4, zorder=4)
                ax.plot([tx], [ty], marker="o", markersize=1.6, color=MARKER_COLOR, zorder=4)
            edge = STRAGGLER_COLOR if dc.straggler else "white"
            if dc.root:
                ax.plot([x], [y], marker="*", markersize=12, color=color, markeredgecolor=edge,
                        markeredgewidth=0.8, zorder=5, linestyle="none")
            else:
                ax.plot([x], [y], marker="o", markersize=6.5, color=MARKER_COLOR, markeredgecolor=edge,
                        markeredgewidth=1.0 if dc.straggler else 0.6, zorder=5, linestyle="none")
            _draw_block(ax, fr, dc, color)
        for lk in d.links:
            b = lk.spot.box
            x, y = fr.to_data(b.cx, b.cy)
            if lk.tag is None:
                ax.text(x, y, lk.shown, multialignment="center", fontsize=LINK_PT, rotation=b.angle, rotation_mode="anchor",
                        ha="center", va="center", color="#222222", zorder=8,
                        bbox=dict(boxstyle="round,pad=0.12", fc="white", ec="none", alpha=0.9))
            else:
                ax.text(x, y, str(lk.tag), fontsize=NOTE_PT - 0.5, ha="center", va="center", zorder=8,
                        color="#222222", bbox=dict(boxstyle="circle,pad=0.15", fc="white", ec=LINK_COLOR,
                                                   linewidth=0.5))
        y_in = below - AXIS_LABELS_IN
        lh = L.line_height_in(NOTE_PT)
        if table_rows:
            fig.text(0.1 / width, y_in / height, "Numbered links:", fontsize=NOTE_PT, va="top",
                     fontweight="bold")
            y_in -= lh
            colw = max(L.text_width_in(e, NOTE_PT) for r in table_rows for e in r) + 0.25
            for row in table_rows:
                for c, entry in enumerate(row):
                    fig.text((0.1 + c * colw) / width, y_in / height, entry, fontsize=NOTE_PT, va="top")
                y_in -= lh
        for ln in note_lines:
            fig.text(0.1 / width, y_in / height, ln, fontsize=NOTE_PT, va="top", color="#333333")
            y_in -= lh
    return fig


def _draw_block(ax, fr: L.Frame, dc: DcMark, scheme_color: str) -> None:
    from matplotlib.patches import Rectangle
    b = dc.label.box
    left, top = b.cx - b.hw, b.cy + b.hh
    if dc.label.leader:     # from the marker to the nearest point of its block
        nx = min(max(dc.at_in[0], left), b.cx + b.hw)
        ny = min(max(dc.at_in[1], b.cy - b.hh), top)
        (x1, y1), (x2, y2) = fr.to_data(*dc.at_in), fr.to_data(nx, ny)
        ax.plot([x1, x2], [y1, y2], color=MARKER_COLOR, linewidth=0.6, zorder=4)
        ax.plot([x2], [y2], marker="o", markersize=1.8, color=MARKER_COLOR, zorder=4)
    # a light white ground: lines under the block stay visible, the text stays legible
    (x0, y0), (x1, y1) = fr.to_data(left, b.cy - b.hh), fr.to_data(b.cx + b.hw, top)
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor="white", edgecolor="none",
                           alpha=0.65, zorder=6.5))
    colors = {"straggler": STRAGGLER_COLOR, "scheme": scheme_color, "place": "#444444"}
    y = top
    for text, kind in dc.lines:
        size = NAME_PT if kind == "name" else LINE_PT
        x_d, y_d = fr.to_data(left + 0.01, y)
        ax.text(x_d, y_d, text, fontsize=size, ha="left", va="top", zorder=7,
                fontweight="bold" if kind == "name" else "normal", color=colors.get(kind, "#111111"))
        y -= L.line_height_in(size)


def save_drawing(d: NetDrawing, stem, formats=("pdf", "png")) -> list[Path]:
    import matplotlib.pyplot as plt
    fig = render(d)
    try:
        with paper_style():
            return save(fig, stem, formats)
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- from a scenario or a run
def plan_of(graph, scenario):
    """(the scheme's Plan on this graph, None) or (None, why it has none)."""
    import schemes
    try:
        scheme = schemes.get(scenario.scheme)
        return scheme.plan(graph, scenario, scheme.parse_options(scenario.scheme_options)), None
    except Exception as e:   # a plan that refuses the scenario says why in its first line
        return None, (str(e).strip().splitlines() or [type(e).__name__])[0]


def parse_formats(formats: str) -> tuple[str, ...]:
    out = tuple(f.strip().lower() for f in formats.split(",") if f.strip())
    bad = [f for f in out if f not in FORMATS]
    if bad or not out:
        raise ValueError(f"--format {formats}: use pdf, png or svg, comma-separated")
    return out


def main(scenario: str, overrides: list[str], out: str | None, formats: str) -> int:
    """Write <out or .>/network-<scenario name>.<format> for each format; print the paths."""
    from testbed.scenario import load_scenario
    from topologies.graph import build_graph
    fmts = parse_formats(formats)
    scn = load_scenario(scenario, overrides, emulation_limits=False)
    graph = build_graph(scn)
    plan, err = plan_of(graph, scn)
    if err:
        print(f"warning: scheme {scn.scheme} has no placement on this scenario: {err}")
    print(f"drawing {scn.name}: {len(scn.datacenters)} datacenters, {scn.scheme} ...")
    d = describe(graph, scn, plan, err)
    for p in save_drawing(d, Path(out or ".") / f"network-{scn.name}", fmts):
        print(p)
    return 0


def describe_run(run_dir) -> tuple[NetDrawing | None, str]:
    """(the network figure of a run, '') or (None, why there is none). Runs record their
    resolved scenario (scenario.yaml) and node prefix (manifest.json), not the graph: the
    graph and the scheme's plan are rebuilt from them with today's code, and a placement
    that differs from the one the run recorded (summary.json "app") is said."""
    import json

    from testbed.scenario import ScenarioError, parse_scenario
    from topologies.graph import build_graph
    p = Path(run_dir)
    f = p / "scenario.yaml"
    if not f.is_file():
        return None, f"{f}: missing (the run did not record its scenario)"
    try:
        scn = parse_scenario(f.read_text(), str(f), emulation_limits=False)
    except ScenarioError as e:
        return None, f"{e} (this run's scenario copy does not load with today's scenario schema)"
    try:
        prefix = json.loads((p / "manifest.json").read_text()).get("node_prefix") or ""
    except (OSError, ValueError):
        prefix = ""
    graph = build_graph(scn, prefix=prefix)
    plan, err = plan_of(graph, scn)
    d = describe(graph, scn, plan, err)
    differs = _recorded_differences(p, plan)
    notes = d.notes + ("Rebuilt from the run's scenario.yaml with today's code.",)
    if differs:
        notes += (f"The run recorded another placement ({differs}); the figure shows today's plan.",)
    return _with_notes(d, notes), ""


def _with_notes(d: NetDrawing, notes) -> NetDrawing:
    from dataclasses import replace
    return replace(d, notes=tuple(notes))


def _recorded_differences(run_dir: Path, plan) -> str:
    """What the run's summary.json says the plan placed differently (servers' hosts, root)."""
    import json
    try:
        app = json.loads((run_dir / "summary.json").read_text()).get("app") or {}
    except (OSError, ValueError):
        return ""
    if plan is None:
        return ""
    diffs = []
    now = {s.name: s.host for s in plan.servers}
    for name, rec in (app.get("servers") or {}).items():
        host = rec.get("host") if isinstance(rec, dict) else None
        if host is not None and now.get(name) != host:
            diffs.append(f"server {name} on {host}, now {now.get(name, 'none')}")
    if app.get("root") is not None and plan.info.get("root") not in (None, app["root"]):
        diffs.append(f"root {app['root']}, now {plan.info['root']}")
    return "; ".join(diffs)
