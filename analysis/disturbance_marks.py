"""What a run's background traffic and failures look like on a time axis (pure).

Input: the records of the run's event stream (run_events.jsonl, testbed/run_events.py;
emulated CLOCK_MONOTONIC `t`), the job's start t0 (same clock) and the time dilation s.
Output, in real-world seconds since the job's start like every time-series figure:
- spans: (start, end, label) per on-period of a background flow, from its start to its
  stop (an unmatched start runs to end_s); a start that failed is left out;
- markers: (t, label) per kill, link down and link up that happened.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple


class Span(NamedTuple):
    start: float
    end: float
    label: str


class Marker(NamedTuple):
    t: float
    label: str
    kind: str     # kill | link_down | link_up


def flow_label(rec: dict) -> str:
    rate = rec.get("rate_mbps")
    return (f"{rec.get('src')}\u2192{rec.get('dst')} {rec.get('proto', '').upper()}"
            + (f" {rate:g} Mbps" if rate else ""))


def marker_label(rec: dict) -> str:
    if rec["event"] == "kill":
        return f"kill {rec.get('process') or rec.get('target')}"
    a, b = (rec.get("datacenters") or ["?", "?"])[:2]
    return f"{a}-{b} {'down' if rec['event'] == 'link_down' else 'up'}"


def disturbance_marks(records: Iterable[dict], t0: float, dilation: float,
                      end_s: float) -> tuple[list[Span], list[Marker]]:
    s = float(dilation) or 1.0
    real = lambda t: (float(t) - t0) / s
    open_: dict[int, tuple[float, str]] = {}
    spans: list[Span] = []
    markers: list[Marker] = []
    for rec in sorted(records, key=lambda r: r.get("t", 0.0)):
        kind = rec.get("event")
        if kind == "background_start" and not rec.get("error"):
            open_[rec["flow"]] = (real(rec["t"]), flow_label(rec))
        elif kind == "background_stop" and rec.get("flow") in open_:
            start, label = open_.pop(rec["flow"])
            spans.append(Span(start, real(rec["t"]), label))
        elif kind in ("kill", "link_down", "link_up") and not rec.get("error"):
            markers.append(Marker(real(rec["t"]), marker_label(rec), kind))
    spans += [Span(start, max(start, end_s), label) for start, label in open_.values()]
    return sorted(spans), markers
