"""STF tests run end to end: the softswitch in-process on hand-written .p4/.stf pairs
(softswitch/tests/p4c_stf), the outcomes (pass, fail with the differing bytes, refused,
unsupported, error), the command line with expected failures, and BMv2 when it is installed."""
import json
import shutil
from pathlib import Path

import pytest

from softswitch.stf.__main__ import main
from softswitch.stf.corpus import discover, run_all, summary
from softswitch.stf.expected import ExpectedFileError, compare, dump_expected, load_expected
from softswitch.stf.runner import Outcome, refusal_cause, run_test
from softswitch.stf.target_bmv2 import Bmv2Target, missing_tools, program_info
from softswitch.stf.target_softswitch import SoftswitchTarget

PAIRS = Path(__file__).parent / "p4c_stf"
TABLES_P4 = PAIRS / "tables.p4"


def pair(tmp_path, stf_text, name="t", program=TABLES_P4):
    shutil.copy(program, tmp_path / f"{name}.p4")
    (tmp_path / f"{name}.stf").write_text(stf_text)
    return tmp_path / f"{name}.stf", tmp_path / f"{name}.p4"


def run_soft(stf, p4):
    return run_test(stf, p4, SoftswitchTarget())


def test_every_statement_passes_on_the_softswitch():
    out = run_soft(PAIRS / "tables.stf", TABLES_P4)
    assert (out.status, out.cause) == ("pass", ""), out.detail


def test_a_mismatch_is_a_failure_that_shows_the_differing_bytes(tmp_path):
    stf, p4 = pair(tmp_path, "add by_a 1 a:0x1234 op:1 fwd(port:2, tag:0xaa)\n"
                             "expect 2 01 1234 0a000001 ab\n"
                             "packet 1 01 1234 0a000001 00\n")
    out = run_soft(stf, p4)
    assert (out.status, out.cause) == ("fail", "frame contents differ")
    assert "port 2 frame 0 (expect on line 2): byte 7: expected AB, got AA" in out.detail
    assert "got      0112340A000001AA" in out.detail


def test_missing_and_unexpected_frames_fail(tmp_path):
    stf, p4 = pair(tmp_path, "expect 3 01\npacket 1 01 1234 0a000001 00\n")   # no entry: dropped
    assert run_soft(stf, p4).cause == "frames missing"
    stf, p4 = pair(tmp_path, "add by_a 1 a:0x1234 op:1 fwd(port:1, tag:0)\npacket 1 01 1234 0a000001 00\n")
    out = run_soft(stf, p4)
    assert out.cause == "unexpected frames" and "port 1: 1 frame(s) sent, 0 expected" in out.detail


def test_a_refused_runtime_command_fails_the_test(tmp_path):
    stf, p4 = pair(tmp_path, "register_write Ing.regs 9 1\npacket 1 03 0000 00000000 00\n")
    out = run_soft(stf, p4)
    assert (out.status, out.cause) == ("fail", "command refused: register_write")
    assert "line 1: the target refused `register_write Ing.regs 9 1`: Error" in out.detail


def test_counter_check_that_differs_fails(tmp_path):
    stf, p4 = pair(tmp_path, "packet 1 05 0000 00000000 00\ncheck_counter hits(5) packets == 2\n")
    out = run_soft(stf, p4)
    assert (out.status, out.cause) == ("fail", "counter differs")
    assert "hits(5) packets is 1, expected == 2" in out.detail


def test_counter_check_by_entry_id_needs_the_id(tmp_path):
    stf, p4 = pair(tmp_path, "check_counter hits($X) packets == 0\n")
    assert run_soft(stf, p4).cause == "check_counter: unknown entry id"


def test_an_entry_the_program_cannot_take_fails_with_the_name(tmp_path):
    stf, p4 = pair(tmp_path, "add no_table k:1 drop()\n")
    out = run_soft(stf, p4)
    assert out.status == "fail" and out.cause.startswith("entry: no table")
    assert "no table 'no_table' among the program's tables: Ing.by_a, Ing.by_b" in out.detail


def test_a_program_the_front_end_refuses_is_refused_with_its_reason():
    out = run_soft(PAIRS / "refused.stf", PAIRS / "refused.p4")
    assert out.status == "refused"
    assert out.cause == "unsupported: value_set (parser … sets; use a table … constants in select)"
    assert "refused.p4:10:" in out.detail


class RecordingTarget:
    """Stands in for a target where the runner must never get that far."""
    def __init__(self):
        self.calls = []

    def load(self, *a):
        self.calls.append("load")
        raise AssertionError("the runner loaded the program")

    def close(self):
        self.calls.append("close")


def test_an_unsupported_statement_is_reported_as_such_without_running(tmp_path):
    stf, p4 = pair(tmp_path, "packet 0 00\nno_packet\n")
    target = RecordingTarget()
    out = run_test(stf, p4, target)
    assert (out.status, out.cause) == ("unsupported", "STF statement 'no_packet'")
    assert f"{stf}:2: no_packet" in out.detail
    assert target.calls == []


def test_malformed_stf_and_missing_program_are_errors(tmp_path):
    stf, p4 = pair(tmp_path, "packet 0 abc\n")
    out = run_test(stf, p4, RecordingTarget())
    assert (out.status, out.cause) == ("error", "STF syntax") and "whole number of bytes" in out.detail
    out = run_test(stf, tmp_path / "none.p4", RecordingTarget())
    assert (out.status, out.cause) == ("error", "no .p4 beside the .stf")


def test_refusal_causes_group_across_programs():
    a = refusal_cause("/x/a.p4:3:5: unsupported: action foo with in/out/inout parameters in the actions of table t1")
    b = refusal_cause("/y/b.p4:9:1: unsupported: action bar with in/out/inout parameters in the actions of table t2")
    assert a == b == "unsupported: action … with in/out/inout parameters in the actions of table …"
    assert refusal_cause("p4c-bm2-ss: /x/a.p4(12): error: 'x' is bad") == "p4c-bm2-ss: error: '…' is bad"
    assert refusal_cause("/x/a.p4:1:1: unsupported: varbit<32> (x)") == "unsupported: varbit<N> (x)"


# ------------------------------------------------------------------ folders, expected failures, CLI
def corpus(tmp_path):
    shutil.copy(TABLES_P4, tmp_path / "good.p4")
    shutil.copy(PAIRS / "tables.stf", tmp_path / "good.stf")
    shutil.copy(PAIRS / "refused.p4", tmp_path / "refused.p4")
    shutil.copy(PAIRS / "refused.stf", tmp_path / "refused.stf")
    shutil.copy(TABLES_P4, tmp_path / "wrong.p4")
    (tmp_path / "wrong.stf").write_text("expect 1 ff\npacket 1 03 0000 00000000 00\n")
    (tmp_path / "notes.txt").write_text("not a test")
    return tmp_path


def test_discover_pairs_by_name_and_pattern(tmp_path):
    corpus(tmp_path)
    assert [c.name for c in discover([tmp_path])] == ["good.p4", "refused.p4", "wrong.p4"]
    assert [c.name for c in discover([tmp_path], "w*.stf")] == ["wrong.p4"]
    with pytest.raises(FileNotFoundError, match="not a folder or an .stf file"):
        discover([tmp_path / "nowhere"])


def test_run_all_prints_progress_and_summary_groups_by_cause(tmp_path, capsys):
    import sys
    results = run_all(discover([corpus(tmp_path)]), SoftswitchTarget, progress=sys.stderr)
    err = capsys.readouterr().err
    assert "[1/3] good.p4: pass" in err and "[3/3] wrong.p4: fail: frame contents differ" in err
    text = summary(results, "softswitch")
    assert text.splitlines()[0] == ("softswitch: 1 of 3 tests pass (33.3%); "
                                    "1 of the 2 that load and run pass (50.0%)")
    assert "     1  fail: frame contents differ" in text
    assert "     1  refused: unsupported: value_set" in text


def test_expected_failures_compare_exactly(tmp_path):
    results = {"a.p4": Outcome("pass"), "b.p4": Outcome("fail", "frames missing"), "c.p4": Outcome("refused", "x")}
    cmp = compare(results, {"b.p4": "fail: frames missing", "c.p4": "refused: y", "z.p4": "not run"})
    assert cmp.matches and "note: c.p4 is listed as 'refused: y' but now gives 'refused: x'" in cmp.report()
    cmp = compare(results, {"a.p4": "fail: old", "b.p4": "fail: frames missing"})
    assert not cmp.matches
    assert "unexpected failure: c.p4: refused: x" in cmp.report()
    assert "unexpected pass: a.p4" in cmp.report()


def test_expected_file_round_trip_and_errors(tmp_path):
    results = {"a.p4": Outcome("pass"), "b.p4": Outcome("fail", "frames missing")}
    f = tmp_path / "e.yaml"
    f.write_text(dump_expected(results, "softswitch", "here"))
    assert load_expected(f) == {"b.p4": "fail: frames missing"}
    f.write_text("expected: [1, 2]\n")
    with pytest.raises(ExpectedFileError, match="must be a mapping"):
        load_expected(f)
    f.write_text("expected:\n  a.p4: ''\n")
    with pytest.raises(ExpectedFileError, match=r"expected.a.p4: give the reason"):
        load_expected(f)
    with pytest.raises(ExpectedFileError, match="cannot read it"):
        load_expected(tmp_path / "none.yaml")


def test_command_line_exit_codes_with_expected_failures(tmp_path, capsys):
    (tmp_path / "c").mkdir()
    d = corpus(tmp_path / "c")
    exp, js = tmp_path / "exp.yaml", tmp_path / "out.json"
    assert main([str(d), "--write-expected", str(exp), "--json", str(js)]) == 1
    assert set(load_expected(exp)) == {"refused.p4", "wrong.p4"}
    assert json.loads(js.read_text())["good.p4"]["status"] == "pass"
    assert main([str(d), "--expected", str(exp)]) == 0
    assert "expected failures" in capsys.readouterr().out
    exp.write_text("expected:\n  refused.p4: 'refused: value_set'\n")
    assert main([str(d), "--expected", str(exp)]) == 1
    out = capsys.readouterr().out
    assert "unexpected failure: wrong.p4: fail: frame contents differ" in out and "DO NOT MATCH" in out
    assert main([str(d / "good.stf")]) == 0
    assert main([str(tmp_path / "nowhere")]) == 2
    assert main([str(d), "--match", "zz*.stf"]) == 2


def test_bmv2_target_refuses_to_start_without_its_tools(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main([str(PAIRS), "--target", "bmv2"]) == 2
    assert "--target bmv2 needs p4c-bm2-ss, simple_switch, simple_switch_CLI on PATH" in capsys.readouterr().err


# ------------------------------------------------------------------ BMv2
def test_program_info_from_p4c_json():
    prog = {
        "header_types": [{"name": "h_t", "fields": [["a", 16, False], ["$valid$", 1, False]]}],
        "headers": [{"name": "h", "header_type": "h_t"}],
        "actions": [{"id": 0, "name": "Ing.fwd", "runtime_data": [{"name": "port", "bitwidth": 9}]},
                    {"id": 1, "name": "NoAction", "runtime_data": []}],
        "pipelines": [{"tables": [{"name": "Ing.t", "match_type": "ternary", "action_ids": [0, 1],
                                   "key": [{"match_type": "ternary", "name": "h.a", "target": ["h", "a"]},
                                           {"match_type": "exact", "target": ["h", "$valid$"]}]}]},
                      {"tables": [{"name": "Eg.c", "match_type": "exact", "action_ids": [1], "key": [],
                                   "entries": [{}]}]}],
    }
    info = program_info(prog)
    t = info.table("t")
    assert [(k.name, k.match_kind, k.width) for k in t.keys] == [("h.a", "ternary", 16), ("h.$valid$", "exact", 1)]
    assert [(a.name, a.params) for a in t.actions] == [("Ing.fwd", (("port", 9),)), ("NoAction", ())]
    assert t.needs_priority and not t.const_entries
    assert info.table("Eg.c").const_entries and not info.table("Eg.c").needs_priority


needs_bmv2 = pytest.mark.skipif(bool(missing_tools()), reason="BMv2 (simple_switch, p4c-bm2-ss) not on PATH")


@pytest.mark.bmv2
@needs_bmv2
def test_every_statement_passes_on_bmv2():
    out = run_test(PAIRS / "tables.stf", TABLES_P4, Bmv2Target(settle=0.5))
    assert (out.status, out.cause) == ("pass", ""), out.detail


@pytest.mark.bmv2
@needs_bmv2
def test_bmv2_mismatch_and_compiler_refusal(tmp_path):
    stf, p4 = pair(tmp_path, "expect 1 03 0000 00000000 01\npacket 1 03 0000 00000000 00\n")
    out = run_test(stf, p4, Bmv2Target(settle=0.5))
    assert out.status == "fail" and "byte 7: expected 01, got 00" in out.detail
    (tmp_path / "bad.p4").write_text("this is not P4\n")
    (tmp_path / "bad.stf").write_text("packet 0 00\n")
    out = run_test(tmp_path / "bad.stf", tmp_path / "bad.p4", Bmv2Target())
    assert out.status == "refused" and out.cause.startswith("p4c-bm2-ss:")


@pytest.mark.parametrize("target", ["softswitch", "bmv2"])
def test_committed_expected_failure_lists_load(target):
    listed = load_expected(Path(__file__).parent.parent / "stf" / f"expected_{target}.yaml")
    assert listed and all(name.endswith("-bmv2.p4") for name in listed)
    assert all(reason.split(":")[0] in ("fail", "refused", "unsupported", "error") for reason in listed.values())
