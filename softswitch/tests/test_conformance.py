"""Packets-in / packets-out conformance cases (in the spirit of p4c's STF).

Each softswitch/tests/stf/*.stf file is one case, read line by line:

    # comment
    program NAME.p4            P4 program: softswitch/tests/programs/NAME.p4, or a path from the repo root
    define NAME=VALUE          a -D for the program (before the first other step)
    cmd COMMAND                a simple_switch_CLI command; its reply must not start with 'Error'
    check COMMAND => TEXT      a command whose reply must contain TEXT
    packet PORT HEX            send a frame (hex, spaces ignored) into PORT
    expect PORT HEX            the next output of the last packet; '*' in HEX matches any nibble
    expect none                the last packet produced no output at all
    stat NAME VALUE            switch.stats[NAME] == VALUE
    digest NAME V1 V2 ...      the last digest logged has this struct name and these values
    log TEXT                   some log_msg output contains TEXT

After a packet, its `expect` lines list all of its outputs, in order; an
output not listed fails the case. Expected packets are written from the P4-16
spec and BMv2's documentation, not from this implementation.
"""
import pathlib
import re

import pytest

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent.parent
CASES = sorted((HERE / "stf").glob("*.stf"))


def _hex(s: str) -> str:
    return re.sub(r"\s+", "", s).lower()


def _matches(pattern: str, data: bytes) -> bool:
    got = data.hex()
    return len(got) == len(pattern) and all(p in ("*", g) for p, g in zip(pattern, got))


class Case:
    def __init__(self, path, compiled: bool = False):
        self.path = path
        self.compiled = compiled     # run the packets on the compiled data path (softswitch.native)
        self.sw = None
        self.api = None
        self.defines = {}
        self.pending = None          # outputs of the last packet not yet expected
        self.logged = []

    def fail(self, n, msg):
        pytest.fail(f"{self.path.name}:{n}: {msg}")

    def finish_packet(self, n):
        if self.pending:
            self.fail(n, "unexpected output(s) of the last packet: "
                         + "; ".join(f"port {p}: {d.hex()}" for p, d in self.pending))

    def run(self):
        from softswitch.target.switch import Switch
        from softswitch.control.commands import RuntimeAPI
        program = None
        lines = self.path.read_text().splitlines()
        for n, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            word, _, rest = line.partition(" ")
            rest = rest.strip()
            if word == "program":
                program = HERE / "programs" / rest
                if not program.exists():
                    program = ROOT / rest
                continue
            if word == "define":
                k, _, v = rest.partition("=")
                self.defines[k] = v
                continue
            if self.sw is None:
                log = _ListLog(self.logged)
                self.sw = Switch.from_file(str(program), self.defines or None, log=log)
                if self.compiled:
                    from softswitch.native.switch import CompiledSwitch
                    self.sw = CompiledSwitch(self.sw)   # Unsupported: the caller skips the case
                self.api = RuntimeAPI(self.sw.state)
            if word == "cmd":
                reply = self.api.execute(rest)
                if reply.startswith("Error"):
                    self.fail(n, f"command refused: {rest!r}: {reply}")
            elif word == "check":
                cmd, _, text = rest.partition("=>")
                reply = self.api.execute(cmd.strip())
                if text.strip() not in reply:
                    self.fail(n, f"reply to {cmd.strip()!r} is {reply!r}, expected it to contain {text.strip()!r}")
            elif word == "packet":
                self.finish_packet(n)
                port, _, data = rest.partition(" ")
                self.pending = list(self.sw.process(int(port), bytes.fromhex(_hex(data)), now_us=1000 * n))
            elif word == "expect":
                if rest == "none":
                    if self.pending:
                        self.fail(n, "expected no output, got " +
                                  "; ".join(f"port {p}: {d.hex()}" for p, d in self.pending))
                    continue
                port, _, data = rest.partition(" ")
                if not self.pending:
                    self.fail(n, f"expected a packet on port {port}, the last packet produced no more output")
                p, d = self.pending.pop(0)
                want = _hex(data)
                if p != int(port) or not _matches(want, d):
                    self.fail(n, f"expected port {port}: {want}\n     got port {p}: {d.hex()}")
            elif word == "stat":
                k, v = rest.split()
                if self.sw.stats.get(k) != int(v):
                    self.fail(n, f"stats[{k}] = {self.sw.stats.get(k)}, expected {v}")
            elif word == "digest":
                parts = rest.split()
                if not self.sw.digests:
                    self.fail(n, "no digest was logged")
                name, values = self.sw.digests[-1]
                want = (parts[0], tuple(int(x, 0) for x in parts[1:]))
                if (name, tuple(values)) != want:
                    self.fail(n, f"last digest is {(name, tuple(values))}, expected {want}")
            elif word == "log":
                if not any(rest in m for m in self.logged):
                    self.fail(n, f"no log_msg output contains {rest!r}; got {self.logged}")
            else:
                self.fail(n, f"unknown step {word!r}")
        self.finish_packet(len(lines))


class _ListLog:
    """A logger stand-in that keeps formatted messages (log_msg output included)."""

    def __init__(self, sink):
        self.sink = sink

    def _add(self, msg, *args, **kw):
        self.sink.append(msg % args if args else msg)

    info = warning = error = debug = exception = _add


@pytest.mark.parametrize("path", CASES, ids=[c.stem for c in CASES])
def test_stf_case(path):
    Case(path).run()


# The cases whose programs the compiled data path supports: the list can only grow, so a
# regression in the compiled path cannot hide behind a skip.
COMPILED_CASES = {"const_entries", "forward", "loop", "pre"}


@pytest.mark.parametrize("path", CASES, ids=[c.stem for c in CASES])
def test_stf_case_compiled(path):
    from softswitch.native.cgen_types import Unsupported
    try:
        Case(path, compiled=True).run()
    except Unsupported as e:
        # the fallback rule: a refusal names the construct (the process logs it and runs the
        # program on the Python path, where test_stf_case checks it)
        assert path.stem not in COMPILED_CASES, f"{path.stem} no longer compiles: {e}"
        assert e.construct and e.construct in e.format(), e
    else:
        assert path.stem in COMPILED_CASES, f"{path.stem} now compiles: add it to COMPILED_CASES"


def test_a_wrong_expectation_fails():
    """The runner itself must be able to fail: a case with a wrong byte."""
    bad = HERE / "stf" / "ops.stf"
    text = bad.read_text().replace("2c9c20ce", "2c9c20cf")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "bad.stf"
        p.write_text(text.replace("program ops.p4", f"program {HERE / 'programs' / 'ops.p4'}"))
        with pytest.raises(pytest.fail.Exception, match="expected port 2"):
            Case(p).run()
