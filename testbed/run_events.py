"""The run's own event stream, run_events.jsonl: what the testbed did to the network
while the job ran, one JSON line per event, `t` = CLOCK_MONOTONIC seconds (the workers'
clock, workers/events.py), `event` its kind:
  workload_start     the origin of scheduled times (bandwidth schedules, background, failures)
  bandwidth_change   a WAN rate change as applied (the same record bandwidth_events.jsonl
                     keeps for the schedule-tracking analysis: t_s, edge, mbps, [src])
  background_start   {flow, src, dst, proto, rate_mbps (real), t_s, duration_s, pid, host}
  background_stop    {flow, t_s, pid, returncode}
  kill               {failure, target, process, pid, t_s, returncode}
  link_down, link_up {failure, link "u-v", datacenters [a, b], t_s, interfaces}
  replan, replan_retired, replan_kept, replan_skipped, replan_error
                     a scheme's run-time controller changed the job (inart's re-planning,
                     schemes/inart/README.md; l3dml's rate synchronization, replan and
                     replan_error, schemes/l3dml/README.md); not drawn as disturbances
Any of them may carry `error` instead of having happened. Writers are threads (the
schedule and disturbance drivers, a scheme's controller); one lock keeps lines whole.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

FILE = "run_events.jsonl"


class RunEventLog:
    def __init__(self, path, clock=time.monotonic):
        self.path, self.clock = Path(path), clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.records: list[dict] = []

    def write(self, event: str, t: float | None = None, **fields) -> dict:
        rec = {"event": event, "t": self.clock() if t is None else t, **fields}
        with self._lock:
            with open(self.path, "a") as f:
                f.write(json.dumps(rec) + "\n")
            self.records.append(rec)
        return rec
