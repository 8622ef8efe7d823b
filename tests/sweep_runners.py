"""Fake sweep runners for executor tests: synthetic results (tests/synthetic_runs.py) with
chosen misbehaviour. Module-level functions, configured with functools.partial, so that
Ray pickles them by reference and its worker processes import them from the checkout.

Every call appends a line to `calls`, a file on this machine (its overrides when it starts;
its Ray node, start and end when it finishes), so a test counts the runs and sees where and
when they ran whichever process made them.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.synthetic_runs import write_run


def _matches(overrides, needles) -> bool:
    return bool(needles) and all(any(n in o for o in overrides) for n in needles)


def runner(scenario, overrides, out_root, log, *, calls: str | None = None, fail_when=(),
           crash_when=(), block_when=(), blocked_marker: str | None = None, hold_s: float = 0.0,
           block_s: float = 60.0):
    """fail_when / crash_when / block_when: substrings that must all appear among the
    overrides. fail: raise as a switch that did not start; crash: the process exits at once
    (as if killed); block: write the Ray node id (or "") to blocked_marker and sleep block_s
    (a test that fails to cancel it still ends). hold_s: every run lasts at least that long. calls: a line per call, with the
    Ray node and the run's start and end."""
    t0 = time.time()
    log(f"fake run of {Path(scenario).name} {overrides}")
    if calls:
        _call(calls, overrides, t0, None)
    if _matches(overrides, fail_when):
        raise RuntimeError("switch s1 did not start\nlog tail: ...")
    if _matches(overrides, crash_when):
        os._exit(3)
    if _matches(overrides, block_when):
        tmp = Path(blocked_marker + ".tmp")
        tmp.write_text(_ray_node())
        tmp.rename(blocked_marker)
        deadline = time.monotonic() + block_s
        while time.monotonic() < deadline:   # in slices, as the lifecycle polls: Ray's cancel
            time.sleep(0.1)                  # raises KeyboardInterrupt between Python steps
    time.sleep(hold_s)
    run_dir = write_run(out_root, scenario, overrides)
    if calls:
        _call(calls, overrides, t0, time.time())
    return run_dir


def _ray_node() -> str:
    """The Ray node this runs on ("" outside Ray)."""
    import sys
    ray = sys.modules.get("ray")
    return ray.get_runtime_context().get_node_id() if ray and ray.is_initialized() else ""


def _call(calls, overrides, t0, t1) -> None:
    with open(calls, "a") as f:
        f.write(json.dumps({"overrides": list(overrides), "node": _ray_node(), "t0": t0, "t1": t1}) + "\n")


def read_calls(calls) -> list[list[str]]:
    """The overrides of every call, in the order they started."""
    return [c["overrides"] for c in read_spans(calls) if c["t1"] is None]


def read_spans(calls) -> list[dict]:
    """Every line: a start (t1 None) or a finished run (t0, t1, node)."""
    p = Path(calls)
    return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []
