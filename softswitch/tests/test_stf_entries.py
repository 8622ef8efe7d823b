"""STF entries -> simple_switch_CLI commands (p4c's BMv2 runner's rules), and frame comparison."""
import pytest

from softswitch.stf.compare import compare_outputs, frame_problem
from softswitch.stf.entries import (ActionInfo, EntryError, KeyInfo, ProgramInfo, TableInfo, add_command,
                                    clear_commands, lpm_value, setdefault_command, ternary_value)
from softswitch.stf.grammar import parse_stf

FWD = ActionInfo("ingress.fwd", (("port", 9), ("tag", 8)))
DROP = ActionInfo("ingress.drop")
INFO = ProgramInfo([
    TableInfo("ingress.acl", [KeyInfo("hdr.h.a", "ternary", 16), KeyInfo("hdr.h.isValid()", "exact", 1),
                              KeyInfo("hdr.stack[0].x", "lpm", 32)], [FWD, DROP], needs_priority=True),
    TableInfo("ingress.route", [KeyInfo("hdr.ip.dst", "lpm", 32)], [FWD, DROP], needs_priority=False),
    TableInfo("egress.route", [KeyInfo("meta.r", "range", 8)], [DROP], needs_priority=True, const_entries=True),
])


def add(text):
    return add_command(INFO, parse_stf(text).steps[0])


def test_ternary_mask_covers_the_written_digits_only():
    assert ternary_value("0x**01", 32) == "0x0001&&&0x00FF"
    assert ternary_value("0b1*0", 8) == "0b100&&&0b101"
    assert ternary_value("5", 8) == "5&&&0xff"


def test_lpm_prefix_from_written_digits_or_given():
    assert lpm_value("0x0a01****", 32) == "0x0a010000/16"
    assert lpm_value("0x0a000000/8", 32) == "0x0a000000/8"
    assert lpm_value("10", 32) == "10/32"
    with pytest.raises(EntryError):
        lpm_value("10", None)


def test_add_resolves_suffixes_fills_missing_keys_and_inverts_priority():
    cmd = add("add acl 20 a:0x12** valid:1 fwd(tag:0xbb, port:3)")
    assert cmd == "table_add ingress.acl ingress.fwd 0x1200&&&0xFF00 1 0/0 => 3 0xbb 9980"


def test_stack_element_and_dollar_spelling():
    cmd = add("add ingress.acl 1 stack$0.x:0x01****** h.$valid$:0 drop()")
    assert cmd == "table_add ingress.acl ingress.drop 0&&&0 0 0x01000000/8 => 9999"


def test_tables_without_priorities_get_none():
    assert add("add ingress.route ip.dst:0x0a000000/8 drop()") == "table_add ingress.route ingress.drop 0x0a000000/8 =>"


def test_range_key_given_one_value_and_unmentioned():
    info = ProgramInfo([TableInfo("t", [KeyInfo("r", "range", 8), KeyInfo("s", "range", 4)], [DROP], True)])
    assert add_command(info, parse_stf("add t 1 r:7 drop()").steps[0]) == "table_add t ingress.drop 7->7 0->15 => 9999"


@pytest.mark.parametrize("text, message", [
    ("add nosuch k:1 drop()", "no table 'nosuch'"),
    ("add acl 1 nokey:1 drop()", "no key 'nokey'"),
    ("add acl 1 a:1 nosuch()", "no action (table ingress.acl) 'nosuch'"),
    ("add acl 1 a:0x1 fwd(port:1)", "parameter 'tag' not given"),
    ("add acl 1 a:0x1 fwd(port:1, tag:2, x:3)", "no parameter 'x'"),
    ("add acl a:0x1 drop()", "takes priorities"),
    ("add ingress.route ip.dst:0x1 drop()", None),
    ("add ingress.route ip.dst:0x1 route()", "no action"),
    ("add acl 1 valid:0x1* drop()", "cannot hold '*'"),
])
def test_entry_errors_name_what_is_missing(text, message):
    if message is None:
        add(text)
        return
    with pytest.raises(EntryError) as e:
        add(text)
    assert message in str(e.value)


def test_ambiguous_table_suffix_is_refused():
    with pytest.raises(EntryError, match="ambiguous"):
        add("add route meta.r:1 drop()")


def test_setdefault_and_remove_all_skip_const_tables():
    step = parse_stf("setdefault ingress.route fwd(port:4, tag:0xdd)").steps[0]
    assert setdefault_command(INFO, step) == "table_set_default ingress.route ingress.fwd 4 0xdd"
    assert clear_commands(INFO) == ["table_clear ingress.acl", "table_clear ingress.route"]


# ------------------------------------------------------------------ compare
def test_frame_matches_prefix_dont_care_and_exact_length():
    assert frame_problem("01*3", False, bytes.fromhex("0123ff")) is None
    assert "expected exactly 2" in frame_problem("01*3", True, bytes.fromhex("0123ff"))
    assert frame_problem("01*3", True, bytes.fromhex("0123")) is None
    assert "expected at least 3" in frame_problem("010203", False, b"\x01")


def test_mismatch_lists_the_differing_bytes():
    problem = frame_problem("0800AA**", False, bytes.fromhex("86dd aa 00"))
    assert problem == "byte 0: expected 08, got 86; byte 1: expected 00, got DD"


def test_compare_outputs_per_port_in_order():
    steps = parse_stf("expect 1 aa\nexpect 1 bb\nexpect 2\npacket 0 00\nexpect 3 cc $\n").steps
    ok = compare_outputs(steps, {0, 1, 2, 3}, {1: [b"\xaa", b"\xbb"], 2: [b"\x01"] * 5, 3: [b"\xcc"]})
    assert ok == []
    bad = compare_outputs(steps, {0, 1, 2, 3}, {0: [b"\x00"], 1: [b"\xbb", b"\xaa"], 3: []})
    assert any(p.startswith("port 0: 1 frame(s) sent, 0 expected") for p in bad)
    assert any(p.startswith("port 1 frame 0 (expect on line 1): byte 0: expected AA, got BB") for p in bad)
    assert any(p.startswith("port 3: 0 frame(s) sent, 1 expected (missing: expect on line(s) 5)") for p in bad)
    assert not any(p.startswith("port 2") for p in bad)


def test_frames_to_ports_the_test_does_not_name_are_ignored():
    steps = parse_stf("packet 0 00\n").steps
    assert compare_outputs(steps, {0}, {9: [b"\x00"]}) == []
