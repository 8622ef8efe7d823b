"""Run records and `clean` on real processes, namespaces and veths (root, no Mininet).

The pattern sweep is not exercised here: it would touch other people's test networks on a
shared machine. Names use the prefix 'lct'.
"""
import os
import subprocess
import time

import pytest

from testbed import cleanup

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, veth)")


def _exists(intf):
    return os.path.exists(f"/sys/class/net/{intf}")


def test_intf_and_shell_patterns_match_testbed_names_only():
    for name in ("g1-eth3", "s2r1-eth1", "tg8-eth7", "bts3r2-eth12", "th1r1w2-eth0", "gdmlnp123a",
                 "bmg1-sw3", "bmh1r1w2-rl0"):
        assert cleanup.INTF_RE.match(name), name
    for name in ("eth0", "veth1234", "s1-eth1", "lo", "ifb0", "docker0", "g1-rl1", "br-sw1"):
        assert not cleanup.INTF_RE.match(name), name
    assert cleanup.SHELL_RE.search("bash --norc --noediting -is mininet:th1r1w1")
    assert not cleanup.SHELL_RE.search("bash --norc --noediting -is mininet:h1")


def test_clean_kills_recorded_and_namespaced_processes_of_a_dead_run(tmp_path):
    # a worker-like process in its own network namespace, recorded only by namespace
    ns_proc = subprocess.Popen(["unshare", "-n", "sleep", "60"])
    plain = subprocess.Popen(["sleep", "60"])
    subprocess.run(["ip", "link", "add", "lct0a", "type", "veth", "peer", "name", "lct0b"], check=True)
    try:
        deadline = time.monotonic() + 30   # until unshare is in the new namespace
        while cleanup.netns_inode(ns_proc.pid) in (None, cleanup.root_netns()):
            assert ns_proc.poll() is None and time.monotonic() < deadline, "unshare never entered a new namespace"
            time.sleep(0.01)
        dead_owner = subprocess.Popen(["true"])
        dead_owner.wait()
        rec = cleanup.RunRecord("lct-run", state_dir=tmp_path)
        rec.data["owner_pid"], rec.data["owner_start"] = dead_owner.pid, 1
        rec.add_process(plain.pid, "plain")
        rec.add_netns(ns_proc.pid)
        rec.add_interfaces(["lct0a"])
        assert rec.data["netns"] and rec.path.exists()

        # a live run's record must be left alone
        live = cleanup.RunRecord("lct-live", state_dir=tmp_path)
        live.add_interfaces(["lct0b"])

        report = cleanup.clean(sweep=False, state_dir=tmp_path)
        assert report["runs"] == ["lct-run"]
        assert set(report["killed"]) >= {plain.pid, ns_proc.pid}
        assert ns_proc.wait(5) is not None and plain.wait(5) is not None
        assert not _exists("lct0a") and not _exists("lct0b")  # veth peers go together
        assert not rec.path.exists() and live.path.exists()
    finally:
        for p in (ns_proc, plain):
            if p.poll() is None:
                p.kill()
        subprocess.run(["ip", "link", "del", "lct0a"], stderr=subprocess.DEVNULL)


def test_recycled_pid_is_not_killed():
    p = subprocess.Popen(["sleep", "60"])
    try:
        wrong_start = cleanup.proc_start_time(p.pid) + 12345
        assert cleanup.kill_pids([(p.pid, wrong_start)], grace_s=0.1) == []
        assert p.poll() is None
        assert cleanup.kill_pids([(p.pid, cleanup.proc_start_time(p.pid))], grace_s=2) == [p.pid]
        assert p.wait(5) is not None
    finally:
        if p.poll() is None:
            p.kill()


def test_root_namespace_is_never_swept():
    assert cleanup.pids_in_netns({cleanup.root_netns()}) == []


def test_the_root_namespace_is_known_even_where_pid_1_hides_it():
    # kthreadd and this process (started in the root namespace) agree with whatever PID 1 says
    assert cleanup.root_netns() == cleanup.netns_inode(2) == cleanup.netns_inode(os.getpid())
