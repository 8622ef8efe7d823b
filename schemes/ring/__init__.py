"""Scheme ring: ring all-reduce over TCP (reduce-scatter then all-gather), datacenters
contiguous on the ring. README.md."""
from schemes.base import Scheme, TcpOptions
from schemes.ring.model import predict
from schemes.ring.plan import COMMUNICATOR, plan

SCHEME = Scheme("ring", TcpOptions, plan, COMMUNICATOR, summary="ring all-reduce over TCP",
                model=predict)
