"""InArt's parameter server as the root of an aggregation tree (schemes/inart/root_engine.py,
root_server.py): hand cases, a differential test against p4/aggregation.p4 as a root point in
the in-process softswitch, and the server process over loopback UDP."""
import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from control.agg_entries import push
from schemes.inart.root_engine import EV, EVENT_NAMES, Child, RootEngine
from tests.agg_switches import flat_point_commands, softswitch_factory
from workers import agg_packet as ap

REPO = Path(__file__).resolve().parent.parent

SWITCH_CHILD, W1, W2 = "10.1.0.254", "10.0.2.1", "10.0.2.2"   # a switch's partial sum, two workers
CHILDREN = [(0, SWITCH_CHILD), (1, W1), (2, W2)]
I32_MAX, I32_MIN = 2**31 - 1, -2**31


def data(slot, gen, sender, values, flags=ap.DATA, job=1, offset=None, exponent=-3, fan_in=3):
    return ap.encode(job, flags, slot, gen, slot * 32 if offset is None else offset, sender,
                     fan_in, exponent, np.asarray(values, dtype=np.int32))


def vec(seed, lo=-2**26, hi=2**26):
    return np.random.default_rng(seed).integers(lo, hi, size=32).astype(np.int32)


def wrapped_sum(*vs):
    return (sum(np.asarray(v, dtype=np.int64) for v in vs) % 2**32).astype(np.uint32).view(np.int32)


def events(engine, **expected):
    """Assert the named counters and that every other counter is 0."""
    want = [0] * len(engine.events)
    for name, n in expected.items():
        want[EV[name]] = n
    assert engine.events == want, {n: engine.events[i] for i, n in enumerate(EVENT_NAMES) if engine.events[i]}


def engine3():
    return RootEngine(job=1, fan_in=3, slots=4, children=CHILDREN)


# ------------------------------------------------------------------ hand cases

def test_fan_in_3_with_a_switch_partial_sum_multicasts_the_sum_to_every_child():
    e = engine3()
    partial = wrapped_sum(vec(1), vec(2))            # what the child switch summed below it
    assert e.handle(data(2, 1, 0, partial, exponent=-5), SWITCH_CHILD) == []
    assert e.handle(data(2, 1, 2, vec(3), exponent=-5), W2) == []
    out = e.handle(data(2, 1, 1, vec(4), exponent=-5, offset=64), W1)
    assert sorted(dst for dst, _ in out) == sorted([SWITCH_CHILD, W1, W2])
    for _, payload in out:
        r = ap.decode(payload)
        assert (r.job, r.flags, r.slot, r.shadow, r.gen, r.fan_in, r.exponent) == (1, ap.RESULT, 2, 1, 1, 3, -5)
        assert (r.offset, r.sender) == (64, 1)       # the completing packet's fields stay, as in P4
        np.testing.assert_array_equal(r.values, wrapped_sum(vec(1), vec(2), vec(3), vec(4)))
    events(e, new=1, add=2, complete=1, mcast=1)


def test_a_lost_result_is_answered_on_the_retransmission_to_its_sender_alone():
    e = engine3()
    for s, ip in CHILDREN:
        out = e.handle(data(0, 1, s, vec(s)), ip)
    total = ap.decode(out[0][1]).values
    # W1's result was lost: its client re-sends (DATA|RETX); the root answers W1 only.
    answer = e.handle(data(0, 1, 1, vec(1), flags=ap.DATA | ap.RETX), W1)
    assert [dst for dst, _ in answer] == [W1]
    r = ap.decode(answer[0][1])
    assert r.flags == ap.RESULT | ap.RETX and (r.slot, r.gen, r.sender, r.fan_in) == (0, 1, 1, 3)
    np.testing.assert_array_equal(r.values, total)
    # The re-sent partial sum of the child switch (its result was lost) is answered too.
    assert [d for d, _ in e.handle(data(0, 1, 0, vec(0), flags=ap.DATA | ap.RETX), SWITCH_CHILD)] \
        == [SWITCH_CHILD]
    events(e, new=1, add=2, complete=1, mcast=1, dup_answer=2)


def test_duplicates_before_completion_and_stale_generations_are_dropped():
    e = engine3()
    e.handle(data(1, 1, 0, vec(0)), SWITCH_CHILD)
    assert e.handle(data(1, 1, 0, vec(9), flags=ap.DATA | ap.RETX), SWITCH_CHILD) == []   # not added twice
    e.handle(data(1, 1, 1, vec(1)), W1)
    out = e.handle(data(1, 1, 2, vec(2)), W2)
    np.testing.assert_array_equal(ap.decode(out[0][1]).values, wrapped_sum(vec(0), vec(1), vec(2)))
    # generation 2 uses the other copy; generation 1 stays answerable meanwhile
    assert e.handle(data(1, 2, 0, vec(5)), SWITCH_CHILD) == []
    assert [d for d, _ in e.handle(data(1, 1, 2, vec(2), flags=ap.DATA | ap.RETX), W2)] == [W2]
    # generation 3 reuses copy 1's shadow (gen & 1 == 1): generation 1 is now stale there
    assert e.handle(data(1, 3, 1, vec(6)), W1) == []
    assert e.handle(data(1, 1, 0, vec(0), flags=ap.DATA | ap.RETX), SWITCH_CHILD) == []
    events(e, new=3, add=2, complete=1, mcast=1, dup_drop=1, dup_answer=1, stale=1)


def test_overflow_flag_is_kept_per_copy_and_reset_by_a_new_generation():
    e = engine3()
    e.handle(data(0, 1, 0, vec(0)), SWITCH_CHILD)
    e.handle(data(0, 1, 1, vec(1), flags=ap.DATA | ap.OVERFLOW), W1)     # a clipped contribution
    out = e.handle(data(0, 1, 2, vec(2)), W2)
    assert {ap.decode(p).flags for _, p in out} == {ap.RESULT | ap.OVERFLOW}
    answer = e.handle(data(0, 1, 0, vec(0), flags=ap.DATA | ap.RETX), SWITCH_CHILD)
    assert ap.decode(answer[0][1]).flags == ap.RESULT | ap.RETX | ap.OVERFLOW
    # generation 3 resets copy 1 (generation 1's): no clipped contribution, no flag
    for s, ip in CHILDREN:
        out = e.handle(data(0, 3, s, vec(s)), ip)
    assert {ap.decode(p).flags for _, p in out} == {ap.RESULT}


def test_values_wrap_around_modulo_2_to_the_32_as_the_switch_adds():
    e = engine3()
    a = np.full(32, I32_MAX, dtype=np.int32)
    b = np.array([1, 2, I32_MAX, I32_MIN] * 8, dtype=np.int32)
    c = np.array([0, -1, 1, I32_MIN] * 8, dtype=np.int32)
    e.handle(data(3, 1, 0, a), SWITCH_CHILD)
    e.handle(data(3, 1, 1, b), W1)
    r = ap.decode(e.handle(data(3, 1, 2, c), W2)[0][1])
    np.testing.assert_array_equal(r.values[:4], [I32_MIN, I32_MIN, -1, I32_MAX])
    np.testing.assert_array_equal(r.values, wrapped_sum(a, b, c))


@pytest.mark.parametrize("payload, why", [
    (data(0, 1, 0, vec(0))[:-4], "truncated values"),
    (data(0, 1, 0, np.zeros(31, dtype=np.int32)), "k != 32"),
    (data(4, 1, 0, vec(0)), "slot beyond the window"),
    (data(0, 1, 3, vec(0)), "sender >= fan_in"),
    (data(0, 1, 0, vec(0))[:2] + bytes([0x00]) + data(0, 1, 0, vec(0))[3:], "shadow != gen & 1"),
    (data(0, 1, 0, vec(0))[:4] + bytes(4) + data(0, 1, 0, vec(0))[8:], "gen 0"),
])
def test_malformed_packets_are_dropped_and_counted_bad(payload, why):
    e = engine3()
    assert e.handle(payload, W1) == [], why
    events(e, bad=1)
    assert e.ignored == 0


def test_other_jobs_and_non_aggregation_payloads_are_ignored_and_results_dropped():
    e = engine3()
    assert e.handle(data(0, 1, 0, vec(0), job=2), W1) == []
    assert e.handle(b"\x01hello", W1) == []
    assert e.ignored == 2
    assert e.handle(data(0, 1, 0, vec(0), flags=ap.RESULT), W1) == []     # nothing above the root
    events(e, result_drop=1)


@pytest.mark.parametrize("kwargs, field", [
    (dict(job=256), "job"), (dict(fan_in=0), "fan_in"), (dict(fan_in=33), "fan_in"),
    (dict(slots=0), "slots"), (dict(slots=2**15), "slots"), (dict(k=16), "k"),
    (dict(children=[(0, SWITCH_CHILD), (2, W1), (3, W2)]), "children"),
    (dict(children=[(0, SWITCH_CHILD), (1, W1)]), "children"),
    (dict(children=[(0, W1), (1, W1), (2, W2)]), "children"),
    (dict(children=[(0, "10.0.2"), (1, W1), (2, W2)]), "children[0].address"),
])
def test_bad_configuration_names_the_field(kwargs, field):
    args = dict(job=1, fan_in=3, slots=4, children=CHILDREN) | kwargs
    with pytest.raises(ValueError) as exc:
        RootEngine(**args)
    assert str(exc.value).startswith(f"{field}:")


def test_children_may_be_given_as_child_records():
    e = RootEngine(job=0, fan_in=1, slots=1, children=[Child(0, W1)], k=64)
    out = e.handle(ap.encode(0, ap.DATA, 0, 1, 0, 0, 1, 0, np.arange(64, dtype=np.int32)), W1)
    assert [d for d, _ in out] == [W1]
    np.testing.assert_array_equal(ap.decode(out[0][1]).values, np.arange(64))


# ------------------------------------------------------------------ differential: P4 root vs engine
ROOT_IP, STRANGER = "10.0.0.1", "10.0.9.9"
SW_MAC = "00:00:00:00:00:fe"


def root_point_commands(job, fan_in, slots, slot_base, addresses):
    """p4/aggregation.p4 as the root point of `job` at ROOT_IP (the agg_points entry and the
    multicast group as control/agg_entries.py writes them): child i behind port i + 1 with
    replication id i + 1, and a /32 route to each child (duplicates are answered by routing)."""
    return flat_point_commands(ROOT_IP, addresses, slots, job=job, slot_base=slot_base,
                               fan_in=fan_in, port_per_child=True)


def _values(kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "max":
        return (I32_MAX - rng.integers(0, 4, size=32)).astype(np.int32)
    if kind == "min":
        return (I32_MIN + rng.integers(0, 4, size=32)).astype(np.int32)
    if kind == "full":
        return rng.integers(I32_MIN, I32_MAX, size=32, endpoint=True).astype(np.int32)
    return rng.integers(-100, 100, size=32).astype(np.int32)


# one packet: its header fields, values and what (if anything) breaks it
packets = st.fixed_dictionaries(dict(
    slot=st.integers(0, 3), gen=st.sampled_from([1, 2, 3, 4, 5, 2**32 - 1]),
    sender=st.integers(0, 4), source=st.integers(0, 4),
    flags=st.sampled_from([ap.DATA, ap.DATA, ap.DATA | ap.RETX, ap.DATA | ap.OVERFLOW, ap.RESULT,
                           ap.RESULT | ap.OVERFLOW]),
    header_fan_in=st.one_of(st.none(), st.integers(0, 255)),   # None: the point's; ignored by P4
    offset=st.integers(0, 2**32 - 1), exponent=st.integers(-128, 127),
    values=st.sampled_from(["max", "min", "full", "small"]), seed=st.integers(0, 2**16),
    defect=st.sampled_from([None] * 12 + ["shadow", "gen0", "k", "truncated", "short", "job",
                                          "tail"]),
    # a round: every child sends this (slot, gen) in the order `seed` draws, then this packet
    # (with its defect) goes last, so completions and their answers are frequent
    round=st.booleans()))


def _payload(p, job, fan_in):
    payload = bytearray(ap.encode(job, p["flags"], p["slot"], p["gen"], p["offset"], p["sender"],
                                  fan_in if p["header_fan_in"] is None else p["header_fan_in"],
                                  p["exponent"], _values(p["values"], p["seed"])))
    d = p["defect"]
    if d == "shadow":
        payload[2] ^= 0x80
    elif d == "gen0":
        payload[4:8] = bytes(4)
        payload[2] &= 0x7F                      # shadow 0 == gen & 1: only the gen is wrong
    elif d == "k":
        payload[15] = 31
    elif d == "truncated":
        del payload[-4:]
    elif d == "short":
        del payload[10:]
    elif d == "job":
        payload[0] = (job + 1) % 256
    elif d == "tail":
        payload += b"tail"
    return bytes(payload)


def _switch_outputs(sw, src_ip, payload, addresses):
    """(destination IP, payload) of each frame the switch sent, checking that a multicast
    replica left on the port of the child its replication id names (egress table)."""
    frame = ap.udp_frame("00:00:00:00:02:01", SW_MAC, src_ip, ROOT_IP, payload)
    out = []
    for port, f in sw.process(9, frame):
        assert ap.ipv4_checksum_ok(f)
        src, dst, body = ap.udp_payload(f)
        assert src == ROOT_IP, "the root answers from its aggregation address"
        assert port == addresses.index(dst) + 1, f"{dst} left on port {port}"
        out.append((dst, body))
    return out


def _expand_rounds(ops, fan_in):
    for p in ops:
        if p["round"]:
            order = np.random.default_rng(p["seed"]).permutation(fan_in)
            for n, s in enumerate(order):
                yield p | dict(sender=int(s), source=int(s), seed=p["seed"] + n + 1, defect=None,
                               flags=p["flags"] & ~ap.RESULT | ap.DATA)
        yield p


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job=st.integers(0, 255), fan_in=st.integers(1, 4), slots=st.integers(1, 3),
       slot_base=st.integers(0, 5), ops=st.lists(packets, min_size=1, max_size=40))
def test_engine_matches_the_p4_root_packet_for_packet(job, fan_in, slots, slot_base, ops):
    addresses = [SWITCH_CHILD, W1, W2, "10.0.3.1"][:fan_in]
    sw = softswitch_factory()()
    # a sender that is no child still gets its answer: the switch routes it like any packet
    push(sw, root_point_commands(job, fan_in, slots, slot_base, addresses)
         + [f"table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward {STRANGER}/32 => {SW_MAC} "
            f"{fan_in + 1}"])
    engine = RootEngine(job, fan_in, slots, list(enumerate(addresses)))
    sources = addresses + [STRANGER]
    for i, p in enumerate(_expand_rounds(ops, fan_in)):
        payload = _payload(p, job, fan_in)
        src = sources[min(p["source"], len(sources) - 1)]
        want = sorted(_switch_outputs(sw, src, payload, addresses + [STRANGER]))
        got = sorted(engine.handle(payload, src))
        assert got == want, f"packet {i}: {p}"
        assert engine.events == sw.events, f"packet {i}: {p}"


# ------------------------------------------------------------------ the server over loopback UDP
ROOT_LO, CHILD_LOS = "127.0.0.1", ["127.0.0.2", "127.0.0.3"]


def _child_sockets():
    """Two fake children bound to one free port on their own loopback addresses (the protocol
    uses the same port at every end), and that port."""
    for _ in range(20):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind((ROOT_LO, 0))
        port = probe.getsockname()[1]
        socks = []
        try:
            for ip in CHILD_LOS:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind((ip, port))
                s.settimeout(5)
        except OSError:
            for s in socks:
                s.close()
            continue
        finally:
            probe.close()
        return socks, port
    pytest.fail("no free UDP port on loopback for the fake children")


def _start_server(port, children, *extra):
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemes.inart.root_server", "--ip", ROOT_LO, "--job", "7",
         "--fan-in", str(len(children)), "--slots", "8", "--port", str(port),
         "--children", json.dumps([{"index": i, "address": a} for i, a in enumerate(children)]),
         *extra], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc


def _recv(sock):
    data, (src, _) = sock.recvfrom(4096)
    return src, ap.decode(data)


def test_server_sums_two_children_over_udp_answers_a_retransmission_and_reports_at_sigterm():
    socks, port = _child_sockets()
    proc = _start_server(port, CHILD_LOS)
    try:
        assert proc.stderr.readline().startswith(f"inart root {ROOT_LO}:{port}: job 7, fan-in 2")
        a, b = vec(11, I32_MIN, I32_MAX), vec(12, I32_MIN, I32_MAX)
        for s, (sender, v) in zip(socks, enumerate([a, b])):
            s.sendto(ap.encode(7, ap.DATA, 5, 1, 160, sender, 2, 0, v), (ROOT_LO, port))
        for s in socks:
            src, r = _recv(s)
            assert src == ROOT_LO and (r.flags, r.slot, r.gen, r.fan_in) == (ap.RESULT, 5, 1, 2)
            np.testing.assert_array_equal(r.values, wrapped_sum(a, b))
        # child 1 "lost" its result: its retransmission is answered to it alone
        socks[1].sendto(ap.encode(7, ap.DATA | ap.RETX, 5, 1, 160, 1, 2, 0, b), (ROOT_LO, port))
        src, r = _recv(socks[1])
        assert r.flags == ap.RESULT | ap.RETX
        np.testing.assert_array_equal(r.values, wrapped_sum(a, b))
        socks[0].settimeout(0.3)
        with pytest.raises(TimeoutError):
            socks[0].recvfrom(4096)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for s in socks:
            s.close()
    assert proc.returncode == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    assert (stats["role"], stats["job"], stats["packets_in"], stats["packets_out"]) == ("inart-root", 7, 3, 3)
    assert stats["events"]["complete"] == 1 and stats["events"]["dup_answer"] == 1
    assert stats["send_dropped"] == stats["send_errors"] == stats["ignored"] == 0
    assert "elapsed_s" in stats


@pytest.mark.parametrize("children, message", [
    ("[{", "error: --children: not JSON"),
    ('[{"index": 0}]', "error: --children[0]: expected"),
    ('[{"index": 0, "address": "127.0.0.2"}, {"index": 0, "address": "127.0.0.3"}]', "error: children: indices"),
])
def test_server_refuses_a_bad_children_list_with_one_line(children, message):
    r = subprocess.run([sys.executable, "-m", "schemes.inart.root_server", "--ip", ROOT_LO, "--job", "1",
                        "--fan-in", "2", "--slots", "4", "--port", "9", "--children", children],
                       cwd=REPO, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr


def test_server_says_why_when_the_port_is_taken():
    socks, port = _child_sockets()
    try:
        r = subprocess.run([sys.executable, "-m", "schemes.inart.root_server", "--ip", CHILD_LOS[0],
                            "--job", "1", "--fan-in", "1", "--slots", "4", "--port", str(port),
                            "--children", '[{"index": 0, "address": "127.0.0.3"}]'],
                           cwd=REPO, capture_output=True, text=True, timeout=30)
    finally:
        for s in socks:
            s.close()
    assert r.returncode == 1
    assert r.stderr.startswith(f"error: [Errno 98] cannot bind UDP {CHILD_LOS[0]}:{port}"), r.stderr
