"""`gdml doctor`: what this machine supports and what a run will use.

Probes gather facts (commands, PATH, imports, /proc); pure check functions turn facts into
records; `main` prints one line per record as it is made:

    ok    what  (fix: command)
    warn  ...
    FAIL  ...

and exits 1 only when a check FAILs. Nothing on the machine changes: each qdisc is tried
in a scratch network namespace that ends with its probe (`unshare --net`), leftovers of
earlier runs are listed (testbed.cleanup's discovery), not removed. The decisions a run
makes come from the run's own code: the link-emulation mode from linkemu.choose_mode, the
switch backend from backends.choose_backend, the load's effect from dilation.load_factor.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from testbed import backends, cleanup, results
from testbed.dilation import load_factor
from topologies import linkemu

OK, WARN, FAIL = "ok", "warn", "FAIL"
REPO = results.REPO
SETUP = "make setup"   # run in the repository: installs Debian's packages and the venv

# qdisc -> (arguments for `tc qdisc add dev lo root`, needed by runs?, what it is for)
QDISCS = {
    "htb": ("htb default 1", True, "every link's bandwidth"),
    "bfifo": ("bfifo limit 15140", True, "the byte-sized queue in front of every link"),
    "tbf": ("tbf rate 1mbit burst 32kbit latency 50ms", False,
            "Mininet's TCLink with use_tbf; the testbed itself does not use it"),
    "netem": ("netem delay 1ms", False, "delay, jitter and loss in the kernel"),
}
# tool -> (version command, needed by runs?, what it is for, Debian package)
TOOLS = {
    "mnexec": (["mnexec", "-v"], True, "starting processes in Mininet hosts", "mininet"),
    "tc": (["tc", "-V"], True, "link emulation", "iproute2"),
    "ip": (["ip", "-V"], True, "interfaces and namespaces", "iproute2"),
    "ping": (["ping", "-V"], True, "the health check before every workload", "iputils-ping"),
    "ethtool": (["ethtool", "--version"], False,
                "turning hosts' offloads off (without it they stay on)", "ethtool"),
    "iperf3": (["iperf3", "--version"], False, "tests/test_fidelity.py", "iperf3"),
    "tcpdump": (["tcpdump", "--version"], False, "the softswitch's port tests", "tcpdump"),
    "gcc": (["gcc", "--version"], False, "the softswitch's compiled data path (without it every "
            "switch runs on the Python path, about 10x fewer packets per second)", "gcc libc6-dev"),
}
BMV2_TOOLS = {"simple_switch": ["simple_switch", "--version"],
              "simple_switch_CLI": None,     # a Python client without --version
              "p4c": ["p4c", "--version"]}
# what may exist once only: package name -> its directory under a sys.path entry
MPL_PARTS = {"matplotlib": "matplotlib", "mpl_toolkits.mplot3d": "mpl_toolkits/mplot3d"}
MAX_LISTED = 8


@dataclass(frozen=True)
class Check:
    status: str                    # ok, warn or FAIL
    what: str
    fix: str | None = None
    facts: dict = field(default_factory=dict)

    def line(self) -> str:
        return f"{self.status:<4}  {self.what}" + (f"  (fix: {self.fix})" if self.fix else "")


@dataclass(frozen=True)
class Qdisc:
    """One qdisc probe: ok None when it could not be tried (not root)."""
    ok: bool | None
    error: str = ""
    module: bool | None = None     # `modprobe -n sch_<kind>` finds a loadable module


# ---------------------------------------------------------------- checks (pure)

def check_root(euid: int) -> Check:
    if euid == 0:
        return Check(OK, "root: runs can create namespaces, veths and qdiscs", facts={"euid": 0})
    return Check(WARN, "not root: run, sweep, clean and bench topology|schemes|ina need root "
                 "(validate, predict, plot, show do not); qdiscs and the link mode are not probed",
                 "sudo gdml doctor", {"euid": euid})


def check_qdisc(kind: str, q: Qdisc) -> Check:
    _, needed, purpose = QDISCS[kind]
    facts = {"qdisc": kind, "available": q.ok, "module": q.module}
    if q.ok:
        return Check(OK, f"qdisc {kind}: available ({purpose})", facts=facts)
    if q.ok is None:
        return Check(WARN, f"qdisc {kind}: not probed (needs root)", "sudo gdml doctor", facts)
    fix = (f"modprobe sch_{kind}" if q.module else
           f"modprobe sch_{kind} on a kernel that ships it (CONFIG_NET_SCH_{kind.upper()}; none "
           f"found here); in a container, on the host")
    why = f" ({q.error})" if q.error else ""
    if needed:
        return Check(FAIL, f"qdisc {kind}: missing{why}; runs need it for {purpose}", fix, facts)
    if kind == "netem":
        return Check(WARN, f"qdisc netem: missing{why}; runs apply delay, jitter and loss in the "
                     f"softswitch instead (host links: round trip exact, one way not), or in "
                     f"relay processes on the links with BMv2", fix, facts)
    return Check(WARN, f"qdisc {kind}: missing{why} ({purpose})", fix, facts)


def check_link_mode(netem: bool | None) -> Check:
    """The mode a run with `link_emulation.mode: auto` (the default) chooses."""
    if netem is None:
        return Check(WARN, "link emulation for runs: unknown (netem not probed without root)",
                     "sudo gdml doctor")
    mode, reason = linkemu.choose_mode("auto", netem)
    return Check(OK, f"link emulation for runs: {mode} ({reason})", facts={"mode": mode})


def check_mininet(import_error: str | None, version: str | None) -> Check:
    if import_error:
        return Check(FAIL, f"Mininet: cannot import it ({import_error})", SETUP)
    return Check(OK, f"Mininet: importable ({version or 'version unknown'})",
                 facts={"version": version})


def check_tool(name: str, path: str | None, version: str | None) -> Check:
    _, needed, purpose, package = TOOLS[name]
    if path:
        return Check(OK, f"{name}: {path}" + (f" ({version})" if version else ""),
                     facts={"path": path, "version": version})
    status = FAIL if needed else WARN
    return Check(status, f"{name}: not on PATH ({'needed for' if needed else 'used by'} {purpose})",
                 f"apt-get install {package}", {"path": None})


def check_bmv2_tool(name: str, path: str | None, version: str | None) -> Check:
    if path:
        return Check(OK, f"BMv2 {name}: {path}" + (f" ({version})" if version else ""),
                     facts={"path": path, "version": version})
    return Check(OK, f"BMv2 {name}: not installed (not needed: the softswitch is the default "
                 f"backend)", facts={"path": None})


def check_backend(which: Callable[[str], str | None]) -> Check:
    backend, reason = backends.choose_backend("auto", which)
    return Check(OK, f"switch backend for runs: {backend} ({reason})", facts={"backend": backend})


def check_cpu(cores: int | None, loadavg: tuple[float, float, float]) -> Check:
    cores = cores or 1
    f = load_factor(loadavg[0], cores)
    load = " ".join(f"{x:.2f}" for x in loadavg)
    facts = {"cores": cores, "loadavg": list(loadavg), "time_dilation_factor": f}
    if f <= 1:
        return Check(OK, f"CPU: {cores} cores, load {load}: the scenarios' time dilation is "
                     f"enough (load factor 1)", facts=facts)
    return Check(WARN, f"CPU: {cores} cores, load {load}: other work slows the software switches "
                 f"{f:.1f}x; runs now need time_dilation x {f:.1f} for the same fidelity",
                 f"wait for the load to fall, or --set time_dilation=<s x {f:.1f}>", facts)


def _listed(items) -> str:
    items = [str(i) for i in items]
    more = f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else ""
    return ", ".join(items[:MAX_LISTED]) + more


def check_leftovers(lo: dict) -> list[Check]:
    """lo: testbed.cleanup.leftovers(). One record per kind of leftover."""
    out = []
    for run in lo.get("dead_runs", []):
        still = [f"{len(run[k])} {k}" for k in ("processes", "netns", "interfaces") if run.get(k)]
        out.append(Check(WARN, f"leftover run {run['run_id']}: its owner is dead, record "
                         f"{run['record']}" + (f", still {', '.join(still)}" if still else ""),
                         "gdml clean", {"dead_run": run}))
    if lo.get("shells"):
        shells = [f"{s['pid']} {s['cmdline'].split()[-1]}" for s in lo["shells"]]
        out.append(Check(WARN, f"leftover Mininet shells: {_listed(shells)}; they hold "
                         f"{len(lo.get('netns', []))} network namespace(s) with "
                         f"{len(lo.get('netns_processes', []))} process(es)", "gdml clean",
                         {"shells": lo["shells"], "netns": lo.get("netns", []),
                          "netns_processes": lo.get("netns_processes", [])}))
    if lo.get("interfaces"):
        out.append(Check(WARN, f"leftover interfaces: {_listed(lo['interfaces'])}", "gdml clean",
                         {"interfaces": lo["interfaces"]}))
    for run in lo.get("live_runs", []):
        out.append(Check(OK, f"run in progress: {run['run_id']} (pid {run['owner_pid']}); "
                         f"it shares the CPUs with yours", facts={"live_run": run}))
    if not out:
        out.append(Check(OK, "leftovers: none (no dead run, stray Mininet shell, namespace or "
                         "interface)"))
    return out


def check_packages(versions: dict[str, str | None], python: str) -> Check:
    missing = [n for n, v in versions.items() if v is None]
    listed = ", ".join(f"{n} {v}" for n, v in versions.items() if v)
    if missing:
        return Check(FAIL, f"python {python}: missing {', '.join(missing)} (have {listed})", SETUP,
                     {"versions": versions})
    return Check(OK, f"python {python}: {listed}", facts={"versions": versions})


def find_copies(subdir: str, paths: list[str]) -> list[str]:
    """The sys.path entries holding the directory `subdir` (e.g. mpl_toolkits/mplot3d: a
    namespace package's parts can come from several entries), each once, in path order."""
    out = []
    for p in paths:
        entry = str(Path(p or ".").resolve())
        if (Path(entry) / subdir).is_dir() and entry not in out:
            out.append(entry)
    return out


def check_matplotlib_mix(copies: dict[str, list[str]], system_site: bool) -> Check:
    """copies: package -> sys.path entries holding it (find_copies). Two matplotlibs, or
    mpl_toolkits.mplot3d from another installation, make every figure warn 'Unable to import
    Axes3D ... multiple versions of Matplotlib'."""
    fix = f"cd {REPO} && rm -rf .venv && {SETUP}"
    mixed = {k: v for k, v in copies.items() if len(v) > 1}
    if mixed:
        what = "; ".join(f"{k} in {len(v)} places ({', '.join(v)})" for k, v in mixed.items())
        return Check(WARN, f"matplotlib mix: {what}: figures warn about multiple versions of "
                     f"Matplotlib", fix, {"copies": copies})
    if system_site:
        return Check(WARN, "matplotlib mix: the venv sees Debian's site-packages, so a Debian "
                     "matplotlib or numpy would shadow or mix with the venv's", fix,
                     {"copies": copies, "system_site_packages": True})
    where = ", ".join(f"{k} {v[0] if v else 'absent'}" for k, v in copies.items())
    return Check(OK, f"matplotlib mix: one installation ({where})", facts={"copies": copies})


# ---------------------------------------------------------------- probes (side effects)

def _run(cmd: list[str], timeout: float = 10) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return p.returncode, (p.stdout + p.stderr).strip()


def _version(cmd: list[str] | None, run) -> str | None:
    if not cmd:
        return None
    rc, out = run(cmd)
    first = out.splitlines()[0].strip() if out else ""
    return first or None


def _import_error(module: str) -> str | None:
    try:
        importlib.import_module(module)
    except Exception as e:   # any failure to import is the answer, not a crash
        return f"{type(e).__name__}: {e}"
    return None


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _system_site_packages() -> bool:
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    try:
        lines = cfg.read_text().splitlines()
    except OSError:
        return False   # not a venv: nothing to say about its configuration
    return any(ln.replace(" ", "").lower() == "include-system-site-packages=true" for ln in lines)


@dataclass
class Probes:
    """Everything the doctor asks the machine; tests pass their own."""
    run: Callable[[list[str]], tuple[int, str]] = _run
    which: Callable[[str], str | None] = shutil.which
    euid: Callable[[], int] = os.geteuid
    cpu_count: Callable[[], int | None] = os.cpu_count
    loadavg: Callable[[], tuple] = os.getloadavg
    import_error: Callable[[str], str | None] = _import_error
    dist_version: Callable[[str], str | None] = _dist_version
    leftovers: Callable[[], dict] = cleanup.leftovers
    sys_path: list[str] = field(default_factory=lambda: list(sys.path))
    system_site: Callable[[], bool] = _system_site_packages

    def qdisc(self, kind: str) -> Qdisc:
        """Add the qdisc to lo in a namespace of its own (gone when tc exits)."""
        if self.euid() != 0:
            return Qdisc(None)
        rc, out = self.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root",
                            *QDISCS[kind][0].split()])
        if rc == 0:
            return Qdisc(True)
        mod_rc, _ = self.run(["modprobe", "-n", f"sch_{kind}"])
        return Qdisc(False, out.splitlines()[-1] if out else f"exit {rc}", mod_rc == 0)


def gather(probes: Probes | None = None) -> Iterator[Check]:
    """Every check, in the order printed; each is yielded as soon as it is made."""
    pr = probes or Probes()
    yield check_root(pr.euid())
    qd = {kind: pr.qdisc(kind) for kind in QDISCS}
    for kind, q in qd.items():
        yield check_qdisc(kind, q)
    yield check_link_mode(qd["netem"].ok)
    yield check_mininet(pr.import_error("mininet.net"), pr.dist_version("mininet"))
    for name, (cmd, *_rest) in TOOLS.items():
        path = pr.which(name)
        yield check_tool(name, path, _version(cmd, pr.run) if path else None)
    for name, cmd in BMV2_TOOLS.items():
        path = pr.which(name)
        yield check_bmv2_tool(name, path, _version(cmd, pr.run) if path else None)
    yield check_backend(pr.which)
    yield check_cpu(pr.cpu_count(), tuple(pr.loadavg()))
    yield from check_leftovers(pr.leftovers())
    yield check_packages({n: pr.dist_version(n) for n in results.PACKAGES}, platform.python_version())
    yield check_matplotlib_mix({name: find_copies(d, pr.sys_path) for name, d in MPL_PARTS.items()},
                               pr.system_site())


# ---------------------------------------------------------------- printer

def main(as_json: bool = False, probes: Probes | None = None, out=print) -> int:
    """Print the checks (lines, or JSON records with --json); 1 if any FAILed, else 0."""
    checks = []
    for c in gather(probes):
        checks.append(c)
        if not as_json:
            out(c.line())
    if as_json:
        out(json.dumps([asdict(c) for c in checks], indent=1, default=str))
    failed = sum(c.status == FAIL for c in checks)
    if not as_json:
        warned = sum(c.status == WARN for c in checks)
        out(f"doctor: {len(checks)} checks, {failed} failed, {warned} warnings")
    return 1 if failed else 0
