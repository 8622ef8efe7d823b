"""The sweep's executors: `local` and `ray` run the same points into the same table.

Ray runs for real here: a one-machine cluster started by the executor, a cluster whose
machine is lost mid-point (ray.cluster_utils.Cluster: several raylets on this machine), and
a driver already connected (Ctrl-C). The runner is tests/sweep_runners.py's fake (synthetic
results, no root), imported by Ray's worker processes from the checkout. Every test that
starts Ray checks that no raylet or gcs_server it started is left running.
"""
import functools
import itertools
import os
import re
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from testbed import sweep as S
from testbed.executor_choice import make_executor
from testbed.executors import ExecutorError
from testbed.sweep_model import load_sweep
from tests.sweep_runners import read_calls, read_spans, runner

# one xdist worker runs every test here (make test: --dist loadgroup): a ray.init on the
# other worker while one of these tests has its cluster up connects to that cluster or
# refuses num_cpus ("When connecting to an existing cluster, num_cpus and num_gpus must
# not be provided": CI, 28 Nov 2026)
pytestmark = pytest.mark.xdist_group("ray")

BASE = Path(__file__).parent / "data" / "results_fixture" / "base.yaml"
BODY = """name: s
axes:
  scheme: [ps, geo-ina]
  wan.default.bandwidth_mbps: [20, 50]
seeds: {policy: fixed, base: 5}
"""
P = {  # the overrides that single out a point (all must appear)
    "p0000": ('scheme="ps"', "wan.default.bandwidth_mbps=20"),
    "p0001": ('scheme="ps"', "wan.default.bandwidth_mbps=50"),
    "p0003": ('scheme="geo-ina"', "wan.default.bandwidth_mbps=50"),
}


def sweep_at(tmp_path, extra: str = ""):
    p = tmp_path / "sweep.yaml"
    p.write_text(f"base: {BASE}\n" + BODY + extra)
    return p


def table(folder) -> str:
    return (Path(folder) / "table.csv").read_text()


def rows(folder) -> dict[str, dict]:
    import csv
    with open(Path(folder) / "table.csv", newline="") as f:
        return {r["point_id"]: r for r in csv.DictReader(f)}


def run_files(folder) -> dict[str, bytes]:
    """Every file the runs wrote (not the sweep's own point.json), by path in the sweep."""
    pts = Path(folder) / "points"
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(pts.rglob("*"))
            if f.is_file() and f.name != "point.json"}


# ---------------------------------------------------------------- Ray's own processes

def ray_daemons() -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() in ("raylet", "gcs_server"):
                    out.add(int(d.name))
            except OSError:
                continue
    return out


@contextmanager
def no_ray_daemons_left():
    """Fails the test when a raylet or gcs_server started inside the block survives it
    (and ends that process, by its PID)."""
    before = ray_daemons()
    yield
    deadline = time.monotonic() + 20
    while (left := ray_daemons() - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"Ray processes left running: {sorted(left)}"


class WhenFileAppears(threading.Thread):
    """Runs action() once path exists (a fake run says it has started); join() re-raises
    what the action raised."""

    def __init__(self, path: Path, action, timeout_s: float = 60):
        super().__init__(daemon=True)
        self.path, self.action, self.timeout_s, self.error = path, action, timeout_s, None
        self.start()

    def run(self):
        deadline = time.monotonic() + self.timeout_s
        while not self.path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            if self.path.exists():
                self.action()
        except BaseException as e:
            self.error = e

    def join(self, timeout=None):
        super().join(timeout)
        if self.error is not None:
            raise self.error


# ---------------------------------------------------------------- choosing an executor

def test_executor_names_and_options_are_checked():
    with pytest.raises(ExecutorError, match=r"^--executor: unknown executor 'dask'; choose one of local, ray$"):
        make_executor("dask")
    with pytest.raises(ExecutorError, match=r"^--ray-address: only with --executor ray$"):
        make_executor("local", ray_address="auto")
    assert make_executor("local").name == "local"


def test_ray_missing_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)       # `import ray` fails as when not installed
    monkeypatch.delitem(sys.modules, "testbed.executor_ray", raising=False)
    with pytest.raises(ExecutorError) as e:
        make_executor("ray")
    assert str(e.value).startswith("--executor ray: Ray is not installed")
    assert "pip install 'gdml-testbed[ray]'" in str(e.value)


@pytest.fixture
def ctrl_c_works():
    """Ctrl-C as a terminal delivers it, whatever this process inherited: a shell that starts
    the suite in the background (nohup ... &) hands it SIGINT ignored, and an ignored signal
    is no Ctrl-C to defer."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_ctrl_c_while_a_point_is_recorded_keeps_its_record_and_stops_the_sweep(tmp_path, monkeypatch, ctrl_c_works):
    """The signal waits until the finished point's record and the table are written, then
    stops the executor (local: the next point never starts)."""
    sw = load_sweep(sweep_at(tmp_path))
    real = S.record_outcome

    def record_with_ctrl_c(*a):
        os.kill(os.getpid(), signal.SIGINT)      # delivered while the record is being written
        return real(*a)
    monkeypatch.setattr(S, "record_outcome", record_with_ctrl_c)
    calls = tmp_path / "calls"
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(S.SweepInterrupted) as e:
        S.run_sweep(sw, tmp_path / "out", runner=functools.partial(runner, calls=str(calls)), progress=False)
    assert str(e.value) == "" and len(read_calls(calls)) == 1
    assert {k: v["status"] for k, v in rows(tmp_path / "out" / "s").items()} == {"p0000-r0": "ok"}
    assert signal.getsignal(signal.SIGINT) is handler          # Ctrl-C's own handler is back


# ---------------------------------------------------------------- the pure parts of the ray executor

def test_results_travel_as_an_archive_and_land_as_they_were_written(tmp_path):
    from testbed.executor_ray import pack_folder, unpack_folder
    src = tmp_path / "src"
    (src / "sc" / "run1" / "events").mkdir(parents=True)
    (src / "sc" / "run1" / "summary.json").write_text('{"complete": true}')
    (src / "sc" / "run1" / "events" / "h1.jsonl").write_bytes(b"\x00\x01binary")
    os.chmod(src / "sc" / "run1" / "summary.json", 0o640)
    dest = tmp_path / "dest"
    (dest / "old").mkdir(parents=True)                 # an earlier attempt's folder stays
    unpack_folder(pack_folder(src), dest)
    assert (dest / "sc" / "run1" / "events" / "h1.jsonl").read_bytes() == b"\x00\x01binary"
    assert (dest / "sc" / "run1" / "summary.json").stat().st_mode & 0o777 == 0o640
    assert (dest / "old").is_dir()


@pytest.mark.parametrize("name, kind", [("../escape.txt", "file"), ("/etc/x", "file"),
                                        ("sc/link", "symlink")])
def test_an_archive_member_outside_the_point_folder_is_refused(tmp_path, name, kind):
    import io
    import tarfile
    from testbed.executor_ray import unpack_folder
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.addfile(tarfile.TarInfo("sc/ok.txt"), io.BytesIO(b""))
        m = tarfile.TarInfo(name)
        if kind == "symlink":
            m.type, m.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(m, io.BytesIO(b""))
    with pytest.raises(ValueError, match="refusing member"):
        unpack_folder(buf.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "dest").exists()            # nothing written, not even the good member


def test_machines_that_cannot_run_points_are_named_with_the_fix():
    from testbed.executor_ray import CHECKOUT, node_problems
    good = {"hostname": "m1", "address": "10.0.0.1", "uid": 0, "python": "3.11", "checkout": True, "slots": 1}
    assert node_problems(good, "3.11", require_root=True) == []
    assert node_problems({**good, "uid": 1000}, "3.11", require_root=False) == []
    (p,) = node_problems({**good, "uid": 1000}, "3.11", require_root=True)
    assert p.startswith("machine m1 (10.0.0.1): Ray runs as uid 1000, points need root") and "sudo ray start" in p
    (p,) = node_problems({**good, "slots": 2}, "3.11", require_root=True)
    assert "offers gdml_machine: 2; a point needs the whole machine" in p
    (p,) = node_problems({**good, "python": "3.12"}, "3.11", require_root=True)
    assert "runs Python 3.12, this driver 3.11" in p
    (p,) = node_problems({**good, "checkout": False}, "3.11", require_root=True)
    assert f"no checkout at {CHECKOUT}" in p


def test_a_lost_machine_or_worker_becomes_a_failure_text():
    import ray.exceptions as rex
    from testbed.executor_ray import lost_reason, task_error
    died = rex.NodeDiedError("Task failed because the node it was running on is dead or unavailable. "
                             "Node IP: 10.0.0.7, node ID: ab")
    assert lost_reason(died).startswith("node lost: machine 10.0.0.7 left the Ray cluster")
    assert lost_reason(rex.WorkerCrashedError()).startswith("worker process died on the machine running the point")
    assert lost_reason(rex.OutOfMemoryError("Task was killed due to the node running low on memory")) \
        .startswith("out of memory")
    assert lost_reason(ValueError("x")) is None
    # an exception raised on the machine is reported as itself, not as Ray's wrapper
    wrapped = rex.RayTaskError("run_point_on_node", "Traceback ...", ModuleNotFoundError("No module named 'tests'"))
    assert task_error(wrapped) == "ModuleNotFoundError: No module named 'tests'"


def test_an_address_where_no_head_answers_fails_at_once_with_what_to_check():
    import ray
    from testbed.executor_ray import RayExecutor
    t0 = time.monotonic()
    with pytest.raises(ExecutorError) as e:
        with RayExecutor(address="127.0.0.1:1", require_root=False):
            pass
    assert str(e.value).startswith("--ray-address 127.0.0.1:1: nothing answers at 127.0.0.1:1 (")
    assert "ray start --head" in str(e.value) and time.monotonic() - t0 < 10 and not ray.is_initialized()


def test_waiting_points_without_a_machine_are_reported_once_until_one_joins(monkeypatch, capsys):
    import ray
    from testbed.executor_ray import MachineWatch
    offered = [{}]
    monkeypatch.setattr(ray, "cluster_resources", lambda: offered[0])
    lines = []
    watch = MachineWatch(lines.append, every_s=0)
    watch.check(3)
    watch.check(3)
    assert lines == ["ray: 3 point(s) wait, no machine offers gdml_machine now; add one "
                     "(ray start --address=HEAD:6379 --resources='{\"gdml_machine\": 1}') or Ctrl-C and --resume later"]
    assert capsys.readouterr().err == lines[0] + "\n"
    offered[0] = {"gdml_machine": 1.0}
    watch.check(2)
    offered[0] = {}
    watch.check(2)
    watch.check(0)                                   # nothing waits: nothing to say
    assert len(lines) == 2 and lines[1].startswith("ray: 2 point(s) wait")


# ---------------------------------------------------------------- Ray for real

def test_ray_writes_the_table_the_local_executor_writes_then_resumes_only_the_failed_point(tmp_path, capsys):
    """A one-machine cluster started by the executor (gdml_machine: 1), one point failing
    on the machine, then a resume; compared with the local executor on the same runner."""
    sw = load_sweep(sweep_at(tmp_path))
    failing = functools.partial(runner, fail_when=P["p0003"])
    local = S.run_sweep(sw, tmp_path / "local", runner=failing, progress=False)
    local_first = table(local)
    S.run_sweep(sw, tmp_path / "local", runner=runner, resume=True, progress=False)
    calls = tmp_path / "calls"
    with no_ray_daemons_left():
        ex = make_executor("ray", require_root=False)
        folder = S.run_sweep(sw, tmp_path / "ray", runner=functools.partial(failing, calls=str(calls)),
                             executor=ex, progress=True)
        assert len(read_calls(calls)) == 4
        assert table(folder) == local_first                       # byte for byte, failed row included
        assert run_files(folder) == {k: v for k, v in run_files(local).items()    # unpacked where local writes
                                     if not k.startswith("points/p0003-r0/")}
        r = rows(folder)
        assert r["p0003-r0"]["status"] == "failed"
        assert r["p0003-r0"]["error"] == "RuntimeError: switch s1 did not start: ... log tail: ..."
        rec = S.read_records(folder)["p0000-r0"]
        assert rec["node"] == socket.gethostname() and rec["status"] == "ok"
        err = capsys.readouterr().err
        for line in (r"p0000-r0 ok \d+:\d\d on", r"p0003-r0 failed \d+:\d\d on"):
            assert re.search(line, err), line    # the elapsed time is the machine's: any
        assert sorted(l.split()[0] for l in err.splitlines() if " on " + socket.gethostname() in l) == \
            ["1/4", "2/4", "3/4", "4/4"]
        log = (folder / "sweep.log").read_text()
        assert "executor ray" in log and f"[p0000-r0 on {socket.gethostname()}]" in log   # the run's own log lines
        # resume: only the failed point runs again, and the table is the local one's
        S.run_sweep(sw, tmp_path / "ray", runner=functools.partial(runner, calls=str(calls)),
                    resume=True, executor=make_executor("ray", require_root=False), progress=False)
    again = read_calls(calls)[4:]
    assert len(again) == 1 and all(any(n in o for o in again[0]) for n in P["p0003"])
    assert table(folder) == table(local)
    assert run_files(folder) == run_files(local)               # every run folder where local puts it


def test_two_machines_one_point_each_a_lost_machine_and_a_crashed_worker(tmp_path):
    """Several raylets on this machine (ray.cluster_utils.Cluster): a head that runs no
    points, then two machines; the one running the first point is removed mid-point."""
    import ray
    from ray.cluster_utils import Cluster
    sw = load_sweep(sweep_at(tmp_path))
    out = tmp_path / "out"
    marker, calls = tmp_path / "blocked", tmp_path / "calls"
    bad = functools.partial(runner, block_when=P["p0000"], blocked_marker=str(marker), crash_when=P["p0001"],
                            calls=str(calls), hold_s=1.0)
    with no_ray_daemons_left():
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        try:
            # no machine offers gdml_machine: refused before anything is written
            with pytest.raises(ExecutorError, match=r"^--executor ray: no machine of the Ray cluster offers "
                               r"the resource gdml_machine; start each machine .* --resources='\{\"gdml_machine\": 1\}'"):
                S.run_sweep(sw, out, runner=bad, executor=make_executor("ray", ray_address=cluster.address,
                                                                         require_root=False))
            assert not out.exists() and not ray.is_initialized()
            machines = [cluster.add_node(num_cpus=2, resources={"gdml_machine": 1}) for _ in range(2)]

            def lose_the_blocked_machine():
                (node,) = [m for m in machines if m.node_id == marker.read_text()]
                cluster.remove_node(node)
            helper = WhenFileAppears(marker, lose_the_blocked_machine)
            folder = S.run_sweep(sw, out, runner=bad, progress=False,
                                 executor=make_executor("ray", ray_address=cluster.address, require_root=False))
            helper.join(timeout=60)
            r = rows(folder)
            assert r["p0000-r0"]["status"] == "failed"
            assert r["p0000-r0"]["error"].startswith("node lost: machine ") and "left the Ray cluster" in r["p0000-r0"]["error"]
            assert r["p0001-r0"]["status"] == "failed"
            assert r["p0001-r0"]["error"].startswith("worker process died on")
            assert [r[p]["status"] for p in ("p0002-r0", "p0003-r0")] == ["ok", "ok"]
            assert not ray.is_initialized()                 # the driver disconnected; the cluster stays
            # resume on the machine left: only the two failed points, one at a time
            S.run_sweep(sw, out, runner=functools.partial(runner, calls=str(calls)), resume=True, progress=False,
                        executor=make_executor("ray", ray_address=cluster.address, require_root=False))
            assert len(read_calls(calls)) == 4 + 2 and all(v["status"] == "ok" for v in rows(folder).values())
            spans = [s for s in read_spans(calls) if s["t1"] is not None]
            assert len(spans) == 4 and {s["node"] for s in spans} <= {m.node_id for m in machines}
            for a, b in itertools.combinations(spans, 2):   # a machine never ran two points at once
                assert a["node"] != b["node"] or a["t1"] <= b["t0"] or b["t1"] <= a["t0"], (a, b)
        finally:
            cluster.shutdown()


def test_ctrl_c_cancels_the_points_in_flight_and_resume_finishes_them(tmp_path, capsys, ctrl_c_works):
    """A driver already connected to Ray (the executor leaves it connected): Ctrl-C while
    the second point runs; the running and the queued points are recorded interrupted."""
    import ray
    p = sweep_at(tmp_path, f"output: {tmp_path / 'out'}\n")
    marker = tmp_path / "blocked"
    calls = tmp_path / "calls"
    with no_ray_daemons_left():
        ray.init(num_cpus=1, resources={"gdml_machine": 1}, include_dashboard=False, log_to_driver=False)
        try:
            helper = WhenFileAppears(marker, lambda: os.kill(os.getpid(), signal.SIGINT))
            rc = S.main(str(p), executor="ray", runner=functools.partial(
                runner, block_when=P["p0001"], blocked_marker=str(marker), calls=str(calls)))
            helper.join(timeout=10)
            out = capsys.readouterr().out
            assert rc == 130
            assert "sweep interrupted at point p0001-r0, p0002-r0, p0003-r0;" in out
            assert f"continue with: gdml sweep {p} --executor ray --resume" in out
            r = rows(tmp_path / "out" / "s")
            assert [r[k]["status"] for k in sorted(r)] == ["ok", "interrupted", "interrupted", "interrupted"]
            assert r["p0001-r0"]["error"] == "interrupted (cancelled by Ctrl-C)"
            assert len(read_calls(calls)) == 2                 # the queued points never started
            assert ray.is_initialized()                        # not the executor's to shut down
            rc = S.main(str(p), executor="ray", resume=True, runner=functools.partial(runner, calls=str(calls)))
            assert rc == 0 and "4 of 4 points ok" in capsys.readouterr().out
            assert len(read_calls(calls)) == 5
        finally:
            ray.shutdown()


@pytest.mark.mininet
def test_real_quick_sweep_through_ray(tmp_path):
    """Two real runs (ps and ring, 2 iterations, 2 datacenters of 1 worker) through the
    lifecycle on a one-machine Ray cluster: root checked on the machine, Mininet started
    from Ray's worker process, results carried back into the sweep folder."""
    repo = Path(__file__).resolve().parent.parent
    p = tmp_path / "sweep.yaml"
    p.write_text(f"base: {repo / 'scenarios' / 'geo-3dc-small.yaml'}\n" + """name: real
set: [iterations=2, "datacenters=[{name: a, region: 'ibm:us-east'}, {name: b, region: 'ibm:eu-de'}]",
      "workload={kind: synthetic, parameters: 4096}"]
axes: {scheme: [ps, ring]}
""" + f"output: {tmp_path / 'out'}\n")
    with no_ray_daemons_left():
        assert S.main(str(p), executor="ray", prefix="swy") == 0
    folder = tmp_path / "out" / "real"
    r = rows(folder)
    assert [v["status"] for v in r.values()] == ["ok", "ok"]
    for v in r.values():
        assert v["iterations"] == "2" and float(v["iteration_time_mean_s"]) > 0.09   # RTT 91 ms at least
        assert (folder / v["run_dir"] / "summary.json").is_file()
        assert S.read_records(folder)[v["point_id"]]["node"] == socket.gethostname()
