"""L3DML: geo-ina + lossless WAN transmission in the switches + rate-synchronization
routing against stragglers (README.md). Not a registered scheme yet (no communicator);
what exists is pure: the flow model of an iteration (flowmodel.py over fluid.py), the
non-learned policies (policies.py) and a gymnasium environment (env.py, the only module
that imports gymnasium)."""
