"""How long a worker computes in an iteration: distributions and stragglers (pure, seeded).

Specs are the scenario's `compute_time` and `stragglers` sections as plain dicts
(`model_dump()` of testbed/schema_models.py), so a worker process gets them in its
JSON config. Every draw comes from a generator seeded by (scenario seed, worker index,
iteration), so a run is reproducible and one worker's times do not depend on how many
other workers exist or in which order they draw.

Models (milliseconds, real-world time):
  constant     value_ms
  normal       mean_ms, std_ms; truncated at 0 (a compute time cannot be negative)
  shifted_exp  shift_ms + Exponential(mean scale_ms)
  pareto       scale_ms * Pareto(shape): minimum scale_ms, P(X > x) = (scale/x)^shape

Stragglers multiply the drawn time (all factors combine by product):
  persistent   {worker: global index or host id like h3r2w2, factor} or {dc: name, factor}
               (a whole datacenter)
  transient    each iteration each worker straggles with `probability`; its factor is
               constant `factor`, uniform in [low, high], or Pareto with minimum `factor`
               and tail index `shape`.
A datacenter's compute_speed (2.0 = twice as fast) divides the time.

Time dilation s multiplies the final time (testbed/dilation.py): the emulated world is
s times slower, so compute must be too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Separate streams for the base draw and the straggler draw, so adding stragglers to a
# scenario does not change the base compute times.
_BASE_STREAM, _STRAGGLER_STREAM = 1, 2


@dataclass(frozen=True)
class WorkerIdentity:
    index: int             # global worker index (0-based, graph attribute worker_index)
    host_id: str           # host id without node prefix, e.g. h1r2w1
    dc: str                # datacenter name
    compute_speed: float = 1.0


@dataclass(frozen=True)
class ComputeSample:
    base_ms: float         # drawn from the compute-time model
    factor: float          # product of straggler factors (1.0: not straggling)
    speed: float           # the datacenter's compute_speed
    dilation: float
    reasons: tuple[str, ...] = ()   # which straggler rules applied

    @property
    def real_ms(self) -> float:
        """Compute time in the real world."""
        return self.base_ms * self.factor / self.speed

    @property
    def emulated_ms(self) -> float:
        """What the worker sleeps in the emulation (x time dilation)."""
        return self.real_ms * self.dilation


def rng_for(seed: int, worker: int, iteration: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(worker), int(iteration), stream, 0xC0])


def draw_base_ms(spec: dict, rng: np.random.Generator) -> float:
    """One draw of the compute-time model (ms)."""
    model = spec.get("model", "constant")
    if model == "constant":
        return float(spec.get("value_ms", 100.0))
    if model == "normal":
        return max(0.0, float(rng.normal(spec["mean_ms"], spec["std_ms"])))
    if model == "shifted_exp":
        return float(spec["shift_ms"] + rng.exponential(spec["scale_ms"]))
    if model == "pareto":
        # numpy's pareto is the Lomax (Pareto II) form starting at 0; shift to Pareto I.
        return float(spec["scale_ms"] * (1.0 + rng.pareto(spec["shape"])))
    raise ValueError(f"compute_time.model: unknown model {model!r} "
                     "(use constant, normal, shifted_exp or pareto)")


def draw_transient_factor(spec: dict, rng: np.random.Generator) -> float:
    """1.0, or the straggling factor when this worker straggles this iteration."""
    if rng.random() >= spec["probability"]:
        return 1.0
    dist = spec.get("distribution", "constant")
    if dist == "constant":
        return float(spec.get("factor", 2.0))
    if dist == "uniform":
        return float(rng.uniform(spec["low"], spec["high"]))
    if dist == "pareto":
        return float(spec.get("factor", 2.0) * (1.0 + rng.pareto(spec["shape"])))
    raise ValueError(f"stragglers.transient.distribution: unknown {dist!r} "
                     "(use constant, uniform or pareto)")


def persistent_factor(rules: list[dict], worker: WorkerIdentity) -> tuple[float, list[str]]:
    factor, why = 1.0, []
    for r in rules:
        w, dc = r.get("worker"), r.get("dc")
        hit = (dc is not None and dc == worker.dc) or \
              (isinstance(w, int) and not isinstance(w, bool) and w == worker.index) or \
              (isinstance(w, str) and w == worker.host_id)
        if hit:
            factor *= float(r["factor"])
            why.append(f"persistent dc {dc} x{r['factor']:g}" if dc is not None
                       else f"persistent worker {w} x{r['factor']:g}")
    return factor, why


def compute_sample(spec: dict, stragglers: dict | None, worker: WorkerIdentity, iteration: int,
                   seed: int, dilation: float = 1.0) -> ComputeSample:
    """The compute time of `worker` in `iteration` (0-based)."""
    if dilation < 1.0:
        raise ValueError(f"time dilation must be >= 1 (got {dilation:g})")
    if worker.compute_speed <= 0:
        raise ValueError(f"compute_speed must be > 0 (got {worker.compute_speed:g})")
    base = draw_base_ms(spec, rng_for(seed, worker.index, iteration, _BASE_STREAM))
    stragglers = stragglers or {}
    factor, why = persistent_factor(stragglers.get("persistent") or [], worker)
    tr = stragglers.get("transient")
    if tr:
        f = draw_transient_factor(tr, rng_for(seed, worker.index, iteration, _STRAGGLER_STREAM))
        if f != 1.0:
            factor *= f
            why.append(f"transient x{f:.3g}")
    return ComputeSample(base, factor, float(worker.compute_speed), float(dilation), tuple(why))


def model_mean_ms(spec: dict) -> float:
    """The model's mean (ms; inf for a Pareto tail with shape <= 1). For checks and reports."""
    model = spec.get("model", "constant")
    if model == "constant":
        return float(spec.get("value_ms", 100.0))
    if model == "normal":
        return float(spec["mean_ms"])       # truncation at 0 is negligible for mean >> std
    if model == "shifted_exp":
        return float(spec["shift_ms"] + spec["scale_ms"])
    if model == "pareto":
        a = spec["shape"]
        return float("inf") if a <= 1 else float(spec["scale_ms"] * a / (a - 1))
    raise ValueError(f"compute_time.model: unknown model {model!r}")
