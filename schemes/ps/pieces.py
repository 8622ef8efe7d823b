"""How a ps worker cuts its gradient into frames (pure): per shard, dense chunks of at
most chunk_values values and, with push touched_rows, one piece per row-sparse block part.

A row block (offset, rows, width) is `workers.workload.row_blocks`'s: values
offset .. offset + rows x width - 1, row by row. Every worker computes the same pieces from
the same shard bounds and blocks, so the server's frame j is piece j of every child.
"""
from __future__ import annotations

from dataclasses import dataclass

from workers.framing import chunk_bounds

PUSH_MODES = ("dense", "touched_rows")


@dataclass(frozen=True)
class Dense:
    """Values lo .. hi - 1 as one DATA frame."""
    lo: int
    hi: int


@dataclass(frozen=True)
class Rows:
    """Rows r0 .. r1 - 1 of the block at `offset` (rows of `width` values) as one ROWS frame."""
    offset: int
    width: int
    r0: int
    r1: int

    @property
    def lo(self) -> int:
        return self.offset + self.r0 * self.width

    @property
    def hi(self) -> int:
        return self.offset + self.r1 * self.width


def check_blocks(blocks, size: int) -> list[tuple[int, int, int]]:
    """The blocks as (offset, rows, width) tuples, ordered and inside 0..size."""
    out = sorted(tuple(int(x) for x in b) for b in blocks)
    end = 0
    for off, rows, width in out:
        if off < end or rows < 1 or width < 1 or off + rows * width > size:
            raise ValueError(f"ps: row block (offset {off}, {rows} rows of {width}) overlaps another "
                             f"or lies outside the {size} values: the plan sized it for another "
                             f"workload; re-plan from this scenario")
        end = off + rows * width
    return out


def align_bounds(bounds: list[tuple[int, int]], blocks) -> list[tuple[int, int]]:
    """Shard bounds moved so that no row of a block straddles two shards: a bound inside a
    row moves down to the row's start (a shard may come out empty; it still exchanges one
    empty frame per iteration, as a dense shard of no values would)."""
    cuts = [lo for lo, _ in bounds[1:]]
    for i, c in enumerate(cuts):
        for off, rows, width in blocks:
            if off < c < off + rows * width:
                cuts[i] = off + (c - off) // width * width
    edges = [bounds[0][0]] + cuts + [bounds[-1][1]]
    return list(zip(edges, edges[1:]))


def shard_pieces(lo: int, hi: int, blocks, chunk_values: int) -> list[Dense | Rows]:
    """The pieces of shard lo .. hi (bounds aligned to rows): dense stretches cut into
    chunks, and one Rows piece per part of a block inside the shard. At least one piece."""
    out: list[Dense | Rows] = []
    pos = lo
    for off, rows, width in blocks:
        a, b = max(lo, off), min(hi, off + rows * width)
        if a >= b:
            continue
        if (a - off) % width or (b - off) % width:
            raise ValueError(f"ps: shard {lo}..{hi} cuts a row of the block at {off}; align the "
                             f"bounds first (align_bounds)")
        if pos < a:
            out += [Dense(x, y) for x, y in chunk_bounds(pos, a, chunk_values)]
        out.append(Rows(off, width, (a - off) // width, (b - off) // width))
        pos = b
    if pos < hi or not out:
        out += [Dense(x, y) for x, y in chunk_bounds(pos, hi, chunk_values)]
    return out
