"""The regime of an L3DML training episode (pure, no gymnasium): the ranges it is drawn
from (RegimeConfig) and one draw (Regime: a WAN, its root, candidate paths, compute
finishes with persistent stragglers, the partial sum's size, the reference time).
env.py draws one per episode; modelset.py cuts RegimeConfig's space into named regimes."""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import networkx as nx
import numpy as np

from control.agg_tree import default_root_dc
import schemes.l3dml.flowmodel as F
from topologies.graph import gateway_id, wan_edge_pairs
from workers.agg_packet import frame_bytes


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
