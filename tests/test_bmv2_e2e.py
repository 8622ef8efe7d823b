"""The bmv2 backend end to end (issue 17, items 4 and 5): the quickstart with ps and geo-ina on
BMv2's simple_switch (switch.backend: bmv2) with its WAN and LAN delays (simple_switch cannot
delay frames: without netem, relay processes on the links do, link_emulation relay): complete,
every sum within its bound, the manifest says bmv2 and the link-emulation mode, the health
check's WAN RTT is the configured one, and nothing is left behind (no switch, relay or
Mininet process, no interface of the run). Needs root, Mininet, simple_switch,
simple_switch_CLI and p4c; run under flock /tmp/gdml-mininet.lock."""
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


def _left_behind() -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"mininet:{PREFIX}" in cmd or ("simple_switch" in cmd and f"@{PREFIX}" in cmd) or \
                ("softswitch.linkem" in cmd and f" {PREFIX}" in cmd):
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
                                    "scheme_options.verify=true"],
                                   str(tmp_path), prefix=PREFIX, show_progress=False, timeout_s=240),
                        log=lambda *a, **k: None)
    summary = json.loads((d / "summary.json").read_text())
    manifest = json.loads((d / "manifest.json").read_text())
    assert summary["complete"], summary["reason"]
    assert manifest["backend"] == "bmv2"
    assert manifest["link_emulation"] in ("relay", "netem")
    # the WAN delay is applied (91.4 ms: catalog RTT), and what the path adds is small: 8
    # simple_switch and 10 relay crossings per round trip, each a fraction of a millisecond
    # on an idle machine (tests/test_relay_fidelity.py checks the relay itself to 5 %)
    (wan,) = summary["health"]["wan_rtt"]
    assert wan["configured_rtt_ms"] == pytest.approx(91.4)
    assert wan["configured_rtt_ms"] - 0.5 <= wan["min_ms"] <= 1.10 * wan["configured_rtt_ms"], wan
    m = summary["metrics"]
    assert m["iterations"] == 3 and m["worker_errors"] == 0 and not summary["app"]["errors"]
    assert m["within_quantization_bound"] is True and m["max_error"] is not None
    if manifest["link_emulation"] == "relay":   # the relays' counters reach the summary
        emu = summary["link_emulation"]
        assert emu["mode"] == "relay" and emu["submitted"] > 0 and emu["lines"]
        assert all(c["submitted"] == c["sent"] + c["lost"] + c["overflow"] + c["queued"]
                   for c in emu["lines"].values())
    assert _left_behind() == []
