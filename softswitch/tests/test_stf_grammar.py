"""STF text -> steps: every statement the runner implements, the unsupported ones, and bad text."""
import pytest

from softswitch.stf.grammar import (Add, CheckCounter, CliCommand, Expect, Packet, RemoveAll, SetDefault,
                                    StfSyntaxError, Unsupported, Wait, parse_stf)


def one(text):
    steps = parse_stf(text, "t.stf").steps
    assert len(steps) == 1
    return steps[0]


def test_packet_joins_hex_words_and_ignores_comments():
    s = one("packet 3 01 0203 ab   # a comment\n")
    assert s == Packet(1, 3, bytes.fromhex("010203ab"))


def test_packet_without_data_is_an_empty_frame():
    assert one("PACKET 0").data == b""


def test_expect_with_dont_care_nibbles_and_exact_end():
    s = one("expect 2 01 *2 ** $")
    assert (s.port, s.pattern, s.exact_length) == (2, "01*2**", True)
    assert one("expect 2 ab").exact_length is False


def test_expect_without_data_means_any():
    assert one("expect 5") == Expect(1, 5, None)


def test_add_with_priority_ternary_value_action_args_and_id():
    s = one("add test1 503 data.f1:0x****0202 extra$0.h:7 ingress.setb1(val:7, port:3) = A")
    assert s == Add(1, "test1", 503, (("data.f1", "0x****0202"), ("extra$0.h", "7")), "ingress.setb1",
                    (("val", "7"), ("port", "3")), "A")


def test_add_without_priority_with_lpm_prefix_and_no_args():
    s = one("add ipv4_lpm hdr.ipv4.dst:0x0a000000/8 drop()")
    assert (s.priority, s.keys, s.action, s.args, s.entry_id) == (None, (("hdr.ipv4.dst", "0x0a000000/8"),),
                                                                   "drop", (), None)


def test_setdefault_remove_all_and_wait():
    steps = parse_stf("setdefault pipe_t pipe_Reject(rej:0, bar:1)\nremove all\nwait\n").steps
    assert steps == [SetDefault(1, "pipe_t", "pipe_Reject", (("rej", "0"), ("bar", "1"))), RemoveAll(2), Wait(3)]


def test_check_counter_forms():
    assert one("check_counter cnt(10) packets == 2") == CheckCounter(1, "cnt", "10", "packets", "==", 2)
    assert one("check_counter cnt($A) bytes >= 0x40") == CheckCounter(1, "cnt", "$A", "bytes", ">=", 64)
    assert one("check_counter cnt(3)") == CheckCounter(1, "cnt", "3", None, "==", 0)


@pytest.mark.parametrize("text", [
    "mirroring_add 5 4", "mirroring_add_mc 8 3", "mirroring_get 8", "mirroring_delete 8",
    "mc_mgrp_create 1113", "mc_node_create 400 1 2 3", "mc_node_associate 1113 0",
    "register_read cIngress.regfile 1", "register_write cIngress.regfile 5 100", "register_reset cIngress.regfile",
    "counter_read c 1", "counter_write c 1 2 3",
    "meter_set_rates cIngress.meter0 2 0.000005:4 0.00002:5", "meter_array_set_rates m 0.000006:7 0.00008:9",
    "meter_get_rates cIngress.meter0 2",
])
def test_cli_commands_pass_through_word_for_word(text):
    s = one(text)
    assert isinstance(s, CliCommand) and s.text == text


def test_unknown_and_unimplemented_statements_are_unsupported_not_errors():
    s = one("frobnicate 1 2")
    assert isinstance(s, Unsupported) and "frobnicate" in s.why
    assert isinstance(one("no_packet"), Unsupported)
    assert "only 'remove all'" in one("remove t1 3").why


@pytest.mark.parametrize("text, message", [
    ("packet 0 abc", "whole number of bytes"),
    ("packet 0 0g", "hex digits"),
    ("packet x 00", "port number"),
    ("packet 0 00$", "'$' may only end an expect"),
    ("add t k:1", "ACTION(ARGS)"),
    ("add t a()", "no KEY:VALUE"),
    ("add t k:zz a()", "not a number"),
    ("add t k:1 a(p)", "NAME:NUMBER"),
    ("setdefault t u v()", "TABLE ACTION(ARGS)"),
    ("mc_node_create 1", "mc_node_create expects"),
    ("register_write r 1", "register_write expects"),
    ("mirroring_add 1 2 3", "takes 2 argument"),
    ("check_counter c", "NAME(INDEX)"),
    ("wait 3", "no arguments"),
])
def test_malformed_lines_name_file_line_and_problem(text, message):
    with pytest.raises(StfSyntaxError) as e:
        parse_stf("# first line\n" + text, "t.stf")
    assert str(e.value).startswith("t.stf:2:") and message in str(e.value)


def test_ports_and_input_ports():
    test = parse_stf("expect 3 00\npacket 1 00\nexpect 4\n")
    assert test.ports() == {1, 3, 4}
    assert test.input_ports() == {1}
