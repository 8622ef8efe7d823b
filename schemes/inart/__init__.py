"""Scheme inart: K parameter servers share the model (phase 1 split), and per server the
switches chosen by an LP with randomized rounding aggregate the workers' streams on their
way to it (phase 2); InArt, WWW 2024. README.md."""
from schemes.base import Scheme
from schemes.inart.controller import make_controller
from schemes.inart.model import predict
from schemes.inart.options import InartOptions
from schemes.inart.plan import COMMUNICATOR, PROGRAM, plan

SCHEME = Scheme("inart", InartOptions, plan, COMMUNICATOR, program=PROGRAM, kernel_tcp=False,
                summary="multi-PS split + INA route selection (InArt)", model=predict,
                controller=make_controller)
