"""Where a sweep's points run: the executor contract, and `local` (one after another here).

The sweep (testbed/sweep.py) decides which points run, records them, resumes and writes
the table; an executor only runs points. It receives a list of PointJob (the scenario, the
point's `--set` overrides and the folder its results belong in) and yields one Outcome per
job, in the order they finish:

  - ok: `run_dir`, the run's results folder, already under the job's `out_root` (wherever
    the run actually happened, the executor brings the folder there);
  - failed: `error`, one line as the table shows it (the runner raised, or the machine
    running it was lost);
  - interrupted: Ctrl-C; an executor yields interrupted outcomes for what it had in flight
    and then stops.

`local` runs the jobs in order in this process (one machine). `ray` (testbed/executor_ray.py,
imported only when chosen) runs them on a Ray cluster, one point per machine at a time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol

from testbed.sweep_model import Point

# runner(scenario_path, overrides, out_root, log) -> the run's results folder
Runner = Callable[[Path, list[str], Path, Callable[[str], None]], Path]

EXECUTORS = ("local", "ray")
RAY_INSTALL = "pip install 'gdml-testbed[ray]'"


class ExecutorError(ValueError):
    """An executor that cannot start (missing package, unreachable cluster, no machine
    fit to run points); raised before any point runs, the message says what to do."""


@dataclass(frozen=True)
class PointJob:
    point: Point
    scenario: Path          # the sweep's base scenario
    overrides: list[str]    # the sweep's `set`, then the point's axis values, seed, repetitions
    out_root: Path          # <sweep>/points/<point-id>/: the run's folder goes under it


@dataclass
class Outcome:
    job: PointJob
    run_dir: Path | None = None     # set when the runner returned
    error: str | None = None        # set when it did not (one line)
    interrupted: bool = False
    elapsed_s: float = 0.0          # the run's own time (not its wait in a queue)
    node: str | None = None         # the machine that ran it (remote executors)


class Executor(Protocol):
    """Entered (`with executor:`) around a sweep's runs: a remote executor connects and
    checks its machines on entry, raising ExecutorError, and disconnects on exit."""
    name: str

    def __enter__(self) -> "Executor": ...

    def __exit__(self, *exc) -> bool | None: ...

    def run(self, jobs: list[PointJob], runner: Runner, log: Callable[[str], None],
            started: Callable[[Point], None] = lambda p: None) -> Iterator[Outcome]:
        """One Outcome per job as each finishes; `started(point)` when a point starts here
        (executors that cannot see it may not call it). Closing the iterator early cancels
        what is still running."""
        ...


def one_line(e: BaseException, limit: int = 400) -> str:
    """The error for one table cell: its type, its first line and, when it goes on (a
    switch's log tail), its last line, which usually says why."""
    lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1:
        text = f"{text.rstrip(':')}: ... {lines[-1]}"
    text = f"{type(e).__name__}: {text}".rstrip(": ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


class LocalExecutor:
    """Today's loop: every point in order, in this process, straight into its folder."""
    name = "local"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, jobs, runner, log, started=lambda p: None):
        for job in jobs:
            started(job.point)
            job.out_root.mkdir(parents=True, exist_ok=True)
            t0 = time.monotonic()
            try:
                run_dir = Path(runner(job.scenario, list(job.overrides), job.out_root, log))
            except KeyboardInterrupt as e:
                yield Outcome(job, error=str(e) or "interrupted", interrupted=True,
                              elapsed_s=time.monotonic() - t0)
                return
            except Exception as e:
                yield Outcome(job, error=one_line(e), elapsed_s=time.monotonic() - t0)
                continue
            yield Outcome(job, run_dir=run_dir, elapsed_s=time.monotonic() - t0)
