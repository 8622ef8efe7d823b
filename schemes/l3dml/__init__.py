"""L3DML: geo-ina + lossless WAN transmission in the switches + rate-synchronization
routing against stragglers (README.md). Not a registered scheme yet (no communicator);
what exists is pure: the flow model of an iteration (flowmodel.py over fluid.py), the
policies (policies.py: none, rule, drl), a gymnasium environment (env.py, the only module
that imports gymnasium; regime.py, encoding.py), the agent (agent.py) and the DRL model
set with its training (modelset.py, training.py, models/default.json)."""
