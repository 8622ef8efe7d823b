"""Scheme netstorm: NetStorm's network-aware multi-root trees over the datacenter overlay,
with auxiliary multipath and a scheduler that re-plans from measured transfers
(arXiv 2404.11352; the authors' code fengwenjiao/netstorm). README.md."""
from schemes.base import Scheme
from schemes.netstorm.options import NetstormOptions
from schemes.netstorm.model import predict
from schemes.netstorm.plan import plan
from schemes.ps.plan import COMMUNICATOR

SCHEME = Scheme("netstorm", NetstormOptions, plan, COMMUNICATOR,
                summary="NetStorm: network-aware multi-root trees + auxiliary multipath",
                model=predict)
