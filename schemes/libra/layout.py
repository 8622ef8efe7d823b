"""Parameter orchestration of scheme libra (pure): where every value of the flat gradient
goes, the switch or the parameter server, and at which position.

The switch vector is [hot row 0's d values, hot row 1's, ..., the dense part], the hot rows
in the order `order_hot` chose; it is cut into packets of k values by the INA client, so a
hot row's (packet, offset) is fixed by its position: the same map on every worker, built
from the same hot set (schemes/libra/hot.py), never exchanged. The dense part (the values
outside the row block: the CTR model's MLP) is updated by every worker every iteration, so
it always goes through the switch.

The cold block is the embedding table with the hot rows set to +0.0: the parameter server
(push touched_rows) sends only rows holding a value other than +0.0, so a hot row never
reaches it, and it returns its sums for the cold rows any worker touched (zeros elsewhere).

A dense workload has no row block: the switch vector is the whole gradient and there is no
cold block (libra is then ina, as the paper says of dense models).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

ORDERS = ("frequency", "cooccurrence")


def cooccurrence_order(hot: np.ndarray, samples: np.ndarray, per_packet: int) -> np.ndarray:
    """The hot ids (given most frequent first) regrouped so that ids which occur in the same
    samples share a packet: each packet starts with the most frequent id not placed yet and
    is filled greedily with the unplaced id that co-occurs most often with those already in
    it (ties: the more frequent, then the smaller id); when none co-occurs, with the next
    most frequent. samples: (n, F) ids of the samples the frequencies were counted on."""
    if per_packet < 1:
        raise ValueError(f"rows per packet must be >= 1 (got {per_packet})")
    rank = {int(i): r for r, i in enumerate(hot)}
    together: dict[int, Counter] = {i: Counter() for i in rank}
    for row in np.asarray(samples).reshape(len(samples), -1) if len(samples) else []:
        mine = sorted({int(i) for i in row if int(i) in rank})
        for a in mine:
            for b in mine:
                if a != b:
                    together[a][b] += 1
    placed: set[int] = set()
    order: list[int] = []
    cursor = 0   # next most frequent candidate in `hot`

    def next_frequent() -> int:
        nonlocal cursor
        while int(hot[cursor]) in placed:
            cursor += 1
        return int(hot[cursor])

    while len(order) < len(hot):
        group = [next_frequent()]
        placed.add(group[0])
        while len(group) < per_packet and len(order) + len(group) < len(hot):
            score: Counter = Counter()
            for g in group:
                for b, c in together[g].items():
                    if b not in placed:
                        score[b] += c
            pick = min(score, key=lambda b: (-score[b], rank[b], b)) if score else next_frequent()
            group.append(pick)
            placed.add(pick)
        order += group
    return np.array(order, dtype=np.int64)


@dataclass(frozen=True)
class Layout:
    """The map of one job's flat gradient onto the switch vector and the cold block.

    size   values of the flat gradient
    block  (offset, rows, width) of the row-sparse block, or None (dense workload)
    hot    ids of the hot rows, in switch-vector order"""
    size: int
    block: tuple[int, int, int] | None
    hot: np.ndarray

    def __post_init__(self):
        hot = np.asarray(self.hot, dtype=np.int64)
        object.__setattr__(self, "hot", hot)
        if self.block is None:
            if hot.size:
                raise ValueError("hot rows without a row block: a dense workload has no rows")
            object.__setattr__(self, "_index", np.arange(self.size))
            return
        off, rows, width = self.block
        if off < 0 or off + rows * width > self.size:
            raise ValueError(f"row block {self.block} outside the {self.size} values")
        if hot.size and (hot.min() < 0 or hot.max() >= rows or len(np.unique(hot)) != hot.size):
            raise ValueError(f"hot rows must be distinct ids in 0..{rows - 1}")
        rows_idx = (off + hot[:, None] * width + np.arange(width)).reshape(-1)
        outside = np.r_[np.arange(0, off), np.arange(off + rows * width, self.size)]
        object.__setattr__(self, "_index", np.concatenate([rows_idx, outside]).astype(np.int64))

    @property
    def switch_values(self) -> int:
        return int(self._index.size)

    @property
    def hot_values(self) -> int:
        return 0 if self.block is None else int(self.hot.size * self.block[2])

    def position(self, row: int) -> int:
        """First position of hot row `row` in the switch vector."""
        hits = np.flatnonzero(self.hot == row)
        if not hits.size:
            raise KeyError(f"row {row} is not hot")
        return int(hits[0]) * self.block[2]

    def switch_vector(self, grad: np.ndarray) -> np.ndarray:
        """The values that go through the switch: hot rows, then the dense part."""
        return np.asarray(grad)[self._index]

    def cold_block(self, grad: np.ndarray) -> np.ndarray | None:
        """The row block as float32 with the hot rows +0.0 (None: no block)."""
        if self.block is None:
            return None
        off, rows, width = self.block
        cold = np.array(np.asarray(grad)[off:off + rows * width], dtype=np.float32).reshape(rows, width)
        cold[self.hot] = 0.0
        return cold.reshape(-1)

    def merge(self, switch_sum: np.ndarray, cold_sum: np.ndarray | None) -> np.ndarray:
        """The full float64 sum: the cold block's sums, then the switch's over the hot rows
        and the dense part (a hot row's cold sum is 0: no worker sent it to the server)."""
        if switch_sum.size != self.switch_values:
            raise ValueError(f"the switch returned {switch_sum.size} values, the layout has "
                             f"{self.switch_values}: same scenario on every worker?")
        out = np.zeros(self.size, dtype=np.float64)
        if self.block is not None:
            off, rows, width = self.block
            if cold_sum is None or cold_sum.size != rows * width:
                raise ValueError(f"the server's cold block has "
                                 f"{None if cold_sum is None else cold_sum.size} values, "
                                 f"expected {rows * width}")
            out[off:off + rows * width] = cold_sum
        out[self._index] = switch_sum
        return out


def build_layout(size: int, block, hot: np.ndarray, order: str = "frequency",
                 samples: np.ndarray | None = None, k: int = 32) -> Layout:
    """The layout of a hot set given most frequent first; `cooccurrence` regroups it by
    packet of k values (samples: the counted samples' ids)."""
    if order not in ORDERS:
        raise ValueError(f"scheme_options.order: {order!r} is not one of {', '.join(ORDERS)}")
    hot = np.asarray(hot, dtype=np.int64)
    if order == "cooccurrence" and block is not None and hot.size:
        if samples is None:
            raise ValueError("order cooccurrence needs the samples the hot set was counted on")
        hot = cooccurrence_order(hot, samples, max(1, k // block[2]))
    return Layout(size, None if block is None else tuple(block), hot)


def job_layout(workload: dict, seed: int, n_workers: int, hot: dict, k: int) -> Layout:
    """The job's layout from the scenario's workload section and the plan's `hot` settings
    (rows, source, sample_fraction, warmup_iterations, order): what every worker computes
    on its own, and the plan and the model too."""
    from schemes.libra.hot import identify
    from workers.ctr_data import ctr_dataset
    from workers.workload import WorkloadSpec, parameter_count, row_blocks
    size = parameter_count(workload)
    blocks = row_blocks(workload)
    if not blocks:
        return Layout(size, None, np.zeros(0, np.int64))
    if len(blocks) != 1:
        raise ValueError(f"libra handles one row block (the embedding table), the workload has {len(blocks)}")
    spec = WorkloadSpec.from_scenario(workload)
    data = ctr_dataset(seed, spec.ctr)
    ids, _, samples = identify(data.x_train, spec.ctr.vocabulary, int(hot["rows"]), hot["source"], seed,
                               sample_fraction=hot["sample_fraction"], n_workers=n_workers,
                               warmup_iterations=hot["warmup_iterations"], batch_size=spec.batch_size)
    return build_layout(size, blocks[0], ids, hot["order"], samples, k)
