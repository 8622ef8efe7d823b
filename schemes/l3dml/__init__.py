"""Scheme l3dml: geo-ina + lossless WAN transmission in the switches + rate-synchronization
routing against stragglers (README.md). The run: geo-ina's tree and workers, with the
switches' repair of losses between aggregation points and the straggler policy's slot-range
paths and pacing (plan.py, routing.py, controller.py; docs/protocol.md). The policy's pure
parts: the flow model of an iteration (flowmodel.py over fluid.py), the policies
(policies.py: none, rule, drl), a gymnasium environment (env.py, the only module that
imports gymnasium; regime.py, encoding.py), the agent (agent.py) and the DRL model set with
its training (modelset.py, training.py, models/default.json)."""
from schemes.base import Scheme
from schemes.l3dml.model import predict
from schemes.ina.plan import PROGRAM
from schemes.l3dml.controller import controller
from schemes.l3dml.options import L3dmlOptions
from schemes.l3dml.plan import plan

SCHEME = Scheme("l3dml", L3dmlOptions, plan, "schemes.l3dml.communicator:L3dmlCommunicator", program=PROGRAM,
                kernel_tcp=False,
                summary="geo-ina + loss repair in the switches + straggler policy (L3DML)",
                model=predict, controller=controller)
