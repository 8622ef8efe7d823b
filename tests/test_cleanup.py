"""SIGINT in the middle of `run.py run`: nothing of the run is left, partial results stay.

Runs the real CLI in a subprocess with node prefix 'tc' ('tq' with link_emulation relay, whose
relay processes must go too), interrupts it while workers run,
then checks: no processes of the run (Mininet shells, switches, workers), no interfaces with
its names, no network namespace of its hosts, no run record, and summary.json marked
incomplete next to the partial event logs.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import cleanup

pytestmark = pytest.mark.mininet
REPO = Path(__file__).resolve().parent.parent

SCENARIO = """
name: cleanup
seed: 5
datacenters:
  - {name: a, lat: 0, lon: 0, racks: 1, workers_per_rack: 2}
  - {name: b, lat: 0, lon: 10, racks: 1, workers_per_rack: 2}
wan:
  default: {bandwidth_mbps: 5, delay_ms: 10}
intra_dc:
  access: {bandwidth_mbps: 100, delay_ms: 0}
  uplink: {bandwidth_mbps: 100, delay_ms: 0}
scheme: ps
workload: {kind: synthetic, parameters: 100000}
iterations: 1000
"""
# (link emulation mode, node prefix of the SIGINT test, of the SIGKILL test, root-namespace
# interfaces while it runs: userspace 4 access + 4 uplink + 2 WAN ends; relay mode splices a
# relay into the WAN (the only link with a delay): its 2 ends become 4 interfaces)
MODES = [("auto", "tc", "tk", 10), ("relay", "tq", "tj", 12)]


def _our_processes(prefix: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"mininet:{prefix}" in cmd or f"-i 1@{prefix}" in cmd or (f"/workers/{prefix}h" in cmd and "workers.worker" in cmd) \
                or ("softswitch.linkem" in cmd and f" {prefix}" in cmd):
            found.append(f"{entry}: {cmd[:120]}")
    return found


@pytest.mark.parametrize("mode,prefix,_,n_intfs", MODES)
def test_sigint_mid_run_leaves_nothing_and_marks_results_incomplete(tmp_path, mode, prefix, _, n_intfs):
    scn = tmp_path / "cleanup.yaml"
    scn.write_text(SCENARIO + f"link_emulation: {{mode: {mode}}}\n")
    out = tmp_path / "results"
    p = subprocess.Popen([sys.executable, str(REPO / "run.py"), "run", str(scn), "--out", str(out),
                          "--prefix", prefix], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        # wait until workers have logged at least one finished iteration
        deadline = time.monotonic() + 90
        events = []
        while time.monotonic() < deadline and p.poll() is None:
            events = list(out.glob("cleanup/*/events/*.jsonl"))
            if any("iteration_end" in e.read_text() for e in events):
                break
            time.sleep(0.2)
        assert p.poll() is None, p.stdout.read()
        assert events, "the run never started its workers"
        netns = {cleanup.netns_inode(int(l.split(":")[0])) for l in _our_processes(prefix + "h")}
        netns.discard(None)
        assert len(netns) == 4, "expected the 4 hosts' namespaces while the run is live"
        assert len([n for n in os.listdir("/sys/class/net") if n.startswith(prefix)]) == n_intfs
        relays = [line for line in _our_processes(prefix) if "softswitch.linkem" in line]
        assert len(relays) == (mode == "relay"), relays
        p.send_signal(signal.SIGINT)
        output, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, output
    assert "interrupted by SIGINT during workload" in output

    assert _our_processes(prefix) == []
    assert [n for n in os.listdir("/sys/class/net") if n.startswith(prefix)] == []
    assert cleanup.pids_in_netns(netns - {None}) == []
    (run_dir,) = list(out.glob("cleanup/*"))
    assert not (cleanup.STATE_DIR / f"{run_dir.name}.json").exists()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False
    assert "interrupted" in summary["reason"]
    assert (run_dir / "manifest.json").exists() and (run_dir / "counters.csv").stat().st_size > 0
    # partial results stay: the iterations done before the interrupt are in the event logs
    assert any("iteration_end" in e.read_text() for e in (run_dir / "events").glob("*.jsonl"))


@pytest.mark.parametrize("mode,_,prefix,n_intfs", MODES)
def test_clean_removes_what_a_sigkilled_run_left(tmp_path, mode, _, prefix, n_intfs):
    """SIGKILL gives the run no chance to tear down: its record lets `clean` do it."""
    scn = tmp_path / "cleanup.yaml"
    scn.write_text(SCENARIO + f"link_emulation: {{mode: {mode}}}\n")
    out = tmp_path / "results"
    p = subprocess.Popen([sys.executable, str(REPO / "run.py"), "run", str(scn), "--out", str(out),
                          "--prefix", prefix], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and p.poll() is None:
            if any("iteration_end" in e.read_text() for e in out.glob("cleanup/*/events/*.jsonl")):
                break
            time.sleep(0.2)
        assert p.poll() is None
        p.kill()
        p.wait()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    (run_dir,) = list(out.glob("cleanup/*"))
    record = cleanup.STATE_DIR / f"{run_dir.name}.json"
    left = [n for n in os.listdir("/sys/class/net") if n.startswith(prefix)]
    assert record.exists() and left and _our_processes(prefix), "SIGKILL should leave the run behind"
    netns = set(json.loads(record.read_text())["netns"])

    report = cleanup.clean(sweep=False)   # records only: other people's networks are safe
    assert run_dir.name in report["runs"]
    assert _our_processes(prefix) == []
    assert [n for n in os.listdir("/sys/class/net") if n.startswith(prefix)] == []
    assert cleanup.pids_in_netns(netns) == []
    assert not record.exists()
