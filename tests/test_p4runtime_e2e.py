"""The testbed driven over P4Runtime (issue 17, item 6): the quickstart with an INA scheme and
switch.control: p4runtime. Every route, aggregation point, multicast group and register the
control plane writes goes through gRPC (the simple_switch_CLI commands translated by
softswitch.p4runtime.cli_client); the run completes with every sum within its bound, the
manifest says p4runtime, each switch log shows its P4Runtime address, and nothing is left
behind. Needs root and Mininet; run under flock /tmp/gdml-mininet.lock."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from testbed.lifecycle import RunError, RunOptions, run_scenario

pytestmark = pytest.mark.mininet
REPO = Path(__file__).resolve().parent.parent
PREFIX = "pr"


def _switch_processes() -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "--grpc-server-addr" in cmd and f"@{PREFIX}" in cmd:
                found.append(cmd[:120])
    return found


def test_quickstart_driven_over_p4runtime_completes_with_sums_within_bound(tmp_path):
    (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"),
                                   ["scheme=geo-ina", "switch.control=p4runtime", "iterations=3",
                                    "workload={kind: synthetic, parameters: 4096}", "scheme_options.verify=true"],
                                   str(tmp_path), prefix=PREFIX, show_progress=False, timeout_s=240),
                        log=lambda *a, **k: None)
    summary = json.loads((d / "summary.json").read_text())
    manifest = json.loads((d / "manifest.json").read_text())
    assert summary["complete"], summary["reason"]
    assert manifest["switch_control"] == "p4runtime"
    logs = list((d / "logs").glob("*.switch.log"))
    assert logs and all(" p4runtime 127.0.0.1:" in p.read_text() for p in logs)
    # the entries went over gRPC: every switch got routes at least, none refused
    for p in logs:
        stats = dict(re.findall(r"(\w+) (\d+)", p.read_text().split("p4runtime: ")[-1].splitlines()[0]))
        assert int(stats["updates"]) > 0 and stats["failed_updates"] == "0", (p.name, stats)
    m = summary["metrics"]
    assert m["iterations"] == 3 and m["worker_errors"] == 0 and not summary["app"]["errors"]
    assert m["within_quantization_bound"] is True and m["max_error"] is not None
    # the delay lines' counters reach the summary, and every frame is accounted for
    emu = summary["link_emulation"]
    assert emu["mode"] == manifest["link_emulation"] and emu["submitted"] > 0 and emu["lines"]
    assert all(c["submitted"] == c["sent"] + c["lost"] + c["overflow"] + c["queued"] for c in emu["lines"].values())
    assert _switch_processes() == []


def test_p4runtime_control_on_bmv2_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(RunError, match="switch.control: cli"):
        run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"),
                                ["switch.backend=bmv2", "switch.control=p4runtime"], str(tmp_path),
                                prefix=PREFIX, show_progress=False), log=lambda *a, **k: None)
