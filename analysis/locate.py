"""What a results folder is, and which results lie below a folder that is none.

`gdml sweep X --out DIR` writes DIR/<sweep>/ and `gdml run S --out DIR` writes
DIR/<scenario>/<run-id>/, so the folder a user names is often one or two levels above
what `gdml plot` can draw. `locate` accepts such a root when exactly one sweep or
folder of runs lies below it, and otherwise says what it found or looked for.
"""
from __future__ import annotations

from pathlib import Path

from analysis.rundata import is_run_dir

SEARCH_DEPTH = 3   # DIR/<sweep>, DIR/<scenario>/<run-id> and one level more
KINDS = {"sweep": "a sweep (table.csv)", "run": "a run (summary.json or manifest.json)",
         "runs": "a folder of runs"}


class LocateError(ValueError):
    pass


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:   # unreadable: nothing to find there
        return []


def results_kind(folder: Path) -> str | None:
    """'sweep', 'run', 'runs' (a folder with runs directly in it) or None."""
    if (folder / "table.csv").is_file():
        return "sweep"
    if is_run_dir(folder):
        return "run"
    if any(is_run_dir(p) for p in _subdirs(folder)):
        return "runs"
    return None


def find_results(root: Path, depth: int = SEARCH_DEPTH) -> list[tuple[Path, str]]:
    """(folder, kind) of every sweep, run or folder of runs below root, at most depth levels
    down, root itself excluded. A folder found is not searched further: a sweep's points
    and a scenario's runs belong to it."""
    found, level = [], _subdirs(root)
    for _ in range(depth):
        deeper = []
        for d in level:
            kind = results_kind(d)
            if kind:
                found.append((d, kind))
            else:
                deeper += _subdirs(d)
        level = deeper
    return sorted(found)


def not_results(folder: Path, depth: int = 0) -> str:
    """The error for a folder with nothing to plot, depth the levels searched below it."""
    if not folder.is_dir():
        return (f"{folder}: no such folder; give a sweep folder (results/<sweep>), a run "
                f"(results/<scenario>/<run-id>) or a scenario's runs (results/<scenario>)")
    below = f", here or up to {depth} levels below" if depth else ""
    return (f"{folder}: neither {', nor '.join(KINDS.values())}{below}; "
            f"run `gdml run` or `gdml sweep` first")


def locate(folder, depth: int = SEARCH_DEPTH) -> tuple[Path, str, bool]:
    """(folder to plot, its kind, found below the folder given?). Raises LocateError when
    the folder is missing, or is none of the kinds and holds none or several below it."""
    folder = Path(folder)
    kind = results_kind(folder) if folder.is_dir() else None
    if kind:
        return folder, kind, False
    found = find_results(folder, depth) if folder.is_dir() else []
    if len(found) == 1:
        return found[0][0], found[0][1], True
    if not found:
        raise LocateError(not_results(folder, depth))
    lines = [f"{folder}: {len(found)} results below it, not one:"]
    lines += [f"  {p}  {kind}" for p, kind in found]
    lines += ["pick one: gdml plot PATH"]
    raise LocateError("\n".join(lines))
