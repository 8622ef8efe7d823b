"""`make demo`: the mission in about three minutes.

Runs scenarios/demo.yaml (a sweep: ps against geo-ina on three datacenters with a narrow
WAN and stragglers, 3 paired repetitions) into a fresh results folder, draws its report,
then prints the headline table (analysis/headline.py) and the path of the speedup figure.
`quick=True` runs the sweep's quick variant (one repetition, 3 iterations): what the test
suite runs.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

from analysis.headline import format_headline, headline_rows
from analysis.report import make_report

DEMO = Path(__file__).resolve().parent.parent / "scenarios" / "demo.yaml"


def fresh_folder(root: Path, now=None) -> Path:
    """results/demo-YYYYmmdd-HHMMSS: a demo never refuses because an earlier one exists."""
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return Path(root) / f"demo-{stamp}"


def headline_figure(folder: Path) -> list[Path]:
    """The speedup bars the demo's sweep file asks for first (PDF and PNG)."""
    return sorted((folder / "figures").glob("speedup_by_*.*"))


def main(out: str | None = None, *, quick: bool = False, prefix: str = "", runner=None) -> int:
    from testbed import sweep
    root = fresh_folder(Path(out or "results"))
    status = sweep.main(str(DEMO), quick=quick, out=str(root), prefix=prefix, runner=runner)
    folders = [p.parent for p in root.glob("*/table.csv")]
    if not folders:
        print(f"demo: no sweep table under {root}; see the messages above")
        return status or 1
    folder = folders[0]
    report = make_report(folder)
    base, rows = headline_rows(folder)
    print()
    print(format_headline(base, rows))
    print()
    print(f"report: {report}")
    for f in headline_figure(folder):
        print(f"figure: {f}")
    return status
