"""Drawing a network description (analysis/netdescribe.NetDrawing) in the paper style:
a plain lon/lat frame with a light graticule (no basemap), or no axes for the circle; links,
the tree's arrows, markers, label blocks, link labels or their numbers, the table of
numbered links and the caption under the map."""
from __future__ import annotations

from pathlib import Path

from analysis import netlayout as L
from analysis.netdescribe import LINE_PT, LINK_PT, NAME_PT, NOTE_PT, DcMark, NetDrawing
from analysis.style import OKABE_ITO, paper_style, save, scheme_style

LINK_COLOR, MARKER_COLOR, GRATICULE_COLOR = "#8C8C8C", "#333333", "#E4E4E4"
STRAGGLER_COLOR = OKABE_ITO["vermillion"]
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
