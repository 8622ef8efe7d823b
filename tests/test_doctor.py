"""gdml doctor: the pure checks with injected probes (every FAIL path), and the real doctor on
this machine (root): netem and the link mode a run chooses, a fake leftover listed, not removed."""
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import cleanup, doctor
from testbed.doctor import FAIL, OK, WARN, Probes
from topologies import linkemu

REPO = Path(__file__).resolve().parent.parent
EVERY_TOOL = set(doctor.TOOLS)
NO_LEFTOVERS = {"dead_runs": [], "live_runs": [], "shells": [], "netns": [], "netns_processes": [],
                "interfaces": []}


def probes(missing_qdiscs=(), loadable=(), tools=EVERY_TOOL, euid=0, load=(0.2, 0.2, 0.2),
           import_error=None, versions=None, leftovers=NO_LEFTOVERS, sys_path=(), system_site=False,
           calls=None):
    """A machine described by its answers; `calls` collects every command run."""
    calls = [] if calls is None else calls

    def run(cmd):
        calls.append(cmd)
        if cmd[:3] == ["unshare", "--net", "tc"]:
            kind = cmd[8]
            return (2, "Error: Specified qdisc kind is unknown.") if kind in missing_qdiscs else (0, "")
        if cmd[:2] == ["modprobe", "-n"]:
            return (0, "") if cmd[2].removeprefix("sch_") in loadable else (1, "modprobe: FATAL")
        return 0, f"{cmd[0]} version 1.2"

    return Probes(run=run, which=lambda n: f"/usr/bin/{n}" if n in tools else None,
                  euid=lambda: euid, cpu_count=lambda: 2, loadavg=lambda: load,
                  import_error=lambda m: import_error,
                  dist_version=lambda n: (versions or {}).get(n, "1.0"),
                  leftovers=lambda: leftovers, sys_path=list(sys_path), system_site=lambda: system_site)


def run_doctor(pr, as_json=False):
    lines = []
    rc = doctor.main(as_json=as_json, probes=pr, out=lines.append)
    return rc, lines


def line(lines, start):
    found = [ln for ln in lines if ln.startswith(start)]
    assert len(found) == 1, (start, lines)
    return found[0]


def test_a_machine_with_everything_passes_and_says_what_runs_use():
    rc, lines = run_doctor(probes(tools=EVERY_TOOL | set(doctor.BMV2_TOOLS)))
    assert rc == 0
    assert lines[-1] == f"doctor: {len(lines) - 1} checks, 0 failed, 0 warnings"
    assert all(ln.startswith("ok  ") for ln in lines[:-1]), lines
    line(lines, "ok    link emulation for runs: netem (auto: the kernel has sch_netem)")
    line(lines, "ok    switch backend for runs: bmv2 (auto:")   # every tool on PATH, BMv2's too
    line(lines, "ok    BMv2 p4c: /usr/bin/p4c (p4c version 1.2)")


def test_missing_netem_is_a_warning_and_runs_use_userspace():
    rc, lines = run_doctor(probes(missing_qdiscs={"netem"}))
    assert rc == 0
    netem = line(lines, "warn  qdisc netem: missing (Error: Specified qdisc kind is unknown.)")
    assert "softswitch" in netem and "(fix: modprobe sch_netem on a kernel that ships it" in netem
    line(lines, "ok    link emulation for runs: userspace (auto: the kernel has no sch_netem")
    # a loadable module: the fix is just to load it
    rc, lines = run_doctor(probes(missing_qdiscs={"netem"}, loadable={"netem"}))
    assert line(lines, "warn  qdisc netem").endswith("(fix: modprobe sch_netem)")


def test_missing_htb_fails_with_its_fix():
    rc, lines = run_doctor(probes(missing_qdiscs={"htb"}, loadable={"htb"}))
    assert rc == 1
    assert line(lines, "FAIL  qdisc htb: missing").endswith("(fix: modprobe sch_htb)")
    assert lines[-1].startswith("doctor: ") and ", 1 failed," in lines[-1]


def test_not_root_probes_no_qdisc_and_says_to_use_sudo():
    calls = []
    rc, lines = run_doctor(probes(euid=1000, calls=calls))
    assert rc == 0
    assert not [c for c in calls if c[0] in ("unshare", "modprobe")]
    assert line(lines, "warn  not root").endswith("(fix: sudo gdml doctor)")
    assert line(lines, "warn  qdisc netem: not probed (needs root)").endswith("(fix: sudo gdml doctor)")
    line(lines, "warn  link emulation for runs: unknown")


def test_mininet_and_needed_tools_missing_fail_optional_ones_warn():
    rc, lines = run_doctor(probes(import_error="ModuleNotFoundError: No module named 'mininet'",
                                  tools=EVERY_TOOL - {"mnexec", "ping", "ethtool"}))
    assert rc == 1
    assert line(lines, "FAIL  Mininet: cannot import it (ModuleNotFoundError").endswith("(fix: make setup)")
    assert line(lines, "FAIL  mnexec: not on PATH").endswith("(fix: apt-get install mininet)")
    assert line(lines, "FAIL  ping: not on PATH (needed for the health check").endswith(
        "(fix: apt-get install iputils-ping)")
    assert line(lines, "warn  ethtool: not on PATH (used by").endswith("(fix: apt-get install ethtool)")


def test_bmv2_absent_is_not_an_error_and_runs_use_the_softswitch():
    rc, lines = run_doctor(probes(tools=EVERY_TOOL))   # no simple_switch, p4c, simple_switch_CLI
    assert rc == 0
    line(lines, "ok    BMv2 simple_switch: not installed (not needed: the softswitch is the default backend)")
    line(lines, "ok    switch backend for runs: softswitch (auto: simple_switch and p4c")


def test_load_above_the_cores_asks_for_more_time_dilation():
    rc, lines = run_doctor(probes(load=(5.0, 3.0, 1.0)))
    assert rc == 0
    cpu = line(lines, "warn  CPU: 2 cores, load 5.00 3.00 1.00")
    assert "time_dilation x 2.5" in cpu and "--set time_dilation=<s x 2.5>" in cpu
    rc, lines = run_doctor(probes())   # idle
    assert "load factor 1" in line(lines, "ok    CPU: 2 cores, load 0.20 0.20 0.20")


def test_leftovers_are_listed_with_clean_as_the_fix():
    lo = dict(NO_LEFTOVERS,
              dead_runs=[{"run_id": "20260101T000000Z-dead", "record": "/run/gdml-testbed/x.json",
                          "processes": [11, 12], "netns": ["net:[1]"], "interfaces": []}],
              live_runs=[{"run_id": "20260101T000000Z-live", "owner_pid": 99}],
              shells=[{"pid": 41, "cmdline": "bash --norc -is mininet:xh1r1w1"}],
              netns=["net:[4026532000]"], netns_processes=[41, 42],
              interfaces=[f"xg{i}-eth1" for i in range(1, 11)])
    rc, lines = run_doctor(probes(leftovers=lo))
    assert rc == 0
    dead = line(lines, "warn  leftover run 20260101T000000Z-dead: its owner is dead")
    assert "still 2 processes, 1 netns" in dead and dead.endswith("(fix: gdml clean)")
    shells = line(lines, "warn  leftover Mininet shells: 41 mininet:xh1r1w1")
    assert "1 network namespace(s) with 2 process(es)" in shells and shells.endswith("(fix: gdml clean)")
    intfs = line(lines, "warn  leftover interfaces: xg1-eth1")
    assert "and 2 more" in intfs and intfs.endswith("(fix: gdml clean)")
    line(lines, "ok    run in progress: 20260101T000000Z-live (pid 99)")
    assert not [ln for ln in lines if ln.startswith("ok    leftovers: none")]


def test_a_missing_python_package_fails():
    rc, lines = run_doctor(probes(versions={"pydantic": None}))
    assert rc == 1
    pk = line(lines, "FAIL  python ")
    assert "missing pydantic" in pk and "numpy 1.0" in pk and pk.endswith("(fix: make setup)")


def test_two_matplotlibs_on_the_path_are_a_mix(tmp_path):
    venv, debian = tmp_path / "venv", tmp_path / "debian"
    for d in (venv / "matplotlib", venv / "mpl_toolkits" / "mplot3d", debian / "mpl_toolkits" / "mplot3d"):
        d.mkdir(parents=True)
    rc, lines = run_doctor(probes(sys_path=[str(venv), str(debian)]))
    mix = line(lines, "warn  matplotlib mix: mpl_toolkits.mplot3d in 2 places")
    assert str(debian) in mix and "rm -rf .venv && make setup)" in mix
    rc, lines = run_doctor(probes(sys_path=[str(venv)]))
    line(lines, f"ok    matplotlib mix: one installation (matplotlib {venv}")
    rc, lines = run_doctor(probes(sys_path=[str(venv)], system_site=True))
    line(lines, "warn  matplotlib mix: the venv sees Debian's site-packages")


def test_json_records_carry_status_fix_and_facts():
    rc, lines = run_doctor(probes(missing_qdiscs={"htb", "netem"}), as_json=True)
    assert rc == 1 and len(lines) == 1
    records = json.loads(lines[0])
    by_what = {r["what"].split(":")[0]: r for r in records}
    assert by_what["qdisc htb"]["status"] == FAIL and by_what["qdisc htb"]["fix"].startswith("modprobe")
    assert by_what["link emulation for runs"]["facts"] == {"mode": "userspace"}
    assert by_what["CPU"]["facts"]["time_dilation_factor"] == 1.0
    assert {r["status"] for r in records} <= {OK, WARN, FAIL}


# ---------------------------------------------------------------- the real machine (root)

def gdml_doctor(*args):
    p = subprocess.run([sys.executable, str(REPO / "run.py"), "doctor", *args], capture_output=True,
                       text=True, cwd=REPO, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.mininet
@pytest.mark.skipif(os.geteuid() != 0, reason="the qdisc probes need root")
def test_doctor_on_this_machine_agrees_with_the_runs_netem_probe():
    rc, out, err = gdml_doctor()
    lines = out.splitlines()
    assert err == "" and lines[-1].startswith("doctor: ")
    assert rc == (1 if any(ln.startswith("FAIL") for ln in lines) else 0)
    if linkemu.kernel_has_netem():          # the probe a run makes (testbed/lifecycle.prepare)
        line(lines, "ok    qdisc netem: available")
        line(lines, "ok    link emulation for runs: netem")
    else:                                   # this machine
        line(lines, "warn  qdisc netem: missing")
        line(lines, "ok    link emulation for runs: userspace (auto: the kernel has no sch_netem")
    line(lines, "ok    qdisc htb: available")


@pytest.mark.mininet
@pytest.mark.skipif(os.geteuid() != 0, reason="creates a network namespace and veths")
def test_doctor_lists_a_leftover_shell_namespace_and_veth_and_leaves_them():
    prefix = "z" + secrets.token_hex(1)                 # unique, matches the node-name prefix
    shell_name, intf = f"mininet:{prefix}h1r1w1", f"{prefix}g1-eth1"
    assert cleanup.SHELL_RE.search(shell_name) and cleanup.INTF_RE.match(intf)
    shell = subprocess.Popen(["unshare", "--net", sys.executable, "-c", "import time; time.sleep(60)",
                              shell_name])
    try:
        subprocess.run(["ip", "link", "add", intf, "type", "veth", "peer", "name", f"{prefix}g1-eth2"],
                       check=True)
        # Until unshare is in the new namespace; a loaded CI machine can take seconds to get there.
        deadline = time.monotonic() + 30
        while not (cleanup.netns_inode(shell.pid) not in (None, cleanup.root_netns()) and
                   cleanup.cmdline(shell.pid).endswith(shell_name)):
            assert shell.poll() is None and time.monotonic() < deadline, "unshare never entered a new namespace"
            time.sleep(0.01)
        ns = cleanup.netns_inode(shell.pid)
        rc, out, err = gdml_doctor("--json")
        records = json.loads(out)
        shells = next(r for r in records if r["what"].startswith("leftover Mininet shells"))
        assert shell.pid in [s["pid"] for s in shells["facts"]["shells"]]
        assert ns in shells["facts"]["netns"] and shell.pid in shells["facts"]["netns_processes"]
        assert shells["status"] == WARN and shells["fix"] == "gdml clean"
        intfs = next(r for r in records if r["what"].startswith("leftover interfaces"))
        assert {intf, f"{prefix}g1-eth2"} <= set(intfs["facts"]["interfaces"])
        rc, out, err = gdml_doctor()
        assert f"{shell.pid} {shell_name}" in out and "(fix: gdml clean)" in out
        assert shell.poll() is None and os.path.exists(f"/sys/class/net/{intf}")   # listed, not removed
    finally:
        shell.kill()
        shell.wait()
        subprocess.run(["ip", "link", "del", intf], stderr=subprocess.DEVNULL)
