"""Scheme ps: one parameter server (or k shard servers) in one datacenter; every worker
pushes its gradient over TCP and pulls the sum (MXNet-like baseline). README.md."""
from schemes.base import Scheme
from schemes.ps.options import PsOptions, mode_problems
from schemes.ps.model import predict
from schemes.ps.plan import COMMUNICATOR, plan
from workers.training_modes import MODES

SCHEME = Scheme("ps", PsOptions, plan, COMMUNICATOR,
                summary="parameter server over TCP (MXNet-like)", model=predict,
                modes=MODES, mode_problems=mode_problems)
