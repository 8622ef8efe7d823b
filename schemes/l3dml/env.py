"""A gymnasium environment over the flow model: one step is one training iteration, one
episode a job of `iterations` iterations in one regime (WAN, stragglers, model size)
drawn at reset. The agent decides, per datacenter, a rate and a split over its candidate
paths; the reward is -(spread of arrival times at the root) - beta x iteration time, both
in units of the regime's reference time (README.md).

Observation (float32, zeros for absent datacenters and paths), per datacenter slot:
    present, is root, expected compute finish, volume (seconds at the reference rate),
    last iteration's lateness (its arrival - the first arrival), then per candidate path:
    present, bottleneck rate, one-way delay, last iteration's utilization of its
    bottleneck link; after the slots: last spread, last iteration time, progress of the job.
Times are / the reference time, rates / the largest rate the config can draw.

Action (Box [0, 1], per datacenter slot 1 + paths numbers): the rate level (the cap is
level x the datacenter's line rate, min(LAN, sum of its used paths' rates); 1: no cap;
at least MIN_LEVEL so every stream finishes) and one weight per path (normalized; all 0:
the route only). `action_of` turns a policy's allocation into this action.

gymnasium is imported here only: the flow model and the policies work without it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from types import SimpleNamespace

import gymnasium as gym
import networkx as nx
import numpy as np

from control.agg_tree import default_root_dc
from schemes.l3dml import flowmodel as F
from schemes.l3dml import policies
from topologies.graph import gateway_id, wan_edge_pairs
from workers.agg_packet import frame_bytes

MIN_LEVEL = 0.02
OBS_MAX = 100.0         # observations are clipped here (times are a few reference times)
NO_CAP_LEVEL = 0.999


@dataclass(frozen=True)
class RegimeConfig:
    """Ranges the regime of an episode is drawn from (uniform, bounds included)."""
    dcs: tuple[int, int] = (3, 6)
    topologies: tuple[str, ...] = ("ring", "full-mesh")
    bandwidth_mbps: tuple[float, float] = (20.0, 200.0)   # per WAN link, log-uniform
    delay_ms: tuple[float, float] = (5.0, 80.0)           # per WAN link, one way
    stragglers: tuple[int, int] = (0, 2)                  # persistent straggler datacenters
    straggler_factor: tuple[float, float] = (1.5, 3.0)    # their compute time x
    compute_ms: tuple[float, float] = (100.0, 400.0)      # a normal datacenter's slowest worker
    parameters: tuple[int, int] = (250_000, 2_000_000)    # gradient values per worker
    compute_jitter: float = 0.05      # relative sd of a datacenter's compute, per iteration
    bandwidth_jitter: float = 0.10    # relative sd of a link's rate, per iteration (log-normal)
    k: int = 32                       # values per aggregation frame
    lan_mbps: float = 1000.0
    paths: int = 3                    # candidate paths per datacenter
    iterations: int = 8               # steps per episode
    beta: float = 0.5

    def __post_init__(self):
        def rng(name, lo_min):
            lo, hi = getattr(self, name)
            if not lo_min <= lo <= hi:
                raise ValueError(f"RegimeConfig.{name} = {(lo, hi)}: give (low, high) with "
                                 f"{lo_min} <= low <= high")
        rng("dcs", 2), rng("bandwidth_mbps", 1e-3), rng("delay_ms", 0.0)
        rng("straggler_factor", 1.0), rng("compute_ms", 0.0), rng("parameters", 1)
        rng("stragglers", 0)
        if self.stragglers[1] >= self.dcs[0]:
            raise ValueError(f"RegimeConfig.stragglers = {self.stragglers}: at most dcs[0] - 1 "
                             f"= {self.dcs[0] - 1} straggler datacenters, so one is not")
        bad = set(self.topologies) - {"ring", "full-mesh"}
        if not self.topologies or bad:
            raise ValueError(f"RegimeConfig.topologies = {self.topologies}: use 'ring' and/or "
                             "'full-mesh' (path diversity; a star has one path per datacenter)")
        if not 1 <= self.paths <= F.MAX_PATHS:
            raise ValueError(f"RegimeConfig.paths = {self.paths}: use 1..{F.MAX_PATHS}")
        if self.iterations < 1 or self.beta < 0 or self.lan_mbps <= 0 or self.k < 1:
            raise ValueError("RegimeConfig: iterations >= 1, beta >= 0, lan_mbps > 0, k >= 1")
        if self.compute_jitter < 0 or self.bandwidth_jitter < 0:
            raise ValueError("RegimeConfig: jitters are relative standard deviations >= 0")


@dataclass(frozen=True)
class Regime:
    """One episode's fixed conditions."""
    wan: nx.DiGraph          # base rates
    root: str
    paths: dict              # dc -> candidate paths
    compute_s: dict          # dc -> expected compute finish (persistent stragglers included)
    bytes: float             # V, every datacenter
    chunks: int
    ref_s: float             # the reference time
    down_s: float            # root -> farthest gateway, one way (the result)


def draw_regime(cfg: RegimeConfig, rng: np.random.Generator) -> Regime:
    n = int(rng.integers(cfg.dcs[0], cfg.dcs[1] + 1))
    topo = cfg.topologies[int(rng.integers(len(cfg.topologies)))]
    g = nx.Graph(dilated=1.0)
    for d in range(1, n + 1):
        g.add_node(gateway_id(d), role="gateway", dc_index=d)
    shape = SimpleNamespace(datacenters=[None] * n, wan=SimpleNamespace(topology=topo, hub=None, edges=[]))
    lo, hi = np.log(cfg.bandwidth_mbps)
    for i, j in wan_edge_pairs(shape):
        g.add_edge(gateway_id(i), gateway_id(j), kind="wan",
                   bandwidth_mbps=float(np.exp(rng.uniform(lo, hi))),
                   delay_ms=float(rng.uniform(*cfg.delay_ms)))
    root = gateway_id(default_root_dc(g))          # geo-ina's rule (control/agg_tree.py)
    wan = F.wan_digraph(g)
    paths = {d: F.candidate_paths(wan, gateway_id(d), root, cfg.paths) for d in range(1, n + 1)}
    base = rng.uniform(*cfg.compute_ms) / 1000.0
    slow = rng.choice(np.arange(1, n + 1), size=int(rng.integers(cfg.stragglers[0], cfg.stragglers[1] + 1)),
                      replace=False)
    compute = {d: base * (rng.uniform(*cfg.straggler_factor) if d in slow else 1.0) for d in range(1, n + 1)}
    values = int(rng.integers(cfg.parameters[0], cfg.parameters[1] + 1))
    chunks = math.ceil(values / cfg.k)
    volume = chunks * frame_bytes(cfg.k)
    rates = [a["rate_bps"] for _, _, a in wan.edges(data=True)]
    ref = base + 8 * volume / float(np.median(rates)) + 2 * max(a["delay_ms"] for _, _, a in wan.edges(data=True)) / 1000
    far = nx.single_source_dijkstra_path_length(wan, root, weight="delay_ms")
    return Regime(wan, root, paths, compute, float(volume), chunks, ref, max(far.values()) / 1000)


class L3dmlEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, config: RegimeConfig | None = None, **overrides):
        cfg = config or RegimeConfig()
        if overrides:
            known = {f.name for f in fields(RegimeConfig)}
            unknown = set(overrides) - known
            if unknown:
                raise ValueError(f"unknown RegimeConfig field(s) {sorted(unknown)}: use {sorted(known)}")
            cfg = replace(cfg, **overrides)
        self.cfg = cfg
        self.slots, self.k = cfg.dcs[1], cfg.paths
        self.per_dc = 5 + 4 * self.k
        n_obs = self.slots * self.per_dc + 3
        self.observation_space = gym.spaces.Box(0.0, OBS_MAX, (n_obs,), np.float32)
        self.action_space = gym.spaces.Box(0.0, 1.0, (self.slots * (1 + self.k),), np.float32)
        self.rate_ref = cfg.bandwidth_mbps[1] * 1e6 * (1 + 3 * cfg.bandwidth_jitter)
        self.regime: Regime | None = None
        self.iteration: F.Iteration | None = None

    # ------------------------------------------------------------ gym API
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.regime = draw_regime(self.cfg, self.np_random)
        self.step_index = 0
        self.last: F.Outcome | None = None
        self.iteration = self._draw_iteration()
        return self._observe(), {"dcs": len(self.regime.paths), "root": self.regime.root}

    def step(self, action):
        if self.iteration is None:
            raise RuntimeError("call reset() before step()")
        action = np.asarray(action, dtype=np.float64).reshape(self.slots, 1 + self.k)
        if not np.all(np.isfinite(action)):
            raise ValueError("action has NaN or infinite entries: give numbers in [0, 1]")
        out = F.simulate(self.iteration, self.allocation_of(action))
        base = policies.run(self.iteration, "none")
        ref = self.regime.ref_s
        reward = -(out.spread_s + self.cfg.beta * out.completion_s) / ref
        info = {"spread_s": out.spread_s, "completion_s": out.completion_s,
                "arrival_s": out.arrival_s, "slots_peak": out.slots_peak,
                "none_spread_s": base.spread_s, "none_completion_s": base.completion_s,
                "none_reward": -(base.spread_s + self.cfg.beta * base.completion_s) / ref}
        self.last = out
        self.step_index += 1
        done = self.step_index >= self.cfg.iterations
        if not done:
            self.iteration = self._draw_iteration()
        return self._observe(), float(reward), done, False, info

    # ------------------------------------------------------------ actions
    def allocation_of(self, action) -> dict[int, F.Allocation]:
        """The allocation an action (slots x (1 + paths), clipped to [0, 1]) stands for."""
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(self.slots, 1 + self.k), 0.0, 1.0)
        out = {}
        for s in self.iteration.streams:
            row = a[s.dc - 1]
            w = row[1:1 + len(s.paths)]
            split = tuple(float(x) for x in w / w.sum()) if w.sum() > 1e-9 else policies.one_path(s)
            level = max(MIN_LEVEL, float(row[0]))
            cap = None if level >= NO_CAP_LEVEL else level * self._line_rate(s, split)
            out[s.dc] = F.Allocation(split, cap)
        return out

    def action_of(self, allocation: dict[int, F.Allocation]) -> np.ndarray:
        """The action that stands for a policy's allocation of the current iteration
        (exact for caps of MIN_LEVEL .. 1 of the line rate)."""
        a = np.zeros((self.slots, 1 + self.k), dtype=np.float32)
        for s in self.iteration.streams:
            al = allocation[s.dc]
            a[s.dc - 1, 1:1 + len(s.paths)] = al.split
            a[s.dc - 1, 0] = 1.0 if al.rate_bps is None else \
                min(1.0, al.rate_bps / self._line_rate(s, al.split))
        return a.reshape(-1)

    def _line_rate(self, s: F.Stream, split) -> float:
        used = [self.iteration.path_rate_bps(p) for p, f in zip(s.paths, split) if f > 0]
        return min(s.lan_bps, sum(used))

    # ------------------------------------------------------------ conditions
    def _draw_iteration(self) -> F.Iteration:
        r, cfg, rng = self.regime, self.cfg, self.np_random
        wan = r.wan.copy()
        for u, v in sorted(wan.edges):      # sorted: the draws do not depend on dict order
            wan.edges[u, v]["rate_bps"] *= float(np.exp(cfg.bandwidth_jitter * rng.standard_normal()))
        streams = []
        for d in sorted(r.paths):
            start = r.compute_s[d] * max(0.1, 1 + cfg.compute_jitter * rng.standard_normal())
            streams.append(F.Stream(d, gateway_id(d), r.bytes, start, cfg.lan_mbps * 1e6, r.paths[d]))
        return F.Iteration(wan, r.root, tuple(streams), r.down_s, r.chunks)

    def _observe(self) -> np.ndarray:
        r, it, ref = self.regime, self.iteration, self.regime.ref_s
        obs = np.zeros((self.slots, self.per_dc), dtype=np.float64)
        first = min(self.last.arrival_s.values()) if self.last else 0.0
        for s in it.streams:
            row = obs[s.dc - 1]
            row[:5] = (1.0, float(s.gateway == it.root), r.compute_s[s.dc] / ref,
                       8 * s.bytes / self.rate_ref / ref,
                       (self.last.arrival_s[s.dc] - first) / ref if self.last else 0.0)
            for j, p in enumerate(s.paths):
                links = list(zip(p, p[1:]))
                bott = min(links, key=lambda l: it.wan.edges[l]["rate_bps"]) if links else None
                util = self.last.utilization.get(bott, 0.0) if (self.last and bott) else 0.0
                rate = it.path_rate_bps(p)
                row[5 + 4 * j: 9 + 4 * j] = (1.0, min(rate, s.lan_bps) / self.rate_ref,
                                             it.path_delay_s(p) / ref, util)
        tail = (self.last.spread_s / ref if self.last else 0.0,
                self.last.completion_s / ref if self.last else 0.0,
                self.step_index / self.cfg.iterations)
        return np.clip(np.concatenate([obs.reshape(-1), tail]), 0.0, OBS_MAX).astype(np.float32)
