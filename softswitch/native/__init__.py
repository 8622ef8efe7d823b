"""The compiled data path: the per-packet pipeline of a v1model program as C, built with the
system C compiler at load time and driven through ctypes.

    generate (cgen_*.py) -> build (build.py: gcc, cache by sha256) -> CompiledSwitch (switch.py)

The Python path (softswitch.compiler, softswitch.target) stays the reference: the compiled
path covers a subset of P4 and refuses everything else with `Unsupported`, which names the
construct, so the caller runs the program on the Python path instead. The live tables and
multicast groups stay the Python SwitchState's; mirror.py copies what changed into C
before the next packet. This layer imports frontend, runtime, compiler and target only.
"""
