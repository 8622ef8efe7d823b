"""What a run leaves behind, recorded as it is created, so a killed run can be cleaned.

Every run keeps a record in STATE_DIR/<run-id>.json: its own PID, each process it started
(PID + kernel start time, so a recycled PID is never killed), each host's network namespace
(inode: worker processes started with `mnexec -a` outlive the host shell and keep the
namespace alive), and its root-namespace interfaces. Teardown uses the same record as
`python3 run.py clean`, which handles runs whose owner process is dead. The pattern sweep
(`sweep=True`) additionally removes interfaces and Mininet shells with the testbed's node
names that no live run claims; it never touches anything else.
"""
from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

from topologies.interfaces import delete_interfaces   # also used by the Mininet builder

STATE_DIR = Path(os.environ.get("GDML_STATE_DIR", "/run/gdml-testbed"))
NODE_RE = r"[a-z0-9]{0,4}?(?:h\d+r\d+w\d+|s\d+r\d+|g\d+)"
# nodes' ports, relay mode's switch ports and host-side relay ends (topologies/relay_plan.py),
# netem probe veths
INTF_RE = re.compile(rf"^(?:{NODE_RE}-(?:eth|sw)\d+|{NODE_RE}-rl0|gdmlnp\d+[ab])$")
SHELL_RE = re.compile(rf"mininet:{NODE_RE}$")


# ---------------------------------------------------------------- /proc helpers

def proc_start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


def is_same_process(pid: int, start: int | None) -> bool:
    """Alive (not a zombie) and started when recorded, so a recycled PID never matches."""
    st = proc_start_time(pid)
    return st is not None and (start is None or st == start) and _state(pid) not in (None, "Z")


def netns_inode(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def root_netns() -> str | None:
    """The initial network namespace. PID 1's link is unreadable in some sandboxes (a firecracker
    init refuses it), so kthreadd (PID 2, a kernel thread, always in the initial namespace) and
    then this process stand in: a None here would let the root namespace be swept."""
    for pid in (1, 2, os.getpid()):
        ns = netns_inode(pid)
        if ns:
            return ns
    return None


def pids_in_netns(namespaces: set[str]) -> list[int]:
    """Every process whose network namespace is one of ``namespaces`` ('net:[...]')."""
    root = root_netns()
    namespaces = {n for n in namespaces if n and n != root}   # never the root namespace
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and netns_inode(int(entry)) in namespaces:
            found.append(int(entry))
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def kill_pids(pids: list[tuple[int, int | None]], grace_s: float = 2.0) -> list[int]:
    """SIGTERM, wait up to grace_s, then SIGKILL. Returns the PIDs that were signalled."""
    live = [(p, st) for p, st in pids if p != os.getpid() and is_same_process(p, st)]
    for p, _ in live:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(is_same_process(p, st) for p, st in live):
        time.sleep(0.05)
    for p, st in live:
        if is_same_process(p, st):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p, st in live:   # reap our own children so they do not linger as zombies
        try:
            os.waitpid(p, os.WNOHANG)
        except ChildProcessError:
            pass
    return [p for p, _ in live]


# ---------------------------------------------------------------- the record

class RunRecord:
    def __init__(self, run_id: str, state_dir: Path | None = None):
        self.path = (state_dir or STATE_DIR) / f"{run_id}.json"
        self.data = {"run_id": run_id, "owner_pid": os.getpid(),
                     "owner_start": proc_start_time(os.getpid()),
                     "processes": [], "netns": [], "interfaces": []}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)

    def add_process(self, pid: int, what: str, save: bool = True) -> None:
        self.data["processes"].append({"pid": pid, "start": proc_start_time(pid), "what": what})
        if save:
            self.save()

    def add_netns(self, pid: int, save: bool = True) -> None:
        ns = netns_inode(pid)
        if ns and ns not in self.data["netns"] and ns != root_netns():
            self.data["netns"].append(ns)
        if save:
            self.save()

    def add_interfaces(self, names, save: bool = True) -> None:
        self.data["interfaces"].extend(n for n in names if n not in self.data["interfaces"])
        if save:
            self.save()

    def remove(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def teardown_record(data: dict) -> dict:
    """Kill everything a record names; returns what was removed."""
    procs = [(p["pid"], p["start"]) for p in data.get("processes", [])]
    in_ns = [(p, proc_start_time(p)) for p in pids_in_netns(set(data.get("netns", [])))]
    killed = kill_pids(procs + in_ns)
    # the namespaces vanish with their last process; interfaces in them go with them
    intfs = delete_interfaces(data.get("interfaces", []))
    return {"killed": killed, "interfaces": intfs}


def owner_alive(data: dict) -> bool:
    return is_same_process(data.get("owner_pid", -1), data.get("owner_start"))


def load_records(state_dir: Path | None = None) -> list[tuple[Path, dict]]:
    d = state_dir or STATE_DIR
    out = []
    for p in sorted(d.glob("*.json")) if d.exists() else []:
        try:
            out.append((p, json.loads(p.read_text())))
        except (OSError, ValueError):
            continue
    return out


# ---------------------------------------------------------------- discovery (no side effects)

def split_records(state_dir: Path | None = None) -> tuple[list[tuple[Path, dict]], list[dict]]:
    """(records of dead runs, with their paths; records of live runs, left alone)."""
    dead, live = [], []
    for path, data in load_records(state_dir):
        if owner_alive(data):
            live.append(data)
        else:
            dead.append((path, data))
    return dead, live


def claims(live: list[dict]) -> tuple[set[str], set[int]]:
    """(interfaces, PIDs) that live runs recorded: never touched by the pattern sweep."""
    intfs = {n for d in live for n in d.get("interfaces", [])}
    pids = {p["pid"] for d in live for p in d.get("processes", [])}
    return intfs, pids


def stray_shells(claimed_pids: set[int]) -> list[tuple[int, int | None]]:
    """(PID, start time) of Mininet shells named like testbed nodes that no live run claims."""
    shells = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in claimed_pids and SHELL_RE.search(cmdline(int(entry))):
            shells.append((int(entry), proc_start_time(int(entry))))
    return shells


def stray_interfaces(claimed: set[str]) -> list[str]:
    """Root-namespace interfaces named like testbed nodes or netem probes, claimed by no live run."""
    return sorted(n for n in os.listdir("/sys/class/net") if INTF_RE.match(n) and n not in claimed)


def record_leftovers(data: dict) -> dict:
    """What of a dead run's record still exists: live processes (recorded or in its
    namespaces), namespaces still held, interfaces still there."""
    procs = [p["pid"] for p in data.get("processes", []) if is_same_process(p["pid"], p["start"])]
    in_ns = pids_in_netns(set(data.get("netns", [])))
    return {"processes": sorted(set(procs) | set(in_ns)),
            "netns": sorted({netns_inode(p) for p in in_ns} - {None}),
            "interfaces": [n for n in data.get("interfaces", []) if os.path.exists(f"/sys/class/net/{n}")]}


def leftovers(state_dir: Path | None = None) -> dict:
    """What `clean` would remove, listed and left in place: dead runs' records (with what of
    each still exists), stray Mininet shells (node names no live run claims) with their
    namespaces and every process in those, stray interfaces; and the live runs it spares."""
    dead, live = split_records(state_dir)
    intfs, pids = claims(live)
    shells = stray_shells(pids)
    ns = {netns_inode(p) for p, _ in shells} - {None}
    return {"dead_runs": [{"run_id": d.get("run_id"), "record": str(path), **record_leftovers(d)}
                          for path, d in dead],
            "live_runs": [{"run_id": d.get("run_id"), "owner_pid": d.get("owner_pid")} for d in live],
            "shells": [{"pid": p, "cmdline": cmdline(p)} for p, _ in shells],
            "netns": sorted(ns),
            "netns_processes": sorted(pids_in_netns(ns)),
            "interfaces": stray_interfaces(intfs)}


# ---------------------------------------------------------------- clean

def clean(sweep: bool = True, state_dir: Path | None = None) -> dict:
    """Remove what dead runs left. Live runs (owner still running) are left alone."""
    report = {"runs": [], "killed": [], "interfaces": []}
    dead, live = split_records(state_dir)
    live_claims_intf, live_claims_pid = claims(live)
    for path, data in dead:
        r = teardown_record(data)
        report["runs"].append(data.get("run_id"))
        report["killed"] += r["killed"]
        report["interfaces"] += r["interfaces"]
        path.unlink(missing_ok=True)
    if sweep:
        shells = stray_shells(live_claims_pid)
        ns = {netns_inode(p) for p, _ in shells}
        report["killed"] += kill_pids(shells + [(p, proc_start_time(p)) for p in pids_in_netns(ns)])
        report["interfaces"] += delete_interfaces(stray_interfaces(live_claims_intf))
    return report
