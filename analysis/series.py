"""Which series a sweep's table row belongs to: its label, or else its scheme.

A sweep may name its zipped rows with a `label` axis (testbed/sweep_model.py), e.g. two
variants of one scheme that differ only in scheme_options; every figure, legend, speedup
baseline and table of the report then keys on the label. Sweeps without labels key on the
scheme, as before. The report adds the key to each row as the column SERIES.
"""
from __future__ import annotations

from typing import Iterable

from testbed.sweep_model import LABEL_AXIS

SERIES = "series"


def series_of(row: dict) -> str:
    """The row's label when it has one, else its scheme (str: the table may hold anything)."""
    label = row.get(LABEL_AXIS)
    return str(label if label not in (None, "") else row.get("scheme"))


def with_series(rows: Iterable[dict]) -> list[dict]:
    """Copies of the rows with SERIES set."""
    return [dict(r, **{SERIES: series_of(r)}) for r in rows]


def series_schemes(rows: Iterable[dict]) -> list[tuple[str, str]]:
    """(series, its scheme) once each, in the rows' order (a sweep's table: the file's)."""
    seen: dict[str, str] = {}
    for r in rows:
        seen.setdefault(series_of(r), str(r.get("scheme")))
    return list(seen.items())
