"""The results folder of one run: results/<scenario>/<run-id>/.

  scenario.yaml       the resolved scenario (after --set overrides and defaults)
  manifest.json       what ran: git commit, package versions, backend, link-emulation mode,
                      kernel, CPU count, seed, time dilation
  events/<worker>.jsonl  per-worker event log (JSON lines, CLOCK_MONOTONIC timestamps)
  counters.csv        link counters sampled every 100 ms (testbed.counters)
  summary.json        outcome (``complete: false`` when the run was interrupted or failed),
                      the scheme App's facts ("app": plan, servers, errors), and the
                      measurement: "metrics" (the row of analysis/measure.py, as `run.py
                      plot` and sweep tables have it), "per_iteration", "workers"
"""
from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import secrets
import subprocess
import time
from pathlib import Path

PACKAGES = ("networkx", "scapy", "numpy", "pyyaml", "pydantic", "lark", "rich", "matplotlib", "mininet",
            "scikit-learn")   # scikit-learn: the digits data set ships in it
REPO = Path(__file__).resolve().parent.parent


def new_run_id(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def create_run_dir(out_root: str | os.PathLike, scenario_name: str, run_id: str) -> Path:
    d = Path(out_root) / scenario_name / run_id
    (d / "events").mkdir(parents=True, exist_ok=False)
    return d


def write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)   # never leave a half-written summary behind


def _git(*args) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def _tool_version(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = (p.stdout or p.stderr).strip().splitlines()
    return out[0] if out else None


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    versions["python"] = platform.python_version()
    versions["iperf3"] = _tool_version(["iperf3", "--version"])
    versions["iproute2"] = _tool_version(["ip", "-V"])
    return versions


def manifest(*, run_id: str, scenario_name: str, backend: str, backend_reason: str,
             link_emulation: str, link_emulation_reason: str, seed: int,
             time_dilation: float, repetition: int = 0, extra: dict | None = None) -> dict:
    status = _git("status", "--porcelain", "--untracked-files=no")
    data = {
        "run_id": run_id,
        "scenario": scenario_name,
        "repetition": repetition,
        "started_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "started_monotonic": time.monotonic(),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "packages": package_versions(),
        "backend": backend,
        "backend_reason": backend_reason,
        "link_emulation": link_emulation,
        "link_emulation_reason": link_emulation_reason,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        # other work on the machine slows the software switches: keep it with the results
        "loadavg_at_start": list(os.getloadavg()),
        "seed": seed,
        "time_dilation": time_dilation,
    }
    data.update(extra or {})
    return data


def summary(*, complete: bool, reason: str, started_monotonic: float, app_summary: dict | None,
            health: dict | None, warnings: list[str], extra: dict | None = None) -> dict:
    data = {
        "complete": complete,
        "reason": reason,
        "elapsed_s": round(time.monotonic() - started_monotonic, 3),
        "finished_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "health": health,
        "app": app_summary,
        "warnings": warnings,
        "loadavg_at_end": list(os.getloadavg()),
    }
    data.update(extra or {})
    return data
