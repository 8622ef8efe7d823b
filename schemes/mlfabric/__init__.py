"""Scheme mlfabric: asynchronous PS training with ordered transfers (a scheduler grants
them oldest version first, bounding the delay), optional aggregation of groups of updates
at idle workers or gateway hosts, and a replica in another datacenter that takes over when
the primary dies (MLfabric, SoCC'20; README.md)."""
from schemes.base import Scheme
from schemes.mlfabric.model import predict
from schemes.mlfabric.options import MlfabricOptions, mode_problems
from schemes.mlfabric.plan import COMMUNICATOR, plan

SCHEME = Scheme("mlfabric", MlfabricOptions, plan, COMMUNICATOR,
                summary="async PS with ordered transfers and a failover replica (MLfabric)",
                model=predict, modes=("asp",), mode_problems=mode_problems)
