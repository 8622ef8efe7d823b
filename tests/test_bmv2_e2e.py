"""The bmv2 backend end to end (issue 17, item 5): the quickstart with ps and geo-ina on BMv2's
simple_switch (switch.backend: bmv2), every delay set to 0 (simple_switch cannot delay packets
and this kernel has no netem): complete, every sum within its bound, the manifest says bmv2,
and nothing is left behind (no switch or Mininet process, no interface of the run). Needs root,
Mininet, simple_switch, simple_switch_CLI and p4c; run under flock /tmp/gdml-mininet.lock."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testbed.bmv2 import missing_tools
from testbed.lifecycle import RunOptions, run_scenario

pytestmark = [pytest.mark.mininet, pytest.mark.bmv2]
REPO = Path(__file__).resolve().parent.parent
PREFIX = "bm"
NO_DELAY = ["wan.default.delay_ms=0", "intra_dc.access.delay_ms=0", "intra_dc.uplink.delay_ms=0"]


def _left_behind() -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"mininet:{PREFIX}" in cmd or ("simple_switch" in cmd and f"@{PREFIX}" in cmd):
            found.append(f"process {entry}: {cmd[:120]}")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [f"interface {line.split(':')[1].strip()}" for line in links.splitlines()
              if line.split(":")[1].strip().split("@")[0].startswith(PREFIX)]
    return found


@pytest.mark.parametrize("scheme", ["ps", "geo-ina"])
def test_quickstart_on_bmv2_completes_with_sums_within_bound(scheme, tmp_path):
    missing = missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH (CI puts a reference BMv2 there: .ci/p4ref-env.sh)")
    assert _left_behind() == [], "another run with this prefix is on the machine"
    (d,) = run_scenario(RunOptions(str(REPO / "scenarios" / "quickstart.yaml"),
                                   [f"scheme={scheme}", "switch.backend=bmv2", "iterations=3",
                                    "workload={kind: synthetic, parameters: 4096}",
                                    "scheme_options.verify=true", *NO_DELAY],
                                   str(tmp_path), prefix=PREFIX, show_progress=False, timeout_s=240),
                        log=lambda *a, **k: None)
    summary = json.loads((d / "summary.json").read_text())
    manifest = json.loads((d / "manifest.json").read_text())
    assert summary["complete"], summary["reason"]
    assert manifest["backend"] == "bmv2"
    m = summary["metrics"]
    assert m["iterations"] == 3 and m["worker_errors"] == 0 and not summary["app"]["errors"]
    assert m["within_quantization_bound"] is True and m["max_error"] is not None
    assert _left_behind() == []
