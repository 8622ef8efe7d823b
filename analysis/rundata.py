"""Read one results folder (testbed/results.py format): its row of metrics and its series.

`RunData.metrics()` is the row every consumer uses (summary.json's "metrics", sweep tables,
`run.py plot`, speedups, benchmarks): the run's facts (scheme, sizes, seed, completeness)
plus analysis/measure.run_metrics of its event logs, counters.csv, WAN interfaces and
switch drops. The series for figures (goodput and bandwidth over time, accuracy curve,
iteration-time CDF) are here too, in real-world units like the row (emulated seconds /
time dilation s, rates x s).
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import yaml

from analysis import measure
from analysis import metrics as M
from workers.events import read_events as read_jsonl


def is_run_dir(path: Path) -> bool:
    return (path / "summary.json").is_file() or (path / "manifest.json").is_file()


@dataclass
class RunData:
    path: Path
    manifest: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    scenario: dict = field(default_factory=dict)
    events: dict[str, list[dict]] = field(default_factory=dict)      # worker -> events

    @classmethod
    def load(cls, path) -> "RunData":
        p = Path(path)
        if not is_run_dir(p):
            raise FileNotFoundError(f"{p} is not a run's results folder (no summary.json or "
                                    f"manifest.json); give results/<scenario>/<run-id>")
        def js(name):
            try:
                return json.loads((p / name).read_text())
            except (OSError, ValueError):
                return {}
        try:
            scn = yaml.safe_load((p / "scenario.yaml").read_text()) or {}
        except (OSError, yaml.YAMLError):
            scn = {}
        events = {f.stem: read_jsonl(f) for f in sorted((p / "events").glob("*.jsonl"))}
        return cls(p, js("manifest.json"), js("summary.json"), scn, events)

    # ------------------------------------------------------------ basics
    @property
    def dilation(self) -> float:
        return float(self.summary.get("time_dilation") or self.manifest.get("time_dilation")
                     or self.scenario.get("time_dilation") or 1.0)

    @property
    def scheme(self) -> str:
        return str(self.scenario.get("scheme") or self.manifest.get("scheme") or "?")

    @property
    def n_datacenters(self) -> int:
        return len(self.scenario.get("datacenters") or [])

    @property
    def n_workers(self) -> int:
        return sum(int(dc.get("racks", 1)) * int(dc.get("workers_per_rack", 1))
                   for dc in self.scenario.get("datacenters") or [])

    @cached_property
    def records(self) -> list[M.IterationRecord]:
        return measure.records(self.events)

    @cached_property
    def t0(self) -> float:
        """Job start (emulated monotonic s): the first iteration start."""
        return min((r.t_start for r in self.records), default=0.0)

    @cached_property
    def counter_rows(self) -> list[dict]:
        try:
            with open(self.path / "counters.csv", newline="") as f:
                return list(csv.DictReader(f))
        except OSError:
            return []

    @cached_property
    def graph(self):
        """The run's real-world topology graph, rebuilt from its resolved scenario (None
        when the scenario no longer loads, e.g. a results folder from an older schema)."""
        try:
            from testbed.scenario import load_scenario
            from topologies.graph import build_graph
            scn = load_scenario(self.path / "scenario.yaml")
            return build_graph(scn, prefix=self.manifest.get("node_prefix") or "")
        except Exception:
            return None

    @cached_property
    def wan_links(self) -> list[dict]:
        """Per WAN link: name, its two ends, real initial Mbps."""
        g = self.graph
        if g is None:
            return []
        return [{"edge": f"{u}-{v}", "ends": (u, v), "mbps": float(a["bandwidth_mbps"])}
                for u, v, a in g.edges(data=True) if a.get("kind") == "wan"]

    # ------------------------------------------------------------ series (real units)
    def per_iteration(self) -> list[dict]:
        """The job's complete iterations (analysis/measure.iteration_table)."""
        return measure.iteration_table(self.events, self.dilation, self.records)

    def per_worker(self) -> dict[str, dict]:
        """Per-worker figures (analysis/measure.worker_table)."""
        return measure.worker_table(self.events, self.dilation, self.records)

    def iteration_times_s(self) -> np.ndarray:
        """Job iteration times of the steady complete iterations (the row's statistics)."""
        return np.array([j["time_s"] for j in self.per_iteration() if not j["warmup"]], dtype=float)

    def goodput_series(self, window_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(real s since job start, real Mbps). Default window: the median iteration time,
        at least 0.5 s of real time."""
        s = self.dilation
        its = self.iteration_times_s()
        if window_s is None:
            window_s = max(0.5, float(np.median(its))) if len(its) else 1.0
        w = window_s
        t, bps = M.goodput_over_time(self.records, w * s, self.t0)
        return t / s, bps * s / 1e6

    def bandwidth_series(self, end_s: float | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per WAN link "u-v": step points (real s since job start, real Mbps) of its
        configured rate, from the initial rate and bandwidth_events.jsonl (emulated t and
        Mbps), up to end_s (default: this run's end). A link whose directions were changed
        apart (records with `src`, a per-direction schedule) gives one series per direction,
        "u>v" and "v>u", each from the changes of both directions and its own."""
        s = self.dilation
        changes: dict[str, list[tuple[float, float, str | None]]] = {}
        for ev in self.bandwidth_changes():
            changes.setdefault(ev.get("edge"), []).append(((float(ev["t"]) - self.t0) / s,
                                                           float(ev["mbps"]) * s, ev.get("src")))
        end = max(0.0, M.makespan(self.records) / s) if end_s is None else end_s
        out = {}
        for link in self.wan_links:
            mine = changes.get(link["edge"], [])
            u, v = link["ends"]
            if any(c[2] is not None for c in mine):
                parts = {f"{u}>{v}": u, f"{v}>{u}": v}
            else:
                parts = {link["edge"]: None}
            for name, src in parts.items():
                pts = [(0.0, link["mbps"])] + sorted((t, m) for t, m, at in mine
                                                     if t <= end and at in (None, src))
                # a change before the job's start sets the rate at 0
                start = [p for p in pts if p[0] <= 0.0]
                pts = [(0.0, start[-1][1])] + [p for p in pts if p[0] > 0.0]
                t = np.array([p[0] for p in pts] + [end])
                m = np.array([p[1] for p in pts] + [pts[-1][1]])
                out[name] = (t, m)
        return out

    def bandwidth_changes(self) -> list[dict]:
        """The schedule's changes as applied (bandwidth_events.jsonl; else summary.json's copy)."""
        return read_jsonl(self.path / "bandwidth_events.jsonl") or list(self.summary.get("bandwidth_changes") or [])

    @cached_property
    def goodput_tracking(self) -> dict:
        """Settled goodput per bandwidth-schedule step against the model's for that step, and
        whether it tracks (analysis/schedule_tracking.py; the model: schemes/model_schedule.py)."""
        from analysis import schedule_tracking as T
        changes = self.bandwidth_changes()
        if not changes:       # no schedule: nothing to predict per step
            return T.goodput_tracking(self.events, changes, self._initial_rates(), self.dilation)
        try:
            from schemes.model_schedule import predict_at
            from testbed.scenario import load_scenario
            scn, g = load_scenario(self.path / "scenario.yaml"), self.graph
            def at_rates(rates):
                p = predict_at(scn.scheme, g, scn, rates)
                return p.goodput_mbps, p.job_goodput_mbps
            model = None
            if g is not None:
                at_rates(self._initial_rates())   # a scheme without a model: no model column
                model = at_rates
        except Exception:
            model = None
        return T.goodput_tracking(self.events, changes, self._initial_rates(), self.dilation, model)

    def _initial_rates(self) -> dict:
        return {link["edge"]: link["mbps"] for link in self.wan_links}

    def model_goodput_series(self) -> tuple[np.ndarray, np.ndarray]:
        """The model's job goodput per schedule step (real s, Mbps) over this run."""
        from analysis.schedule_tracking import model_series
        return model_series(self.goodput_tracking, M.makespan(self.records) / self.dilation)

    def run_events(self) -> list[dict]:
        """The run's event stream (run_events.jsonl, testbed/run_events.py), else the
        background and failure records summary.json keeps."""
        from testbed.run_events import FILE
        return read_jsonl(self.path / FILE) or list(self.summary.get("disturbances") or [])

    def disturbances(self, end_s: float | None = None):
        """(spans, markers) of background traffic and failures in real s since the job's
        start (analysis/disturbance_marks.py), None when the run had neither."""
        from analysis.disturbance_marks import disturbance_marks
        recs = [r for r in self.run_events()     # re-plans (inart) are the scheme's, not marks
                if r.get("event") not in ("workload_start", "bandwidth_change")
                and not str(r.get("event", "")).startswith("replan")]
        if not recs:
            return None
        end = M.makespan(self.records) / self.dilation if end_s is None else end_s
        return disturbance_marks(recs, self.t0, self.dilation, end)

    def accuracy_series(self) -> tuple[np.ndarray, np.ndarray]:
        """(real s since job start, accuracy)."""
        pts = M.accuracy_series(e for ev in self.events.values() for e in ev)
        return (np.array([(t - self.t0) / self.dilation for t, _ in pts]),
                np.array([a for _, a in pts]))

    @cached_property
    def staleness(self) -> dict | None:
        """summary.json's "staleness" section (analysis/staleness.py): the training mode and
        the distributions of the updates' staleness and delay; None for older logs."""
        from analysis.staleness import staleness_section
        return staleness_section(self.events)

    def update_values(self) -> tuple[list[int], list[int]]:
        """(staleness, delay) of every update, for the staleness figure."""
        from analysis.staleness import update_records
        recs = update_records(self.events)
        return [r["staleness"] for r in recs], [r["delay"] for r in recs]

    # ------------------------------------------------------------ one row of the table
    def metrics(self, target_accuracy: float | None = None) -> dict:
        """THE row of this run: its facts (complete, scheme, sizes, seed, elapsed_s) and
        analysis/measure.run_metrics of its folder (definitions there)."""
        g = self.graph
        facts = {
            "complete": bool(self.summary.get("complete", False)),
            "scheme": self.scheme,
            "n_datacenters": self.n_datacenters,
            "n_workers": self.n_workers,
            "n_workers_per_dc": (self.n_workers / self.n_datacenters) if self.n_datacenters else None,
            "seed": self.manifest.get("seed", self.scenario.get("seed")),
            "elapsed_s": self.summary.get("elapsed_s"),
        }
        return {**facts, **measure.run_metrics(
            self.events, self.counter_rows,
            wan_intfs=None if g is None else measure.wan_interfaces(g),
            switch_nodes=() if g is None else measure.switch_names(g),
            switch_drops=self.summary.get("switch_drops"), dilation=self.dilation,
            target_accuracy=target_accuracy)}


def summary_sections(run_dir, summary: dict) -> dict:
    """What testbed/lifecycle.py adds to the summary.json it is writing: the row
    ("metrics", RunData.metrics: the same function every later reader of the folder calls),
    the job's iterations ("per_iteration"), the per-worker figures ("workers") and the
    updates' staleness and delay ("staleness", analysis/staleness.py), with `summary`
    standing in for the file."""
    rd = RunData.load(run_dir)
    rd.summary = summary
    return {"metrics": rd.metrics(), "per_iteration": rd.per_iteration(), "workers": rd.per_worker(),
            "staleness": rd.staleness}
