"""Scheme libra: hot embedding rows and the dense part aggregated in the switch (ina's
tree), cold rows pushed as touched rows to a parameter server (ps), both at once, merged
(Libra). README.md."""
from schemes.base import Scheme
from schemes.ina.plan import PROGRAM
from schemes.libra.model import predict
from schemes.libra.options import LibraOptions
from schemes.libra.plan import COMMUNICATOR, plan

SCHEME = Scheme("libra", LibraOptions, plan, COMMUNICATOR, program=PROGRAM,
                summary="hot parameters in the switch, cold ones to a PS (Libra)", model=predict)
