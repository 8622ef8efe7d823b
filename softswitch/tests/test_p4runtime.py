"""P4Runtime: P4Info ids as p4c assigns them, and the gRPC server on a real switch's state.

The server tests run the real gRPC transport on 127.0.0.1 with the switch's loop on a thread
(no root, no namespaces); packets go through Switch.process so an entry written over P4Runtime
is checked by what it does to a packet, not only by reading it back.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from softswitch.p4runtime import codec
from softswitch.p4runtime.connection import P4RuntimeCallError, P4RuntimeConnection
from softswitch.p4runtime.errors import P4RuntimeError
from softswitch.p4runtime.p4info import assign_ids, build_p4info, jenkins_one_at_a_time, shortest_unique_suffixes
from softswitch.p4runtime.proto import code_pb2, p4rt
from softswitch.p4runtime.proto import p4info as p4info_pb
from softswitch.p4runtime.server import LoopBridge, LoopStopped, P4RuntimeServer
from softswitch.p4runtime.service import P4RuntimeService
from softswitch.target.switch import Switch

ROOT = Path(__file__).resolve().parents[2]
FORWARD, AGG = ROOT / "p4" / "forward.p4", ROOT / "p4" / "aggregation.p4"


# ---------------------------------------------------------------- P4Info (pure)
def test_ids_of_forward_p4_are_the_ones_p4c_assigns():
    # p4c 1.2.3.7 --p4runtime-files on p4/forward.p4 (facts about p4c's output)
    info = build_p4info(Switch.from_file(FORWARD).state)
    ids = {m.preamble.name: m.preamble.id for kind in ("tables", "actions") for m in getattr(info, kind)}
    assert ids == {"MyIngress.ipv4_lpm": 37375156, "NoAction": 21257015, "MyIngress.drop": 25652968,
                   "MyIngress.ipv4_forward": 28792405, "MyIngress.multicast": 19198950}
    t = info.tables[0]
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in t.match_fields] == [(1, "hdr.ipv4.dstAddr", 32, p4info_pb.MatchField.LPM)]
    fwd = next(a for a in info.actions if a.preamble.name == "MyIngress.ipv4_forward")
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "dstAddr", 48), (2, "port", 9)]
    assert t.preamble.alias == "ipv4_lpm" and info.pkg_info.arch == "v1model"


def test_hash_collisions_probe_to_the_next_id_in_sorted_name_order():
    h = jenkins_one_at_a_time(b"b") & 0xFFFFFF
    # "a" is declared with b's id: b, hashed later, moves one up
    ids = assign_ids({0x01: ["b", "a"]}, declared={"a": h})
    assert ids[(0x01, "a")] == 0x01 << 24 | h and ids[(0x01, "b")] == 0x01 << 24 | (h + 1)
    with pytest.raises(ValueError, match="wrong 8-bit prefix"):
        assign_ids({0x02: ["t"]}, declared={"t": 0x01000005})


def test_alias_is_the_shortest_suffix_no_other_name_shares():
    assert shortest_unique_suffixes(["ingress.c.a", "ingress.d.a", "ingress.t"]) == {
        "ingress.c.a": "c.a", "ingress.d.a": "d.a", "ingress.t": "t"}


def test_directly_called_actions_are_listed_without_parameters():
    # aggregation.p4's apply block calls send_up(...) directly; p4c binds its argument at the call
    info = build_p4info(Switch.from_file(AGG).state)
    acts = {a.preamble.name: a for a in info.actions}
    assert "MyIngress.send_up" in acts and not acts["MyIngress.send_up"].params
    assert "MyIngress.originate" not in acts          # only called from other actions: inlined by p4c


def test_codec_refuses_values_wider_than_the_field_and_converts_priorities():
    with pytest.raises(P4RuntimeError) as e:
        codec.to_int(b"\x02\x00", 9, "port")
    assert e.value.code == "OUT_OF_RANGE"
    assert codec.to_int(b"\x00\x01\xff", 9, "port") == 511           # padded values are accepted
    assert codec.to_bytes(0) == b"\x00" and codec.to_bytes(256) == b"\x01\x00"
    assert codec.bmv2_priority(10) < codec.bmv2_priority(1)           # P4Runtime's higher wins = BMv2's lower
    assert codec.p4rt_priority(codec.bmv2_priority(7)) == 7


# ---------------------------------------------------------------- the server
class Served:
    """A switch whose state is served over gRPC, its loop on a thread."""

    def __init__(self, path, device_id=0, **defines):
        self.switch = Switch.from_file(path, defines or None, device_id=device_id)
        self.service = P4RuntimeService(self.switch.state, device_id, program=str(path))
        self.bridge = LoopBridge()
        self.server = P4RuntimeServer(self.service, self.bridge, "127.0.0.1:0")
        self.selector = selectors.DefaultSelector()
        self.bridge.register(self.selector)
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        self.server.start()
        self.conns = []

    def _loop(self):
        while self.running:
            for key, mask in self.selector.select(0.05):
                key.data(mask)

    def connect(self, election=(0, 1), **kw):
        c = P4RuntimeConnection(self.server.address, device_id=self.service.device_id, election_id=election, **kw)
        self.conns.append(c)
        return c

    def stop(self):
        for c in self.conns:
            c.close()
        self.server.stop()
        self.running = False
        self.thread.join(2)
        self.bridge.close()


@pytest.fixture
def fwd():
    s = Served(FORWARD)
    yield s
    s.stop()


def _ipv4_frame(dst: str) -> bytes:
    from scapy.all import IP, UDP, Ether, raw
    return raw(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02") / IP(src="10.0.0.9", dst=dst) / UDP() / b"x")


def _lpm_update(info, op, prefix: bytes, plen: int, action: str, *params, table="MyIngress.ipv4_lpm"):
    t = next(t for t in info.tables if t.preamble.name == table)
    a = next(a for a in info.actions if a.preamble.name == action)
    u = p4rt.Update(type=getattr(p4rt.Update, op))
    te = u.entity.table_entry
    te.table_id = t.preamble.id
    f = te.match.add(field_id=1)
    f.lpm.value, f.lpm.prefix_len = prefix, plen
    te.action.action.action_id = a.preamble.id
    for i, v in enumerate(params, start=1):
        te.action.action.params.add(param_id=i, value=v)
    return u


def test_write_needs_the_primary_and_a_lower_election_id_is_a_backup(fwd):
    info = fwd.service.p4info
    with pytest.raises(P4RuntimeCallError) as e:
        fwd.connect(arbitrate=False).write([_lpm_update(info, "INSERT", b"\x0a\x00\x00\x01", 32, "MyIngress.drop")])
    assert e.value.code.name == "PERMISSION_DENIED" and "MasterArbitrationUpdate" in e.value.details
    primary = fwd.connect(election=(0, 5))
    backup = fwd.connect(election=(0, 2))
    assert primary.is_primary and not backup.is_primary
    with pytest.raises(P4RuntimeCallError) as e:
        backup.write([_lpm_update(info, "INSERT", b"\x0a\x00\x00\x01", 32, "MyIngress.drop")])
    assert e.value.code.name == "PERMISSION_DENIED"
    primary.write([_lpm_update(info, "INSERT", b"\x0a\x00\x00\x01", 32, "MyIngress.drop")])
    primary.close()                                   # the backup is told it is primary now
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        msg = backup.stream_messages.get(timeout=5)
        if msg.arbitration.status.code == code_pb2.OK:
            break
    assert msg.arbitration.election_id.low == 2
    backup.write([_lpm_update(info, "DELETE", b"\x0a\x00\x00\x01", 32, "MyIngress.drop")])


def test_an_entry_written_over_p4runtime_forwards_packets_and_reads_back(fwd):
    c = fwd.connect()
    info = c.get_p4info()
    assert info == fwd.service.p4info
    c.set_pipeline(info)                               # the same program: accepted
    c.write([_lpm_update(info, "INSERT", b"\x0a\x00\x01\x00", 24, "MyIngress.ipv4_forward",
                         b"\x00\x00\x00\x00\x00\x07", b"\x03")])
    out = fwd.switch.process(1, _ipv4_frame("10.0.1.9"))
    assert [p for p, _ in out] == [3] and out[0][1][:6] == b"\x00\x00\x00\x00\x00\x07"
    assert fwd.switch.process(1, _ipv4_frame("10.0.2.9")) == []        # the default: drop
    q = p4rt.Entity()
    q.table_entry.table_id = info.tables[0].preamble.id
    [e] = c.read([q])
    assert e.table_entry.match[0].lpm.prefix_len == 24 and e.table_entry.match[0].lpm.value == b"\x0a\x00\x01\x00"
    assert [p.value for p in e.table_entry.action.action.params] == [b"\x07", b"\x03"]   # canonical bytes
    c.write([_lpm_update(info, "MODIFY", b"\x0a\x00\x01\x00", 24, "MyIngress.ipv4_forward",
                         b"\x00\x00\x00\x00\x00\x07", b"\x04")])
    assert [p for p, _ in fwd.switch.process(1, _ipv4_frame("10.0.1.9"))] == [4]
    c.write([_lpm_update(info, "DELETE", b"\x0a\x00\x01\x00", 24, "MyIngress.ipv4_forward")])
    assert c.read([q]) == [] and fwd.switch.process(1, _ipv4_frame("10.0.1.9")) == []


def test_a_batch_reports_each_failed_update_and_applies_the_rest(fwd):
    c = fwd.connect()
    info = fwd.service.p4info
    good = _lpm_update(info, "INSERT", b"\x0a\x00\x00\x01", 32, "MyIngress.ipv4_forward", b"\x01", b"\x02")
    with pytest.raises(P4RuntimeCallError) as e:
        c.write([good,
                 good,                                                               # duplicate
                 _lpm_update(info, "DELETE", b"\x0a\x00\x00\x02", 32, "MyIngress.drop"),   # absent
                 _lpm_update(info, "INSERT", b"\x0a\x00\x00\x03", 32, "MyIngress.ipv4_forward",
                             b"\x01", b"\x02\x00"),                                  # port wider than bit<9>
                 _lpm_update(info, "INSERT", b"\x0a\x00\x00\x04", 33, "MyIngress.drop")])   # /33
    assert e.value.code.name == "UNKNOWN"
    assert [code_pb2.Code.Name(x.canonical_code) for x in e.value.errors] == [
        "OK", "ALREADY_EXISTS", "NOT_FOUND", "OUT_OF_RANGE", "INVALID_ARGUMENT"]
    assert [p for p, _ in fwd.switch.process(1, _ipv4_frame("10.0.0.1"))] == [2]   # the good one landed


def test_another_programs_p4info_is_refused_and_the_default_action_can_be_set(fwd):
    c = fwd.connect()
    other = build_p4info(Switch.from_file(AGG).state)
    with pytest.raises(P4RuntimeCallError) as e:
        c.set_pipeline(other)
    assert e.value.code.name == "INVALID_ARGUMENT" and "restart the switch" in e.value.details
    info = fwd.service.p4info
    u = p4rt.Update(type=p4rt.Update.MODIFY)
    te = u.entity.table_entry
    te.table_id, te.is_default_action = info.tables[0].preamble.id, True
    fwd_id = next(a.preamble.id for a in info.actions if a.preamble.name == "MyIngress.ipv4_forward")
    te.action.action.action_id = fwd_id
    te.action.action.params.add(param_id=1, value=b"\x09")
    te.action.action.params.add(param_id=2, value=b"\x05")
    c.write([u])
    assert [p for p, _ in fwd.switch.process(1, _ipv4_frame("192.168.0.1"))] == [5]
    c.set_pipeline(info)            # VERIFY_AND_COMMIT clears forwarding state, as on BMv2
    assert fwd.switch.process(1, _ipv4_frame("192.168.0.1")) == []


def test_multicast_groups_replicate_packets(fwd):
    c = fwd.connect()
    info = fwd.service.p4info
    u = p4rt.Update(type=p4rt.Update.INSERT)
    g = u.entity.packet_replication_engine_entry.multicast_group_entry
    g.multicast_group_id = 7
    for port in (1, 2, 3):
        g.replicas.add(egress_port=port, instance=1)
    c.write([u, _lpm_update(info, "INSERT", b"\xe0\x00\x00\x00", 8, "MyIngress.multicast", b"\x07")])
    assert sorted(p for p, _ in fwd.switch.process(4, _ipv4_frame("224.1.1.1"))) == [1, 2, 3]
    q = p4rt.Entity()
    q.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 7
    [e] = c.read([q])
    assert sorted(r.egress_port for r in e.packet_replication_engine_entry.multicast_group_entry.replicas) == [1, 2, 3]
    u.type = p4rt.Update.MODIFY
    del g.replicas[2]
    c.write([u])
    assert sorted(p for p, _ in fwd.switch.process(4, _ipv4_frame("224.1.1.1"))) == [1, 2]


def test_registers_and_counters_of_the_aggregation_program():
    s = Served(AGG)
    try:
        c = s.connect()
        info = s.service.p4info
        reg = info.registers[0]
        u = p4rt.Update(type=p4rt.Update.MODIFY)
        u.entity.register_entry.register_id = reg.preamble.id
        u.entity.register_entry.index.index = 3
        u.entity.register_entry.data.bitstring = b"\x2a"
        c.write([u])
        q = p4rt.Entity()
        q.register_entry.register_id, q.register_entry.index.index = reg.preamble.id, 3
        [e] = c.read([q])
        assert e.register_entry.data.bitstring == b"\x2a"
        assert s.switch.state.registers[reg.preamble.name].read(3) == 42
        u.entity.register_entry.index.index = reg.size                      # past the end
        with pytest.raises(P4RuntimeCallError) as err:
            c.write([u])
        assert code_pb2.Code.Name(err.value.errors[0].canonical_code) == "OUT_OF_RANGE"
        events = s.switch.state.counters["MyIngress.agg_events"]
        events.write(2, 5, 640)
        cq = p4rt.Entity()
        cq.counter_entry.counter_id = next(x.preamble.id for x in info.counters
                                           if x.preamble.name == "MyIngress.agg_events")
        cells = c.read([cq])
        assert len(cells) == events.size
        assert (cells[2].counter_entry.data.packet_count, cells[2].counter_entry.data.byte_count) == (5, 640)
    finally:
        s.stop()


def test_p4runtime_reads_and_writes_the_cells_the_compiled_path_uses():
    """aggregation.p4 on the compiled data path: a register written over P4Runtime is what
    the next packet reads (its slot is at generation 5, so a generation 3 contribution is
    stale), and the counter that packet bumped in C reads back over P4Runtime."""
    from softswitch.control.commands import RuntimeAPI
    from softswitch.native.switch import CompiledSwitch
    from workers import agg_packet as ap
    s = Served(AGG)
    try:
        csw = CompiledSwitch(s.switch)
        api = RuntimeAPI(s.switch.state)
        assert not api.execute("table_add MyIngress.agg_points MyIngress.agg_point 1 10.0.0.100 => "
                               "1 0 4 2 1 0.0.0.0 0 0").startswith("Error")
        c = s.connect()
        info = s.service.p4info
        gen_reg = next(x for x in info.registers if x.preamble.name == "MyIngress.r_gen")
        u = p4rt.Update(type=p4rt.Update.MODIFY)
        u.entity.register_entry.register_id = gen_reg.preamble.id
        u.entity.register_entry.index.index = (2 << 1) | 1          # slot 2, shadow 1
        u.entity.register_entry.data.bitstring = b"\x05"
        c.write([u])
        frame = ap.udp_frame("00:00:00:00:00:02", "00:00:00:00:00:01", "10.0.0.1", "10.0.0.100",
                             ap.encode(1, ap.DATA, 2, 3, 0, 0, 2, 0, [1] * 32))
        assert csw.process(1, frame) == []
        cq = p4rt.Entity()
        cq.counter_entry.counter_id = next(x.preamble.id for x in info.counters
                                           if x.preamble.name == "MyIngress.agg_events")
        cq.counter_entry.index.index = 8                              # EV_STALE
        [e] = c.read([cq])
        assert (e.counter_entry.data.packet_count, e.counter_entry.data.byte_count) == (1, len(frame))
        q = p4rt.Entity()
        q.register_entry.register_id, q.register_entry.index.index = gen_reg.preamble.id, 5
        [e] = c.read([q])
        assert e.register_entry.data.bitstring == b"\x05", "the stale packet changed nothing"
        csw.close()
    finally:
        s.stop()


def test_a_call_waiting_for_a_stopped_loop_fails_at_once_when_the_bridge_closes():
    # the switch process closes the bridge once its loop has stopped: a gRPC thread still
    # waiting on it (a stream's goodbye racing SIGTERM; seen in CI as a process that took
    # over 10 s to exit) must not wait CALL_TIMEOUT_S, and a later call fails at once
    bridge = LoopBridge()                       # no loop drains it
    outcome = []

    def caller():
        try:
            outcome.append(bridge.call(lambda: "answered"))
        except LoopStopped as e:
            outcome.append(e)

    t = threading.Thread(target=caller, daemon=True)
    t.start()
    time.sleep(0.1)
    closed = time.monotonic()
    bridge.close()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - closed < 2
    assert isinstance(outcome[0], LoopStopped)
    with pytest.raises(LoopStopped):
        bridge.call(lambda: "answered")


def test_the_softswitch_process_serves_p4runtime_beside_the_cli(tmp_path):
    log = tmp_path / "s.log"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", str(FORWARD), "--thrift-port", "0",
                             "--grpc-server-addr", "127.0.0.1:0", "--log-file", str(log)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while "ready:" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text() if log.exists() else ""
            time.sleep(0.1)
        line = next(x for x in log.read_text().splitlines() if "ready:" in x)
        addr = line.split(" p4runtime ")[1].split()[0]
        cli_port = int(line.split("control port 127.0.0.1:")[1].split()[0])
        with P4RuntimeConnection(addr) as c:
            info = c.get_p4info()
            c.write([_lpm_update(info, "INSERT", b"\x0a\x00\x00\x05", 32, "MyIngress.drop")])
        from softswitch.control.client import SoftswitchClient
        with SoftswitchClient(cli_port) as cli:                        # the other control plane sees it
            assert "MyIngress.drop" in cli.execute("table_dump MyIngress.ipv4_lpm")
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_a_non_loopback_grpc_address_is_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "softswitch", str(FORWARD), "--thrift-port", "0",
                        "--grpc-server-addr", "0.0.0.0:9559"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={**os.environ})
    assert r.returncode == 1 and "localhost only" in r.stderr


# ---------------------------------------------------------------- the CLI language over P4Runtime
def _table_state(state):
    return {name: sorted((repr(e.match), e.action.name, e.args, e.priority) for e in t.entries())
            for name, t in state.tables.items()} | {
        name + ".default": (t.default_action.name, t.default_args) for name, t in state.tables.items()}


def _run_both(cmds, api, client):
    """Each command on the CLI's API and on the P4Runtime client; $nK is node K's handle."""
    from softswitch.control.client import parse_node_handle
    handles, replies = {}, []
    for cmd in cmds:
        for k, h in handles.items():
            cmd = cmd.replace(f"$n{k}", str(h))
        a, b = api.execute(cmd), client.execute(cmd)
        replies.append((cmd, a, b))
        if cmd.startswith("mc_node_create"):
            assert parse_node_handle(a) == parse_node_handle(b)
            handles[len(handles)] = parse_node_handle(a)
    return replies


def test_the_cli_language_over_p4runtime_leaves_the_state_the_cli_leaves():
    from softswitch.control.client import is_error, parse_handle, parse_register
    from softswitch.control.commands import RuntimeAPI
    from softswitch.p4runtime.cli_client import P4RuntimeClient
    from tests.agg_switches import flat_point_commands
    ref = Switch.from_file(AGG)
    api = RuntimeAPI(ref.state)
    s = Served(AGG)
    client = P4RuntimeClient(s.server.address)
    try:
        cmds = flat_point_commands("10.0.9.1", ["10.0.1.1", "10.0.1.2", "10.0.2.1"], 8) + [
            "register_write MyIngress.r_count 5 3", "table_set_default MyIngress.ipv4_lpm MyIngress.drop"]
        replies = _run_both(cmds, api, client)
        assert not any(is_error(a) or is_error(b) for _, a, b in replies), replies
        assert _table_state(s.switch.state) == _table_state(ref.state)
        assert s.switch.state.pre.replicas(1) == ref.state.pre.replicas(1) != []
        assert parse_register(client.execute("register_read MyIngress.r_count 5")) == 3
        # handles: the client's numbering follows the CLI's for what it added
        h = parse_handle(next(b for c, _, b in replies if c.startswith("table_add MyIngress.ipv4_lpm")))
        more = [f"table_modify MyIngress.ipv4_lpm MyIngress.ipv4_forward {h} => 00:00:00:00:00:09 7",
                "table_delete MyEgress.agg_children 1", "mc_node_dissociate 1 1", "mc_node_destroy 1"]
        replies = _run_both(["mc_node_create 9 4"] + more, api, client)
        assert not any(is_error(a) or is_error(b) for _, a, b in replies), replies
        assert _table_state(s.switch.state) == _table_state(ref.state)
        assert s.switch.state.pre.replicas(1) == ref.state.pre.replicas(1)
        # refusals come back as error replies the control plane detects
        dup = client.execute(cmds[0])
        assert is_error(dup) and "ALREADY_EXISTS" in dup
        assert is_error(client.execute("table_add MyIngress.nope MyIngress.drop 1"))
        assert is_error(client.execute("swap_configs"))
    finally:
        client.close()
        s.stop()
