"""What runs in the hosts during a run: the App interface, and the App of every scheme.

An App is driven by testbed.lifecycle in this order:
    plan(graph, scenario)  (pure, before anything starts: bad options fail early)
    setup(ctx) -> start() -> progress() ... until done() -> collect() ; stop() always
Every scheme runs through `testbed.scheme_app.SchemeApp` (`make_app`): the scheme's plan
(schemes/<name>/plan.py) says which processes to start and which switch entries to push;
its workers all run workers/worker.py. Each worker writes its own event log
ctx.events_dir/<worker>.jsonl (JSON lines, CLOCK_MONOTONIC timestamps, i.e. Python's
time.monotonic(), shared by all network namespaces).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path


@dataclass
class RunContext:
    net: object                 # mininet.net.Mininet
    graph: object               # dilated topology graph
    scenario: object            # testbed.schema_models.Scenario
    run_dir: Path
    events_dir: Path
    record: object              # testbed.cleanup.RunRecord: register every process started
    iterations: int | None
    duration_s: float | None
    backend: str = "softswitch"  # for runtime clients only; apps never branch on it
    run_log: object = None      # testbed.run_events.RunEventLog: what the app did to the job

    def client(self, switch: str):
        """The runtime client of one switch (simple_switch_CLI language, either backend)."""
        from testbed.backends import client_for
        return client_for(self.backend, self.net[switch])


@dataclass
class WorkerProgress:
    worker: str
    iterations: int
    total: int | None
    bytes: int = 0
    finished: bool = False
    error: str | None = None


class App(ABC):
    name = "app"

    @abstractmethod
    def setup(self, ctx: RunContext) -> None: ...

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def progress(self) -> list[WorkerProgress]: ...

    def done(self) -> bool:
        return all(p.finished for p in self.progress())

    @abstractmethod
    def collect(self) -> dict: ...

    @abstractmethod
    def stop(self) -> None:
        """Kill every process the app started (idempotent; called on every exit path)."""
