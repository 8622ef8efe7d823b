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
        else:
            out.append(key_value(rnd, w))
    return out


def control_step(rnd, state) -> None:
    """One random control-plane change; refused ones (duplicates, full tables, const
    tables) are part of the test: they must leave both paths alike."""
    tables = [t for t in state.tables.values()]
    r = rnd.random()
    try:
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


def run_example(program: str, seed: int, steps: int = 250) -> None:
    path = PROGRAMS[program]
    py = Switch.from_file(str(path))
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
