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
    ("misc.p4", "header stack"),
    ("ops.p4", "int<8> (signed integers)"),
    ("externs.p4", "bit<72> (wider than 64 bits)"),
])
def test_unsupported_constructs_are_named(program, construct):
    sw = Switch.from_file(str(PROGRAMS / program))
    with pytest.raises(Unsupported) as e:
        CompiledSwitch(sw)
    assert e.value.construct == construct
    assert e.value.loc.line > 0, "the refusal points at the source"


def test_fallback_logs_one_line_naming_the_construct(caplog):
    sw = Switch.from_file(str(PROGRAMS / "misc.p4"))
    log = logging.getLogger("test.native.fallback")
    with caplog.at_level(logging.INFO, logger=log.name):
        assert compile_switch(sw, log) is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert lines[0].startswith("datapath: python (the compiled path does not support header stack at ")
    assert "misc.p4:" in lines[0]


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


# ------------------------------------------------------------------ register and counter cells
REG_CELLS = PROGRAMS / "reg_cells.p4"


def _reg_frame(index: int, dst: int = 3, src: int = 3) -> bytes:
    """A 60-byte frame. reg_cells.p4 indexes r8/r9/r48 and the counter with etherType[4:0]; it sends out
    r48's old value in srcAddr and r9's in etherType."""
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + (0x0800 | index).to_bytes(2, "big") + bytes(46)


def test_control_plane_and_packets_share_the_cells():
    sw = Switch.from_file(str(REG_CELLS))
    api = RuntimeAPI(sw.state)
    api.execute("register_write r48 4 1000")          # before the compiled path exists
    csw = CompiledSwitch(sw)
    (port, out), = csw.process(1, _reg_frame(4, dst=5))
    assert int.from_bytes(out[6:12], "big") == 1000, "a value written before start-up is kept"
    assert api.execute("register_read r48 4") == "r48[4]= 1005", "the packet's write is read back"
    api.execute("register_write r48 4 77")
    (_, out), = csw.process(1, _reg_frame(4))
    assert int.from_bytes(out[6:12], "big") == 77, "a control-plane write reaches the next packet"
    assert api.execute("counter_read seen 4") == "seen[4]= (120 bytes, 2 packets)"
    assert api.execute("counter_read seen 3") == "seen[3]= (120 bytes, 2 packets)"
    api.execute("reset_state")
    (_, out), = csw.process(1, _reg_frame(4, dst=9))
    assert int.from_bytes(out[6:12], "big") == 0, "reset_state zeroes the cells the packets use"
    assert sw.state.register("r48").read(4) == 9
    assert sw.state.counter("seen").read(4) == (1, 60)
    api.execute("register_reset r48")
    api.execute("counter_write seen 4 7 70")
    csw.process(1, _reg_frame(4))
    assert sw.state.register("r48").read(4) == 3 and sw.state.counter("seen").read(4) == (8, 130)


def test_direct_counters_are_the_cells_counter_read_sees():
    """Direct counters on the compiled path: counter_read/counter_write on an entry handle,
    reset_state and entries added before start-up act on the cells C counts into."""
    sw = Switch.from_file(str(PROGRAMS / "reg_counter.p4"))
    api = RuntimeAPI(sw.state)
    api.execute("table_add fwd forward 1 => 2")              # before the compiled path exists
    api.execute("counter_write fwd_counter 0 5 500")
    csw = CompiledSwitch(sw)
    frame = bytes.fromhex("020000000002" "020000000001" "0800") + bytes(46)
    assert [p for p, _ in csw.process(1, frame)] == [2]
    assert api.execute("counter_read fwd_counter 0").endswith("fwd_counter[0]= (560 bytes, 6 packets)")
    api.execute("table_add fwd forward 3 => 1")              # after: a new entry counts from 0
    csw.process(3, frame)
    csw.process(3, frame)
    assert api.execute("counter_read fwd_counter 1").endswith("fwd_counter[1]= (120 bytes, 2 packets)")
    csw.process(4, frame)                                    # a miss counts nothing
    api.execute("table_delete fwd 1")
    api.execute("table_add fwd forward 3 => 2")              # the slot is reused: starts at 0
    h = sw.state.table("fwd").find([3]).handle
    assert sw.state.counter("fwd_counter").read(h) == (0, 0)
    api.execute("counter_write fwd_counter 0 7 70")
    csw.process(1, frame)
    assert sw.state.counter("fwd_counter").read(0) == (8, 130)
    api.execute("reset_state")
    api.execute("table_add fwd forward 1 => 2")
    csw.process(1, frame)
    h = sw.state.table("fwd").find([1]).handle
    assert sw.state.counter("fwd_counter").read(h) == (1, 60), "reset_state: new entries, new counts"


def test_out_of_range_indexes_read_zero_and_write_nothing():
    sw = Switch.from_file(str(REG_CELLS))
    csw = CompiledSwitch(sw)
    r48, seen = sw.state.register("r48"), sw.state.counter("seen")
    for i in (16, 20, 31):                               # beyond r48's 16 and seen's 8 cells
        (_, out), = csw.process(1, _reg_frame(i, dst=123))
        assert int.from_bytes(out[6:12], "big") == 0
    assert list(r48.values) == [0] * 16
    assert list(seen.packets) == [0, 0, 0, 3, 0, 0, 0, 0], "only the constant index 3 counted"
    x = 0
    for _ in range(3):                                   # r64[src & 7 = 3] = r64[3] * K + 1
        x = (x * 0x9E3779B97F4A7C15 + 1) % (1 << 64)
    assert list(sw.state.register("r64").values) == [0, 0, 0, x], "64-bit cells wrap; index 9 untouched"
    r9 = sw.state.register("r9")
    r9.write(2, 500)
    csw.process(1, _reg_frame(2))
    assert r9.read(2) == 511, "bit<9> saturating add stays within the register's width"


def test_register_storage_sizes_follow_the_width():
    sw = Switch.from_file(str(REG_CELLS))
    csw = CompiledSwitch(sw)
    import ctypes
    sizes = {name: ctypes.sizeof(r.values) // r.size for name, r in sw.state.registers.items()}
    assert sizes == {"MyIngress.r8": 1, "MyIngress.r9": 2, "MyIngress.r48": 8, "MyIngress.r64": 8}
    r64 = sw.state.register("r64")
    r64.write(1, (1 << 64) - 1)
    assert r64.read(1) == (1 << 64) - 1
    with pytest.raises(ValueError, match="storage of 3 cells for size 4"):
        r64.adopt([0, 0, 0])
    csw.close()


def test_register_adopt_copies_the_current_values():
    from softswitch.runtime.state import Counter, Register
    r = Register("r", 3, 8)
    r.write(1, 300)                       # wraps to 44
    cells = [9, 9, 9]
    r.adopt(cells)
    assert r.values is cells and cells == [0, 44, 0]
    r.reset()
    assert r.values is cells and cells == [0, 0, 0]
    c = Counter("c", 2)
    c.count(1, 60)
    p, b = [5, 5], [5, 5]
    c.adopt(p, b)
    assert (c.packets, c.bytes) == ([0, 1], [0, 60]) and c.packets is p
    with pytest.raises(ValueError):
        c.adopt([0], [0, 0])


@pytest.mark.parametrize("source,construct", [
    ("register<int<8>>(4) r;", "register r of int<8> (signed integers)"),
    ("register<bit<72>>(4) r;", "bit<72> (wider than 64 bits)"),
])
def test_other_extern_instances_are_refused_by_name(tmp_path, source, construct):
    text = REG_CELLS.read_text().replace("counter(8, CounterType.packets_and_bytes) seen;",
                                         "counter(8, CounterType.packets_and_bytes) seen;\n    " + source)
    p = tmp_path / "x.p4"
    p.write_text(text)
    with pytest.raises(Unsupported) as e:
        CompiledSwitch(Switch.from_file(str(p), include_dirs=[str(PROGRAMS)]))
    assert e.value.construct == construct


def test_a_failing_assert_drops_the_whole_frame_on_both_paths(caplog):
    """tm_mix.p4: a multicast copy to port 2 leaves, then the copy to port 4 makes an E2E
    clone whose egress fails an assert: the whole frame is dropped (its port 2 output too),
    counted and logged with the source location, and the next frame is unaffected."""
    outs = []
    for compiled in (False, True):
        sw = Switch.from_file(str(PROGRAMS / "tm_mix.p4"), log=logging.getLogger(f"test.assert.{compiled}"))
        api = RuntimeAPI(sw.state)
        for cmd in ("mc_mgrp_create 5", "mc_node_create 3 2 4", "mc_node_associate 5 0", "mirroring_add 5 7",
                    "table_add ing mcast 2 0&&&0 => 5 1", "table_add ing fwd 1 0&&&0 => 2 1",
                    "table_add eg e2e 4 0&&&0 => 5 1"):
            assert not api.execute(cmd).startswith("Error"), cmd
        if compiled:
            sw = CompiledSwitch(sw)
        with caplog.at_level(logging.INFO, logger=sw.log.name):
            dropped = sw.process(1, bytes.fromhex("020000000002" "020000000001" "9000") + bytes(20))
            kept = sw.process(1, bytes.fromhex("020000000001" "020000000001" "9000") + bytes(20))
        logged = [r.getMessage() for r in caplog.records if "assert/assume failed" in r.getMessage()]
        outs.append((dropped, kept, sw.stats, logged))
        caplog.clear()
    assert outs[0] == outs[1]
    dropped, kept, stats, logged = outs[1]
    assert dropped == [] and [p for p, _ in kept] == [2]
    assert stats["assert_failures"] == 1 and stats["multicast_copies"] == 2 and stats["clones"] == 1
    assert len(logged) == 1 and "tm_mix.p4:" in logged[0]
