"""Differential test: the compiled data path (softswitch.native) against the Python path.

For each program the compiled path supports, a seeded hypothesis example builds both
pipelines on ONE SwitchState (as the switch process does), then interleaves random
control-plane changes (entries added, modified, deleted, defaults changed, tables cleared,
multicast groups built and torn down) with random frames (valid, bad checksums, truncated
anywhere, other ethertypes, multicast destinations) and requires the same output frames
for every packet and the same statistics at the end. Examples are derandomized and
bounded, no shrinking: a failure prints its seed and step.
"""
from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from softswitch.native.switch import CompiledSwitch
from softswitch.runtime.state import StateError
from softswitch.runtime.state_tables import TableError
from softswitch.target.switch import Switch

ROOT = Path(__file__).resolve().parent.parent.parent
PROGRAMS = {
    "forward": ROOT / "p4" / "forward.p4",
    "basic": ROOT / "softswitch" / "tests" / "programs" / "basic.p4",
    "const_entries": ROOT / "softswitch" / "tests" / "programs" / "const_entries.p4",
    "compiled_mix": ROOT / "softswitch" / "tests" / "programs" / "compiled_mix.p4",
    "hash_mix": ROOT / "softswitch" / "tests" / "programs" / "hash_mix.p4",
    "tm_mix": ROOT / "softswitch" / "tests" / "programs" / "tm_mix.p4",
}

# Key and packet values come from the same small pools, so lookups hit often.
IPS = [0x0A000101, 0x0A000202, 0x0A0002FF, 0x0A010203, 0xE0010101, 0x0B000001, 0, 0xFFFFFFFF]
SMALL = [0, 1, 2, 3, 5, 9, 17, 53, 0x1000, 0x1234, 4791, 0xFFFF]


def csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(rnd, proto=None, payload=b"") -> bytes:
    ihl = rnd.choice([5, 5, 5, 4, 6])
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, rnd.choice([0, 0x20, 0xB8, 0xFF]),
                              20 + len(payload), rnd.randrange(1 << 16), rnd.randrange(1 << 16),
                              rnd.choice([0, 1, 2, 64, 255]), proto if proto is not None else rnd.choice([6, 17, 1]),
                              0, rnd.choice(IPS).to_bytes(4, "big"), rnd.choice(IPS).to_bytes(4, "big")))
    if rnd.random() < 0.85:      # mostly a right checksum, sometimes a wrong one
        h[10:12] = csum(bytes(h)).to_bytes(2, "big")
    else:
        h[10:12] = rnd.randrange(1 << 16).to_bytes(2, "big")
    return bytes(h)


def mac(rnd) -> bytes:
    return rnd.choice([bytes.fromhex("020000000202"), bytes.fromhex("01005e010101"), b"\xff" * 6,
                       bytes(rnd.randrange(256) for _ in range(6))])


def frame(rnd, program: str) -> bytes:
    eth_types = [0x0800, 0x0800, 0x0800, 0x86DD, 0x88B5, 0x9012, 0x0012, rnd.randrange(1 << 16)]
    et = rnd.choice(eth_types)
    body = b""
    if program == "compiled_mix" and et in (0x88B5, 0x9012, 0x0012) or rnd.random() < 0.1:
        body += struct.pack("!BHHBBQ", rnd.choice([0, 1, 2, 3, 9, 0xEE, rnd.randrange(256)]),
                            rnd.choice(SMALL), rnd.choice(SMALL), rnd.choice([0, 1, 4, 8, 15, 16, 200]),
                            rnd.randrange(256), rnd.choice([0, 1, (1 << 64) - 1, rnd.randrange(1 << 64)]))
    if et == 0x0800 or rnd.random() < 0.3:
        udp = struct.pack("!HHHH", rnd.choice(SMALL), rnd.choice(SMALL), rnd.choice([8, 16, 40]), 0)
        body += ipv4(rnd, 17 if rnd.random() < 0.6 else None, udp) + udp
    body += bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 7, 30])))
    dst = mac(rnd)
    if program == "compiled_mix" and rnd.random() < 0.5:
        dst = dst[:5] + bytes([rnd.choice([0x00, 0x7F, 0x80, 0xFF])])
    f = dst + mac(rnd) + et.to_bytes(2, "big") + body
    r = rnd.random()
    if r < 0.12:                 # truncated anywhere, also inside the Ethernet header
        f = f[:rnd.randrange(len(f) + 1)]
    return f


def key_value(rnd, width: int) -> int:
    pool = IPS if width == 32 else SMALL
    return rnd.choice(pool + [rnd.randrange(1 << width)]) & ((1 << width) - 1)


def random_match(rnd, table):
    match = []
    for k in table.keys:
        v = key_value(rnd, k.width)
        if k.match_kind == "exact":
            match.append(v)
        elif k.match_kind == "lpm":
            match.append((v, rnd.choice([0, 1, 8, 16, 24, k.width, rnd.randrange(k.width + 1)])))
        elif k.match_kind == "optional":
            match.append((v, rnd.choice([0, (1 << k.width) - 1])))
        elif k.match_kind == "range":       # mostly a real range, sometimes one value or all
            lo, hi = sorted([v, key_value(rnd, k.width)])
            match.append(rnd.choice([(lo, hi), (lo, hi), (v, v), (0, (1 << k.width) - 1)]))
        else:
            match.append((v, rnd.choice([0, (1 << k.width) - 1, 0xFF00 & ((1 << k.width) - 1),
                                         rnd.randrange(1 << k.width)])))
    return match


def random_args(rnd, action):
    out = []
    for name, w in action.params:
        if w == 9:       # a port: mostly the few the tests use, sometimes the drop port
            out.append(rnd.choice([1, 2, 3, 4, 7, 511]))
        elif name == "grp":   # a multicast group: mostly one the PRE steps create
            out.append(rnd.choice([1, 2, 5, 5, 9]))
        elif name == "sess":  # a clone session: mostly one the mirroring steps create
            out.append(rnd.choice([1, 2, 5, 5, 9, 40000]))
        elif name == "len":   # truncate: inside the headers, beyond them, beyond the frame
            out.append(rnd.choice([0, 10, 14, 20, 34, 60, 1000]))
        else:
            out.append(key_value(rnd, w))
    return out


def control_step(rnd, state) -> None:
    """One random control-plane change; refused ones (duplicates, full tables, const
    tables) are part of the test: they must leave both paths alike."""
    tables = [t for t in state.tables.values()]
    r = rnd.random()
    try:
        if rnd.random() < 0.1:      # clone sessions (mirroring_add / mirroring_delete)
            sess = rnd.choice([1, 2, 5])
            if rnd.random() < 0.75:
                state.mirroring.add(sess, rnd.choice([1, 2, 3, 4, 7]))
            else:
                state.mirroring.delete(sess)
            return
        if r < 0.2:
            pre = state.pre
            op = rnd.random()
            if op < 0.2 or not pre.groups:
                pre.mgrp_create(rnd.choice([1, 2, 5]))
            elif op < 0.6:
                h = pre.node_create(rnd.choice([0, 3, 9]), rnd.sample([1, 2, 3, 4, 7], rnd.randrange(4)))
                pre.associate(rnd.choice(sorted(pre.groups)), h)
            elif op < 0.75 and pre.nodes:
                pre.node_update(rnd.choice(sorted(pre.nodes)), rnd.sample([1, 2, 3, 4], rnd.randrange(3)))
            elif op < 0.9 and pre.nodes:
                pre.node_destroy(rnd.choice(sorted(pre.nodes)))
            elif pre.groups:
                pre.mgrp_destroy(rnd.choice(sorted(pre.groups)))
            return
        if not tables:
            return
        t = rnd.choice(tables)
        actions = list(t.actions.values())
        handles = [e.handle for e in t.entries()]
        if r < 0.6:
            a = rnd.choice(actions)
            t.add(random_match(rnd, t), a.name, random_args(rnd, a),
                  rnd.randrange(20) if t.needs_priority else None)
        elif r < 0.7 and handles:
            a = rnd.choice(actions)
            t.modify(rnd.choice(handles), a.name, random_args(rnd, a))
        elif r < 0.82 and handles:
            t.delete(rnd.choice(handles))
        elif r < 0.92:
            a = rnd.choice(actions)
            t.set_default(a.name, random_args(rnd, a))
        elif r < 0.96:
            t.reset_default()
        else:
            t.clear()
    except (TableError, StateError):
        pass


def setup_state(program: str, state) -> None:
    """tm_mix starts with a multicast group and a clone session, meters with entries that
    have direct meter cells, so that the examples reach them early (the random steps
    change them later)."""
    if program == "tm_mix":
        state.pre.mgrp_create(5)
        state.pre.associate(5, state.pre.node_create(3, [2, 4]))
        state.mirroring.add(5, 7)
    if program == "meters":       # entries for the usual destinations: direct meter cells
        for dst in (0x01, 0x02, 0xFF):
            state.tables["Ing.flows"].add([dst], "fwd", [2])


def run_example(program: str, seed: int, steps: int = 250) -> None:
    path = PROGRAMS[program]
    py = Switch.from_file(str(path))
    setup_state(program, py.state)
    native = CompiledSwitch(py)       # shares py.state: one control plane, two data paths
    rnd = random.Random(seed)
    for step in range(steps):
        if rnd.random() < 0.3:
            control_step(rnd, py.state)
            continue
        port = rnd.choice([1, 2, 3])
        f = frame(rnd, program)
        now = 1000 * (step + 1)
        want = py.process(port, f, now)
        got = native.process(port, f, now)
        assert got == want, (f"{program} seed {seed} step {step}: frame {f.hex()} on port {port}\n"
                             f"python:   {[(p, d.hex()) for p, d in want]}\ncompiled: {[(p, d.hex()) for p, d in got]}")
    assert native.stats == py.stats, f"{program} seed {seed}: statistics differ"
    native.close()


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          phases=[Phase.generate], suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_compiled_equals_python(program, seed):
    run_example(program, seed)


def test_the_examples_exercise_the_paths_that_matter():
    """The random examples must hit routes, multicast and drops (else the comparison
    above would prove little): count what the Python path did on some of them."""
    seen = {"multicast_copies": 0, "packets_out": 0, "dropped": 0, "parser_errors": 0, "checksum_errors": 0}
    for seed in range(6):
        py = Switch.from_file(str(PROGRAMS["compiled_mix"]))
        rnd = random.Random(seed)
        for step in range(400):
            if rnd.random() < 0.3:
                control_step(rnd, py.state)
            else:
                py.process(rnd.choice([1, 2, 3]), frame(rnd, "compiled_mix"), 1000 * step)
        for k in seen:
            seen[k] += py.stats[k]
    assert all(v > 0 for v in seen.values()), seen


def test_a_difference_is_caught():
    """The comparison can fail: change one table only on the Python side's copy of the
    C mirror's view (by bypassing the version mark) and the outputs must differ."""
    py = Switch.from_file(str(PROGRAMS["forward"]))
    native = CompiledSwitch(py)
    t = py.state.table("ipv4_lpm")
    t.add([(0x0A000202, 32)], "ipv4_forward", [0x020000000202, 2])
    native.mirror.sync()
    t.version = native.mirror._seen[0]     # hide the next change from the mirror
    t.delete(t.entries()[0].handle)
    t.version = native.mirror._seen[0]
    rnd = random.Random(1)
    udp = struct.pack("!HHHH", 1, 2, 8, 0)
    ip = bytearray(ipv4(rnd, 17, udp))
    ip[1] = 0
    ip[12:20] = bytes([10, 0, 1, 1, 10, 0, 2, 2])
    ip[8] = 64
    ip[0] = 0x45
    ip[10:12] = b"\0\0"
    ip[10:12] = csum(bytes(ip)).to_bytes(2, "big")
    f = bytes(12) + b"\x08\x00" + bytes(ip) + udp
    assert py.process(1, f, 1) == []
    assert [p for p, _ in native.process(1, f, 1)] == [2]


# ------------------------------------------------------------------ registers and counters
# Programs with registers or counters run on two switches with separate states (one
# control plane each, fed the same commands), since packets change the cells: both
# paths on one state would change them twice. Afterwards every cell must agree.
def assert_same_cells(py_state, c_state, where: str) -> None:
    for name, r in py_state.registers.items():
        assert list(c_state.registers[name].values) == list(r.values), f"{where}: register {name} differs"
    for name, c in py_state.counters.items():
        other = c_state.counters[name]
        if c.direct:        # a cell per entry: read through the handles, as counter_read does
            cells = [(e.handle, c.read(e.handle)) for e in c.table.entries()]
            assert [(e.handle, other.read(e.handle)) for e in other.table.entries()] == cells, \
                f"{where}: direct counter {name} differs"
            continue
        assert list(other.packets) == list(c.packets), f"{where}: counter {name} packets differ"
        assert list(other.bytes) == list(c.bytes), f"{where}: counter {name} bytes differ"
    for name, m in py_state.meters.items():
        assert meter_cells(c_state.meters[name]) == meter_cells(m), f"{where}: meter {name} differs"


def meter_cells(m) -> list:
    """Every cell's whole state: rates, bucket tokens and origin."""
    cells = [e.meter for e in m.table.entries()] if m.direct else m.cells
    return [(c.rates, c.origin_us) for c in cells]


# Stateful programs (packets change cells) on two switches with separate states that get
# the same control-plane changes: the same random step replayed on each state, and the
# cell operations (counter writes and resets, reads that must agree) applied to both.
TWIN_PROGRAMS = {
    "direct_counters": ROOT / "softswitch" / "tests" / "programs" / "direct_counters.p4",
    "reg_counter": ROOT / "softswitch" / "tests" / "programs" / "reg_counter.p4",
    "range_keys": ROOT / "softswitch" / "tests" / "programs" / "range_keys.p4",
    "meters": ROOT / "softswitch" / "tests" / "programs" / "meters.p4",
}


def meter_step(rnd, states, where: str) -> None:
    """Random rates set on a meter cell or all cells, a reset, or rates read (must agree).
    Rates are per microsecond and packets come 1000 us apart: every color is reachable."""
    name = rnd.choice(sorted(states[0].meters))
    meters = [s.meters[name] for s in states]
    cells = [e.handle for e in meters[0].table.entries()] if meters[0].direct else list(range(meters[0].size))
    op = rnd.random()
    if op < 0.1:
        for m in meters:
            m.reset()
    elif op < 0.8:
        if meters[0].type == "packets":
            cir, pir = sorted([rnd.choice([0.0002, 0.0005, 0.001, 0.003]) for _ in range(2)])
            cbs, pbs = rnd.choice([1, 2, 3]), rnd.choice([1, 2, 5])
        else:
            cir, pir = sorted([rnd.choice([0.01, 0.03, 0.06, 0.2]) for _ in range(2)])
            cbs, pbs = rnd.choice([40, 80, 150]), rnd.choice([60, 120, 400])
        cell = None if not cells or rnd.random() < 0.3 else rnd.choice(cells)
        for m in meters:
            m.set_rates(cell, [(cir, cbs), (pir, pbs)])
    elif cells:
        cell = rnd.choice(cells)
        reads = [m.get_rates(cell) for m in meters]
        assert reads[0] == reads[1], f"{where}: meter_get_rates {name} {cell}: {reads}"


def cell_step(rnd, states, where: str) -> None:
    """A random counter write, reset or read, or a meter step, on every state; reads
    must agree."""
    if states[0].meters and rnd.random() < 0.5:
        return meter_step(rnd, states, where)
    names = sorted(states[0].counters)
    if not names:
        return
    name = rnd.choice(names)
    ctrs = [s.counters[name] for s in states]
    handles = [e.handle for e in ctrs[0].table.entries()] if ctrs[0].direct else list(range(ctrs[0].size))
    op = rnd.random()
    if op < 0.15:
        for c in ctrs:
            c.reset()
    elif handles and op < 0.4:
        h, p, b = rnd.choice(handles), rnd.randrange(1 << 20), rnd.randrange(1 << 40)
        for c in ctrs:
            c.write(h, p, b)
    elif handles:
        h = rnd.choice(handles)
        reads = [c.read(h) for c in ctrs]
        assert reads[0] == reads[1], f"{where}: counter_read {name} {h}: python {reads[0]}, compiled {reads[1]}"


def run_twin_example(program: str, seed: int, steps: int = 250) -> None:
    path = str(TWIN_PROGRAMS[program])
    py, twin = Switch.from_file(path), Switch.from_file(path)
    for sw in (py, twin):
        setup_state(program, sw.state)
    native = CompiledSwitch(twin)
    rnd = random.Random(seed)
    for step in range(steps):
        where = f"{program} seed {seed} step {step}"
        r = rnd.random()
        if r < 0.25:
            s = rnd.randrange(1 << 32)
            for state in (py.state, twin.state):
                control_step(random.Random(s), state)
            continue
        if r < 0.34:
            cell_step(rnd, [py.state, twin.state], where)
            continue
        port = rnd.choice([1, 2, 3])
        f = frame(rnd, program)
        now = 1000 * (step + 1)
        want, got = py.process(port, f, now), native.process(port, f, now)
        assert got == want, (f"{where}: frame {f.hex()} on port {port}\n"
                             f"python:   {[(p, d.hex()) for p, d in want]}\ncompiled: {[(p, d.hex()) for p, d in got]}")
    assert_same_cells(py.state, twin.state, f"{program} seed {seed}")
    assert native.stats == py.stats, f"{program} seed {seed}: statistics differ"
    native.close()


@pytest.mark.parametrize("program", sorted(TWIN_PROGRAMS))
@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          phases=[Phase.generate], suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_stateful_compiled_equals_python(program, seed):
    run_twin_example(program, seed)


def test_direct_counters_count_in_the_examples():
    """The direct counter examples must count hits on every table (else the cell
    comparison above would compare zeros)."""
    totals: dict = {}
    for seed in range(4):
        py = Switch.from_file(str(TWIN_PROGRAMS["direct_counters"]))
        rnd = random.Random(seed)
        for step in range(300):
            if rnd.random() < 0.3:
                control_step(rnd, py.state)
            else:
                py.process(rnd.choice([1, 2, 3]), frame(rnd, "direct_counters"), step)
        for name, c in py.state.counters.items():
            totals[name] = totals.get(name, 0) + sum(c.read(e.handle)[0] for e in c.table.entries())
    assert len(totals) == 3 and all(totals.values()), totals


def test_register_program_compiled_equals_python():
    path = str(ROOT / "softswitch" / "tests" / "programs" / "reg_cells.p4")
    for seed in range(4):
        py, twin = Switch.from_file(path), Switch.from_file(path)
        native = CompiledSwitch(twin)
        rnd = random.Random(seed)
        for step in range(300):
            f = frame(rnd, "basic")
            want, got = py.process(1, f, step), native.process(1, f, step)
            assert got == want, f"reg_cells seed {seed} step {step}: frame {f.hex()}"
        assert_same_cells(py.state, twin.state, f"reg_cells seed {seed}")
        assert native.stats == py.stats
        native.close()


# p4/aggregation.p4 (k = 32 and 64): three aggregation points, so every branch of the
# program is reachable: job 1 a root (flat_point_commands: results multicast to three
# workers), job 2 a non-root point (partial sums go up to PARENT as child 2 of 4, results
# come down from it), job 3 a point with memory for 2 of a window of 4 slots (the others
# bypass to the parent as child 4 + sender).
AGG_PROGRAM = ROOT / "p4" / "aggregation.p4"
AGG_IPS = ["10.0.0.100", "10.0.1.100", "10.0.2.100"]
PARENT = "10.0.9.1"
WORKERS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
WINDOW = 4
_agg_programs: dict = {}


def agg_commands() -> list[str]:
    from tests.agg_switches import flat_point_commands
    return flat_point_commands(AGG_IPS[0], WORKERS, WINDOW) + [
        f"table_add MyIngress.agg_points MyIngress.agg_point 2 {AGG_IPS[1]} => 0 8 {WINDOW} 3 1 {PARENT} 2 4",
        f"table_add MyIngress.agg_points MyIngress.agg_point_bypass 3 {AGG_IPS[2]} => "
        f"0 16 2 3 1 {PARENT} 1 4 4 7",
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.9.0/24 => 00:00:00:00:09:01 3",
    ]


def agg_switch(k: int):
    """(Switch, RuntimeAPI) running aggregation.p4 with `k` values per packet, entries pushed."""
    from control.agg_entries import push
    from softswitch import frontend
    from softswitch.control.commands import RuntimeAPI
    if k not in _agg_programs:
        _agg_programs[k] = frontend.load(str(AGG_PROGRAM), {"AGG_K": str(k)})
    sw = Switch(_agg_programs[k])
    api = RuntimeAPI(sw.state)
    push(api, agg_commands())
    return sw, api


def agg_frame(rnd, k: int, sent: list, gens: dict) -> bytes:
    """A random aggregation frame. Most are well-formed packets of rounds in progress
    (`gens`: the generation each (job, slot) is at, moving on now and then), so slots
    complete, results come down and duplicates meet completed slots; the others are
    anything: wrong k, gen 0, shadow bit against gen, short, sender or slot out of range,
    bad IPv4 checksum, TTL 1, other jobs and addresses. A fifth are exact duplicates."""
    from workers import agg_packet as ap
    if sent and rnd.random() < 0.2:
        return rnd.choice(sent)                       # a duplicate, byte for byte
    if rnd.random() < 0.6:
        job = rnd.choice([1, 2, 3])
        slot = rnd.choice([0, 1, 2, 3] if job == 3 else [0, 1])
        gen = gens.get((job, slot), 1)
        if rnd.random() < 0.08:
            gen = gens[(job, slot)] = gen + 1
        sender = rnd.choice([0, 1, 2])
        flags = ap.RESULT if job == 2 and rnd.random() < 0.25 else \
            rnd.choice([ap.DATA] * 4 + [ap.DATA | ap.OVERFLOW, ap.DATA | ap.RETX])
        payload = ap.encode(job, flags, slot, gen, 0, sender, 3, 0,
                            [rnd.randrange(-2**31, 2**31) for _ in range(k)])
        return ap.udp_frame("00:00:00:00:00:02", "00:00:00:00:00:01",
                            PARENT if flags == ap.RESULT else WORKERS[sender], AGG_IPS[job - 1], payload)
    job = rnd.choice([1, 1, 2, 2, 3, 3, 9])
    dst = AGG_IPS[(job - 1) % 3] if rnd.random() < 0.93 else rnd.choice(AGG_IPS + [PARENT, WORKERS[1]])
    flags = rnd.choice([ap.DATA] * 6 + [ap.DATA | ap.OVERFLOW, ap.DATA | ap.RETX, ap.RESULT,
                                         ap.RESULT | ap.OVERFLOW])
    n = k if rnd.random() < 0.93 else rnd.choice([0, 1, 96 - k])
    values = [rnd.choice([0, 1, -1, 2**31 - 1, -2**31, rnd.randrange(-2**31, 2**31)]) for _ in range(n)]
    payload = bytearray(ap.encode(job, flags, rnd.choice([0, 0, 1, 2, 3, 4, 5, 0x7FFF]),
                                  rnd.choice([1, 1, 2, 2, 3, 0xFFFFFFFF]), 0,
                                  rnd.choice([0, 0, 1, 1, 2, 2, 3, 31, 40]), 3, 0, values))
    r = rnd.random()
    if r < 0.04:
        payload[2] ^= 0x80                            # shadow bit disagrees with gen
    elif r < 0.07:
        payload[4:8] = bytes(4)                       # gen 0
    elif r < 0.11:
        payload = payload[:rnd.randrange(len(payload))]
    f = bytearray(ap.udp_frame("00:00:00:00:00:02", "00:00:00:00:00:01", rnd.choice(WORKERS), dst,
                               bytes(payload), ttl=rnd.choice([64] * 12 + [1, 2])))
    if rnd.random() < 0.03:
        f[24] ^= 0x5A                                 # IPv4 checksum wrong
    return bytes(f)


def agg_control_step(rnd, k: int) -> list[str]:
    """Random control-plane commands on the cells: both switches must give the same
    replies (reads show the packets' writes; writes must reach the packets)."""
    size = 2 * 2048
    reg = rnd.choice(["r_gen", "r_bitmap", "r_count", "r_state", "r_v00", f"r_v{k - 1:02d}"])
    idx = rnd.choice([0, 1, 2, 3, 16, 17, 33, size - 1, size])      # `size`: out of range
    op = rnd.random()
    if op < 0.3:
        return [f"register_read MyIngress.{reg} {idx}", f"counter_read MyIngress.agg_events {rnd.randrange(17)}"]
    if op < 0.6:
        return [f"register_write MyIngress.{reg} {idx} {rnd.choice([0, 1, 2, 3, 7, 0xFFFFFFFF, 1 << 40])}"]
    if op < 0.7:
        return [f"register_reset MyIngress.{reg}"]
    if op < 0.8:
        return [f"counter_write MyIngress.agg_events {rnd.randrange(17)} {rnd.randrange(9)} {rnd.randrange(999)}"]
    if op < 0.9:
        return ["counter_reset MyIngress.agg_events"]
    return ["reset_state"]                           # then the same points again


def run_agg_example(k: int, seed: int, steps: int = 220) -> dict:
    from control.agg_entries import push
    py, py_api = agg_switch(k)
    twin, c_api = agg_switch(k)
    native = CompiledSwitch(twin)
    rnd = random.Random(seed)
    sent: list = []
    gens: dict = {}
    for step in range(steps):
        if rnd.random() < 0.06:
            for cmd in agg_control_step(rnd, k):
                want, got = py_api.execute(cmd), c_api.execute(cmd)
                assert got == want, f"aggregation k={k} seed {seed} step {step}: {cmd}"
                if cmd == "reset_state":
                    push(py_api, agg_commands())
                    push(c_api, agg_commands())
            continue
        f = agg_frame(rnd, k, sent, gens)
        sent.append(f)
        port = rnd.choice([1, 1, 2, 3])
        want, got = py.process(port, f, 1000 * step), native.process(port, f, 1000 * step)
        assert got == want, (f"aggregation k={k} seed {seed} step {step}: frame {f.hex()} on port {port}\n"
                             f"python:   {[(p, d.hex()) for p, d in want]}\ncompiled: {[(p, d.hex()) for p, d in got]}")
    where = f"aggregation k={k} seed {seed}"
    assert_same_cells(py.state, twin.state, where)
    assert native.stats == py.stats, f"{where}: statistics differ"
    native.close()
    return dict(enumerate(py.state.counters["MyIngress.agg_events"].packets))


@pytest.mark.parametrize("k", [32, 64])
@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          phases=[Phase.generate], suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_aggregation_compiled_equals_python(k, seed):
    run_agg_example(k, seed)


def test_the_aggregation_examples_reach_every_event():
    """Without completions, results, duplicates, bypasses and bad packets the comparison
    above would prove little: every agg_events counter of the program (EV_NEW ..
    EV_BYPASS) must be hit on a few of the examples."""
    seen = [0] * 13
    for seed in range(3):
        events = run_agg_example(32, seed)
        for i in range(13):
            seen[i] += events[i]
    assert all(seen), f"agg_events never hit: {[i for i, n in enumerate(seen) if not n]}"


def test_a_cell_difference_is_caught():
    """The cell comparison can fail: one register cell and one counter cell changed on
    one side only."""
    py, _ = agg_switch(32)
    twin, _ = agg_switch(32)
    native = CompiledSwitch(twin)
    assert_same_cells(py.state, twin.state, "fresh")
    twin.state.register("r_v31").write(4095, 1)
    with pytest.raises(AssertionError, match="register MyIngress.r_v31 differs"):
        assert_same_cells(py.state, twin.state, "changed")
    twin.state.register("r_v31").reset()
    twin.state.counter("agg_events").write(12, 0, 1)
    with pytest.raises(AssertionError, match="counter MyIngress.agg_events bytes differ"):
        assert_same_cells(py.state, twin.state, "changed")
    native.close()


def test_the_traffic_manager_examples_reach_every_pass():
    """tm_mix's random examples must clone (I2E and E2E), resubmit, recirculate, multicast
    and hit the pass limit, else test_compiled_equals_python would compare little of it."""
    seen = {k: 0 for k in ("clones", "resubmits", "recirculations", "multicast_copies", "loop_limit_drops",
                           "assert_failures")}
    itypes = set()
    for seed in range(6):
        py = Switch.from_file(str(PROGRAMS["tm_mix"]))
        setup_state("tm_mix", py.state)
        rnd = random.Random(seed)
        for step in range(250):
            if rnd.random() < 0.3:
                control_step(rnd, py.state)
                continue
            for _, out in py.process(rnd.choice([1, 2, 3]), frame(rnd, "tm_mix"), step):
                if len(out) >= 12:
                    itypes.add(out[11])      # the egress pass's instance_type
        for k in seen:
            seen[k] += py.stats[k]
    assert all(v > 0 for v in seen.values()), seen
    assert {0, 1, 2, 5} <= itypes, itypes


def test_the_meter_examples_reach_every_color(monkeypatch):
    """meters.p4's examples must give green, yellow and red on each meter (else the cell
    comparison would compare idle meters): the Python path's colors, recorded."""
    from softswitch.runtime import state as S
    colors: dict = {}

    def recording(fn):
        def run(self, *a):
            c = fn(self, *a)
            colors.setdefault(self.name, set()).add(c)
            return c
        return run
    monkeypatch.setattr(S.Meter, "execute", recording(S.Meter.execute))
    monkeypatch.setattr(S.DirectMeter, "execute_entry", recording(S.DirectMeter.execute_entry))
    for seed in range(4):
        py = Switch.from_file(str(TWIN_PROGRAMS["meters"]))
        rnd = random.Random(seed)
        setup_state("meters", py.state)
        for step in range(250):
            if rnd.random() < 0.15:
                meter_step(rnd, [py.state, py.state], "x")
            elif rnd.random() < 0.15:
                control_step(rnd, py.state)
            else:
                py.process(rnd.choice([1, 2, 3]), frame(rnd, "meters"), 1000 * step)
    assert len(colors) == 3 and all(c == {0, 1, 2} for c in colors.values()), colors
