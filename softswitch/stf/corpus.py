"""A folder of STF tests: find them, run them one by one with progress, sum up by cause.

A test is a `NAME.stf` with `NAME.p4` beside it (p4c's `testdata/p4_16_samples` layout). Its
name in reports and expected-failure lists is the program's file name (`NAME.p4`).
"""
from __future__ import annotations

import fnmatch
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from softswitch.stf.runner import Outcome, run_test


@dataclass(frozen=True)
class TestCase:
    name: str     # NAME.p4
    stf: Path
    p4: Path


def discover(paths, pattern: str = "*.stf") -> list[TestCase]:
    """Every .stf under the given folders (not recursive) matching `pattern`, plus .stf files
    named directly; sorted by name. Raises FileNotFoundError naming a path that does not exist."""
    found = {}
    for p in map(Path, paths):
        if p.is_dir():
            files = [f for f in p.iterdir() if f.suffix == ".stf" and fnmatch.fnmatch(f.name, pattern)]
        elif p.is_file() and p.suffix == ".stf":
            files = [p]
        else:
            raise FileNotFoundError(f"{p}: not a folder or an .stf file")
        for f in files:
            p4 = f.with_suffix(".p4")
            found[p4.name] = TestCase(p4.name, f, p4)
    return [found[k] for k in sorted(found)]


class _Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise _Timeout()


def run_one(case: TestCase, make_target, timeout: float) -> Outcome:
    """One test with a time limit; a crash of the runner itself is reported, never raised."""
    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return run_test(case.stf, case.p4, make_target())
    except _Timeout:
        return Outcome("fail", f"timeout ({timeout:.0f} s)", f"{case.name} did not finish in {timeout:.0f} s",
                       time.monotonic() - start)
    except Exception as e:   # a bug of the runner: report it with its traceback, keep going
        return Outcome("error", f"runner crashed: {type(e).__name__}", traceback.format_exc(),
                       time.monotonic() - start)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_all(cases, make_target, timeout: float = 120.0, progress=sys.stderr, verbose: bool = False) -> dict:
    """name -> Outcome, printing one progress line per test."""
    results = {}
    width = len(str(len(cases)))
    for i, case in enumerate(cases, 1):
        out = run_one(case, make_target, timeout)
        results[case.name] = out
        if progress is not None:
            print(f"[{i:>{width}}/{len(cases)}] {case.name}: {out.line()} ({out.seconds:.1f} s)",
                  file=progress, flush=True)
            if verbose and out.status != "pass" and out.detail:
                print("    " + out.detail.replace("\n", "\n    "), file=progress, flush=True)
    return results


def summary(results: dict, target: str) -> str:
    total = len(results)
    counts = Counter(o.status for o in results.values())
    passed = counts["pass"]
    loaded = total - counts["refused"] - counts["unsupported"] - counts["error"]
    pct = lambda n, d: f"{100 * n / d:.1f}%" if d else "n/a"   # noqa: E731
    lines = [f"{target}: {passed} of {total} tests pass ({pct(passed, total)}); "
             f"{passed} of the {loaded} that load and run pass ({pct(passed, loaded)})",
             "  " + ", ".join(f"{s} {counts[s]}" for s in ("pass", "fail", "refused", "unsupported", "error"))]
    causes = Counter((o.status, o.cause) for o in results.values() if o.status != "pass")
    if causes:
        lines.append("not passing, by cause:")
        for (status, cause), n in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:4d}  {status}: {cause}")
    return "\n".join(lines)
