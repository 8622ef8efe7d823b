"""Scheme ina: every worker a child of one aggregating P4 switch (SwitchML-like): the
switch sums k int32 values per packet and multicasts the result. README.md."""
from schemes.base import Scheme
from schemes.ina.model import model_for
from schemes.ina.options import InaOptions
from schemes.ina.plan import COMMUNICATOR, PROGRAM, plan_for

SCHEME = Scheme("ina", InaOptions, plan_for("ina"), COMMUNICATOR, program=PROGRAM, kernel_tcp=False,
                summary="in-network aggregation at one switch (SwitchML-like)",
                model=model_for("ina"))
