"""The softswitch as an STF target: in-process, no sockets, no root.

The program is loaded as `python3 -m softswitch` would load it; runtime commands go through
the same simple_switch_CLI interpreter as the control port; each frame is processed when it
is sent. Like BMv2 under p4c's runner, the switch has an interface only on the ports the test
names: a frame sent anywhere else is lost.
"""
from __future__ import annotations

import logging

from softswitch.control.commands import RuntimeAPI
from softswitch.frontend.errors import P4Error
from softswitch.stf.entries import ActionInfo, KeyInfo, ProgramInfo, TableInfo
from softswitch.stf.runner import Refused, TargetFailure
from softswitch.target.switch import Switch


def program_info(state) -> ProgramInfo:
    """The loaded tables, as the STF entry builder needs them."""
    tables = []
    for t in state.tables.values():
        actions = [ActionInfo(a.name, tuple(a.params)) for a in t.actions.values()]
        keys = [KeyInfo(k.name, k.match_kind, k.width) for k in t.keys]
        tables.append(TableInfo(t.name, keys, actions, t.needs_priority, t.const_entries))
    return ProgramInfo(tables)


class SoftswitchTarget:
    name = "softswitch"
    compiled = False          # SoftswitchCompiledTarget: the packets run on the compiled path

    def __init__(self, log: logging.Logger | None = None):
        # the switch logs per-packet problems; the runner reports them, so keep them quiet
        if log is None:
            log = logging.getLogger("softswitch.stf.target")
            log.addHandler(logging.NullHandler())
            log.propagate = False
        self.log = log
        self.switch = None
        self.api = None
        self.ports: set[int] = set()
        self.sent: dict[int, list[bytes]] = {}

    def load(self, p4_path: str, ports: set[int], inputs: set[int] = frozenset()) -> ProgramInfo:
        try:
            self.switch = Switch.from_file(p4_path, log=self.log)
        except P4Error as e:
            raise Refused(e.format().splitlines()[0]) from None
        except RecursionError:
            raise Refused(f"{p4_path}: program nests too deeply for the front end") from None
        except Exception as e:   # a crash of the front end or compiler is the target's failure
            raise TargetFailure(f"crashed while loading: {type(e).__name__}: {e}") from None
        if self.compiled:
            self.switch = self._compiled(self.switch)
        self.api = RuntimeAPI(self.switch.state)
        self.ports = set(ports)
        self.sent = {p: [] for p in self.ports}
        return program_info(self.switch.state)

    @staticmethod
    def _compiled(switch):
        """The program on the compiled data path; a program it does not take (or a gcc error)
        is refused here, so the counts say how much of the corpus compiles."""
        from softswitch.native.build import BuildError
        from softswitch.native.cgen_types import Unsupported
        from softswitch.native.switch import CompiledSwitch
        try:
            return CompiledSwitch(switch)
        except Unsupported as e:
            raise Refused(f"compiled path: {e.construct}") from None
        except BuildError as e:
            raise TargetFailure(f"compiled path: gcc failed: {str(e)[:300]}") from None

    def command(self, text: str) -> tuple[bool, str]:
        reply = self.api.execute(text)
        return not reply.startswith("Error"), reply

    def send(self, port: int, frame: bytes) -> None:
        for out_port, data in self.switch.process(port, frame):
            if out_port in self.sent:
                self.sent[out_port].append(bytes(data))

    def wait(self) -> None:
        """Frames are processed as they are sent: nothing is in flight."""

    def finish(self):
        notes = []
        if self.switch is not None:
            st = self.switch.stats
            if st["errors"]:
                notes.append("packets dropped by an internal softswitch error")
            if st["assert_failures"]:
                notes.append("packets dropped by a failing assert/assume")
        return self.sent, notes

    def close(self) -> None:
        self.switch = None
        self.api = None


class SoftswitchCompiledTarget(SoftswitchTarget):
    """The same, with the per-packet pipeline on the compiled path (softswitch.native): a
    program it does not support is `refused` with the construct named."""
    name = "softswitch-compiled"
    compiled = True
