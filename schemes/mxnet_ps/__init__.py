"""Scheme mxnet-ps: MXNet's distributed kvstore as NetStorm's baseline "MXNET" ran it, one
parameter server per datacenter with MXNet's default key placement (big tensors split over
every server, small ones whole on one). README.md."""
from schemes.base import Scheme
from schemes.mxnet_ps.model import predict
from schemes.mxnet_ps.options import MxnetPsOptions
from schemes.mxnet_ps.plan import plan
from schemes.ps.plan import COMMUNICATOR

SCHEME = Scheme("mxnet-ps", MxnetPsOptions, plan, COMMUNICATOR,
                summary="parameter servers in every datacenter, MXNet's key placement", model=predict)
