"""`gdml merge SWEEP SOURCE... --out DIR`: one table of a sweep from tables run apart.

Why: repetitions of one sweep run on different days or machines (`gdml sweep --repetitions
1`), or new repetitions beside a published table (docs/figures/<sweep>/table.csv, which
keeps no run folders), belong in one table so that `gdml plot` pairs and averages them.

What it guarantees, so that a merged table is the table one whole run would have written:
- every row is a point of SWEEP (the file as it is now): its point id, parameters and seed
  must be the plan's, else the sources come from a changed sweep and nothing is written;
- a point in two sources is taken once: the `ok` row over a failed one; two `ok` rows of one
  point are refused (the user decides which run stands);
- a row's run folder is kept when it exists (as an absolute path: the report finds its
  events for the figures that need them); a published table's rows have none, and the
  figures drawn from runs (goodput over time, CDFs) then use the runs that exist.
Writes DIR/table.csv, DIR/table.sqlite, DIR/sweep.yaml (a copy of SWEEP) and
DIR/merged_from.txt (the sources, one per line).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from analysis.report import _parse_cell, load_table
from testbed.sweep import BASE_COLUMNS, TAIL_COLUMNS, _cell, plan, write_csv, write_sqlite
from testbed.sweep_model import load_sweep


class MergeError(ValueError):
    pass


def _as_read(v):
    """A plan value as it reads back from a table cell (6 significant digits, JSON)."""
    c = _cell(v)
    return None if c is None else _parse_cell(c if isinstance(c, str) else str(c))


def _source_rows(src: Path) -> list[dict]:
    table = src / "table.csv"
    if not table.is_file():
        raise MergeError(f"{src}: no table.csv here; give a sweep's results folder "
                         f"(results/<sweep>) or a published table's folder")
    rows = load_table(table)
    for r in rows:
        rd = r.get("run_dir")
        if rd:
            p = Path(rd) if Path(rd).is_absolute() else src / rd
            r["run_dir"] = str(p.resolve()) if p.exists() else None
    return rows


def check_row(row: dict, expected: dict, src: Path) -> None:
    """The row is the plan's point: same parameters and seed (else the sweep changed)."""
    pid = row.get("point_id")
    p = expected.get(pid)
    if p is None:
        raise MergeError(f"{src}: point {pid} is not a point of the sweep file as it is now; "
                         f"merge tables of the same sweep file")
    want = {**{k: _as_read(v) for k, v in p.params.items()}, "seed": p.seed,
            "repetition": p.repetition}
    got = {k: row.get(k) for k in want}
    if got != want:
        diff = ", ".join(f"{k} {got[k]!r} (now {want[k]!r})" for k in want if got[k] != want[k])
        raise MergeError(f"{src}: point {pid} has {diff}: the sweep changed since that table "
                         f"was written; merge tables of the same sweep file")


def merge_rows(sources: list[tuple[Path, list[dict]]], expected: dict) -> list[dict]:
    """One row per point over all sources (checked against the plan); point order."""
    chosen: dict[str, tuple[Path, dict]] = {}
    for src, rows in sources:
        for r in rows:
            check_row(r, expected, src)
            pid = r["point_id"]
            if pid in chosen:
                first_src, first = chosen[pid]
                if first.get("status") == "ok" and r.get("status") == "ok":
                    raise MergeError(f"point {pid} is ok in both {first_src} and {src}: keep one "
                                     f"(remove the row, or leave that source out)")
                if r.get("status") != "ok":
                    continue
            chosen[pid] = (src, r)
    return [r for _, r in sorted(chosen.values(), key=lambda sr: expected[sr[1]["point_id"]].index)]


def columns(axes: list[str], rows: list[dict]) -> list[str]:
    cols = list(BASE_COLUMNS) + list(axes)
    for r in rows:
        cols += [c for c in r if c not in cols and c not in TAIL_COLUMNS]
    return cols + list(TAIL_COLUMNS)


def merge(sweep_file: str | Path, sources: list[str | Path], out: str | Path) -> Path:
    if not sources:
        raise MergeError("no sources: give the folders whose tables to merge")
    sw = load_sweep(sweep_file)
    expected = {p.point_id: p for p in plan(sw)}
    out = Path(out)
    srcs = [Path(s).resolve() for s in sources]
    if out.resolve() in srcs:
        raise MergeError(f"{out} is also a source: write the merged table to a new folder")
    rows = merge_rows([(s, _source_rows(s)) for s in srcs], expected)
    cols = columns(list(sw.axes), rows)
    full = [{c: _cell(r.get(c)) for c in cols} for r in rows]
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "table.csv", cols, full)
    write_sqlite(out / "table.sqlite", cols, full)
    shutil.copyfile(sw.source, out / "sweep.yaml")
    (out / "merged_from.txt").write_text("".join(f"{s}\n" for s in srcs))
    return out


def main(sweep_file: str, sources: list[str], out: str) -> int:
    folder = merge(sweep_file, sources, out)
    rows = load_table(folder / "table.csv")
    reps = sorted({r["repetition"] for r in rows})
    ok = sum(r.get("status") == "ok" for r in rows)
    print(f"merged {len(rows)} points ({ok} ok; repetitions {', '.join(map(str, reps))}) of "
          f"{len(plan(load_sweep(sweep_file)))} from {len(sources)} tables: {folder / 'table.csv'}")
    print(f"figures: gdml plot {folder}")
    return 0
