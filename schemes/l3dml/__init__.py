"""Scheme l3dml: geo-ina + lossless WAN transmission in the switches + rate-synchronization
routing against stragglers (README.md). Registered: geo-ina's tree and workers with the
switches' repair of losses between aggregation points (plan.py; docs/protocol.md). The
straggler policy's pure parts: the flow model of an iteration (flowmodel.py over fluid.py),
the non-learned policies (policies.py), a gymnasium environment (env.py, the only module
that imports gymnasium) and a compact numpy agent (agent.py); in the emulation only policy
"none" runs yet."""
from schemes.base import Scheme
from schemes.geo_ina.model import predict
from schemes.ina.plan import COMMUNICATOR, PROGRAM
from schemes.l3dml.controller import controller
from schemes.l3dml.options import L3dmlOptions
from schemes.l3dml.plan import plan

SCHEME = Scheme("l3dml", L3dmlOptions, plan, COMMUNICATOR, program=PROGRAM,
                summary="geo-ina + loss repair in the switches (L3DML); straggler policy: none",
                model=predict, controller=controller)
