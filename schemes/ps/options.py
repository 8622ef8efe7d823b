"""Options of scheme ps."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemes.base import TcpOptions


class PsOptions(TcpOptions):
    server_dc: str | int | None = None   # datacenter of the server(s): name or 1-based index
                                         # (default: the first)
    shards: int = Field(1, ge=1)         # k servers, the tensor split by range, placed
                                         # round-robin on that datacenter's hosts
    dedicated_servers: bool = False      # false: servers share hosts with workers (MXNet's
                                         # usual deployment); true: server hosts run no worker
    push: Literal["dense", "touched_rows"] = "dense"   # touched_rows: the workload's row-sparse
                                         # blocks go as the rows a worker touched (PS-lite's
                                         # push of keys), the rest dense (README.md)
