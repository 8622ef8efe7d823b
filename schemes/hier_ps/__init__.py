"""Scheme hier-ps: a parameter server per datacenter aggregates its workers over the LAN;
those servers synchronize through one global server over the WAN (Gaia-like). README.md."""
from schemes.base import Scheme
from schemes.hier_ps.options import HierPsOptions
from schemes.hier_ps.model import predict
from schemes.hier_ps.plan import plan
from schemes.ps.plan import COMMUNICATOR

SCHEME = Scheme("hier-ps", HierPsOptions, plan, COMMUNICATOR,
                summary="hierarchical parameter servers, one per datacenter (Gaia-like)",
                model=predict)
