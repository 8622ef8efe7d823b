"""The `ray` executor: a sweep's points on a Ray cluster, one point per machine at a time.

Every machine that may run points advertises the custom resource `gdml_machine: 1`
(`ray start ... --resources '{"gdml_machine": 1}'`) and every point's task asks for 1 of
it (and no CPU), so a machine runs one point at a time whatever its core count: a point
needs the whole machine (Mininet, switches, workers). Machines without the resource (a
head node that only schedules) never get a point.

A task runs the point with the sweep's runner in a scratch folder on its machine, packs
the folder it wrote (tar.gz) and returns it with the runner's log lines; the driver
unpacks it into <sweep>/points/<point-id>/, exactly where the local executor writes, so no
shared filesystem is needed. Machines need the same checkout and venv at the same path
(the task imports the testbed from there); the base scenario travels with the task.

Imported only when `--executor ray` is chosen: Ray is an optional extra
(`pip install 'gdml-testbed[ray]'`).
"""
from __future__ import annotations

import io
import os
import re
import shutil
import socket
import sys
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath

import ray
import ray.exceptions as rex

from testbed.executors import ExecutorError, Outcome, PointJob, one_line

RESOURCE = "gdml_machine"
CHECKOUT = Path(__file__).resolve().parent.parent      # the driver's checkout: the same on every node
START_NODE = f"ray start --address=HEAD:6379 --resources='{{\"{RESOURCE}\": 1}}'"
PROBE_TIMEOUT_S = 120.0   # a worker's start and runtime-env set-up on a busy machine
CANCEL_GRACE_S = 60.0     # after Ctrl-C: time for running points to tear their run down


# ---------------------------------------------------------------- results in transit (pure)

def pack_folder(folder: Path) -> bytes:
    """Everything under folder as a gzipped tar (paths relative to folder)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for p in sorted(folder.rglob("*")):
            tar.add(p, arcname=p.relative_to(folder).as_posix(), recursive=False)
    return buf.getvalue()


def unpack_folder(data: bytes, dest: Path) -> None:
    """Unpack pack_folder's bytes under dest; a member that would land outside dest (an
    absolute path, '..', a link or a device) is refused before anything is written."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            parts = PurePosixPath(m.name).parts
            if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
                raise ValueError(f"results archive: refusing member {m.name!r} (outside the "
                                 f"point's folder or not a plain file)")
        dest.mkdir(parents=True, exist_ok=True)
        for m in members:
            target = dest.joinpath(*PurePosixPath(m.name).parts)
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(m) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(target, m.mode & 0o777)


# ---------------------------------------------------------------- what can go wrong (pure)

def node_problems(facts: dict, python: str, require_root: bool) -> list[str]:
    """Why a machine cannot run points (empty: it can). facts: probe_node()'s answer."""
    where = f"machine {facts['hostname']} ({facts['address']})"
    out = []
    if facts.get("slots", 1) != 1:
        out.append(f"{where} offers {RESOURCE}: {facts['slots']:g}; a point needs the whole machine: "
                   f"restart Ray there with --resources '{{\"{RESOURCE}\": 1}}'")
    if require_root and facts["uid"] != 0:
        out.append(f"{where}: Ray runs as uid {facts['uid']}, points need root (Mininet): "
                   f"start Ray there as root (sudo {START_NODE})")
    if facts["python"] != python:
        out.append(f"{where} runs Python {facts['python']}, this driver {python}: use the same "
                   f"venv on every machine")
    if not facts["checkout"]:
        out.append(f"{where} has no checkout at {CHECKOUT}: every machine needs the same "
                   f"checkout and venv at the same path (docs/sweeps.md)")
    return out


def lost_reason(e: BaseException) -> str | None:
    """The failure text for a point whose machine or worker process went away, or None
    when the error is not about that."""
    text = str(e)
    ip = re.search(r"Node IP: ([^,\s]+)", text)
    where = f"machine {ip.group(1)}" if ip else "the machine running the point"
    if isinstance(e, (rex.NodeDiedError, rex.LocalRayletDiedError, rex.ObjectLostError)):
        return (f"node lost: {where} left the Ray cluster (dead, preempted or its raylet "
                f"crashed: {type(e).__name__}); --resume runs the point again")
    if isinstance(e, rex.OutOfMemoryError):
        return f"out of memory: Ray's memory monitor killed the point's task on {where}"
    if isinstance(e, rex.WorkerCrashedError):
        return (f"worker process died on {where} (killed, out of memory or crashed: "
                f"WorkerCrashedError); --resume runs the point again")
    return None


def task_error(e: BaseException) -> str:
    """One line for any error ray.get raised for a point's task."""
    lost = lost_reason(e)
    if lost:
        return lost
    cause = getattr(e, "cause", None)   # RayTaskError: the exception on the machine
    if isinstance(cause, BaseException):
        return one_line(cause)
    return one_line(e)


def head_unreachable(address: str, timeout_s: float = 5.0) -> str | None:
    """Why nothing answers at a `host:port` address (None: something does, or the address
    is not of that form, e.g. `auto`, which Ray resolves and reports itself)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        return f"nothing answers at {address} ({e.strerror or e})"
    return None


# ---------------------------------------------------------------- on the machines

def probe_node(slots: float) -> dict:
    """What node_problems needs, measured on the machine itself."""
    return {"hostname": socket.gethostname(), "address": ray.util.get_node_ip_address(),
            "uid": os.geteuid(), "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "checkout": (CHECKOUT / "testbed" / "sweep.py").is_file(), "slots": slots}


def _scenario_here(path: str, text: str, scratch: Path) -> Path:
    """The base scenario as the driver read it: its own path when this machine holds the
    same text there (the manifest then names it), else a copy in the scratch folder."""
    p = Path(path)
    try:
        if p.read_text() == text:
            return p
    except OSError:
        pass
    copy = scratch / "scenario" / p.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(text)
    return copy


def run_point_on_node(scenario: str, scenario_text: str, overrides: list[str], runner,
                      require_root: bool) -> dict:
    """A Ray task: one point, on the machine Ray chose. A runner that raises is the point's
    failure (returned, with whatever it wrote); Ctrl-C on the driver cancels the task, which
    raises KeyboardInterrupt here so the run tears down."""
    node = socket.gethostname()
    lines: list[str] = []

    def log(msg: str) -> None:
        lines.append(f"{time.strftime('%H:%M:%S')} {msg}")

    t0 = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="gdml-point-"))
    try:
        out_root = scratch / "out"
        out_root.mkdir()
        rel, error = None, None
        if require_root and os.geteuid() != 0:
            error = (f"machine {node}: Ray runs as uid {os.geteuid()}, points need root: "
                     f"start Ray there as root")
        else:
            try:
                run_dir = Path(runner(_scenario_here(scenario, scenario_text, scratch),
                                      list(overrides), out_root, log)).resolve()
                if run_dir.is_relative_to(out_root.resolve()):
                    rel = run_dir.relative_to(out_root.resolve()).as_posix()
                else:
                    error = f"the runner returned {run_dir}, outside the point's folder {out_root}"
            except Exception as e:
                error = one_line(e)
        return {"archive": pack_folder(out_root), "run_dir": rel, "error": error, "node": node,
                "elapsed_s": time.monotonic() - t0, "log": lines}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------- the driver

class MachineWatch:
    """Says so (once, until it changes) when points wait and no machine of the cluster
    offers the resource any more: Ray keeps them queued for a machine to join."""

    def __init__(self, log, every_s: float = 10.0):
        self.log, self.every_s = log, every_s
        self.last, self.warned = time.monotonic(), False

    def check(self, waiting: int) -> None:
        if not waiting or time.monotonic() - self.last < self.every_s:
            return
        self.last = time.monotonic()
        if ray.cluster_resources().get(RESOURCE, 0) >= 1:
            self.warned = False
        elif not self.warned:
            self.warned = True
            msg = (f"ray: {waiting} point(s) wait, no machine offers {RESOURCE} now; add one "
                   f"({START_NODE}) or Ctrl-C and --resume later")
            print(msg, file=sys.stderr, flush=True)
            self.log(msg)


class RayExecutor:
    """Points as Ray tasks; results unpacked here in the order they finish."""
    name = "ray"

    def __init__(self, address: str | None = None, require_root: bool = True,
                 cancel_grace_s: float = CANCEL_GRACE_S):
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.require_root = require_root
        self.cancel_grace_s = cancel_grace_s
        self.machines: list[dict] = []
        self._owned = False

    # -- connect and check
    def __enter__(self):
        self._owned = not ray.is_initialized()
        if self._owned:
            self._connect()
        try:
            self.machines = self._check_machines()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self._owned and ray.is_initialized():
            ray.shutdown()     # a cluster started here stops; a remote one is only left
        self._owned = False
        return False

    def _connect(self) -> None:
        where = self.address or "a new one-machine cluster"
        print(f"ray: connecting to {where} ...", file=sys.stderr, flush=True)
        if self.address:
            problem = head_unreachable(self.address)
            if problem:   # ray.init would retry for minutes
                raise ExecutorError(f"--ray-address {self.address}: {problem}; is the head running "
                                    f"(`ray start --head`) and is that its address?")
        try:
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:   # this machine, one slot: the local executor's order, through Ray
                ray.init(num_cpus=1, resources={RESOURCE: 1}, include_dashboard=False,
                         log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ExecutorError(f"--ray-address {self.address or '(none)'}: cannot connect to Ray "
                                f"({one_line(e)}); start the head with `ray start --head` and give "
                                f"its address (or auto on a machine of the cluster)") from None

    def _check_machines(self) -> list[dict]:
        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(RESOURCE)]
        if not nodes:
            raise ExecutorError(f"--executor ray: no machine of the Ray cluster offers the resource "
                                f"{RESOURCE}; start each machine that may run points with: {START_NODE}")
        print(f"ray: checking {len(nodes)} machine(s) with {RESOURCE} (root, Python, checkout) ...",
              file=sys.stderr, flush=True)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        probe = ray.remote(probe_node)
        refs = [probe.options(num_cpus=0, max_retries=0, runtime_env=self._runtime_env(),
                              scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                .remote(n["Resources"][RESOURCE]) for n in nodes]
        python = f"{sys.version_info[0]}.{sys.version_info[1]}"
        facts, problems = [], []
        for n, ref in zip(nodes, refs):
            try:
                f = ray.get(ref, timeout=PROBE_TIMEOUT_S)
            except Exception as e:
                problems.append(f"machine {n.get('NodeManagerHostname')} ({n.get('NodeManagerAddress')}): "
                                f"the testbed does not start there ({task_error(e)}): every machine "
                                f"needs the checkout at {CHECKOUT} and the same venv")
                continue
            facts.append(f)
            problems += node_problems(f, python, self.require_root)
        if problems:
            raise ExecutorError("--executor ray: " + "; ".join(problems))
        print(f"ray: {len(facts)} machine(s) run points, one at a time each: "
              + ", ".join(f"{f['hostname']} ({f['address']})" for f in facts), file=sys.stderr, flush=True)
        return facts

    @staticmethod
    def _runtime_env() -> dict:
        # the tasks import the testbed (and the runner's module) from the same checkout
        return {"env_vars": {"PYTHONPATH": str(CHECKOUT)}}

    # -- run
    def run(self, jobs: list[PointJob], runner, log, started=lambda p: None):
        if not jobs:
            return
        task = ray.remote(run_point_on_node).options(
            resources={RESOURCE: 1}, num_cpus=0, max_retries=0, runtime_env=self._runtime_env())
        texts: dict[Path, str] = {}
        pending = {}
        for job in jobs:
            path = Path(job.scenario).resolve()
            text = texts.setdefault(path, path.read_text())
            pending[task.remote(str(path), text, list(job.overrides), runner, self.require_root)] = job
        log(f"ray: {len(jobs)} point(s) queued on {len(self.machines)} machine(s)")
        watch = MachineWatch(log)
        try:
            try:
                while pending:
                    ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                    for ref in ready:   # dropped from pending once its outcome is made:
                        o = self._outcome(pending[ref], ref, log)   # Ctrl-C here loses nothing
                        del pending[ref]
                        yield o
                    watch.check(len(pending))
            except KeyboardInterrupt:
                yield from self._cancel(pending, log)
        finally:   # the sweep stopped early (or a second Ctrl-C): nothing keeps running
            for ref in pending:
                ray.cancel(ref, force=True)

    def _outcome(self, job: PointJob, ref, log) -> Outcome:
        pid = job.point.point_id
        try:
            res = ray.get(ref)
        except rex.TaskCancelledError:
            return Outcome(job, error="interrupted (cancelled by Ctrl-C)", interrupted=True)
        except rex.RayError as e:
            return Outcome(job, error=task_error(e))
        for line in res["log"]:
            log(f"[{pid} on {res['node']}] {line}")
        run_dir, error = None, res["error"]
        try:
            unpack_folder(res["archive"], job.out_root)
            if res["run_dir"] is not None:
                run_dir = job.out_root / res["run_dir"]
        except (ValueError, tarfile.TarError, OSError) as e:
            error = f"results from {res['node']} not unpacked: {one_line(e)}"
        return Outcome(job, run_dir=None if error else run_dir, error=error,
                       elapsed_s=res["elapsed_s"], node=res["node"])

    def _cancel(self, pending: dict, log):
        """Ctrl-C: cancel every point in flight (a running one gets KeyboardInterrupt and
        tears its run down); points that still finish are recorded as usual, the rest
        interrupted."""
        log(f"Ctrl-C: cancelling {len(pending)} point(s) in flight")
        print(f"ray: Ctrl-C, cancelling {len(pending)} point(s) (up to {self.cancel_grace_s:.0f} s "
              f"for their runs to tear down)", file=sys.stderr, flush=True)
        for ref in pending:
            ray.cancel(ref)
        deadline = time.monotonic() + self.cancel_grace_s
        while pending and time.monotonic() < deadline:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                o = self._outcome(pending[ref], ref, log)
                del pending[ref]
                yield o
        for ref, job in list(pending.items()):
            ray.cancel(ref, force=True)
            del pending[ref]
            yield Outcome(job, error="interrupted (cancelled by Ctrl-C)", interrupted=True)
