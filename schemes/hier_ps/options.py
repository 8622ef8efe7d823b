"""Options of scheme hier-ps."""
from __future__ import annotations

from schemes.base import TcpOptions


class HierPsOptions(TcpOptions):
    global_dc: str | int | None = None   # where the global server runs (default: the first DC)
    dedicated_servers: bool = False      # true: server hosts run no worker
