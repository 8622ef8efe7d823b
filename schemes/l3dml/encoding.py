"""What an L3DML agent sees and what its numbers mean (pure, no gymnasium): the observation
of a flow-model iteration and the action <-> allocation mapping. env.py builds its
observations and decodes its actions here; the `drl` policy (policies.py) does the same
on an iteration outside any episode, so a trained agent meets the same numbers in both.

Observation (float32, zeros for absent datacenters and paths), per datacenter slot
(slot = dc_index - 1):
    present, is root, expected compute finish, volume (seconds at the reference rate),
    last iteration's lateness (its arrival - the first arrival), then per candidate path:
    present, bottleneck rate, one-way delay, last iteration's utilization of its
    bottleneck link; after the slots: last spread, last iteration time, progress of the job.
Times are / the reference time, rates / the layout's reference rate.

Action (Box [0, 1], per datacenter slot 1 + paths numbers): the rate level (the cap is
level x the datacenter's line rate, min(LAN, sum of its used paths' rates); >= NO_CAP_LEVEL:
no cap; at least MIN_LEVEL so every stream finishes) and one weight per path (normalized,
then a path below one chunk gets none; all 0: the route only).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

import schemes.l3dml.flowmodel as F

MIN_LEVEL = 0.02
NO_CAP_LEVEL = 0.999
OBS_MAX = 100.0         # observations are clipped here (times are a few reference times)
DC_HEAD = 5             # per-slot numbers before the per-path ones
PER_PATH = 4
TAIL = 3                # job-wide numbers after the slots


@dataclass(frozen=True)
class Layout:
    """The shape of observations and actions: datacenter slots, candidate paths per
    datacenter, and the rate observed rates are divided by."""
    slots: int
    paths: int
    rate_ref_bps: float

    @property
    def per_dc(self) -> int:
        return DC_HEAD + PER_PATH * self.paths

    @property
    def obs_size(self) -> int:
        return self.slots * self.per_dc + TAIL

    @property
    def action_size(self) -> int:
        return self.slots * (1 + self.paths)


def reference_s(it: F.Iteration) -> float:
    """The time scale of an iteration outside an episode, by the formula an episode's regime
    uses (regime.draw_regime): the earliest compute finish + V at the median WAN rate + two
    of the longest WAN delays. Within an episode the regime's own (jitter-free) value is used."""
    rates = [a["rate_bps"] for _, _, a in it.wan.edges(data=True)]
    delays = [a["delay_ms"] for _, _, a in it.wan.edges(data=True)]
    volume = max(s.bytes for s in it.streams)
    return (min(s.start_s for s in it.streams) + 8 * volume / float(np.median(rates))
            + 2 * max(delays) / 1000.0)


def observe(layout: Layout, it: F.Iteration, compute_s: Mapping[int, float], ref_s: float,
            last: F.Outcome | None = None, progress: float = 0.0) -> np.ndarray:
    """The observation of iteration `it`: compute_s the expected compute finishes (dc -> s),
    `last` the previous iteration's outcome in the same regime (None: the first)."""
    obs = np.zeros((layout.slots, layout.per_dc), dtype=np.float64)
    first = min(last.arrival_s.values()) if last else 0.0
    for s in it.streams:
        if not 1 <= s.dc <= layout.slots:
            raise ValueError(f"datacenter {s.dc} has no slot: the layout has {layout.slots}")
        row = obs[s.dc - 1]
        row[:DC_HEAD] = (1.0, float(s.gateway == it.root), compute_s[s.dc] / ref_s,
                         8 * s.bytes / layout.rate_ref_bps / ref_s,
                         (last.arrival_s[s.dc] - first) / ref_s if last else 0.0)
        for j, p in enumerate(s.paths[:layout.paths]):
            links = list(zip(p, p[1:]))
            bott = min(links, key=lambda l: it.wan.edges[l]["rate_bps"]) if links else None
            util = last.utilization.get(bott, 0.0) if (last and bott) else 0.0
            at = DC_HEAD + PER_PATH * j
            row[at:at + PER_PATH] = (1.0, min(it.path_rate_bps(p), s.lan_bps) / layout.rate_ref_bps,
                                     it.path_delay_s(p) / ref_s, util)
    tail = (last.spread_s / ref_s if last else 0.0,
            last.completion_s / ref_s if last else 0.0, progress)
    return np.clip(np.concatenate([obs.reshape(-1), tail]), 0.0, OBS_MAX).astype(np.float32)


def line_rate(it: F.Iteration, s: F.Stream, split) -> float:
    used = [it.path_rate_bps(p) for p, f in zip(s.paths, split) if f > 0]
    return min(s.lan_bps, sum(used))


def _whole_chunks(f: np.ndarray, chunks: int) -> tuple[float, ...]:
    """A split with no path below one chunk: paths get slot ranges, and a fraction under
    1 / chunks is no chunk at all (a sigmoid never gives exactly 0)."""
    f = np.where(f * max(chunks, 1) < 1.0, 0.0, f)
    return tuple(float(x) for x in f / f.sum()) if f.sum() > 0 else (1.0,) + (0.0,) * (len(f) - 1)


def allocation_of(layout: Layout, it: F.Iteration, action) -> dict[int, F.Allocation]:
    """The allocation an action (slots x (1 + paths), clipped to [0, 1]) stands for."""
    a = np.clip(np.asarray(action, dtype=np.float64).reshape(layout.slots, 1 + layout.paths), 0.0, 1.0)
    out = {}
    for s in it.streams:
        row = a[s.dc - 1]
        n = min(len(s.paths), layout.paths)
        w = np.zeros(len(s.paths))
        w[:n] = row[1:1 + n]
        split = _whole_chunks(w / w.sum(), it.chunks) if w.sum() > 1e-9 else F.route_split(s)
        level = max(MIN_LEVEL, float(row[0]))
        cap = None if level >= NO_CAP_LEVEL else level * line_rate(it, s, split)
        out[s.dc] = F.Allocation(split, cap)
    return out


def action_of(layout: Layout, it: F.Iteration, allocation: Mapping[int, F.Allocation]) -> np.ndarray:
    """The action that stands for an allocation of `it` (exact for caps of MIN_LEVEL .. 1 of
    the line rate)."""
    a = np.zeros((layout.slots, 1 + layout.paths), dtype=np.float32)
    for s in it.streams:
        al = allocation[s.dc]
        n = min(len(s.paths), layout.paths)
        a[s.dc - 1, 1:1 + n] = al.split[:n]
        a[s.dc - 1, 0] = 1.0 if al.rate_bps is None else \
            min(1.0, al.rate_bps / line_rate(it, s, al.split))
    return a.reshape(-1)
