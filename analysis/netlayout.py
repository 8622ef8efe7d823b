"""Where things go on the network figure: pure page geometry, in inches from the lower left
corner of the map.

The network figure (analysis/netfigure.py) puts datacenters at their longitude/latitude,
or on a circle, and then places every label so that none hides another: a datacenter's
label block goes to the free side of its marker (farther out, with a leader line, when
its neighbours crowd it); a WAN link's label runs along its line, slid along the line or
beside it until it overlaps no marker, no datacenter label and no other link label. A link
whose label fits nowhere gets a small number on its line instead, and its values go to a
table under the map. Text sizes are matplotlib's font metrics of the figure's own font,
so what is placed here is what is drawn.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

MARKER_RADIUS_IN = 0.055     # a datacenter's marker on the page
NODE_LABEL_GAP_IN = 0.05     # between a marker and its label block
LINE_SPACING = 1.25          # text line height / font size
LABEL_PAD_IN = 0.025         # white box around a link label
MIN_SEPARATION_IN = 0.42     # markers closer than this are drawn apart
PT_PER_IN = 72.0


# ---------------------------------------------------------------- text sizes
@lru_cache(maxsize=4096)
def text_width_in(text: str, size_pt: float, bold: bool = False) -> float:
    """Width of one line of text in the figure's font (analysis/style.py), in inches."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    from analysis.style import paper_style
    with paper_style():      # the serif family the figure resolves to
        prop = FontProperties(family="serif", size=size_pt, weight="bold" if bold else "normal")
        w, _, _ = TextToPath().get_text_width_height_descent(text, prop, ismath=False)
    return w / PT_PER_IN


def line_height_in(size_pt: float) -> float:
    return size_pt * LINE_SPACING / PT_PER_IN


# ---------------------------------------------------------------- the frame
@dataclass(frozen=True)
class Frame:
    """Data coordinates (longitude/latitude, or plain units for the circle) of the map's
    corners and its size on the page; one data unit is the same length on both axes."""
    xmin: float
    xmax: float
    ymin: float
    ymax: float
    width_in: float
    height_in: float
    geographic: bool = True     # False: a circle of datacenters, no meaning in the axes

    @property
    def scale(self) -> float:
        """Inches per data unit."""
        return self.width_in / (self.xmax - self.xmin)

    def to_in(self, x: float, y: float) -> tuple[float, float]:
        return (x - self.xmin) * self.scale, (y - self.ymin) * self.scale

    def to_data(self, px: float, py: float) -> tuple[float, float]:
        return self.xmin + px / self.scale, self.ymin + py / self.scale


def geographic_frame(points: list[tuple[float, float]], width_in: float,
                     margin_x_in: float = 1.05, margin_y_in: float = 0.55,
                     min_span_deg: float = 20.0, height_in: tuple[float, float] = (2.0, 4.6)) -> Frame:
    """A lon/lat frame around (lon, lat) points with room for labels at every side, as wide
    as width_in; its height follows the points' latitude span within the given bounds
    (a flat frame grows in latitude, a tall one in longitude)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    span_x = max(max(xs) - min(xs), min_span_deg)
    span_y = max(ys) - min(ys)
    scale = (width_in - 2 * margin_x_in) / span_x
    lo, hi = height_in
    h = span_y * scale + 2 * margin_y_in
    if h > hi:                        # tall: shrink the scale, the longitude range widens
        scale = (hi - 2 * margin_y_in) / max(span_y, 1e-9)
        h = hi
    h = max(h, lo)
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    half_x, half_y = width_in / scale / 2, h / scale / 2
    # no latitude beyond the poles when the points leave room to shift the frame
    cy = min(max(cy, -90 + half_y), 90 - half_y) if half_y <= 90 else 0.0
    cy = min(max(cy, max(ys) - half_y + margin_y_in / scale), min(ys) + half_y - margin_y_in / scale)
    return Frame(cx - half_x, cx + half_x, cy - half_y, cy + half_y, width_in, h)


def circle_positions(n: int, radius: float = 1.0) -> list[tuple[float, float]]:
    """n points on a circle, the first at the top, then clockwise (scenario order)."""
    return [(radius * math.sin(2 * math.pi * k / n), radius * math.cos(2 * math.pi * k / n))
            for k in range(n)]


def circle_frame(points: list[Point], width_in: float, height_in: float, radius: float = 1.0,
                 radius_in: float = 1.25) -> Frame:
    """A frame around points on a circle (circle_positions), centred on them."""
    scale = radius_in / radius
    hx, hy = width_in / scale / 2, height_in / scale / 2
    cy = (max(y for _, y in points) + min(y for _, y in points)) / 2
    return Frame(-hx, hx, cy - hy, cy + hy, width_in, height_in, geographic=False)


def spread_apart(points: list[tuple[float, float]],
                 min_sep_in: float = MIN_SEPARATION_IN) -> list[tuple[float, float]]:
    """Points on the page (inches) with every group of points closer than min_sep_in (e.g.
    two datacenters in one city) moved onto a small circle around the group's centre, so
    each marker and its label stay visible. Points already apart are unchanged."""
    n = len(points)
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i in range(n):
        for j in range(i + 1, n):
            if math.dist(points[i], points[j]) < min_sep_in:
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    out = list(points)
    for members in groups.values():
        if len(members) < 2:
            continue
        cx = sum(points[i][0] for i in members) / len(members)
        cy = sum(points[i][1] for i in members) / len(members)
        n = len(members)
        r = min_sep_in / (2 * math.sin(math.pi / n))
        # keep the group's own arrangement: members in the order of their angle round the
        # centre, the circle turned so that each moves as little as possible
        angle = {i: math.atan2(points[i][1] - cy, points[i][0] - cx) for i in members}
        order = sorted(members, key=lambda i: (angle[i], i))
        turn = math.atan2(sum(math.sin(angle[i] - 2 * math.pi * k / n) for k, i in enumerate(order)),
                          sum(math.cos(angle[i] - 2 * math.pi * k / n) for k, i in enumerate(order)))
        for k, i in enumerate(order):
            a = turn + 2 * math.pi * k / n
            out[i] = (cx + r * math.cos(a), cy + r * math.sin(a))
    return out


# ---------------------------------------------------------------- shapes
Point = tuple[float, float]


@dataclass(frozen=True)
class Box:
    """A rectangle on the page: centre, half width along `angle` (degrees), half height."""
    cx: float
    cy: float
    hw: float
    hh: float
    angle: float = 0.0

    def corners(self) -> list[Point]:
        a = math.radians(self.angle)
        ux, uy = math.cos(a), math.sin(a)
        vx, vy = -uy, ux
        return [(self.cx + sx * self.hw * ux + sy * self.hh * vx,
                 self.cy + sx * self.hw * uy + sy * self.hh * vy)
                for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]

    def distance(self, p: Point) -> float:
        """From a point to this (axis-aligned) box; 0 inside it."""
        return math.hypot(max(abs(p[0] - self.cx) - self.hw, 0.0), max(abs(p[1] - self.cy) - self.hh, 0.0))

    def inside(self, width_in: float, height_in: float) -> bool:
        return all(0 <= x <= width_in and 0 <= y <= height_in for x, y in self.corners())


def _axes(poly: list[Point]) -> list[Point]:
    out = []
    for k in range(len(poly)):
        (x1, y1), (x2, y2) = poly[k], poly[(k + 1) % len(poly)]
        if (x1, y1) != (x2, y2):
            out.append((y1 - y2, x2 - x1))
    return out


@dataclass(frozen=True)
class Shape:
    """A convex polygon with its bounding box, for many overlap tests."""
    poly: tuple[Point, ...]
    x0: float
    x1: float
    y0: float
    y1: float

    @classmethod
    def of(cls, poly) -> "Shape":
        if isinstance(poly, Shape):
            return poly
        xs, ys = [x for x, _ in poly], [y for _, y in poly]
        return cls(tuple(poly), min(xs), max(xs), min(ys), max(ys))


def overlap(p, q, margin: float = 0.0) -> bool:
    """Whether two convex polygons (point lists or Shapes; a segment is a 2-point polygon)
    come closer than margin, by the separating axis theorem."""
    a, b = Shape.of(p), Shape.of(q)
    # most pairs are far apart: their bounding boxes already tell
    if a.x0 - margin >= b.x1 or b.x0 - margin >= a.x1 or a.y0 - margin >= b.y1 or b.y0 - margin >= a.y1:
        return False
    for ax, ay in _axes(a.poly) + _axes(b.poly):
        norm = math.hypot(ax, ay)
        ax, ay = ax / norm, ay / norm
        pp = [x * ax + y * ay for x, y in a.poly]
        qq = [x * ax + y * ay for x, y in b.poly]
        if max(pp) + margin <= min(qq) or max(qq) + margin <= min(pp):
            return False
    return True


def marker_shape(p: Point, r: float = MARKER_RADIUS_IN) -> list[Point]:
    """A marker as an octagon around its centre."""
    return [(p[0] + r * math.cos(k * math.pi / 4), p[1] + r * math.sin(k * math.pi / 4))
            for k in range(8)]


def readable_angle(p: Point, q: Point) -> float:
    """The direction of p -> q in degrees, turned so text along it is never upside down."""
    a = math.degrees(math.atan2(q[1] - p[1], q[0] - p[0]))
    if a > 90:
        a -= 180
    elif a <= -90:
        a += 180
    return a


def arc_points(p: Point, q: Point, rad: float, n: int = 8) -> list[Point]:
    """The curve matplotlib draws for connectionstyle arc3,rad (a quadratic Bezier whose
    control point is off the midpoint by rad times the chord, turned), as a polyline."""
    mx, my = (p[0] + q[0]) / 2, (p[1] + q[1]) / 2
    dx, dy = q[0] - p[0], q[1] - p[1]
    c = (mx + rad * dy, my - rad * dx)
    pts = []
    for k in range(n + 1):
        t = k / n
        pts.append(((1 - t) ** 2 * p[0] + 2 * (1 - t) * t * c[0] + t ** 2 * q[0],
                    (1 - t) ** 2 * p[1] + 2 * (1 - t) * t * c[1] + t ** 2 * q[1]))
    return pts


def polyline_segments(pts: list[Point]) -> list[list[Point]]:
    return [[pts[k], pts[k + 1]] for k in range(len(pts) - 1)]


# ---------------------------------------------------------------- datacenter labels
@dataclass(frozen=True)
class NodeLabelSpot:
    box: Box            # the label block (axis-aligned)
    leader: bool        # drawn away from its marker: a thin line joins them


# where the block goes round its marker, in order of preference: (side, slide) with side
# right, left, above, below and slide along that side (0: centred on the marker, 1 and -1:
# an end of the block at the marker, so the block sits diagonally)
_SIDES = ((1, 0), (-1, 0), (0, 1), (0, -1))
_SLIDES = (0.0, 1.0, -1.0, 0.5, -0.5)
_RINGS_IN = (0.0, 0.15, 0.35, 0.6, 0.9, 1.3)


def middle_half(seg: list[Point]) -> list[Point]:
    """The middle half of a segment: where its label goes."""
    (x1, y1), (x2, y2) = seg
    return [(x1 + 0.25 * (x2 - x1), y1 + 0.25 * (y2 - y1)), (x1 + 0.75 * (x2 - x1), y1 + 0.75 * (y2 - y1))]


def place_node_labels(markers: list[Point], sizes: list[tuple[float, float]],
                      segments: list[list[Point]], width_in: float, height_in: float,
                      label_room: list[list[Point]] = ()) -> list[NodeLabelSpot]:
    """A block of size (w, h) for every marker, on the side where it hides the least:
    never a marker or another block when avoidable, then as few lines (WAN links, arrows:
    `segments`) as possible, a link's middle (`label_room`, where its label goes) counting
    three times, not nearer another marker than its own, then the nearest ring and the
    preferred side. The most crowded markers choose first."""
    shapes = [Shape.of(marker_shape(m)) for m in markers]
    segments = [Shape.of(sg) for sg in segments]
    label_room = [Shape.of(sg) for sg in label_room]

    def crowd(i):
        return sum(1 for j, m in enumerate(markers) if j != i and math.dist(m, markers[i]) < 1.2)
    order = sorted(range(len(markers)), key=lambda i: (-crowd(i), i))
    placed: list[Shape] = []
    out: dict[int, NodeLabelSpot] = {}
    for i in order:
        (mx, my), (w, h) = markers[i], sizes[i]
        best = None
        for ring_k, ring in enumerate(_RINGS_IN):
            gap = MARKER_RADIUS_IN + NODE_LABEL_GAP_IN + ring
            for pos_k, ((sx, sy), f) in enumerate((side, f) for side in _SIDES for f in _SLIDES):
                if sx and abs(f) == 0.5:
                    continue            # beside the marker the block is short: 3 slides do
                if sx:
                    box = Box(mx + sx * (gap + w / 2), my + f * h / 2, w / 2, h / 2)
                else:
                    box = Box(mx + f * w / 2, my + sy * (gap + h / 2), w / 2, h / 2)
                poly = Shape.of(box.corners())
                hard = sum(overlap(poly, s, 0.01) for j, s in enumerate(shapes) if j != i)
                hard += sum(overlap(poly, b, 0.02) for b in placed)
                hard += 0 if box.inside(width_in, height_in) else 1
                soft = sum(overlap(poly, s) for s in segments) + 2 * sum(overlap(poly, s) for s in label_room)
                # a block nearer another marker than its own reads as that one's label
                own = box.distance(markers[i])
                soft += 3 * sum(1 for j, m in enumerate(markers) if j != i and box.distance(m) < own)
                score = (hard, soft + 3 * ring_k, ring_k, pos_k)
                if best is None or score < best[0]:
                    best = (score, box, ring > 0)
            if best[0][:2] == (0, 0):
                break       # free of everything on this ring: nearer is better
        placed.append(Shape.of(best[1].corners()))
        out[i] = NodeLabelSpot(best[1], best[2])
    return [out[i] for i in range(len(markers))]


# ---------------------------------------------------------------- link labels
@dataclass(frozen=True)
class LinkLabelSpot:
    box: Box
    variant: int | None     # which of the link's label variants fits; None: a number tag on
                            # the line, the values in the table under the map

    @property
    def tag(self) -> bool:
        return self.variant is None


_ALONG = (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82)   # offsets along the line, middle first
TAG_SIZE_IN = 0.13
PARALLEL_DEG = 25.0          # lines closer in direction than this make a label ambiguous


def place_link_labels(links: list[tuple[Point, Point]], variants: list[list[tuple[float, float]]],
                      markers: list[list[Point]], texts: list[list[Point]], segments: list[list[Point]],
                      width_in: float, height_in: float) -> list[LinkLabelSpot]:
    """A label along every link (p, q), short links first. A spot is clear when it stays
    inside the frame and touches no marker, no text (`texts`: datacenter labels; the
    labels placed before) and no line running nearly along its own (which link would it
    name?); among clear spots, slid along the line (middle first) or beside it, the one
    crossing the fewest lines (`segments`: the links in the same order, then others, e.g.
    the tree's arrows). Of the link's label variants (sizes (w, h): one line, then two)
    the one whose best spot crosses the fewest lines wins, the first among equals. A link
    where no variant fits gets a number tag, clear if it can be, else where it covers no
    text if it can be."""
    order = sorted(range(len(links)), key=lambda i: (math.dist(*links[i]), i))
    placed: list[Shape] = []
    out: dict[int, LinkLabelSpot] = {}
    angles = [readable_angle(p, q) for p, q in links]
    markers = [Shape.of(m) for m in markers]
    texts = [Shape.of(t) for t in texts]
    segments = [Shape.of(sg) for sg in segments]

    def parallel(i, j):
        diff = abs(angles[i] - angles[j]) % 180
        return min(diff, 180 - diff) < PARALLEL_DEG

    def candidates(i, w, h, along):
        p, q = links[i]
        d = math.dist(p, q)
        if d == 0:
            return
        ux, uy = (q[0] - p[0]) / d, (q[1] - p[1]) / d
        for side in (0.0, 1.0, -1.0):
            off = side * (h / 2 + 0.012)
            for t in along:
                if min(t * d, (1 - t) * d) - MARKER_RADIUS_IN - 0.02 < w / 2:
                    continue     # the label stays between the two markers
                cx, cy = p[0] + t * (q[0] - p[0]) - uy * off, p[1] + t * (q[1] - p[1]) + ux * off
                yield Box(cx, cy, w / 2, h / 2, angles[i]), abs(t - 0.5) + abs(side)

    def cost(i, box, clear):
        """(covered text, covered markers, ambiguous lines, crossed lines) of a spot; None
        when `clear` asks for a clear spot and this one is not."""
        poly = Shape.of(box.corners())
        out_of_frame = 0 if box.inside(width_in, height_in) else 1
        if clear and (out_of_frame or any(overlap(poly, b, 0.01) for b in texts)
                      or any(overlap(poly, b, 0.015) for b in placed)
                      or any(overlap(poly, m, 0.01) for m in markers)
                      or any(j != i and parallel(i, j) and overlap(poly, segments[j]) for j in range(len(links)))):
            return None
        text = sum(overlap(poly, b, 0.01) for b in texts) + sum(overlap(poly, b, 0.015) for b in placed)
        marks = sum(overlap(poly, m, 0.01) for m in markers) + out_of_frame
        ambiguous = sum(1 for j in range(len(links)) if j != i and parallel(i, j) and overlap(poly, segments[j]))
        return text, marks, ambiguous, sum(overlap(poly, sg) for j, sg in enumerate(segments) if j != i)

    def choose(i, w, h, along=_ALONG, clear=True):
        best = None
        for box, pref in candidates(i, w, h, along):
            c = cost(i, box, clear)
            if c is None:
                continue
            score = (c, pref)
            if best is None or score < best[0]:
                best = (score, box)
            if c == (0, 0, 0, 0):
                break       # candidates come in order of preference: none can do better
        return best

    for i in order:
        found = [(b[0], k, b[1]) for k, (w, h) in enumerate(variants[i])
                 for b in [choose(i, w, h)] if b is not None]
        if found:
            (c, pref), k, box = min(found, key=lambda f: (f[0][0][3], f[1], f[0][1]))
            spot = LinkLabelSpot(box, k)
        else:
            best = choose(i, TAG_SIZE_IN, TAG_SIZE_IN) or \
                choose(i, TAG_SIZE_IN, TAG_SIZE_IN, [k / 20 for k in range(2, 19)], clear=False)
            if best is None:     # a line too short for a tag: its middle
                p, q = links[i]
                box = Box((p[0] + q[0]) / 2, (p[1] + q[1]) / 2, TAG_SIZE_IN / 2, TAG_SIZE_IN / 2)
            else:
                box = best[1]
            spot = LinkLabelSpot(box, None)
        placed.append(Shape.of(spot.box.corners()))
        out[i] = spot
    return [out[i] for i in range(len(links))]
