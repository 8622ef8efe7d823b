"""The compiled data path's edges: what it refuses (by name), build failures, the build
cache, the state mirror, and the statistics of dropped frames. Equivalence on packets is
test_native_diff.py's and the conformance cases' (test_conformance.py) job."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from softswitch.control.commands import RuntimeAPI
from softswitch.native import build
from softswitch.native.build import BuildError, compile_source
from softswitch.native.cgen_types import Unsupported
from softswitch.native.switch import CompiledSwitch, compile_switch
from softswitch.target.switch import Switch

ROOT = Path(__file__).resolve().parent.parent.parent
PROGRAMS = ROOT / "softswitch" / "tests" / "programs"
FORWARD = ROOT / "p4" / "forward.p4"


@pytest.mark.parametrize("program,construct", [
    ("reg_counter.p4", "extern direct_counter fwd_counter"),
    ("misc.p4", "header stack"),
    ("ops.p4", "int<8> (signed integers)"),
    ("pre.p4", "extern function clone"),
    ("loop.p4", "extern function resubmit_preserving_field_list"),
    ("externs.p4", "bit<72> (wider than 64 bits)"),
])
def test_unsupported_constructs_are_named(program, construct):
    sw = Switch.from_file(str(PROGRAMS / program))
    with pytest.raises(Unsupported) as e:
        CompiledSwitch(sw)
    assert e.value.construct == construct
    assert e.value.loc.line > 0, "the refusal points at the source"


def test_fallback_logs_one_line_naming_the_construct(caplog):
    sw = Switch.from_file(str(PROGRAMS / "reg_counter.p4"))
    log = logging.getLogger("test.native.fallback")
    with caplog.at_level(logging.INFO, logger=log.name):
        assert compile_switch(sw, log) is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert lines[0].startswith("datapath: python (the compiled path does not support extern direct_counter fwd_counter at ")
    assert "reg_counter.p4:" in lines[0]


def test_supported_program_compiles_and_logs_nothing(caplog):
    sw = Switch.from_file(str(FORWARD))
    log = logging.getLogger("test.native.ok")
    with caplog.at_level(logging.INFO, logger=log.name):
        csw = compile_switch(sw, log)
    assert isinstance(csw, CompiledSwitch) and csw.state is sw.state
    assert not caplog.records


def test_missing_compiler_is_a_build_error_that_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("SOFTSWITCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "CC", "/nonexistent/cc")
    with pytest.raises(BuildError, match="no C compiler.*apt-get install gcc libc6-dev"):
        compile_source("int x;")


def test_compile_error_carries_the_compiler_output_and_falls_back(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("SOFTSWITCH_CACHE_DIR", str(tmp_path))
    with pytest.raises(BuildError, match=r"(?s)gcc failed \(exit 1\).*error: expected expression"):
        compile_source("int x = ;\n")
    assert not list(tmp_path.glob("*.so")), "a failed build leaves nothing in the cache"
    # a switch whose build fails runs on the Python path, saying so
    sw = Switch.from_file(str(FORWARD))
    monkeypatch.setattr("softswitch.native.switch.load_library",
                        lambda src: (_ for _ in ()).throw(BuildError("gcc failed (exit 1): boom")))
    log = logging.getLogger("test.native.buildfail")
    with caplog.at_level(logging.INFO, logger=log.name):
        assert compile_switch(sw, log) is None
    assert [r.getMessage() for r in caplog.records] == [
        "datapath: python (building the compiled path failed: gcc failed (exit 1): boom)"]


def test_build_cache_is_keyed_by_source(monkeypatch, tmp_path):
    monkeypatch.setenv("SOFTSWITCH_CACHE_DIR", str(tmp_path))
    a = compile_source("int f(void) { return 1; }\n")
    mtime = a.stat().st_mtime_ns
    assert compile_source("int f(void) { return 1; }\n") == a and a.stat().st_mtime_ns == mtime
    b = compile_source("int f(void) { return 2; }\n")
    assert b != a and b.exists()


def test_mirror_rebuilds_only_what_changed():
    sw = Switch.from_file(str(PROGRAMS / "compiled_mix.p4"))
    csw = CompiledSwitch(sw)
    m = csw.mirror
    m.sync()
    before = m.rebuilds
    m.sync()
    assert m.rebuilds == before, "nothing changed, nothing rebuilt"
    api = RuntimeAPI(sw.state)
    assert not api.execute("table_add route fwd 10.0.2.0/24 17 => 2").startswith("Error")
    m.sync()
    assert m.rebuilds == before + 1
    assert api.execute("table_add route fwd 10.0.2.0/24 17 => 3").startswith("Error")   # duplicate
    api.execute("mc_mgrp_create 4")
    m.sync()
    assert m.rebuilds == before + 1, "a refused add and an empty group change no lookup"
    api.execute("mc_node_create 0 1 2")
    api.execute("mc_node_associate 4 0")
    m.sync()
    assert m.rebuilds == before + 2, "a group's replicas changed: the PRE is rebuilt"


def test_entries_and_defaults_written_between_packets_apply_to_the_next_packet():
    sw = Switch.from_file(str(FORWARD))
    csw = CompiledSwitch(sw)
    api = RuntimeAPI(sw.state)
    frame = bytes.fromhex("000000000101000000000001 0800 4500001800070000401163cc0a0001010a000202 11223344"
                          .replace(" ", ""))
    assert csw.process(1, frame) == []
    h = api.execute("table_add ipv4_lpm ipv4_forward 10.0.2.0/24 => 02:00:00:00:02:02 2")
    out = csw.process(1, frame)
    assert [p for p, _ in out] == [2] and out[0][1][:6] == bytes.fromhex("020000000202")
    api.execute(f"table_delete ipv4_lpm {h.split()[-1]}")
    assert csw.process(1, frame) == []
    api.execute("table_set_default ipv4_lpm multicast 7")
    api.execute("mc_mgrp_create 7")
    api.execute("mc_node_create 0 3 4")
    api.execute("mc_node_associate 7 0")
    assert [p for p, _ in csw.process(1, frame)] == [3, 4]
    assert csw.stats["multicast_copies"] == 2


def test_oversized_and_truncated_frames_count_as_on_the_python_path():
    py = Switch.from_file(str(FORWARD))
    csw = CompiledSwitch(Switch.from_file(str(FORWARD)))
    for f in (bytes(70000), b"", b"\x00" * 13, bytes(12) + b"\x08\x00"):
        assert csw.process(1, f, 5) == py.process(1, f, 5) == []
    assert csw.stats == py.stats
    assert csw.stats["oversized"] == 1 and csw.stats["parser_errors"] == 3
