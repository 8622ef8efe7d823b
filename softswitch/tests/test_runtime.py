"""The simple_switch_CLI command language: every command with good and bad
input, reply texts as simple_switch_CLI prints them. Pure logic, no root."""
import ipaddress

import pytest
from hypothesis import given, settings, strategies as st

from softswitch.control.client import (is_error, parse_counter, parse_handle, parse_meter_rates,
                               parse_node_handle, parse_num_entries, parse_register)
from softswitch.control.commands import RuntimeAPI
from softswitch.control.arguments import ArgError, parse_value
from runtime_fixtures import make_state


@pytest.fixture
def api():
    return RuntimeAPI(make_state())


def ok(api, cmd):
    reply = api.execute(cmd)
    assert not is_error(reply), f"{cmd!r} -> {reply!r}"
    return reply


def err(api, cmd, *fragments):
    reply = api.execute(cmd)
    assert reply.startswith("Error: "), f"{cmd!r} should fail, got {reply!r}"
    for f in fragments:
        assert f in reply, f"{cmd!r}: {f!r} not in {reply!r}"
    return reply


# ---------------------------------------------------------------- values
@pytest.mark.parametrize("text,width,value", [
    ("10", 16, 10), ("0x0800", 16, 0x800), ("0b101", 3, 5), ("10.0.1.2", 32, 0x0A000102),
    ("00:11:22:aa:bb:cc", 48, 0x001122AABBCC), ("2001:db8::1", 128, int(ipaddress.IPv6Address("2001:db8::1"))),
    ("255", 8, 255), ("4294967295", 32, 2**32 - 1)])
def test_parse_value_accepts_cli_formats(text, width, value):
    assert parse_value(text, width) == value


@pytest.mark.parametrize("text,width,msg", [
    ("256", 8, "does not fit in 8 bits"), ("0x200", 9, "does not fit in 9 bits"),
    ("10.0.0.256", 32, "Invalid IPv4"), ("10.0.0", 32, "Invalid IPv4"),
    ("00:11:22:33:44", 48, "Invalid MAC"), ("00:11:22:33:44:zz", 48, "Invalid MAC"),
    ("2001:::1", 128, "Invalid IPv6"), ("abc", 16, "could not cast to integer"),
    ("-1", 8, "negative"), ("1.2.3.4", 16, "could not cast")])
def test_parse_value_rejects_bad_input(text, width, msg):
    with pytest.raises(ArgError, match=msg):
        parse_value(text, width)


# ---------------------------------------------------------------- table_add & friends
def test_table_add_lpm_reply_matches_simple_switch_cli(api):
    reply = ok(api, "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.1.1/32 => 00:00:00:00:01:01 1")
    assert reply.split("\n") == [
        "Adding entry to lpm match table MyIngress.ipv4_lpm",
        "match key:           LPM-0a:00:01:01/32",
        "action:              MyIngress.ipv4_forward",
        "runtime data:        00:00:00:00:01:01\t00:01",
        "Entry has been added with handle 0"]
    assert parse_handle(reply) == 0
    hit, action, args, _ = api.state.table("ipv4_lpm").lookup((0x0A000101,))
    assert hit and action.name == "MyIngress.ipv4_forward" and args == (0x0101, 1)


def test_table_add_short_names_and_all_match_kinds(api):
    assert parse_handle(ok(api, "table_add dmac set_port 00:00:00:00:00:02 => 3")) == 0
    r = ok(api, "table_add acl drop 0x0800&&&0xffff 6 => 10")
    assert "match key:           TERNARY-08:00 &&& ff:ff\tEXACT-06" in r
    r = ok(api, "table_add port_range set_port 1000->2000 => 4 7")
    assert "RANGE-03:e8 -> 07:d0" in r and "Adding entry to range match table port_range" in r
    ok(api, "table_add opt set_port 64 1 => 5 1")
    ok(api, "table_add opt set_port * 1 => 6 2")
    s = api.state
    assert s.table("dmac").lookup((2,))[2] == (3,)
    assert s.table("acl").lookup((0x800, 6))[1].name == "MyIngress.drop"
    assert s.table("acl").lookup((0x800, 6))[3].priority == 10
    assert s.table("port_range").lookup((1500,))[2] == (4,)
    assert s.table("opt").lookup((64, 1))[2] == (5,)
    assert s.table("opt").lookup((65, 1))[2] == (6,)


def test_table_add_without_params_and_without_arrow(api):
    ok(api, "table_add ipv4_lpm drop 10.0.0.0/8 =>")
    ok(api, "table_add ipv4_lpm drop 11.0.0.0/8")
    assert api.state.table("ipv4_lpm").num_entries() == 2


@pytest.mark.parametrize("cmd,fragments", [
    ("table_add", ["Insufficient number of args", "usage: table_add"]),
    ("table_add nope drop 1", ["Invalid table name (nope)"]),
    ("table_add mark_tbl NoAction 1 =>", ["ambiguous", "MyEgress.mark_tbl"]),
    ("table_add ipv4_lpm nope 10.0.0.0/8 =>", ["Table MyIngress.ipv4_lpm has no action nope"]),
    ("table_add ipv4_lpm drop 10.0.0.0/8 1.2.3.4/32 =>", ["needs 1 key fields", "got 2"]),
    ("table_add ipv4_lpm drop =>", ["needs 1 key fields", "got 0"]),
    ("table_add ipv4_lpm drop 10.0.0.0 =>", ["Invalid match key", "use '/'"]),
    ("table_add ipv4_lpm drop 10.0.0.0/40 =>", ["Invalid match key", "0..32"]),
    ("table_add ipv4_lpm drop 10.0.0.0/x =>", ["Invalid match key", "not an integer"]),
    ("table_add ipv4_lpm drop 10.0.0.300/8 =>", ["Invalid match key", "Invalid IPv4 address"]),
    ("table_add ipv4_lpm ipv4_forward 10.0.0.0/8 => 00:00:00:00:00:01", ["needs 2 parameters", "got 1"]),
    ("table_add ipv4_lpm ipv4_forward 10.0.0.0/8 => 00:00:00:00:00:01 512",
     ["Invalid runtime data", "512", "parameter port", "does not fit in 9 bits"]),
    ("table_add ipv4_lpm ipv4_forward 10.0.0.0/8 => 00:00:00:00:01 1", ["Invalid MAC address"]),
    ("table_add dmac set_port 0x1000000000000 => 1", ["does not fit in 48 bits"]),
    ("table_add dmac set_port xyz => 1", ["could not cast to integer"]),
    ("table_add acl drop 0x0800 6 => 1", ["use '&&&'"]),
    ("table_add acl drop 0x0800&&&0xffff 6 =>", ["could not extract a valid priority"]),
    ("table_add acl drop 0x0800&&&0xffff 6 => x", ["could not extract a valid priority"]),
    ("table_add acl drop 0x0800&&&0x1ffff 6 => 1", ["does not fit in 16 bits"]),
    ("table_add port_range set_port 5 => 1 1", ["use '->'"]),
    ("table_add port_range set_port 9->5 => 1 1", ["start is greater than end"]),
    ("table_add opt set_port 1&&&0x0f 1 => 1 1", ["mask must be 0 or all ones"]),
    ("table_add const_tbl set_port 1 => 1", ["Invalid table operation (CONST_ENTRIES)"]),
])
def test_table_add_errors_name_the_problem(api, cmd, fragments):
    err(api, cmd, *fragments)


def test_table_add_duplicate_and_full(api):
    ok(api, "table_add dmac set_port 1 => 1")
    err(api, "table_add dmac set_port 1 => 2", "Invalid table operation (DUPLICATE_ENTRY)", "handle 0")
    for i in range(2, 5):
        ok(api, f"table_add dmac set_port {i} => 1")
    err(api, "table_add dmac set_port 9 => 1", "Invalid table operation (TABLE_FULL)", "size")
    assert api.execute("table_num_entries dmac") == "4"


def test_table_set_default_and_reset_default(api):
    r = ok(api, "table_set_default ipv4_lpm ipv4_forward 00:00:00:00:00:09 7")
    assert r.split("\n") == ["Setting default action of ipv4_lpm",
                             "action:              ipv4_forward",
                             "runtime data:        00:00:00:00:00:09\t00:07"]
    assert api.state.table("ipv4_lpm").lookup((1,)) [1:3] == (
        api.state.table("ipv4_lpm").actions["MyIngress.ipv4_forward"], (9, 7))
    ok(api, "table_reset_default ipv4_lpm")
    assert api.state.table("ipv4_lpm").lookup((1,))[1].name == "MyIngress.drop"
    err(api, "table_set_default ipv4_lpm", "Insufficient number of args")
    err(api, "table_set_default ipv4_lpm ipv4_forward 1", "needs 2 parameters")
    err(api, "table_set_default ipv4_lpm bogus", "has no action bogus")
    err(api, "table_set_default const_tbl NoAction", "DEFAULT_ACTION_IS_CONST")
    err(api, "table_reset_default const_tbl", "DEFAULT_ACTION_IS_CONST")


def test_table_modify_and_delete(api):
    h = parse_handle(ok(api, "table_add dmac set_port 5 => 1"))
    assert ok(api, f"table_modify dmac set_port {h} 4") == f"Modifying entry {h} for exact match table dmac"
    assert api.state.table("dmac").lookup((5,))[2] == (4,)
    ok(api, f"table_modify dmac drop {h}")
    assert api.state.table("dmac").lookup((5,))[1].name == "MyIngress.drop"
    ok(api, f"table_modify dmac set_port {h} => 2")          # '=>' tolerated, as simple_switch_CLI
    err(api, "table_modify dmac set_port 99 1", "Invalid table operation (INVALID_HANDLE)")
    err(api, "table_modify dmac set_port x 1", "Bad format for entry handle")
    err(api, "table_modify dmac set_port 0", "needs 1 parameters")
    err(api, "table_modify dmac", "Insufficient number of args")
    assert ok(api, f"table_delete dmac {h}") == f"Deleting entry {h} from dmac"
    assert api.state.table("dmac").lookup((5,))[0] is False
    err(api, f"table_delete dmac {h}", "INVALID_HANDLE")
    err(api, "table_delete dmac", "Wrong number of args, expected 2 but got 1")
    err(api, "table_delete dmac zz", "Bad format for entry handle")
    h2 = parse_handle(ok(api, "table_add dmac set_port 6 => 1"))
    assert h2 == (1 << 24)                                  # slot 0 reused, version 1
    err(api, "table_delete dmac 0", "EXPIRED_HANDLE")


def test_table_clear_num_entries_dump(api):
    ok(api, "table_add acl set_port 0x0800&&&0xffff 6 => 3 5")
    ok(api, "table_add acl drop 0&&&0 0 => 1")
    assert parse_num_entries(ok(api, "table_num_entries acl")) == 2
    dump = ok(api, "table_dump acl").split("\n")
    assert dump[:10] == [
        "==========", "TABLE ENTRIES", "**********", "Dumping entry 0x0", "Match key:",
        "* hdr.ethernet.etherType: TERNARY   0800 &&& ffff",
        "* hdr.ipv4.protocol     : EXACT     06",
        "Priority: 5", "Action entry: MyIngress.set_port - 0003", "**********"]
    assert dump[-4:] == ["==========", "Dumping default entry", "Action entry: NoAction - ", "=========="]
    one = ok(api, "table_dump_entry acl 1")
    assert "Dumping entry 0x1" in one and "Priority: 1" in one
    err(api, "table_dump_entry acl 7", "INVALID_HANDLE")
    assert ok(api, "table_clear acl") == ""
    assert api.execute("table_num_entries acl") == "0"
    err(api, "table_clear", "Wrong number of args")
    err(api, "table_num_entries nope", "Invalid table name (nope)")
    err(api, "table_dump nope", "Invalid table name (nope)")
    err(api, "table_clear const_tbl", "CONST_ENTRIES")


def test_show_tables_actions_and_table_info(api):
    tables = ok(api, "show_tables").split("\n")
    assert "MyIngress.ipv4_lpm             [implementation=None, mk=hdr.ipv4.dstAddr(lpm, 32)]" in tables
    assert len(tables) == len(api.state.tables)
    actions = ok(api, "show_actions").split("\n")
    assert "MyIngress.ipv4_forward         [dstAddr(48),\tport(9)]" in actions
    assert "NoAction                       []" in actions
    info = ok(api, "table_info ipv4_lpm").split("\n")
    assert info[1] == "*" * 80 and "size: 8" in info[-1] and "default: MyIngress.drop" in info[-1]
    assert ok(api, "table_show_actions dmac").split("\n")[0].startswith("MyIngress.drop")
    err(api, "show_tables extra", "Wrong number of args")
    err(api, "table_info", "Wrong number of args")


# ---------------------------------------------------------------- registers
def test_register_commands(api):
    assert ok(api, "register_write agg 2 123456") == ""
    r = ok(api, "register_read agg 2")
    assert r == "agg[2]= 123456" and parse_register(r) == 123456
    ok(api, "register_write MyIngress.agg 0 0xff")
    assert parse_register(ok(api, "register_read agg")) == [255, 0, 123456, 0]
    ok(api, "register_write signed_reg 0 -5")
    assert ok(api, "register_read signed_reg 0") == "signed_reg[0]= -5"
    ok(api, "register_reset agg")
    assert api.state.register("agg").values == [0, 0, 0, 0]
    err(api, "register_write small 0 256", "does not fit register MyIngress.small")
    err(api, "register_write agg 4 1", "Invalid register operation (INVALID_INDEX)", "0..3")
    err(api, "register_read agg 4", "INVALID_INDEX")
    err(api, "register_read agg -1", "INVALID_INDEX")
    err(api, "register_read nope 0", "Invalid register name (nope)")
    err(api, "register_read agg x", "Bad format for index")
    err(api, "register_write agg 0 x", "Bad format for value")
    err(api, "register_write agg 0", "Wrong number of args")
    err(api, "register_read", "Insufficient number of args")
    err(api, "register_reset", "Wrong number of args")


# ---------------------------------------------------------------- counters
def test_counter_commands(api):
    c = api.state.counter("pkt_counter")
    c.count(1, 64)
    c.count(1, 100)
    r = ok(api, "counter_read pkt_counter 1")
    assert r == "pkt_counter[1]= (164 bytes, 2 packets)"
    assert parse_counter(r) == (2, 164)
    assert ok(api, "counter_write pkt_counter 0 5 500") == "pkt_counter[0] has been updated"
    assert c.read(0) == (5, 500)
    assert ok(api, "counter_reset pkt_counter") == ""
    assert c.read(1) == (0, 0)
    err(api, "counter_read pkt_counter 4", "Invalid counter operation (INVALID_INDEX)")
    err(api, "counter_read nope 0", "Invalid counter name (nope)")
    err(api, "counter_read pkt_counter", "Wrong number of args")
    err(api, "counter_read pkt_counter z", "Bad format for index")
    err(api, "counter_write pkt_counter 0 -1 0", ">= 0")


def test_direct_counter_by_entry_handle(api):
    h = parse_handle(ok(api, "table_add counted NoAction 3 =>"))
    api.state.table("counted").lookup((3,))[3].packets = 9
    r = ok(api, f"counter_read dcount {h}")
    assert r.split("\n") == ["this is the direct counter for table MyIngress.counted",
                             f"dcount[{h}]= (0 bytes, 9 packets)"]
    ok(api, "counter_reset dcount")
    assert parse_counter(ok(api, f"counter_read dcount {h}")).packets == 0
    err(api, "counter_read dcount 5", "no entry with handle 5")


# ---------------------------------------------------------------- meters
def test_meter_commands(api):
    assert ok(api, "meter_set_rates pmeter 1 0.5:10 1:20") == ""
    r = ok(api, "meter_get_rates pmeter 1")
    assert r == "0: info rate = 0.5, burst size = 10\n1: info rate = 1.0, burst size = 20"
    assert parse_meter_rates(r) == [(0.5, 10), (1.0, 20)]
    assert ok(api, "meter_get_rates pmeter 0") == ""          # unconfigured
    ok(api, "meter_array_set_rates pmeter 0.1:1 0.2:2")
    assert parse_meter_rates(ok(api, "meter_get_rates pmeter 0")) == [(0.1, 1), (0.2, 2)]
    err(api, "meter_set_rates pmeter 0 0.5:10", "expected 2 but got 1")
    err(api, "meter_set_rates pmeter 0 1:10 0.5:10", "Invalid meter operation (INVALID_INFO_RATE_VALUE)")
    err(api, "meter_set_rates pmeter 0 a:1 b:2", "Error while parsing rates")
    err(api, "meter_set_rates pmeter 0 1 2", "Error while parsing rates")
    err(api, "meter_set_rates pmeter 0 -1:1 2:2", "negative")
    err(api, "meter_set_rates pmeter 2 0.1:1 0.2:2", "INVALID_INDEX")
    err(api, "meter_set_rates nope 0 0.1:1 0.2:2", "Invalid meter name (nope)")
    err(api, "meter_get_rates pmeter", "Wrong number of args")


def test_direct_meter_by_entry_handle(api):
    h = parse_handle(ok(api, "table_add metered NoAction 1 =>"))
    ok(api, f"meter_set_rates dmeter {h} 0.001:1 0.002:2")
    assert parse_meter_rates(ok(api, f"meter_get_rates dmeter {h}")) == [(0.001, 1), (0.002, 2)]
    err(api, "meter_set_rates dmeter 9 0.001:1 0.002:2", "no entry with handle 9")


# ---------------------------------------------------------------- multicast
def test_multicast_commands(api):
    assert ok(api, "mc_mgrp_create 1") == "Creating multicast group 1"
    r = ok(api, "mc_node_create 0 1 2 5")
    assert r.split("\n") == ["Creating node with rid 0 and with port map 100110",
                             "node was created with handle 0"]
    assert parse_node_handle(r) == 0
    assert parse_node_handle(ok(api, "mc_node_create 1 3")) == 1
    assert ok(api, "mc_node_associate 1 0") == "Associating node 0 to multicast group 1"
    ok(api, "mc_node_associate 1 1")
    assert api.state.pre.replicas(1) == [(1, 0), (2, 0), (5, 0), (3, 1)]
    dump = ok(api, "mc_dump").split("\n")
    assert "mgrp(1)" in dump and "  -> (L1h=0, rid=0) -> (ports=[1, 2, 5], lags=[])" in dump
    assert ok(api, "mc_node_update 1 4 6") == "Updating node 1 with port map 1010000"
    assert api.state.pre.replicas(1)[-2:] == [(4, 1), (6, 1)]
    assert ok(api, "mc_node_dissociate 1 1") == "Dissociating node 1 from multicast group 1"
    assert ok(api, "mc_node_destroy 1") == "Destroying node 1"
    assert ok(api, "mc_mgrp_destroy 1") == "Destroying multicast group 1"
    assert api.state.pre.replicas(1) == []


@pytest.mark.parametrize("cmd,fragments", [
    ("mc_mgrp_create", ["Wrong number of args"]),
    ("mc_mgrp_create x", ["Bad format for multicast group id"]),
    ("mc_mgrp_create 70000", ["Invalid PRE operation (INVALID_MGID)"]),
    ("mc_mgrp_destroy 9", ["Invalid PRE operation (INVALID_MGID)", "does not exist"]),
    ("mc_node_create x 1", ["Bad format for rid"]),
    ("mc_node_create 0 1 a", ["'a' is not a valid port number"]),
    ("mc_node_create 0 1 1", ["duplicate port number '1'"]),
    ("mc_node_create 0 -3", ["not a valid port number"]),
    ("mc_node_create 0 600", ["port 600"]),
    ("mc_node_associate 1 0", ["INVALID_MGID"]),
    ("mc_node_dissociate 1", ["Wrong number of args"]),
    ("mc_node_destroy 4", ["Invalid PRE operation (INVALID_L1_HANDLE)"]),
    ("mc_node_update 4 1", ["INVALID_L1_HANDLE"]),
])
def test_multicast_errors(api, cmd, fragments):
    err(api, cmd, *fragments)


def test_multicast_association_errors(api):
    ok(api, "mc_mgrp_create 1")
    ok(api, "mc_node_create 0 1")
    err(api, "mc_node_associate 1 5", "INVALID_L1_HANDLE")
    ok(api, "mc_node_associate 1 0")
    err(api, "mc_node_associate 1 0", "already associated")
    err(api, "mc_mgrp_create 1", "already exists")
    ok(api, "mc_mgrp_create 2")
    err(api, "mc_node_dissociate 2 0", "not associated with group 2")


# ---------------------------------------------------------------- mirroring, reset, help
def test_mirroring_commands(api):
    assert ok(api, "mirroring_add 5 3") == ""
    assert ok(api, "mirroring_get 5") == "MirroringSessionConfig(port=3, mgid=None)"
    assert api.state.mirroring.sessions == {5: 3}
    ok(api, "mirroring_delete 5")
    err(api, "mirroring_get 5", "Invalid mirroring operation (SESSION_NOT_FOUND)")
    err(api, "mirroring_delete 5", "SESSION_NOT_FOUND")
    err(api, "mirroring_add 5", "Wrong number of args")
    err(api, "mirroring_add x 1", "Bad format for mirror_id")
    err(api, "mirroring_add 5 999", "egress port 999")
    err(api, "mirroring_add 40000 1", "0..32767")


def test_reset_state_command(api):
    ok(api, "table_add dmac set_port 1 => 1")
    ok(api, "register_write agg 0 9")
    ok(api, "mc_mgrp_create 3")
    ok(api, "mirroring_add 1 2")
    assert ok(api, "reset_state") == ""
    assert api.execute("table_num_entries dmac") == "0"
    assert api.execute("register_read agg 0") == "agg[0]= 0"
    assert api.state.pre.groups == {} and api.state.mirroring.sessions == {}
    err(api, "reset_state now", "Wrong number of args")


def test_help_unknown_and_blank(api):
    h = ok(api, "help")
    for c in ("table_add", "register_read", "mc_node_create", "mirroring_add", "reset_state"):
        assert c in h
    assert "table_add <table name> <action name> <match fields> => <action parameters> [priority]" in \
        ok(api, "help table_add")
    err(api, "help nope", "unknown command")
    err(api, "frobnicate 1 2", "Unknown command 'frobnicate'")
    assert api.execute("") == "" and api.execute("   ") == "" and api.execute("# comment") == ""


def test_internal_errors_become_replies_not_exceptions(api, monkeypatch):
    def boom(args):
        raise RuntimeError("kaput")
    monkeypatch.setitem(api.commands, "show_tables", boom)
    err(api, "show_tables", "internal error", "kaput")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(
    ["table_add", "table_modify", "table_delete", "table_set_default", "register_write", "register_read",
     "counter_read", "meter_set_rates", "mc_node_create", "mc_node_associate", "mirroring_add",
     "ipv4_lpm", "acl", "agg", "=>", "0x", "1", "-1", "10.0.0.1/33", "1->", "&&&", "a:b", "*", "\x00",
     "99999999999999999999", "drop", "set_port", "pmeter", "1.5:2"]), max_size=8))
def test_random_commands_never_raise(tokens):
    api = RuntimeAPI(make_state())
    reply = api.execute(" ".join(tokens))
    assert isinstance(reply, str)


def test_table_dump_entry_from_key(api):
    ok(api, "table_add ipv4_lpm drop 10.0.0.0/8 =>")
    ok(api, "table_add acl set_port 0x0800&&&0xffff 6 => 3 5")
    assert "Dumping entry 0x0" in ok(api, "table_dump_entry_from_key ipv4_lpm 10.1.2.3/8")  # host bits ignored
    assert "Priority: 5" in ok(api, "table_dump_entry_from_key acl 0x0800&&&0xffff 6 5")
    err(api, "table_dump_entry_from_key acl 0x0800&&&0xffff 6 4", "no entry with this match key and priority 4")
    err(api, "table_dump_entry_from_key ipv4_lpm 10.0.0.0/16", "no entry with this match key")
    err(api, "table_dump_entry_from_key ipv4_lpm", "needs 1 key fields")
    err(api, "table_dump_entry_from_key acl 0x0800&&&0xffff 6", "needs 2 key fields", "got 1")  # 6 taken as priority
    err(api, "table_dump_entry_from_key acl 0x0800&&&0xffff 6 x", "could not extract a valid priority")


@pytest.mark.parametrize("cmd,why", [
    ("act_prof_create_member p a", "action profiles"), ("table_set_timeout t 0 10", "ageing"),
    ("pvs_add s 1", "value sets"), ("load_new_config_file x.json", "restart it"),
    ("set_queue_rate 100", "link emulation"), ("shell ls", "not allowed"),
    ("mirroring_add_mc 1 2", "mirroring_add <id> <port>")])
def test_known_unsupported_simple_switch_commands_say_why(api, cmd, why):
    err(api, cmd, "is not supported", why)


def test_every_command_of_the_issue_is_implemented(api):
    required = """table_add table_set_default table_modify table_delete table_clear table_dump table_num_entries
        table_info register_read register_write register_reset counter_read counter_reset meter_set_rates
        meter_get_rates mc_mgrp_create mc_node_create mc_node_associate mc_node_dissociate mc_mgrp_destroy
        mc_node_destroy mc_dump mirroring_add mirroring_delete mirroring_get show_tables show_actions
        reset_state help""".split()
    assert not [c for c in required if c not in api.commands]
    assert all(api.commands[c].__doc__ for c in api.commands)
