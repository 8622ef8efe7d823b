"""What a scheme is, as the testbed sees it: options, a pure plan, a communicator.

A scheme folder `schemes/<name>/` holds
  options.py        its options: a pydantic model (unknown or wrong options are refused
                    with their field path when the scenario loads)
  plan.py           plan(graph, scenario, options) -> Plan: pure function of the (dilated)
                    topology graph: which hosts are workers in which rank order, what each
                    worker's communicator needs, server processes, switch entries
  communicator.py   the worker side (workers/communicator.py says what it must offer);
                    runs inside the one worker loop, workers/worker.py
  model.py          predict(graph, scenario, options) -> schemes.model.Prediction: pure
                    analytic model of its iteration time on the real-world (undilated)
                    graph, the terms it adds up (docs/model.md)
  README.md         what it does, where it comes from, its options
and `__init__.py`, which declares `SCHEME = Scheme(...)`. The registry
(schemes/__init__.py) maps names to folders, one line each.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field


class Options(BaseModel):
    """Options every scheme has. Subclass it per scheme; extra keys are refused."""
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    verify: bool = False   # each worker compares every sum with the exact float64 sum (costs
                           # n_workers gradient computations per iteration, outside the timing)


@dataclass(frozen=True)
class Server:
    """A process the scheme needs besides the workers, e.g. a parameter server."""
    name: str
    host: str
    module: str                     # run as python3 -m module *args
    args: tuple[str, ...] = ()
    ends_by_signal: bool = False    # serves until SIGTERM (a UDP root server has no BYE to end
                                    # on): the app stops it once the workers are done, then
                                    # reads its stats
    replaced_on_death: bool = False # another server takes over when it dies (mlfabric's primary,
                                    # its replica): its death alone does not end the run


@dataclass
class Plan:
    workers: list[str]                                    # node names in rank order
    comm: dict[str, dict]                                 # worker -> its communicator's config
    servers: list[Server] = field(default_factory=list)
    switch_commands: dict[str, list[str]] = field(default_factory=dict)   # runtime CLI lines
    info: dict = field(default_factory=dict)              # recorded in summary.json ("app")
    communicator: str | None = None   # "module:Class" for this plan's workers when it is not the
                                      # scheme's (ps in ssp/asp: its asynchronous communicator)
    runtime: dict = field(default_factory=dict, repr=False)   # what the scheme's run-time
                                                          # controller needs (not recorded)
    # switch -> delay (ms, dilated) of its timer loop: two ports joined by a delayed veth
    # pair (topologies.ports.timer_loop_ports; docs/protocol.md, "Lossless links ...")
    timer_loops: dict[str, float] = field(default_factory=dict)


@dataclass
class RunHooks:
    """What a scheme's run-time controller may do to the running job; the testbed's App
    (testbed/scheme_app.py) provides them, tests provide fakes."""
    run_dir: Path
    pushed: dict[str, tuple[list[str], list[str]]]   # switch -> (commands, replies) of setup
    push: Callable[[str, list[str]], list[str]]      # push(switch, commands) -> replies
    start_server: Callable[[Server, str], int]       # start, wait for this text in its log -> pid
    wait_server: Callable[[str, str], None]          # wait for this text in a server's log
    stop_server: Callable[[str], dict]               # SIGTERM, wait, its JSON stats line
    worker_events: Callable[[], dict[str, list[dict]]]   # worker -> its events so far
    record: Callable[..., dict]                      # record(event, **fields): run_events.jsonl
    read_tc: Callable[[str], str]                    # `tc class show dev X` (root namespace)


@dataclass(frozen=True)
class Scheme:
    name: str
    options: type[Options]
    plan: Callable[..., Plan]        # plan(graph, scenario, options) -> Plan
    communicator: str                # "module:Class" loaded by the worker process
    program: str | None = None       # switch program it needs (None: plain forwarding)
    summary: str = ""                # one line for listings
    model: Callable | None = None    # predict(graph, scenario, options) -> schemes.model.Prediction
                                     # (real-world graph; None: the scheme has no model yet)
    modes: tuple[str, ...] = ("bsp",)   # training modes it runs (workers/training_modes.py)
    kernel_tcp: bool = True          # its workers or servers talk the kernel's TCP through the
                                     # network, so the scenario's `tcp` settings shape it
    mode_problems: Callable | None = None   # mode_problems(options, mode) -> [(field path,
                                     # problem)]: options that cannot run in that mode
    controller: Callable | None = None   # controller(graph, scenario, options, plan, hooks)
                                     # -> a thread-like object (start, stop, summary) that
                                     # changes the job while it runs, or None when the
                                     # options leave it off; built before the workers'
                                     # configurations are written (it may add to plan.comm)

    def parse_options(self, raw: dict | None) -> Options:
        return self.options.model_validate(dict(raw or {}))


def datacenter_index(graph, name: str | int | None, what: str) -> int:
    """dc_index of a datacenter named in an option (name or 1-based index; None: the first)."""
    dcs = {d["dc"]: d["dc_index"] for _, d in graph.nodes(data=True) if d["role"] == "host"}
    if name is None:
        return min(dcs.values())
    if isinstance(name, int) and name in dcs.values():
        return name
    if name not in dcs:
        raise ValueError(f"scheme_options.{what}: no datacenter {name!r} (datacenters: "
                         f"{', '.join(sorted(dcs, key=dcs.get))})")
    return dcs[name]


class TcpOptions(Options):
    """Options of the schemes whose workers and servers talk TCP through the network."""
    base_port: int = Field(7100, ge=1024, le=65000)   # first TCP port of servers / listeners
    timeout_s: float = Field(120.0, gt=0)   # real-world seconds of silence before a peer
                                            # counts as dead (x time dilation in the emulation;
                                            # raise it for compute times near it)

    def emulated_timeout_s(self, scenario) -> float:
        return self.timeout_s * scenario.time_dilation


class PeriodicController(threading.Thread):
    """A scheme's run-time controller as a thread of the run: step() every interval_s
    (emulated s) until it sets `finished`, stop() is called, or a step raises (the error is
    kept and recorded as `replan_error`; the run then reports it)."""

    def __init__(self, name: str, interval_s: float, hooks: RunHooks):
        super().__init__(name=name, daemon=True)
        self.interval_s, self.hooks = interval_s, hooks
        self.error: str | None = None
        self.finished = False
        self._halt = threading.Event()

    def step(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        while not self.finished and not self._halt.wait(self.interval_s):
            try:
                self.step()
            except Exception as e:       # recorded; the run reports it as an error
                self.error = f"{type(e).__name__}: {e}"
                self.hooks.record("replan_error", error=self.error)
                return

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=30)
