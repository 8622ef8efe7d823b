"""Paper style for every figure: serif fonts, the Okabe-Ito colorblind-safe palette, one
fixed color and marker per scheme, sized for a 3.5-inch single column."""
from __future__ import annotations

from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")            # files only; no display on the test machines
import matplotlib.pyplot as plt  # noqa: E402

# Okabe & Ito (2008), distinguishable under the common color-vision deficiencies.
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7"}

# Fixed per scheme, so a scheme looks the same in every figure of every paper.
SCHEME_STYLE = {
    "ps":      {"color": OKABE_ITO["orange"], "marker": "o", "label": "PS"},
    "hier-ps": {"color": OKABE_ITO["sky"], "marker": "s", "label": "Hier-PS"},
    "ring":    {"color": OKABE_ITO["green"], "marker": "^", "label": "Ring all-reduce"},
    "ina":     {"color": OKABE_ITO["vermillion"], "marker": "D", "label": "INA"},
    "geo-ina": {"color": OKABE_ITO["blue"], "marker": "v", "label": "Geo-INA"},
    "alltoall": {"color": OKABE_ITO["black"], "marker": "x", "label": "All-to-all"},
    "mxnet-ps": {"color": OKABE_ITO["yellow"], "marker": "X", "label": "MXNet PS"},
    "netstorm": {"color": OKABE_ITO["purple"], "marker": "P", "label": "NetStorm"},
    # Okabe-Ito has eight colors; further schemes take Paul Tol's (also colorblind-safe)
    "libra":    {"color": "#882255", "marker": "p", "label": "Libra"},     # Tol's wine
}
_SPARE = [(OKABE_ITO["purple"], "*"), (OKABE_ITO["yellow"], "h"), (OKABE_ITO["black"], "*")]
SCHEME_ORDER = list(SCHEME_STYLE)

COLUMN_WIDTH_IN = 3.5
FIG_SIZE = (COLUMN_WIDTH_IN, 2.4)
BANDWIDTH_COLOR = "#BBBBBB"      # the WAN capacity drawn behind goodput
BACKGROUND_TRAFFIC_COLOR = OKABE_ITO["sky"]   # spans of background flows (light, behind lines)
FAILURE_COLOR = "#333333"        # vertical markers of kills and link downs/ups

RC = {
    "font.family": "serif",
    "font.serif": ["DejaVu Serif", "Times New Roman", "Times", "serif"],
    "mathtext.fontset": "dejavuserif",
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "legend.fontsize": 7,
    "legend.frameon": False, "lines.linewidth": 1.2, "lines.markersize": 4,
    "axes.grid": True, "grid.linewidth": 0.4, "grid.alpha": 0.5,
    "axes.spines.top": False, "axes.spines.right": False,
    "figure.figsize": FIG_SIZE, "figure.dpi": 100, "savefig.dpi": 300,
    "savefig.bbox": "tight", "savefig.pad_inches": 0.02,
    "pdf.fonttype": 42, "ps.fonttype": 42,       # TrueType in PDFs: editable, accepted by venues
    "errorbar.capsize": 2,
}


def scheme_style(scheme: str) -> dict:
    """color, marker and legend label of a scheme; unknown schemes get a stable spare."""
    if scheme in SCHEME_STYLE:
        return dict(SCHEME_STYLE[scheme])
    color, marker = _SPARE[sum(map(ord, scheme)) % len(_SPARE)]
    return {"color": color, "marker": marker, "label": scheme}


def scheme_sort_key(scheme: str):
    return (SCHEME_ORDER.index(scheme) if scheme in SCHEME_ORDER else len(SCHEME_ORDER), scheme)


# a scheme's further series (labelled variants, analysis/series.py) keep its color and take
# these in turn: a marker other than the scheme's, a line style, a bar hatch
_VARIANT_MARKERS = ["s", "^", "D", "v", "P", "X", "h", "*", "o", "p"]
_VARIANT_LINESTYLES = ["--", ":", "-."]
_VARIANT_HATCHES = ["//", "..", "xx", "\\\\"]


def series_styles(pairs) -> dict[str, dict]:
    """Style of every series, in display order (schemes in SCHEME_ORDER, a scheme's series
    in the order given): pairs (series name, its scheme), e.g. from a sweep's table.
    A scheme's first series (the one named as the scheme, if any) looks like the scheme
    (solid, no hatch); its others keep the color and take the k-th variant marker, line
    style and hatch, so the styles depend only on the sweep's series, not on which figure
    draws them. The legend says the series name, or the scheme's label for the scheme itself."""
    by_scheme: dict[str, list[str]] = {}
    for name, scheme in pairs:
        names = by_scheme.setdefault(scheme, [])
        if name not in names and not any(name in v for v in by_scheme.values()):
            names.append(name)
    out: dict[str, dict] = {}
    for scheme in sorted(by_scheme, key=scheme_sort_key):
        names = by_scheme[scheme]
        names = [n for n in names if n == scheme] + [n for n in names if n != scheme]
        base = scheme_style(scheme)
        markers = [m for m in _VARIANT_MARKERS if m != base["marker"]]
        for k, name in enumerate(names):
            st = dict(base, linestyle="-", hatch=None)
            if name != scheme:
                st["label"] = name
            if k:
                st.update(marker=markers[(k - 1) % len(markers)],
                          linestyle=_VARIANT_LINESTYLES[(k - 1) % len(_VARIANT_LINESTYLES)],
                          hatch=_VARIANT_HATCHES[(k - 1) % len(_VARIANT_HATCHES)])
            out[name] = st
    return out


@contextmanager
def paper_style():
    with plt.rc_context(RC):
        yield


def new_figure(size=FIG_SIZE):
    fig, ax = plt.subplots(figsize=size, constrained_layout=True)
    return fig, ax


def note_dilation(ax, s: float | None) -> None:
    """Say on the figure that it was emulated with time dilation s (results in real time):
    small grey text under the axes' right end, clear of the data and the x label."""
    if s and float(s) != 1.0:
        ax.annotate(f"time dilation s = {float(s):g}", xy=(1.0, 0.0), xycoords="axes fraction",
                    xytext=(0, -27), textcoords="offset points", ha="right", va="top",
                    fontsize=6, color="#555555")


def legend_above(ax, title: str, handles=None, labels=None) -> None:
    """Legend in a strip between the title and the axes (lines never hide it): 2 or 3
    entries per row, 2 for long labels."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        ax.set_title(title)
        return
    ncol = 1 if len(handles) == 1 else (2 if len(handles) in (2, 4) else 3)
    if max(map(len, labels)) > 22:       # long labels (CDF conditions): two columns fit 3.5 in
        ncol = min(ncol, 2)
    rows = -(-len(handles) // ncol)
    ax.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=ncol,
              borderaxespad=0.3, handlelength=1.8, columnspacing=0.8)
    ax.set_title(title, pad=5 + 11.5 * rows)


def save(fig, stem, formats=("pdf", "png")) -> list:
    """Write stem.pdf / stem.png; returns the paths."""
    from pathlib import Path
    out = []
    for f in formats:
        p = Path(f"{stem}.{f}")
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, format=f)
        out.append(p)
    return out
