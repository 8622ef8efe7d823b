"""What a P4Runtime server does to a SwitchState: Write, Read, pipeline config, arbitration.

No gRPC here (server.py is the transport): each method takes and returns protobuf messages and
raises P4RuntimeError. Every method runs on the switch's loop thread (server.py hands calls
over), so state changes never interleave with a packet.

Behaviour, following the P4Runtime specification (v1.3+) and BMv2's PI server where the spec
leaves a choice:
* Arbitration: one primary per device (default role): the stream with the highest election id.
  Write needs the primary's election id (PERMISSION_DENIED otherwise); Read needs none.
* Write applies its updates in order, CONTINUE_ON_ERROR (the spec's default atomicity); a batch
  with failures raises UNKNOWN with one p4.v1.Error per update in the status details.
* The program is the one the switch started with. SetForwardingPipelineConfig is accepted when
  the P4Info sent names the same resources with the same ids (a controller pushing p4c's P4Info
  and BMv2 JSON of that program, as p4lang/tutorials' controllers do); the device config (the
  BMv2 JSON) is not used. VERIFY_AND_COMMIT and COMMIT clear the forwarding state, as loading a
  config does on BMv2; RECONCILE_AND_COMMIT keeps it. Another P4Info is refused (INVALID_ARGUMENT,
  naming the first resource that differs): restart the switch with the new program.
* Entities: table entries (incl. the default entry, direct counter data), counters, direct
  counters, registers, multicast groups. Meters, action profiles, clone sessions, digests,
  PacketIn/Out are refused with UNIMPLEMENTED and a message saying so.
"""
from __future__ import annotations

from softswitch.p4runtime import codec
from softswitch.p4runtime.errors import P4RuntimeError, from_state_error
from softswitch.p4runtime.p4info import build_p4info
from softswitch.p4runtime.proto import code_pb2, p4rt
from softswitch.runtime.state import StateError, TableError

API_VERSION = "1.4.0"
_RESOURCE_KINDS = ("tables", "actions", "counters", "direct_counters", "meters", "direct_meters", "registers")


def _resources(info) -> dict:
    return {(kind, m.preamble.id): m.preamble.name for kind in _RESOURCE_KINDS for m in getattr(info, kind)}


def p4info_difference(ours, theirs) -> str | None:
    """None when ``theirs`` names the same resources with the same ids; else what differs."""
    a, b = _resources(ours), _resources(theirs)
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            kind, rid = key
            return (f"{kind[:-1].replace('_', ' ')} id {rid}: the running program has "
                    f"{a.get(key) or 'nothing'}, the P4Info sent has {b.get(key) or 'nothing'}")
    return None


class P4RuntimeService:
    def __init__(self, state, device_id: int = 0, program: str = ""):
        self.state = state
        self.device_id = device_id
        self.program = program
        self.p4info = build_p4info(state)
        self.cookie = 0
        self._index()
        self.streams: dict[object, tuple[int, int]] = {}   # stream -> (high, low) election id
        self.stats = {"writes": 0, "updates": 0, "failed_updates": 0, "reads": 0}

    def _index(self):
        info, s = self.p4info, self.state
        self.tables = {m.preamble.id: s.tables[m.preamble.name] for m in info.tables}
        self.table_ids = {t.name: i for i, t in self.tables.items()}
        self.actions = {m.preamble.id: m for m in info.actions}
        self.action_ids = {m.preamble.name: m.preamble.id for m in info.actions}
        self.counters = {m.preamble.id: s.counters[m.preamble.name] for m in info.counters}
        self.direct_counters = {m.preamble.id: s.counters[m.preamble.name] for m in info.direct_counters}
        self.registers = {m.preamble.id: s.registers[m.preamble.name] for m in info.registers}

    # ------------------------------------------------------------ arbitration
    def primary(self) -> tuple[int, int] | None:
        return max(self.streams.values(), default=None)

    def arbitrate(self, stream, update) -> list:
        """A MasterArbitrationUpdate from ``stream`` -> [(stream, StreamMessageResponse)] to send."""
        if update.device_id != self.device_id:
            raise P4RuntimeError("NOT_FOUND", f"this switch is device {self.device_id}, not {update.device_id}")
        if update.role.name or update.role.id:
            raise P4RuntimeError("UNIMPLEMENTED", "roles are not supported: use the default role")
        eid = (update.election_id.high, update.election_id.low)
        if any(s is not stream and e == eid for s, e in self.streams.items()):
            raise P4RuntimeError("INVALID_ARGUMENT", f"election id {eid[0]}:{eid[1]} is already used by another controller")
        self.streams[stream] = eid
        return self.arbitration_notices()

    def disconnect(self, stream) -> list:
        was = self.primary()
        self.streams.pop(stream, None)
        return self.arbitration_notices() if self.primary() != was else []

    def arbitration_notices(self) -> list:
        """Every stream learns who is primary: OK for the primary, ALREADY_EXISTS for backups."""
        top = self.primary()
        out = []
        for s, eid in self.streams.items():
            msg = p4rt.StreamMessageResponse()
            a = msg.arbitration
            a.device_id = self.device_id
            a.election_id.high, a.election_id.low = top
            a.status.code = code_pb2.OK if eid == top else code_pb2.ALREADY_EXISTS
            a.status.message = "is primary" if eid == top else "is backup"
            out.append((s, msg))
        return out

    def _check_device(self, device_id: int):
        if device_id != self.device_id:
            raise P4RuntimeError("NOT_FOUND", f"this switch is device {self.device_id}, not {device_id}")

    def _check_primary(self, device_id: int, election_id):
        self._check_device(device_id)
        eid = (election_id.high, election_id.low)
        if self.primary() is None or eid != self.primary():
            raise P4RuntimeError("PERMISSION_DENIED",
                                 f"election id {eid[0]}:{eid[1]} is not the primary's: open a StreamChannel and "
                                 f"send a MasterArbitrationUpdate with the highest election id first")

    # ------------------------------------------------------------ pipeline config
    def set_pipeline(self, request):
        self._check_primary(request.device_id, request.election_id)
        A = p4rt.SetForwardingPipelineConfigRequest
        if request.action == A.UNSPECIFIED:
            raise P4RuntimeError("INVALID_ARGUMENT", "SetForwardingPipelineConfig needs an action (e.g. VERIFY_AND_COMMIT)")
        if request.action != A.COMMIT or request.config.HasField("p4info"):
            diff = p4info_difference(self.p4info, request.config.p4info)
            if diff:
                raise P4RuntimeError("INVALID_ARGUMENT",
                                     f"the softswitch runs the program it started with ({self.program or 'its P4 file'}) "
                                     f"and this P4Info is another program's ({diff}): restart the switch with the new "
                                     f"program, or compare with GetForwardingPipelineConfig")
        if request.action in (A.VERIFY, A.VERIFY_AND_SAVE):
            return p4rt.SetForwardingPipelineConfigResponse()
        if request.action in (A.VERIFY_AND_COMMIT, A.COMMIT):
            self.state.reset()
        self.cookie = request.config.cookie.cookie
        return p4rt.SetForwardingPipelineConfigResponse()

    def get_pipeline(self, request):
        self._check_device(request.device_id)
        resp = p4rt.GetForwardingPipelineConfigResponse()
        R = p4rt.GetForwardingPipelineConfigRequest
        if request.response_type in (R.ALL, R.P4INFO_AND_COOKIE):
            resp.config.p4info.CopyFrom(self.p4info)
        resp.config.cookie.cookie = self.cookie
        if request.response_type == R.ALL:
            resp.config.p4_device_config = self.program.encode()
        return resp

    def capabilities(self, _request):
        return p4rt.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ------------------------------------------------------------ write
    def write(self, request):
        self._check_primary(request.device_id, request.election_id)
        if request.atomicity != p4rt.WriteRequest.CONTINUE_ON_ERROR:
            raise P4RuntimeError("UNIMPLEMENTED", "only CONTINUE_ON_ERROR atomicity is supported")
        errors, failed = [], False
        self.stats["writes"] += 1
        self.stats["updates"] += len(request.updates)
        for u in request.updates:
            err = p4rt.Error(canonical_code=code_pb2.OK)
            try:
                self._update(u)
            except P4RuntimeError as e:
                err.canonical_code, err.message, failed = getattr(code_pb2, e.code), e.message, True
            except (TableError, StateError) as e:
                pe = from_state_error(e)
                err.canonical_code, err.message, failed = getattr(code_pb2, pe.code), pe.message, True
            errors.append(err)
        if failed:
            self.stats["failed_updates"] += sum(e.canonical_code != code_pb2.OK for e in errors)
            raise BatchError(errors)
        return p4rt.WriteResponse()

    def _update(self, u):
        kind = u.entity.WhichOneof("entity")
        if u.type == p4rt.Update.UNSPECIFIED:
            raise P4RuntimeError("INVALID_ARGUMENT", "update type UNSPECIFIED: use INSERT, MODIFY or DELETE")
        if kind == "table_entry":
            self._write_table_entry(u.type, u.entity.table_entry)
        elif kind == "register_entry":
            self._write_register(u.type, u.entity.register_entry)
        elif kind == "counter_entry":
            self._write_counter(u.type, u.entity.counter_entry)
        elif kind == "direct_counter_entry":
            self._write_direct_counter(u.type, u.entity.direct_counter_entry)
        elif kind == "packet_replication_engine_entry":
            pre = u.entity.packet_replication_engine_entry
            if pre.WhichOneof("type") != "multicast_group_entry":
                raise P4RuntimeError("UNIMPLEMENTED", "clone sessions are not supported over P4Runtime yet: "
                                                      "use mirroring_add on the CLI port")
            self._write_multicast(u.type, pre.multicast_group_entry)
        else:
            raise P4RuntimeError("UNIMPLEMENTED", f"{kind} is not supported by the softswitch's P4Runtime server")

    def _table(self, table_id):
        t = self.tables.get(table_id)
        if t is None:
            raise P4RuntimeError("NOT_FOUND", f"no table with id {table_id}")
        return t

    def _action(self, table, action):
        meta = self.actions.get(action.action_id)
        if meta is None:
            raise P4RuntimeError("NOT_FOUND", f"no action with id {action.action_id}")
        spec = self.state.actions[meta.preamble.name]
        if len(action.params) != len(spec.params):
            raise P4RuntimeError("INVALID_ARGUMENT", f"action {spec.name} takes {len(spec.params)} parameters, "
                                                     f"got {len(action.params)}")
        by_id = {p.param_id: p.value for p in action.params}
        args = []
        for i, (pname, width) in enumerate(spec.params, start=1):
            if i not in by_id:
                raise P4RuntimeError("INVALID_ARGUMENT", f"action {spec.name}: parameter {pname} (id {i}) is missing")
            args.append(codec.to_int(by_id[i], width, f"action {spec.name}, parameter {pname}"))
        if spec.name not in table.actions and spec.name != table.default_action.name:
            raise P4RuntimeError("INVALID_ARGUMENT", f"action {spec.name} is not an action of table {table.name}")
        return spec.name, args

    def _write_table_entry(self, op, e):
        t = self._table(e.table_id)
        if e.is_default_action:
            if e.match:
                raise P4RuntimeError("INVALID_ARGUMENT", "a default entry has no match fields")
            if op != p4rt.Update.MODIFY:
                raise P4RuntimeError("INVALID_ARGUMENT", "the default entry can only be MODIFYed")
            if e.HasField("action"):
                t.set_default(*self._action(t, e.action.action))
            else:
                t.reset_default()
            return
        match = codec.decode_match(t, e.match)
        prio = codec.bmv2_priority(e.priority) if t.needs_priority else None
        if not t.needs_priority and e.priority:
            raise P4RuntimeError("INVALID_ARGUMENT", f"table {t.name} has no ternary/range/optional key: priority must be 0")
        if op == p4rt.Update.INSERT:
            if e.action.WhichOneof("type") != "action":
                raise P4RuntimeError("INVALID_ARGUMENT", f"table {t.name}: an entry needs a direct action")
            name, args = self._action(t, e.action.action)
            handle = t.add(match, name, args, prio)
            if e.HasField("counter_data"):
                entry = t.get_entry(handle)
                entry.packets, entry.bytes = e.counter_data.packet_count, e.counter_data.byte_count
            return
        try:
            entry = t.find(match, prio)
        except TableError:
            raise P4RuntimeError("NOT_FOUND", f"table {t.name} has no entry with this match"
                                 + (f" and priority {e.priority}" if t.needs_priority else "")) from None
        if op == p4rt.Update.MODIFY:
            if e.HasField("action"):
                t.modify(entry.handle, *self._action(t, e.action.action))
            if e.HasField("counter_data"):
                entry.packets, entry.bytes = e.counter_data.packet_count, e.counter_data.byte_count
        else:
            t.delete(entry.handle)

    @staticmethod
    def _cells(op, kind: str, objs: dict, rid: int, e):
        """(the array, the indexes an update writes: its index, or every cell without one)."""
        if op != p4rt.Update.MODIFY:
            raise P4RuntimeError("INVALID_ARGUMENT", f"{kind} entries can only be MODIFYed")
        x = objs.get(rid)
        if x is None:
            raise P4RuntimeError("NOT_FOUND", f"no {kind} with id {rid}")
        return x, ([e.index.index] if e.HasField("index") else range(x.size))

    def _write_register(self, op, e):
        r, indexes = self._cells(op, "register", self.registers, e.register_id, e)
        if e.data.WhichOneof("data") != "bitstring":
            raise P4RuntimeError("INVALID_ARGUMENT", f"register {r.name}: data must be a bitstring")
        v = codec.to_int(e.data.bitstring, r.width, f"register {r.name}")
        for i in indexes:
            r.write(i, v)

    def _write_counter(self, op, e):
        c, indexes = self._cells(op, "counter", self.counters, e.counter_id, e)
        for i in indexes:
            c.write(i, e.data.packet_count, e.data.byte_count)

    def _write_direct_counter(self, op, e):
        if op != p4rt.Update.MODIFY:
            raise P4RuntimeError("INVALID_ARGUMENT", "direct counter entries can only be MODIFYed")
        t = self._table(e.table_entry.table_id)
        entry = self._find(t, e.table_entry)
        entry.packets, entry.bytes = e.data.packet_count, e.data.byte_count

    def _find(self, t, te):
        match = codec.decode_match(t, te.match)
        try:
            return t.find(match, codec.bmv2_priority(te.priority) if t.needs_priority else None)
        except TableError:
            raise P4RuntimeError("NOT_FOUND", f"table {t.name} has no entry with this match") from None

    def _write_multicast(self, op, g):
        pre = self.state.pre
        if not 1 <= g.multicast_group_id < 1 << 16:
            raise P4RuntimeError("INVALID_ARGUMENT", f"multicast group id {g.multicast_group_id} is not within 1..65535")
        mgrp = g.multicast_group_id
        exists = mgrp in pre.groups
        if op == p4rt.Update.INSERT and exists:
            raise P4RuntimeError("ALREADY_EXISTS", f"multicast group {mgrp} already exists")
        if op != p4rt.Update.INSERT and not exists:
            raise P4RuntimeError("NOT_FOUND", f"multicast group {mgrp} does not exist")
        replicas = {}
        for r in g.replicas:
            port = _replica_port(r)
            replicas.setdefault(r.instance, set())
            if port in replicas[r.instance]:
                raise P4RuntimeError("INVALID_ARGUMENT", f"multicast group {mgrp}: replica (port {port}, "
                                                         f"instance {r.instance}) given twice")
            replicas[r.instance].add(port)
        if exists:   # MODIFY and DELETE: the group's nodes go first
            for h in list(pre.groups[mgrp]):
                pre.node_destroy(h)
            pre.mgrp_destroy(mgrp)
        if op == p4rt.Update.DELETE:
            return
        pre.mgrp_create(mgrp)
        for rid, ports in sorted(replicas.items()):   # one PRE node per instance, as BMv2's PI server
            pre.associate(mgrp, pre.node_create(rid, ports))

    # ------------------------------------------------------------ read
    def read(self, request):
        self._check_device(request.device_id)
        self.stats["reads"] += 1
        resp = p4rt.ReadResponse()
        for ent in request.entities:
            kind = ent.WhichOneof("entity")
            if kind == "table_entry":
                self._read_tables(ent.table_entry, resp)
            elif kind == "counter_entry":
                self._read_counters(ent.counter_entry, resp)
            elif kind == "direct_counter_entry":
                self._read_direct_counters(ent.direct_counter_entry, resp)
            elif kind == "register_entry":
                self._read_registers(ent.register_entry, resp)
            elif kind == "packet_replication_engine_entry" and \
                    ent.packet_replication_engine_entry.WhichOneof("type") == "multicast_group_entry":
                self._read_multicast(ent.packet_replication_engine_entry.multicast_group_entry, resp)
            else:
                raise P4RuntimeError("UNIMPLEMENTED", f"reading {kind} is not supported by the softswitch's P4Runtime server")
        return resp

    def _entry_msg(self, tid, t, entry, with_counter: bool):
        out = p4rt.Entity()
        te = out.table_entry
        te.table_id = tid
        codec.encode_match(t, entry.match, te.match)
        if t.needs_priority:
            te.priority = codec.p4rt_priority(entry.priority)
        _fill_action(te.action.action, self.action_ids[entry.action.name], entry.args)
        if with_counter:
            te.counter_data.packet_count, te.counter_data.byte_count = entry.packets, entry.bytes
        return out

    def _read_tables(self, q, resp):
        tables = [(q.table_id, self._table(q.table_id))] if q.table_id else sorted(self.tables.items())
        with_counter = q.HasField("counter_data")
        for tid, t in tables:
            if q.is_default_action:
                ent = resp.entities.add()
                te = ent.table_entry
                te.table_id, te.is_default_action = tid, True
                _fill_action(te.action.action, self.action_ids[t.default_action.name], t.default_args)
                continue
            want = codec.decode_match(t, q.match) if q.match else None
            for entry in t.entries():
                if want is not None and (t._normalize_match(want) != entry.match or
                                         (t.needs_priority and q.priority and
                                          codec.bmv2_priority(q.priority) != entry.priority)):
                    continue
                resp.entities.add().CopyFrom(self._entry_msg(tid, t, entry, with_counter))

    def _read_counters(self, q, resp):
        counters = [(q.counter_id, self.counters.get(q.counter_id))] if q.counter_id else sorted(self.counters.items())
        for cid, c in counters:
            if c is None:
                raise P4RuntimeError("NOT_FOUND", f"no counter with id {cid}")
            for i in ([q.index.index] if q.HasField("index") else range(c.size)):
                packets, nbytes = c.read(i)
                ce = resp.entities.add().counter_entry
                ce.counter_id, ce.index.index = cid, i
                ce.data.packet_count, ce.data.byte_count = packets, nbytes

    def _read_direct_counters(self, q, resp):
        te = q.table_entry
        tables = [(te.table_id, self._table(te.table_id))] if te.table_id else sorted(self.tables.items())
        for tid, t in tables:
            if not any(c.table is t for c in self.direct_counters.values()):
                if te.table_id:
                    raise P4RuntimeError("INVALID_ARGUMENT", f"table {t.name} has no direct counter")
                continue
            entries = [self._find(t, te)] if te.match else t.entries()
            for entry in entries:
                out = resp.entities.add().direct_counter_entry
                out.table_entry.CopyFrom(self._entry_msg(tid, t, entry, False).table_entry)
                out.data.packet_count, out.data.byte_count = entry.packets, entry.bytes

    def _read_registers(self, q, resp):
        regs = [(q.register_id, self.registers.get(q.register_id))] if q.register_id else sorted(self.registers.items())
        for rid, r in regs:
            if r is None:
                raise P4RuntimeError("NOT_FOUND", f"no register with id {rid}")
            for i in ([q.index.index] if q.HasField("index") else range(r.size)):
                re = resp.entities.add().register_entry
                re.register_id, re.index.index = rid, i
                re.data.bitstring = codec.to_bytes(r.read(i) & ((1 << r.width) - 1))

    def _read_multicast(self, q, resp):
        pre = self.state.pre
        groups = [q.multicast_group_id] if q.multicast_group_id else sorted(pre.groups)
        for mgrp in groups:
            if mgrp not in pre.groups:
                raise P4RuntimeError("NOT_FOUND", f"multicast group {mgrp} does not exist")
            g = resp.entities.add().packet_replication_engine_entry.multicast_group_entry
            g.multicast_group_id = mgrp
            for port, rid in pre.replicas(mgrp):
                g.replicas.add(instance=rid, egress_port=port)   # 1.4's field; 1.5 readers accept it


class BatchError(P4RuntimeError):
    """A Write with failed updates: UNKNOWN, with every update's p4.v1.Error (spec 12.3)."""

    def __init__(self, errors):
        bad = [e for e in errors if e.canonical_code != code_pb2.OK]
        super().__init__("UNKNOWN", f"{len(bad)} of {len(errors)} updates failed; first: {bad[0].message}")
        self.errors = errors


def _fill_action(msg, action_id, args):
    msg.action_id = action_id
    for i, a in enumerate(args, start=1):
        msg.params.add(param_id=i, value=codec.to_bytes(a))


def _replica_port(r) -> int:
    """P4Runtime 1.4 has ``egress_port`` (uint32); 1.5 adds ``port`` (bytes) and deprecates it."""
    if "port" in r.DESCRIPTOR.fields_by_name and r.WhichOneof("port_kind") == "port":
        return int.from_bytes(r.port, "big")
    return r.egress_port

