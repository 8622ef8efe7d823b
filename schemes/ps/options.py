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


def mode_problems(o: PsOptions, mode: str) -> list[tuple[str, str]]:
    """What of ps's options cannot run in `mode`: ssp and asp run one asynchronous server
    holding the whole model (schemes/ps/async_server.py), dense pushes, and no verify check
    (there is no sum to verify: tests replay the applied updates instead)."""
    if mode == "bsp":
        return []
    found = []
    if o.shards != 1:
        found.append(("scheme_options.shards", f"{mode} runs one server holding the whole model "
                                               f"(got {o.shards} shards); set shards: 1"))
    if o.push != "dense":
        found.append(("scheme_options.push", f"{mode} pushes dense gradients (got {o.push!r}); "
                                             f"set push: dense"))
    if o.verify:
        found.append(("scheme_options.verify", f"verify checks bsp's sum over workers; {mode} applies "
                                               f"each worker's gradient alone: set verify: false"))
    return found
