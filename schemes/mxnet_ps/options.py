"""Options of scheme mxnet-ps."""
from __future__ import annotations

from pydantic import Field

from schemes.base import TcpOptions

# MXNet's default for MXNET_KVSTORE_BIGARRAY_BOUND (src/kvstore/kvstore_dist.h)
BIGARRAY_BOUND = 1_000_000


class MxnetPsOptions(TcpOptions):
    bigarray_bound: int = Field(BIGARRAY_BOUND, ge=1)   # a tensor of at least this many values
                                                        # is split over every server; a smaller
                                                        # one goes whole to one server
    dedicated_servers: bool = False      # false: each server shares its host with a worker
                                         # (MXNet's usual deployment); true: no worker there
