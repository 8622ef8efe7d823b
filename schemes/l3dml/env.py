"""A gymnasium environment over the flow model: one step is one training iteration, one
episode a job of `iterations` iterations in one regime (WAN, stragglers, model size)
drawn at reset (regime.py). The agent decides, per datacenter, a rate and a split over its
candidate paths; the reward is -(spread of arrival times at the root) - beta x iteration
time, both in units of the regime's reference time (README.md).

Observation and action: encoding.py (shared with the `drl` policy). Rates are observed
/ the largest rate the config can draw. `action_of` turns a policy's allocation into an
action, so `none` and `rule` run through the same interface.

gymnasium is imported here only: the flow model and the policies work without it.
"""
from __future__ import annotations

from dataclasses import fields, replace

import gymnasium as gym
import numpy as np

import schemes.l3dml.encoding as E
import schemes.l3dml.flowmodel as F
import schemes.l3dml.policies as policies
from schemes.l3dml.encoding import MIN_LEVEL, NO_CAP_LEVEL, OBS_MAX  # noqa: F401  (the env's constants)
from schemes.l3dml.regime import Regime, RegimeConfig, draw_regime  # noqa: F401  (re-exported)
from topologies.graph import gateway_id


def layout_of(cfg: RegimeConfig) -> E.Layout:
    """The observation/action layout of a config: a slot per datacenter it can draw, rates
    / the largest it can draw (with three standard deviations of jitter)."""
    return E.Layout(cfg.dcs[1], cfg.paths, cfg.bandwidth_mbps[1] * 1e6 * (1 + 3 * cfg.bandwidth_jitter))


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
        self.layout = layout_of(cfg)
        self.slots, self.k, self.per_dc = self.layout.slots, cfg.paths, self.layout.per_dc
        self.observation_space = gym.spaces.Box(0.0, OBS_MAX, (self.layout.obs_size,), np.float32)
        self.action_space = gym.spaces.Box(0.0, 1.0, (self.layout.action_size,), np.float32)
        self.rate_ref = self.layout.rate_ref_bps
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
        return E.allocation_of(self.layout, self.iteration, action)

    def action_of(self, allocation: dict[int, F.Allocation]) -> np.ndarray:
        """The action that stands for a policy's allocation of the current iteration
        (exact for caps of MIN_LEVEL .. 1 of the line rate)."""
        return E.action_of(self.layout, self.iteration, allocation)

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
        return E.observe(self.layout, self.iteration, self.regime.compute_s, self.regime.ref_s,
                         self.last, self.step_index / self.cfg.iterations)
