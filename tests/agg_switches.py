"""Switch factories for the aggregation tests: the P4 program in the softswitch, and the model."""
from pathlib import Path

import pytest

from tests.agg_model import ModelSwitch

PROGRAM = Path(__file__).resolve().parent.parent / "p4" / "aggregation.p4"
_compiled = {}


class SoftswitchAdapter:
    """The in-process softswitch with the execute/process/events interface of ModelSwitch."""

    def __init__(self, sw):
        from softswitch.runtime import RuntimeAPI
        self.sw, self.api = sw, RuntimeAPI(sw.state)

    def execute(self, line):
        return self.api.execute(line)

    def process(self, port, data):
        return self.sw.process(port, data)

    @property
    def events(self):
        return list(self.sw.state.counters["MyIngress.agg_events"].packets)


def softswitch_factory(k: int = 32):
    """A function making fresh softswitches running p4/aggregation.p4 (parsed once per k)."""
    from softswitch import frontend
    from softswitch.switch import Switch
    if k not in _compiled:
        _compiled[k] = frontend.load(str(PROGRAM), {"AGG_K": str(k)})
    program = _compiled[k]
    return lambda name=None: SoftswitchAdapter(Switch(program))


def factory(kind: str, k: int = 32):
    if kind == "model":
        return lambda name=None: ModelSwitch(k=k)
    try:
        return softswitch_factory(k)
    except ImportError as e:   # softswitch not importable yet: say so, never pass silently
        pytest.skip(f"softswitch cannot be imported: {e}")
