"""Where a native switch process spends its CPU, from Linux `perf` samples.

cProfile sees only Python; the compiled data path (and BMv2) run in C and in the kernel.
`perf record -p PID` samples the process whatever runs, and the report groups the samples
by where the code lives: the generated pipeline and packet loop (the cached
`pipeline-<hash>.so`), the kernel (socket receive and send, veth, softirq work done in the
process's context), the Python interpreter (the control rounds), libc and the rest.

    rec = start(pid, seconds, path)     # None when perf is not installed
    ...                                 # the measured window
    print(summary(finish(rec), top=12))
"""
from __future__ import annotations

import os
import shutil
import subprocess

GROUPS = (                              # (label, test on a dso name), first match wins
    ("pipeline + packet loop (generated C)", lambda d: d.startswith("pipeline-")),
    ("kernel (sockets, veth, softirq)", lambda d: d.startswith("[kernel")),
    ("Python interpreter (control rounds)", lambda d: d.startswith("python") or d.startswith("libpython")),
    ("libc", lambda d: d.startswith("libc.") or d.startswith("libc-")),
)


def start(pid: int, seconds: float, path: str) -> subprocess.Popen | None:
    """Sample `pid` for `seconds` into `path`; None when perf is missing."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    return subprocess.Popen([perf, "record", "-q", "-F", "999", "-p", str(pid), "-o", path,
                             "--", "sleep", f"{seconds:g}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finish(rec: subprocess.Popen | None, path: str, timeout: float = 60) -> list[tuple[float, str, str]]:
    """The samples' shares as [(percent, dso, symbol)], largest first; [] without perf
    or samples."""
    if rec is None:
        return []
    rec.communicate(timeout=timeout)
    r = subprocess.run([shutil.which("perf") or "perf", "report", "-i", path, "--no-children",
                        "--sort", "dso,sym", "--stdio", "-q"], capture_output=True, text=True,
                       timeout=timeout)
    try:
        os.unlink(path)                 # megabytes of samples: the summary is what is kept
    except OSError:
        pass
    return parse_report(r.stdout)


def parse_report(text: str) -> list[tuple[float, str, str]]:
    """`perf report --sort dso,sym --stdio -q` lines: "  12.34%  dso  [.] symbol"."""
    rows = []
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].endswith("%"):
            continue
        try:
            share = float(parts[0][:-1])
        except ValueError:
            continue
        sym = parts[2].split("] ", 1)[-1].strip() if "] " in parts[2] else parts[2].strip()
        rows.append((share, parts[1], sym))
    return sorted(rows, key=lambda r: -r[0])


def group_shares(rows: list[tuple[float, str, str]]) -> dict[str, float]:
    """Percent of samples per GROUPS label, the rest under "other"."""
    out = {label: 0.0 for label, _ in GROUPS}
    out["other"] = 0.0
    for share, dso, _ in rows:
        label = next((lab for lab, test in GROUPS if test(dso)), "other")
        out[label] += share
    return out


def summary(rows: list[tuple[float, str, str]], top: int = 12) -> str:
    if not rows:
        return "no perf samples (perf not installed, or not permitted: run as root)"
    lines = [f"  {share:5.1f}%  {label}" for label, share in group_shares(rows).items() if share >= 0.05]
    lines.append(f"  top {top} symbols:")
    lines += [f"  {share:5.1f}%  {sym}  ({dso})" for share, dso, sym in rows[:top]]
    return "\n".join(lines)
