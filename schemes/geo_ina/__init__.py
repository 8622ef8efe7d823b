"""Scheme geo-ina: in-network aggregation by location (L3DML's first part): rack,
datacenter and global aggregation points on the P4 switches, reached by ordinary routing
to aggregation addresses; one partial sum per datacenter crosses the WAN. The worker side,
options and plan are ina's (schemes/ina/) with the hierarchical tree. README.md."""
from schemes.base import Scheme
from schemes.geo_ina.model import predict
from schemes.ina.options import InaOptions
from schemes.ina.plan import COMMUNICATOR, PROGRAM, plan_for

SCHEME = Scheme("geo-ina", InaOptions, plan_for("geo-ina"), COMMUNICATOR, program=PROGRAM, kernel_tcp=False,
                summary="hierarchical in-network aggregation by location (L3DML-like)",
                model=predict)
