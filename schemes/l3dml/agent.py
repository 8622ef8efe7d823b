"""A compact numpy agent for env.L3dmlEnv: one linear policy shared by every datacenter,
trained by the cross-entropy method (README.md says why not an agent library).

The policy reads, per datacenter, its slot of the observation, the job-wide tail, and
two relations to the others (its expected compute finish minus the latest and minus the
mean: being the straggler or not is what pacing depends on), and gives that datacenter's
action row through a sigmoid: rate level and path weights. Sharing the weights keeps the
parameters few ((1 + paths) x features, 92 at 3 paths) whatever the number of
datacenters, so CEM, which searches parameters directly, learns in a few thousand steps.

It starts as `none` (level 1, all weight on the route) and is scored on a fixed set of
seeds per generation (common random numbers), so every candidate meets the same
regimes. No gymnasium import: it needs only the env's reset/step and its layout.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COMPUTE_COL = 2           # env observation: expected compute finish in a datacenter's slot


@dataclass
class LinearPolicy:
    weights: np.ndarray               # (1 + paths, features)
    slots: int
    per_dc: int

    @classmethod
    def like_none(cls, env) -> "LinearPolicy":
        """Level ~1 and the route's weight ~1, other paths ~0: what `none` does."""
        w = np.zeros((1 + env.k, features(env.per_dc)))
        w[:, -1] = -4.0
        w[0, -1] = w[1, -1] = 4.0
        return cls(w, env.slots, env.per_dc)

    def act(self, obs: np.ndarray) -> np.ndarray:
        x = per_dc_features(obs, self.slots, self.per_dc)
        return (1.0 / (1.0 + np.exp(-(x @ self.weights.T)))).astype(np.float32).reshape(-1)


def features(per_dc: int) -> int:
    return per_dc + 3 + 2 + 1       # slot, job tail, two relations, bias


def per_dc_features(obs: np.ndarray, slots: int, per_dc: int) -> np.ndarray:
    rows = obs[: slots * per_dc].reshape(slots, per_dc)
    tail = np.broadcast_to(obs[slots * per_dc:], (slots, 3))
    present = rows[:, 0] > 0
    c = rows[:, COMPUTE_COL]
    latest = c[present].max() if present.any() else 0.0
    mean = c[present].mean() if present.any() else 0.0
    rel = np.stack([c - latest, c - mean], axis=1) * present[:, None]
    return np.hstack([rows, tail, rel, np.ones((slots, 1))])


def episode_return(env, policy: LinearPolicy, seed: int) -> float:
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, r, done, _, _ = env.step(policy.act(obs))
        total += r
    return total


def mean_return(env, policy, seeds) -> float:
    return float(np.mean([episode_return(env, policy, s) for s in seeds]))


def train_cem(env, generations: int = 15, population: int = 16, elite: int = 4,
              sigma: float = 1.0, episodes: int = 2, seed: int = 0) -> tuple[LinearPolicy, list]:
    """Cross-entropy method over the shared linear policy's weights. Returns the mean of
    the last generation's elite and the best mean return per generation."""
    if not 1 <= elite <= population:
        raise ValueError(f"elite = {elite}: give 1..population ({population})")
    rng = np.random.default_rng(seed)
    start = LinearPolicy.like_none(env)
    mu, sd = start.weights.copy(), np.full_like(start.weights, sigma)
    history = []
    for g in range(generations):
        seeds = [int(s) for s in rng.integers(0, 2**31, episodes)]
        cands = [mu + sd * rng.standard_normal(mu.shape) for _ in range(population)]
        scores = [mean_return(env, LinearPolicy(w, env.slots, env.per_dc), seeds) for w in cands]
        best = np.argsort(scores)[::-1][:elite]
        elite_w = np.stack([cands[i] for i in best])
        mu, sd = elite_w.mean(axis=0), elite_w.std(axis=0) + 0.02   # floor keeps it searching
        history.append(float(scores[best[0]]))
    return LinearPolicy(mu, env.slots, env.per_dc), history
