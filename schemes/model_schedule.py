"""The model under a bandwidth schedule: the schedule's steps and a prediction per step
(pure; no Mininet, no processes).

A scheme's model (schemes/model.py) predicts a steady iteration with every link at one
rate. Under a WAN bandwidth schedule (topologies/schedule.py) the rates change at given
times; between two changes the network is a fixed one, so the model's answer for that
interval is the model of the graph with every WAN link at that interval's rate. That is
what this module gives: `schedule_steps` cuts the schedule into steps (intervals with every
WAN link's rate), `predict_at` predicts with the links at given rates and
`predict_schedule` does both, with the model's goodput per step.

Assumption (docs/model.md): each step is long enough for the scheme to reach its steady
state at the step's rates; iterations that straddle a change, and the transient right
after it, are not modelled (the measured check leaves them out, analysis/schedule_tracking.py).

Goodput, as analysis/measure.py defines it for a measurement, from the model's numbers:
per worker 8 x gradient bytes / communication time (`goodput_mbps`), and the job's
8 x all workers' gradient bytes / iteration time (`job_goodput_mbps`). Real-world units:
the graph is build_graph's (undilated), times are seconds from the run's start, as the
scenario writes them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from schemes import model as M
from topologies.graph import hosts, wan_edges
from topologies.schedule import apply_change, bandwidth_events


def edge_key(edge) -> str:
    """A WAN edge's name as bandwidth_events.jsonl writes it: "u-v" (u the lower-indexed
    datacenter's switch, as topologies/schedule.py orders it). One direction of it, in a
    per-direction schedule, is "u>v" (topologies.schedule.rate_key)."""
    return edge if isinstance(edge, str) else "-".join(edge)


@dataclass
class Step:
    """One interval of a schedule (real-world seconds from the run's start)."""
    t_start_s: float
    t_end_s: float | None             # None: the last step, open-ended
    rates_mbps: dict                  # every WAN edge "u-v" -> its rate in this step, or
                                      # both its directions "u>v", "v>u" once a per-direction
                                      # schedule has set them apart

    @property
    def bottleneck_mbps(self) -> float:
        return min(self.rates_mbps.values()) if self.rates_mbps else float("inf")


@dataclass
class StepPrediction:
    """The model's answer for one step. Model output, never a measurement."""
    step: Step
    prediction: M.Prediction
    goodput_mbps: float               # 8 x gradient bytes / the model's comm time
    job_goodput_mbps: float           # 8 x all workers' gradient bytes / the model's iteration time
    binding: str                      # the model's binding limit (largest candidate bottleneck)
    kind: str = "model"

    @property
    def bandwidth_bound(self) -> bool:
        """Whether the binding limit is a link's serialization (bytes / rate)."""
        return self.binding.startswith("serialization")


def initial_rates(graph) -> dict:
    """Every WAN edge's configured rate (before the schedule's first point)."""
    return {edge_key(e): float(graph.edges[e]["bandwidth_mbps"]) for e in wan_edges(graph)}


def schedule_steps(graph, horizon_s: float | None = None) -> list[Step]:
    """The steps of the graph's bandwidth schedules: one per distinct change time (changes
    of several edges at the same time make one step), each with every WAN edge's rate;
    before the first change the configured rates (a step from 0 when the first change is
    later than 0). [] when no WAN link has a schedule. horizon_s (real s) is needed for
    random schedules and ends the last step (else it is open-ended)."""
    if graph.graph.get("dilated", 1.0) != 1.0:
        raise ValueError("schedule_steps takes the real-world graph (build_graph, not dilate_graph)")
    events = bandwidth_events(graph, horizon_s)
    if not events:
        return []
    rates = initial_rates(graph)
    times = sorted({ev.t_s for ev in events})
    steps = []
    if times[0] > 0:
        steps.append(Step(0.0, times[0], dict(rates)))
    for k, t in enumerate(times):
        for ev in events:
            if ev.t_s == t:
                apply_change(rates, ev.edge, ev.mbps, ev.src)
        end = times[k + 1] if k + 1 < len(times) else (None if horizon_s is None else float(horizon_s))
        steps.append(Step(float(t), end, dict(rates)))
    return steps


def at_rates(graph, rates: Mapping[str, float]):
    """A copy of the graph with the named WAN edges ("u-v", both directions) or directions
    ("u>v") at these rates (Mbps) and no schedule on any link: the fixed network of one step.
    A direction's rate goes to the edge's direction_mbps (schemes.model.Net.rate_bps)."""
    g = graph.copy()
    known = {edge_key(e): e for e in wan_edges(g)}
    directions = {f"{a}>{b}": (a, b) for u, v in known.values() for a, b in ((u, v), (v, u))}
    unknown = sorted(set(rates) - set(known) - set(directions))
    if unknown:
        raise ValueError(f"no WAN edge {', '.join(unknown)} (edges: {', '.join(sorted(known))}; "
                         f"one direction: u>v)")
    for name, mbps in rates.items():
        if not mbps > 0:
            raise ValueError(f"WAN edge {name}: rate must be > 0 Mbps (got {mbps})")
    for _, _, a in g.edges(data=True):
        if "bandwidth_schedule" in a:
            a["bandwidth_schedule"] = None
        if a.get("direction_mbps"):
            a["direction_mbps"] = dict(a["direction_mbps"])   # the copy shares the dict
    for name in sorted(rates, key=lambda k: k in directions):   # edges first, then directions
        if name in known:
            a = g.edges[known[name]]
            a["bandwidth_mbps"] = float(rates[name])
            a.pop("direction_mbps", None)
        else:
            src, dst = directions[name]
            g.edges[src, dst].setdefault("direction_mbps", {})[src] = float(rates[name])
    return g


def goodputs(p: M.Prediction, gradient_bytes: float, n_workers: int) -> tuple[float, float]:
    """(per-worker goodput, job goodput) in Mbps of a prediction, as measure.py defines them."""
    per = 8.0 * gradient_bytes / p.comm_s / 1e6 if p.comm_s > 0 else float("inf")
    job = 8.0 * gradient_bytes * n_workers / p.iteration_s / 1e6 if p.iteration_s > 0 else float("inf")
    return per, job


def predict_at(scheme: str, graph, scenario, rates: Mapping[str, float], options=None,
               step: Step | None = None) -> StepPrediction:
    """The scheme's model with the WAN edges at `rates` (the others as configured)."""
    g = at_rates(graph, rates)
    # a step's steady state at its rates: the closed forms, not the simulated TCP of a run's
    # first iterations (and a schedule has hundreds of steps)
    g.graph[M.CLOSED_FORM_ONLY] = True
    p = M.predict(scheme, g, scenario, options)
    p.notes.append("bandwidth schedule: this step's rates "
                   + ", ".join(f"{k} {v:g} Mbps" for k, v in sorted(rates.items())))
    per, job = goodputs(p, 4 * M.parameters(scenario), len(hosts(graph)))
    binding = max(p.limits.items(), key=lambda kv: kv[1])[0] if p.limits else ""
    if step is None:
        step = Step(0.0, None, {**initial_rates(graph), **{k: float(v) for k, v in rates.items()}})
    return StepPrediction(step, p, per, job, binding)


def predict_schedule(scheme: str, graph, scenario, horizon_s: float | None = None,
                     options=None) -> list[StepPrediction]:
    """The model per step of the scenario's bandwidth schedule ([] without a schedule)."""
    return [predict_at(scheme, graph, scenario, st.rates_mbps, options, st)
            for st in schedule_steps(graph, horizon_s)]
