"""Scheme alltoall: every worker sends its gradient to every other worker and sums what it
receives (the worked example of docs/adding-a-scheme.md). README.md."""
from schemes.alltoall.model import predict
from schemes.alltoall.plan import COMMUNICATOR, plan
from schemes.base import Scheme, TcpOptions

SCHEME = Scheme("alltoall", TcpOptions, plan, COMMUNICATOR,
                summary="every worker sends to every other over TCP", model=predict)
