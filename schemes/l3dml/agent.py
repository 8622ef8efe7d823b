"""A compact numpy agent for env.L3dmlEnv: one linear policy shared by every datacenter,
trained by the cross-entropy method (README.md says why not an agent library).

The policy reads, per datacenter, features of the current iteration only (no history: the
observation already holds this iteration's rates, and the `drl` policy must act on one
iteration outside any episode) and gives that datacenter's action row through a sigmoid:
rate level and path weights. Sharing the weights keeps the parameters few
((1 + paths) x 14 = 56 at 3 paths) whatever the number of datacenters, so CEM, which
searches parameters directly, learns in a few thousand episodes.

The features are ratios of times, so they do not depend on the units the observation is
scaled by (reference time, reference rate). Besides presence and the root flag they are
pacing hints a linear map cannot compute itself, from the expected arrival of each
datacenter alone on its route (compute + delay + volume / route rate) or alone on all its
paths: the rate level that makes it arrive with the latest route-alone arrival, the level
for the latest all-paths arrival (a lower bound), whether it cannot make that bound on its
route (a straggler), a split hint (a straggler: in proportion to its paths' rates; others:
the route), and its compute finish relative to the latest and the mean. Levels and splits
enter as logits, so one weight of 1 passes a hint through the sigmoid unchanged.

`like_pacing` starts there: pace halfway (in logits) between the latest route-alone arrival
and the all-paths bound, stragglers uncapped and split by path rates; CEM refines it. `like_none` is geo-ina's behaviour. Candidates are
scored on seeds shared within a generation (common random numbers); each generation's mean
is scored on fixed validation seeds and the best is returned, so training never returns a
policy worse on those seeds than the one it started from.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from schemes.l3dml.encoding import DC_HEAD, PER_PATH

HINT_CLIP = 0.02          # hints are clipped to [HINT_CLIP, 1 - HINT_CLIP] before the logit
SD_FLOOR = 0.02           # CEM's standard deviation floor: it keeps searching


def paths_of(per_dc: int) -> int:
    return (per_dc - DC_HEAD) // PER_PATH


def features(per_dc: int) -> int:
    k = paths_of(per_dc)
    return 2 + 3 + 2 * k + 2 + 1    # present, root; 3 hints; split hints, paths; 2 relations; bias


def _logit(p):
    p = np.clip(p, HINT_CLIP, 1 - HINT_CLIP)
    return np.log(p / (1 - p))


def per_dc_features(obs: np.ndarray, slots: int, per_dc: int) -> np.ndarray:
    """(slots, features) from an observation (encoding.observe's layout); zero rows for
    absent datacenters."""
    k = paths_of(per_dc)
    rows = np.asarray(obs[: slots * per_dc], dtype=np.float64).reshape(slots, per_dc)
    present = rows[:, 0] > 0
    if not present.any():
        return np.zeros((slots, features(per_dc)))
    c, vol = rows[:, 2], rows[:, 3]
    p = rows[:, DC_HEAD:].reshape(slots, k, PER_PATH)
    has, rate, delay = p[:, :, 0] > 0, np.where(p[:, :, 0] > 0, p[:, :, 1], 0.0), p[:, :, 2]
    tiny = 1e-12
    route_tx = vol / np.maximum(rate[:, 0], tiny)
    rate_sum = rate.sum(axis=1)
    alone_route = c + delay[:, 0] + route_tx
    alone_all = c + np.where(has, delay, np.inf).min(axis=1, initial=np.inf) + vol / np.maximum(rate_sum, tiny)
    alone_all = np.where(present, alone_all, 0.0)

    def level(target):      # the route-alone level that arrives at target
        budget = target - c - delay[:, 0]
        return np.where(budget > tiny, route_tx / np.maximum(budget, tiny), 1.0)

    lv_route = level(alone_route[present].max())
    lv_bound = level(alone_all[present].max())
    straggler = (lv_bound > 1.0).astype(float)
    share = rate / np.maximum(rate_sum, tiny)[:, None]
    route = np.zeros_like(share)
    route[:, 0] = 1.0
    split = np.where(straggler[:, None] > 0, share, route)
    latest, mean = c[present].max(), c[present].mean()
    rel = np.stack([c / max(latest, tiny) - 1.0, c / max(mean, tiny) - 1.0], axis=1)
    x = np.hstack([rows[:, :2], _logit(lv_route)[:, None], _logit(lv_bound)[:, None],
                   straggler[:, None], _logit(split), has.astype(float), rel, np.ones((slots, 1))])
    return x * present[:, None]


# feature columns the starting policies use
F_LEVEL_ROUTE, F_LEVEL_BOUND, F_STRAGGLER, F_SPLIT = 2, 3, 4, 5


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

    @classmethod
    def like_pacing(cls, env) -> "LinearPolicy":
        """Pace every datacenter between the latest route-alone arrival and the all-paths
        bound (neither is better everywhere: measured on four regimes); a straggler
        uncapped and split in proportion to its paths' rates (the hints passed through)."""
        w = np.zeros((1 + env.k, features(env.per_dc)))
        w[0, F_LEVEL_ROUTE] = w[0, F_LEVEL_BOUND] = 0.5
        w[0, F_STRAGGLER] = 8.0
        for j in range(env.k):
            w[1 + j, F_SPLIT + j] = 1.0
        return cls(w, env.slots, env.per_dc)

    def act(self, obs: np.ndarray) -> np.ndarray:
        x = per_dc_features(obs, self.slots, self.per_dc)
        return (1.0 / (1.0 + np.exp(-(x @ self.weights.T)))).astype(np.float32).reshape(-1)


STARTS = {"none": LinearPolicy.like_none, "pacing": LinearPolicy.like_pacing}


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
              sigma: float = 1.0, episodes: int = 2, seed: int = 0, start: str = "none",
              validation=(), progress=None) -> tuple[LinearPolicy, list]:
    """Cross-entropy method over the shared linear policy's weights, from `start` (STARTS).
    Returns the policy and one record per generation (best and mean candidate return,
    the new mean's validation return, elapsed seconds). With validation seeds, the
    returned policy is the generation mean (or the start) that scored best on them; without,
    the last generation's mean. progress(record) is called after each generation."""
    if not 1 <= elite <= population:
        raise ValueError(f"elite = {elite}: give 1..population ({population})")
    if start not in STARTS:
        raise ValueError(f"start = {start!r}: use one of {sorted(STARTS)}")
    if generations < 0 or episodes < 1:
        raise ValueError("generations >= 0 and episodes >= 1")
    rng = np.random.default_rng(seed)
    policy_of = lambda w: LinearPolicy(w, env.slots, env.per_dc)  # noqa: E731
    mu = STARTS[start](env).weights
    sd = np.full_like(mu, sigma)
    best_w = mu.copy()
    best_v = mean_return(env, policy_of(mu), validation) if validation else None
    history, t0 = [], time.monotonic()
    for g in range(generations):
        seeds = [int(s) for s in rng.integers(0, 2**31, episodes)]
        # the current mean competes too, so a generation of bad samples cannot lose it
        cands = [mu] + [mu + sd * rng.standard_normal(mu.shape) for _ in range(population - 1)]
        scores = np.array([mean_return(env, policy_of(w), seeds) for w in cands])
        top = np.argsort(scores)[::-1][:elite]
        elite_w = np.stack([cands[i] for i in top])
        mu, sd = elite_w.mean(axis=0), elite_w.std(axis=0) + SD_FLOOR
        val = mean_return(env, policy_of(mu), validation) if validation else None
        if val is None:
            best_w = mu
        elif val > best_v:
            best_w, best_v = mu.copy(), val
        rec = {"generation": g + 1, "best": float(scores[top[0]]), "mean": float(scores.mean()),
               "validation": val, "elapsed_s": time.monotonic() - t0}
        history.append(rec)
        if progress:
            progress(rec)
    return policy_of(best_w), history
