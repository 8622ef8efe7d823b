"""NetStorm's multipath auxiliary transmission: the per-message path choice of van.cc Van::Push.

At the source server, for each message leaving its datacenter (not one for its own worker,
and not one it relays: relays follow the path the message carries), van.cc looks at the
auxiliary routes in order and takes the first one for which
    queue towards the primary's next hop  >  2 * SECOND_QUEUE_LIMIT     (primary busy)
    queue towards that route's next hop   <      SECOND_QUEUE_LIMIT     (auxiliary idle)
Queues count messages waiting in the per-neighbour send queue (the one being sent is already
popped). There is no split ratio: the split emerges from the queues, message by message.

Naming mismatch (seeds.md 2.7): van.cc reads SECOND_QUEUE_LIMIT, which neither script sets
(CHECK_NOTNULL would abort), while both scripts export PRIMARY_BUSY_BOUND=2 and
AUXILIARY_QUEUE_LENGTH=1, which nothing reads. The two agree when SECOND_QUEUE_LIMIT = 1
(2*1 = 2 and 1), so the bounds here are the scripts' values, named after what they bound:
busy_bound = PRIMARY_BUSY_BOUND = 2 (the 2*L of van.cc), idle_bound = AUXILIARY_QUEUE_LENGTH
= 1 (its L), with van.cc's strict comparisons.
"""
from __future__ import annotations

from typing import Mapping, Sequence

PRIMARY_BUSY_BOUND = 2       # scripts/demo/muti_server_resnet.sh, klonet_run_start.py
                             # (van.cc Push: 2 * SECOND_QUEUE_LIMIT)
AUXILIARY_IDLE_BOUND = 1     # AUXILIARY_QUEUE_LENGTH in both scripts
                             # (van.cc Push: SECOND_QUEUE_LIMIT)


def next_hop(path: Sequence[int]) -> int:
    if len(path) < 2:
        raise ValueError(f"a path needs at least two datacenters: {tuple(path)}")
    return path[1]


def choose_path(paths: Sequence[tuple[int, ...]], queue_len: Mapping[int, int],
                busy_bound: int = PRIMARY_BUSY_BOUND,
                idle_bound: int = AUXILIARY_IDLE_BOUND) -> tuple[int, ...]:
    """The path for one message: `paths` = (primary, aux1, ...) of its (source, destination)
    pair, `queue_len` = messages queued per neighbour (a missing neighbour has an empty queue).
    The primary unless its next hop's queue is above busy_bound; then the first auxiliary
    whose next hop's queue is below idle_bound; the primary if none is."""
    if not paths:
        raise ValueError("no path to choose from")
    primary = tuple(paths[0])
    if queue_len.get(next_hop(primary), 0) <= busy_bound:
        return primary
    for aux in paths[1:]:
        if queue_len.get(next_hop(aux), 0) < idle_bound:
            return tuple(aux)
    return primary
