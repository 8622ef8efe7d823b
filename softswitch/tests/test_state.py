"""Live state: tables (BMv2 match semantics), registers, counters, meters, PRE,
mirroring, name resolution. Pure logic, no root."""
import ipaddress

import pytest
from hypothesis import given, settings, strategies as st

from softswitch.runtime.state import (GREEN, RED, YELLOW, ActionSpec, Counter, KeySpec, Meter, Mirroring,
                              PRE, Register, StateError, Table, TableError)
from runtime_fixtures import make_state

A = ActionSpec("set", [("v", 8)])
N = ActionSpec("NoAction")


def table(keys, size=None, **kw):
    return Table("T", [KeySpec(f"k{i}", kind, w) for i, (kind, w) in enumerate(keys)], [A, N],
                 size=size, default_action=N, **kw)


# ---------------------------------------------------------------- exact
def test_exact_hit_miss_and_result_tuple():
    t = table([("exact", 16), ("exact", 8)])
    h = t.add([0x800, 6], "set", [1])
    hit, action, args, entry = t.lookup((0x800, 6))
    assert (hit, action.name, args, entry.handle) == (True, "set", (1,), h)
    assert t.lookup((0x800, 17)) == (False, N, (), None)
    # the packet path gets the prepared tuple, not a new one
    assert t.lookup((0x800, 6)) is t.lookup((0x800, 6))


def test_exact_duplicate_width_and_count_errors():
    t = table([("exact", 8)])
    t.add([5], "set", [1])
    with pytest.raises(TableError) as e:
        t.add([5], "set", [2])
    assert e.value.code == "DUPLICATE_ENTRY"
    with pytest.raises(TableError, match="does not fit bit<8>"):
        t.add([256], "set", [1])
    with pytest.raises(TableError, match="has 1 match keys, got 2"):
        t.add([1, 2], "set", [1])
    with pytest.raises(TableError, match="needs 1 parameters"):
        t.add([1], "set", [])
    with pytest.raises(TableError, match="does not fit parameter v"):
        t.add([1], "set", [300])
    with pytest.raises(TableError) as e:
        t.add([1], "nope", [1])
    assert e.value.code == "INVALID_ACTION_NAME"
    assert t.num_entries() == 1


def test_table_size_is_enforced():
    t = table([("exact", 8)], size=2)
    t.add([1], "set", [1])
    t.add([2], "set", [1])
    with pytest.raises(TableError) as e:
        t.add([3], "set", [1])
    assert e.value.code == "TABLE_FULL"
    t.delete(0)
    t.add([3], "set", [1])          # room again after a delete
    assert t.num_entries() == 2


def test_handles_reuse_lowest_slot_with_version_like_bmv2():
    t = table([("exact", 8)])
    assert [t.add([i], "set", [i]) for i in range(3)] == [0, 1, 2]
    t.delete(1)
    h = t.add([9], "set", [9])
    assert h == (1 << 24) | 1
    with pytest.raises(TableError) as e:
        t.delete(1)                 # the old handle of that slot
    assert e.value.code == "EXPIRED_HANDLE"
    with pytest.raises(TableError) as e:
        t.delete(77)
    assert e.value.code == "INVALID_HANDLE"
    assert t.lookup((9,))[2] == (9,)
    assert t.lookup((1,))[0] is False


def test_modify_delete_clear_and_default():
    t = table([("exact", 8)])
    h = t.add([4], "set", [1])
    t.modify(h, "set", [2])
    assert t.lookup((4,))[2] == (2,)
    t.modify(h, "NoAction", [])
    assert t.lookup((4,))[1] is N
    t.set_default("set", [7])
    assert t.lookup((5,)) == (False, A, (7,), None)
    t.delete(h)
    assert t.lookup((4,)) == (False, A, (7,), None)
    t.add([4], "set", [1])
    t.clear()
    assert t.num_entries() == 0 and t.entries() == []
    t.reset()
    assert t.lookup((4,)) == (False, N, (), None)   # program default back


def test_const_default_and_const_entries():
    t = table([("exact", 8)], const_default=True, const_entries=True)
    t.add_const([1], "set", [5])
    assert t.lookup((1,))[2] == (5,)
    for op in (lambda: t.add([2], "set", [1]), lambda: t.modify(0, "set", [1]),
               lambda: t.delete(0), t.clear):
        with pytest.raises(TableError, match="const entries"):
            op()
    with pytest.raises(TableError) as e:
        t.set_default("set", [1])
    assert e.value.code == "DEFAULT_ACTION_IS_CONST"
    t.reset()
    assert t.lookup((1,))[2] == (5,)   # program's entries survive reset_state


def test_defaultonly_and_tableonly_actions():
    t = table([("exact", 8)], default_only={"NoAction"}, table_only={"set"})
    with pytest.raises(TableError, match="defaultonly"):
        t.add([1], "NoAction", [])
    with pytest.raises(TableError, match="tableonly"):
        t.set_default("set", [1])


# ---------------------------------------------------------------- lpm
def ip(s):
    return int(ipaddress.IPv4Address(s))


def test_lpm_longest_prefix_wins_and_prefix_is_canonicalised():
    t = table([("lpm", 32)])
    t.add([(ip("0.0.0.0"), 0)], "set", [0])
    t.add([(ip("10.0.0.0"), 8)], "set", [8])
    t.add([(ip("10.0.1.77"), 24)], "set", [24])   # host bits dropped, as BMv2
    t.add([(ip("10.0.1.5"), 32)], "set", [32])
    assert t.lookup((ip("10.0.1.5"),))[2] == (32,)
    assert t.lookup((ip("10.0.1.6"),))[2] == (24,)
    assert t.lookup((ip("10.9.9.9"),))[2] == (8,)
    assert t.lookup((ip("11.0.0.1"),))[2] == (0,)
    assert t.entries()[2].match == ((ip("10.0.1.0"), 24),)
    with pytest.raises(TableError) as e:
        t.add([(ip("10.0.1.0"), 24)], "set", [1])
    assert e.value.code == "DUPLICATE_ENTRY"
    with pytest.raises(TableError, match="prefix length 33"):
        t.add([(ip("10.0.1.0"), 33)], "set", [1])
    t.delete(3)
    assert t.lookup((ip("10.0.1.5"),))[2] == (24,)


def test_lpm_with_exact_key():
    t = table([("exact", 8), ("lpm", 32)])
    t.add([1, (ip("10.0.0.0"), 8)], "set", [1])
    t.add([2, (ip("10.1.0.0"), 16)], "set", [2])
    assert t.lookup((1, ip("10.1.2.3")))[2] == (1,)
    assert t.lookup((2, ip("10.1.2.3")))[2] == (2,)
    assert t.lookup((2, ip("10.2.0.0")))[0] is False


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**16 - 1), st.integers(0, 16)), max_size=30),
       st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=30))
def test_lpm_matches_reference(prefixes, keys):
    t = table([("lpm", 16)], size=100)
    ref = {}
    for v, p in prefixes:
        mask = ((1 << p) - 1) << (16 - p)
        if (v & mask, p) in ref:
            continue
        ref[(v & mask, p)] = t.add([(v, p)], "set", [p])
    for k in keys:
        best = max((p for (v, p) in ref if k & (((1 << p) - 1) << (16 - p)) == v), default=None)
        hit, _, args, e = t.lookup((k,))
        assert hit == (best is not None)
        if hit:
            assert e.handle == ref[(e.match[0][0], best)] and args == (best,)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 255), st.integers(0, 8), st.integers(0, 1)),
                max_size=30),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 255), st.integers(0, 1)), min_size=1, max_size=30))
def test_lpm_between_exact_keys_matches_reference(entries, keys):
    t = table([("exact", 2), ("lpm", 8), ("exact", 1)], size=100)
    ref = {}
    for a, v, p, b in entries:
        mask = ((1 << p) - 1) << (8 - p)
        if (a, v & mask, p, b) not in ref:
            ref[(a, v & mask, p, b)] = t.add([a, (v, p), b], "set", [p])
    for a, k, b in keys:
        cands = [(p, h) for (ea, ev, p, eb), h in ref.items()
                 if ea == a and eb == b and k & (((1 << p) - 1) << (8 - p)) == ev]
        hit, _, _, e = t.lookup((a, k, b))
        assert hit == bool(cands)
        if hit:
            assert e.handle == max(cands)[1]


# ---------------------------------------------------------------- ternary / range / optional
def test_ternary_lowest_priority_number_wins_ties_go_to_lowest_handle():
    t = table([("ternary", 16)])
    assert t.needs_priority and t.match_type == "ternary"
    t.add([(0x0800, 0xFFFF)], "set", [1], priority=10)
    t.add([(0x0000, 0x0000)], "set", [2], priority=5)     # catch-all, better priority
    assert t.lookup((0x0800,))[2] == (2,)
    t.add([(0x0800, 0xFF00)], "set", [3], priority=1)
    assert t.lookup((0x08AA,))[2] == (3,)
    t2 = table([("ternary", 16)])
    t2.add([(0, 0)], "set", [1], priority=3)
    t2.add([(0x800, 0xFFFF)], "set", [2], priority=3)
    assert t2.lookup((0x800,))[2] == (1,)                 # same priority: first handle


def test_ternary_duplicates_need_same_priority_and_priority_is_required():
    t = table([("ternary", 8)])
    t.add([(0x12, 0xF0)], "set", [1], priority=1)
    with pytest.raises(TableError) as e:
        t.add([(0x1F, 0xF0)], "set", [1], priority=1)     # same masked key
    assert e.value.code == "DUPLICATE_ENTRY"
    t.add([(0x10, 0xF0)], "set", [1], priority=2)         # other priority: allowed
    with pytest.raises(TableError, match="needs a priority"):
        t.add([(1, 0xFF)], "set", [1])


def test_range_bounds_are_inclusive():
    t = table([("range", 16)])
    assert t.match_type == "range"
    t.add([(1000, 2000)], "set", [1], priority=2)
    t.add([(0, 65535)], "set", [2], priority=9)
    assert [t.lookup((k,))[2] for k in (999, 1000, 2000, 2001)] == [(2,), (1,), (1,), (2,)]
    with pytest.raises(TableError, match="empty"):
        t.add([(5, 4)], "set", [1], priority=1)


def test_optional_value_or_wildcard():
    t = table([("optional", 8), ("exact", 8)])
    t.add([(64, 0xFF), 1], "set", [1], priority=1)
    t.add([(0, 0), 1], "set", [2], priority=2)
    assert t.lookup((64, 1))[2] == (1,)
    assert t.lookup((63, 1))[2] == (2,)
    assert t.lookup((64, 2))[0] is False
    with pytest.raises(TableError, match="wildcard"):
        t.add([(1, 0x0F), 1], "set", [1], priority=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255),
                          st.integers(0, 255), st.integers(0, 4)), max_size=25),
       st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), min_size=1, max_size=25))
def test_ternary_range_matches_reference(entries, keys):
    """Against a brute-force model of BMv2's EntryList::lookup."""
    t = table([("ternary", 8), ("range", 8)], size=100)
    model = []
    for v, m, lo, hi, prio in entries:
        lo, hi = min(lo, hi), max(lo, hi)
        try:
            h = t.add([(v, m), (lo, hi)], "set", [prio], priority=prio)
        except TableError as e:
            assert e.code == "DUPLICATE_ENTRY"
            continue
        model.append((prio, h & 0xFFFFFF, v & m, m, lo, hi, h))
    for k0, k1 in keys:
        matching = sorted(x for x in model if k0 & x[3] == x[2] and x[4] <= k1 <= x[5])
        hit, _, _, e = t.lookup((k0, k1))
        assert hit == bool(matching)
        if hit:
            assert e.handle == matching[0][6]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 15),
                          st.integers(0, 4095), st.integers(0, 12), st.integers(0, 3)), max_size=25),
       st.lists(st.tuples(st.integers(0, 255), st.integers(0, 15), st.integers(0, 4095)),
                min_size=1, max_size=25))
def test_packed_ternary_exact_lpm_matches_reference(entries, keys):
    """Tables without range keys take the packed-key path: same answers as a
    brute-force model, including after deletes."""
    t = table([("ternary", 8), ("exact", 4), ("lpm", 12)], size=100)
    model = {}
    for v, m, x, p, plen, prio in entries:
        pm = ((1 << plen) - 1) << (12 - plen)
        try:
            h = t.add([(v, m), x, (p, plen)], "set", [prio], priority=prio)
        except TableError as e:
            assert e.code == "DUPLICATE_ENTRY"
            continue
        model[h] = (prio, h & 0xFFFFFF, v & m, m, x, p & pm, pm)
    for i, h in enumerate(list(model)):
        if i % 3 == 0:
            t.delete(h)
            del model[h]
    for k0, k1, k2 in keys:
        matching = sorted((x[0], x[1], h) for h, x in model.items()
                          if k0 & x[3] == x[2] and k1 == x[4] and k2 & x[6] == x[5])
        hit, _, _, e = t.lookup((k0, k1, k2))
        assert hit == bool(matching)
        if hit:
            assert e.handle == matching[0][2]


def test_lpm_in_ternary_table_acts_as_mask():
    t = table([("lpm", 32), ("ternary", 8)])
    t.add([(ip("10.0.0.0"), 8), (0, 0)], "set", [1], priority=2)
    t.add([(ip("10.1.0.0"), 16), (6, 0xFF)], "set", [2], priority=1)
    assert t.lookup((ip("10.1.0.1"), 6))[2] == (2,)
    assert t.lookup((ip("10.1.0.1"), 17))[2] == (1,)


# ---------------------------------------------------------------- registers, counters
def test_register_masks_on_write_and_checks_index():
    r = Register("r", 3, 8)
    r.write(0, 0x1FF)
    assert r.read(0) == 0xFF
    r.write(1, -1)
    assert r.values[1] == 255
    s = Register("s", 1, 8, signed=True)
    s.write(0, 200)
    assert s.read(0) == -56
    with pytest.raises(StateError) as e:
        r.read(3)
    assert e.value.code == "INVALID_INDEX" and "0..2" in e.value.message
    held = r.values
    r.reset()
    assert held == [0, 0, 0]      # reset in place: compiled code may hold the list


def test_counter_and_direct_counter():
    c = Counter("c", 2)
    c.count(1, 100)
    c.count(1, 60)
    assert c.read(1) == (2, 160)
    with pytest.raises(StateError):
        c.read(2)
    c.reset()
    assert c.read(1) == (0, 0)
    st_ = make_state()
    tbl = st_.table("counted")
    h = tbl.add([1], "NoAction", [])
    tbl.lookup((1,))[3].packets += 3
    assert st_.counter("dcount").read(h) == (3, 0)
    with pytest.raises(StateError, match="no entry with handle 5"):
        st_.counter("dcount").read(5)


# ---------------------------------------------------------------- meters
def test_meter_unconfigured_is_green_and_two_rate_three_color():
    m = Meter("m", 1, "packets")
    assert m.execute(0, 100, 0) == GREEN
    # CIR 1 packet / 1000 us, CBS 2; PIR 2 packets / 1000 us, PBS 3
    m.set_rates(0, [(0.001, 2), (0.002, 3)])
    colors = [m.execute(0, 64, 0) for _ in range(4)]
    # peak bucket 3 -> 3 pass it; committed bucket 2 -> the third is yellow; fourth red
    assert colors == [GREEN, GREEN, YELLOW, RED]
    # after 1000 us: +2 peak tokens, +1 committed token
    assert [m.execute(0, 64, 1000) for _ in range(3)] == [GREEN, YELLOW, RED]
    assert m.get_rates(0) == [(0.001, 2), (0.002, 3)]


def test_byte_meter_uses_packet_length():
    m = Meter("m", 1, "bytes")
    m.set_rates(0, [(1.0, 1500), (2.0, 3000)])   # 1 and 2 bytes per us
    assert m.execute(0, 1500, 0) == GREEN
    assert m.execute(0, 1500, 0) == YELLOW        # committed bucket empty
    assert m.execute(0, 1, 0) == RED              # peak bucket empty too
    assert m.execute(0, 1500, 1500) == GREEN      # refilled at 1 B/us


def test_meter_rate_validation():
    m = Meter("m", 2, "packets")
    with pytest.raises(StateError) as e:
        m.set_rates(0, [(0.002, 1), (0.001, 1)])
    assert e.value.code == "INVALID_INFO_RATE_VALUE"
    with pytest.raises(StateError) as e:
        m.set_rates(0, [(0.001, 1)])
    assert e.value.code == "BAD_RATES_LIST"
    with pytest.raises(StateError) as e:
        m.set_rates(2, [(0.001, 1), (0.002, 1)])
    assert e.value.code == "INVALID_INDEX"


def test_direct_meter_cell_per_entry():
    s = make_state()
    t = s.table("metered")
    h = t.add([1], "NoAction", [])
    dm = s.meter("dmeter")
    dm.set_rates(h, [(0.0, 1), (0.0, 1)])
    e = t.lookup((1,))[3]
    assert [dm.execute_entry(e, 64, 0) for _ in range(2)] == [GREEN, RED]
    assert dm.execute_entry(None, 64, 0) == GREEN


# ---------------------------------------------------------------- PRE, mirroring
def test_pre_replicas_in_bmv2_order_and_cache_invalidation():
    p = PRE()
    p.mgrp_create(1)
    n0 = p.node_create(7, [3, 1])
    n1 = p.node_create(8, [2])
    p.associate(1, n1)
    p.associate(1, n0)
    assert p.replicas(1) == [(2, 8), (1, 7), (3, 7)]
    p.node_update(n0, [4])
    assert p.replicas(1) == [(2, 8), (4, 7)]
    p.dissociate(1, n1)
    assert p.replicas(1) == [(4, 7)]
    p.node_destroy(n0)
    assert p.replicas(1) == []
    assert p.replicas(99) == []
    with pytest.raises(StateError) as e:
        p.associate(2, n1)
    assert e.value.code == "INVALID_MGID"
    with pytest.raises(StateError) as e:
        p.associate(1, 42)
    assert e.value.code == "INVALID_L1_HANDLE"
    with pytest.raises(StateError, match="already exists"):
        p.mgrp_create(1)
    with pytest.raises(StateError, match="port 600"):
        p.node_create(1, [600])
    p.associate(1, n1)
    with pytest.raises(StateError, match="already associated"):
        p.associate(1, n1)
    p.mgrp_destroy(1)
    assert p.replicas(1) == [] and p.node_group == {}


def test_mirroring_sessions():
    m = Mirroring()
    m.add(5, 3)
    assert m.get(5) == 3 and m.sessions == {5: 3}
    m.delete(5)
    with pytest.raises(StateError) as e:
        m.get(5)
    assert e.value.code == "SESSION_NOT_FOUND"
    with pytest.raises(StateError):
        m.add(5, 512)


# ---------------------------------------------------------------- names, reset
def test_suffix_name_lookup_like_simple_switch_cli():
    s = make_state()
    assert s.table("ipv4_lpm") is s.tables["MyIngress.ipv4_lpm"]
    assert s.table("MyIngress.ipv4_lpm") is s.tables["MyIngress.ipv4_lpm"]
    with pytest.raises(KeyError, match="ambiguous, could be MyEgress.mark_tbl, MyIngress.mark_tbl"):
        s.table("mark_tbl")
    assert s.table("MyEgress.mark_tbl").name == "MyEgress.mark_tbl"
    with pytest.raises(KeyError, match=r"Invalid table name \(nope\)"):
        s.table("nope")
    with pytest.raises(KeyError, match="Invalid register name"):
        s.register("lpm")
    assert s.register("agg").width == 32
    # a suffix must end at a dot boundary
    with pytest.raises(KeyError):
        s.table("pv4_lpm")


def test_reset_state_clears_everything_but_program():
    s = make_state()
    s.table("dmac").add([1], "set_port", [2])
    s.table("dmac").set_default("set_port", [1])
    s.register("agg").write(1, 5)
    s.counter("pkt_counter").count(0, 10)
    s.meter("pmeter").set_rates(0, [(1, 1), (1, 1)])
    s.pre.mgrp_create(1)
    s.mirroring.add(1, 1)
    s.reset()
    assert s.table("dmac").num_entries() == 0
    assert s.table("dmac").default_action.name == "MyIngress.drop"
    assert s.register("agg").values == [0] * 4
    assert s.counter("pkt_counter").read(0) == (0, 0)
    assert s.meter("pmeter").get_rates(0) == []
    assert s.pre.groups == {} and s.mirroring.sessions == {}
    assert s.table("const_tbl").num_entries() == 1


def test_bulk_adds_and_deletes_keep_tables_consistent():
    """Control planes push thousands of entries; handles freed by deletes are reused and
    ternary priorities stay ordered. (Speed is measured by benchmarks, not asserted here.)"""
    ex = table([("exact", 32)], size=30000)
    hs = [ex.add([i], "set", [1]) for i in range(20000)]
    for h in hs[::2]:
        ex.delete(h)
    for i in range(10000):
        ex.add([100000 + i], "set", [1])
    tern = table([("ternary", 32)], size=10000)
    for i in range(5000):
        tern.add([(i, 0xFFFFFFFF)], "set", [1], priority=i % 97)
    assert ex.num_entries() == 20000 and tern.num_entries() == 5000
    assert tern.lookup((4999,))[3].priority == 4999 % 97
