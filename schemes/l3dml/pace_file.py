"""The controller's pacing for running workers (controller.py writes, communicator.py
reads): one JSON file per re-plan in the run's workers/pace folder,

    pace-<seq>.json   {"seq": n, "from_iteration": i, "workers": {worker: {"max_rate_pps": r,
                       "start_delay_s": d}}}

written whole under a temporary name and renamed, so a reader never sees half a file. A
worker applies plan n from iteration i on (or at its next aggregation, if it is already
past i: pacing changes no sum, only when it arrives), and the plans in order of seq."""
from __future__ import annotations

import json
import os
from pathlib import Path

PACE_FILE = "pace-{seq}.json"


def write_pace(folder, seq: int, from_iteration: int, workers: dict[str, dict]) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PACE_FILE.format(seq=seq)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"seq": seq, "from_iteration": from_iteration, "workers": workers}))
    os.replace(tmp, path)
    return path


class PaceFollower:
    """A worker's view of the pace folder: `at(i)`, called as iteration i's aggregation
    starts, returns its newest pacing in force at i that it has not applied yet, else None."""

    def __init__(self, folder, worker: str):
        self.folder, self.worker = Path(folder), worker
        self.seq = 0                        # plans applied so far

    def at(self, iteration: int) -> dict | None:
        got = None
        while True:
            path = self.folder / PACE_FILE.format(seq=self.seq + 1)
            if not path.exists():
                return got
            data = json.loads(path.read_text())
            if data["from_iteration"] > iteration:
                return got
            if self.worker not in data["workers"]:
                raise RuntimeError(f"{path}: no pacing for worker {self.worker}")
            got = data["workers"][self.worker]
            self.seq += 1
