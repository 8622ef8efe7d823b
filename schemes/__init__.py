"""The registry of synchronization schemes: one line per scheme, name -> its folder.

Adding a scheme: write its folder (schemes/base.py says what it holds; the worked example
is docs/adding-a-scheme.md) and add its line here. Nothing else in the testbed changes:
scenarios validate its options, the one worker loop runs its communicator, the one
measurement pipeline measures it.
"""
from __future__ import annotations

import importlib

REGISTRY: dict[str, str] = {
    "ps": "schemes.ps",              # one parameter server (MXNet-like baseline)
    "mxnet-ps": "schemes.mxnet_ps",  # a server per datacenter, MXNet's placement (NetStorm's MXNET)
    "hier-ps": "schemes.hier_ps",    # a server per datacenter + a global one (Gaia-like)
    "ring": "schemes.ring",          # ring all-reduce over TCP
    "alltoall": "schemes.alltoall",  # every worker sends to every other (the worked example)
    "ina": "schemes.ina",            # one aggregating switch (SwitchML-like)
    "geo-ina": "schemes.geo_ina",    # hierarchical location-addressed INA (L3DML's first part)
    "l3dml": "schemes.l3dml",        # geo-ina + loss repair in the switches (L3DML)
    "netstorm": "schemes.netstorm",  # multi-root trees + auxiliary multipath (NetStorm)
    "libra": "schemes.libra",        # hot rows in the switch, cold rows to a PS (Libra)
    "inart": "schemes.inart",        # multi-PS split + INA route selection (InArt)
    "mlfabric": "schemes.mlfabric",  # async PS, ordered transfers, failover replica (MLfabric)
}
NAMES: tuple[str, ...] = tuple(REGISTRY)


def get(name: str):
    """The schemes.base.Scheme of a registered scheme."""
    if name not in REGISTRY:
        raise ValueError(f"unknown scheme {name!r} (known: {', '.join(NAMES)})")
    return importlib.import_module(REGISTRY[name]).SCHEME
