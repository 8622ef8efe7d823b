"""The simple_switch_CLI language spoken over P4Runtime: one client interface for the testbed.

The testbed's control plane writes switch state as simple_switch_CLI commands
(``client.execute_many(["table_add ...", ...], check=True)``) and reads the replies with the
parse helpers of softswitch.control.client. ``P4RuntimeClient`` takes the same commands and
sends P4Runtime Write/Read requests instead, replying with simple_switch_CLI's texts, so the
control plane does not change when a switch is driven over P4Runtime.

What needs translating:
* names: full or unambiguous dot-suffix, as the CLI resolves them, looked up in the P4Info;
* entry handles: P4Runtime has none (an entry is its match key). The client numbers the
  entries it adds per table and remembers each handle's key, so table_modify/table_delete by
  handle work; entries added by another controller have no handle here;
* priorities: the CLI's lowest-wins number p is sent as P4Runtime's 2^24 - 1 - p;
* multicast: the CLI builds groups from nodes (mc_node_create, mc_node_associate); P4Runtime
  writes a whole group. The client keeps the nodes and rewrites the group on each change.

Commands: table_add, table_modify, table_delete, table_set_default, table_clear,
table_num_entries, register_write, register_read, counter_read, mc_mgrp_create,
mc_mgrp_destroy, mc_node_create, mc_node_update, mc_node_associate, mc_node_dissociate,
mc_node_destroy. Any other gets an ``Error:`` reply naming it.
"""
from __future__ import annotations

import itertools
import shlex

from softswitch.control.arguments import ArgError, parse_int, parse_match_field, parse_value, port_map_str
from softswitch.control.client import RuntimeClient
from softswitch.p4runtime import codec
from softswitch.p4runtime.connection import P4RuntimeCallError, P4RuntimeConnection
from softswitch.p4runtime.proto import code_pb2, p4info as P, p4rt
from softswitch.runtime.state_tables import KeySpec

_KIND = {P.MatchField.EXACT: "exact", P.MatchField.LPM: "lpm", P.MatchField.TERNARY: "ternary",
         P.MatchField.RANGE: "range", P.MatchField.OPTIONAL: "optional"}


class CommandError(Exception):
    pass


def _resolve(names: dict, name: str, kind: str):
    if name in names:
        return names[name]
    c = [full for full in names if full.endswith("." + name)]
    if len(c) == 1:
        return names[c[0]]
    raise CommandError(f"Invalid {kind} name ({name})" + (f": ambiguous, could be {', '.join(sorted(c))}" if c else ""))


class _Table:
    def __init__(self, msg):
        self.id, self.name = msg.preamble.id, msg.preamble.name
        self.keys = [KeySpec(f.name, _KIND[f.match_type], f.bitwidth) for f in msg.match_fields]
        self.needs_priority = any(k.match_kind in ("ternary", "range", "optional") for k in self.keys)
        self.action_ids = {r.id for r in msg.action_refs}
        self.handles = itertools.count(0)
        self.entries: dict[int, tuple] = {}     # handle -> (match tuple, p4rt priority)


class P4RuntimeClient(RuntimeClient):
    def __init__(self, address: str, device_id: int = 0, election_id: tuple[int, int] = (0, 1)):
        self.address, self.device_id, self.election_id = address, device_id, election_id
        self.conn: P4RuntimeConnection | None = None
        self.nodes: dict[int, tuple[int, frozenset]] = {}
        self.node_group: dict[int, int] = {}
        self.groups: dict[int, list[int]] = {}
        self._node_ids = itertools.count(0)

    def connect(self):
        if self.conn is None:
            self.conn = P4RuntimeConnection(self.address, self.device_id, self.election_id)
            if not self.conn.is_primary:
                raise ConnectionError(f"P4Runtime at {self.address}: another controller with a higher election id "
                                      f"is primary; this client cannot write")
            info = self.conn.get_p4info()
            self.tables = {t.preamble.name: _Table(t) for t in info.tables}
            self.actions = {a.preamble.name: a for a in info.actions}
            self.registers = {r.preamble.name: r for r in info.registers}
            self.counters = {c.preamble.name: c for c in info.counters}
        return self

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _run(self, cmds) -> list[str]:
        self.connect()
        return [self._one(c) for c in cmds]

    def _one(self, line: str) -> str:
        words = shlex.split(line)
        fn = getattr(self, "_do_" + words[0], None)
        if fn is None:
            return (f"Error: command {words[0]} is not available over P4Runtime (this client translates "
                    f"table, register, counter and multicast commands): use the switch's CLI port")
        try:
            return fn(words[1:])
        except (CommandError, ArgError, ValueError) as e:
            return f"Error: {e}"
        except P4RuntimeCallError as e:   # a one-update batch: the update's own code says more
            failed = [x for x in e.errors if x.canonical_code != code_pb2.OK]
            if failed:
                return (f"Error: Invalid {_family(words[0])} operation "
                        f"({code_pb2.Code.Name(failed[0].canonical_code)}): {failed[0].message}")
            return f"Error: Invalid {_family(words[0])} operation ({e.code.name}): {e}"

    # ---------------------------------------------------------------- tables
    def _action(self, t: _Table, name: str, params):
        a = _resolve(self.actions, name, "action")
        if a.preamble.id not in t.action_ids:
            raise CommandError(f"action {a.preamble.name} is not an action of table {t.name}")
        if len(params) != len(a.params):
            raise CommandError(f"Action {a.preamble.name} needs {len(a.params)} parameters, got {len(params)}")
        msg = p4rt.Action(action_id=a.preamble.id)
        for p, text in zip(a.params, params):
            msg.params.add(param_id=p.id, value=codec.to_bytes(parse_value(text, p.bitwidth)))
        return msg

    def _entry(self, t: _Table, match, priority) -> p4rt.TableEntry:
        te = p4rt.TableEntry(table_id=t.id)
        canonical = []
        for k, m in zip(t.keys, match):   # as BMv2 stores them: values cut to prefix / mask
            if k.match_kind == "lpm":
                v, plen = m
                m = (v & (((1 << plen) - 1) << (k.width - plen)), plen)
            elif k.match_kind in ("ternary", "optional"):
                m = (m[0] & m[1], m[1])
            canonical.append(m)
        codec.encode_match(t, canonical, te.match)
        if priority is not None:
            te.priority = priority
        return te

    def _write(self, op: str, **entity):
        u = p4rt.Update(type=getattr(p4rt.Update, op))
        for field, msg in entity.items():
            getattr(u.entity, field).CopyFrom(msg)
        self.conn.write([u])

    def _do_table_add(self, args):
        if len(args) < 2:
            raise CommandError("usage: table_add <table name> <action name> <match fields> => <action parameters> [priority]")
        t = _resolve(self.tables, args[0], "table")
        rest = args[2:]
        priority = None
        if t.needs_priority:
            if not rest:
                raise CommandError(f"Table {t.name} needs a priority, given last")
            priority = codec.p4rt_priority(parse_int(rest[-1], "priority"))
            rest = rest[:-1]
        keys, params = (rest[:rest.index("=>")], rest[rest.index("=>") + 1:]) if "=>" in rest else (rest, [])
        if len(keys) != len(t.keys):
            raise CommandError(f"Table {t.name} needs {len(t.keys)} key fields, got {len(keys)}")
        match = tuple(parse_match_field(x, k.match_kind, k.width) for x, k in zip(keys, t.keys))
        te = self._entry(t, match, priority)
        te.action.action.CopyFrom(self._action(t, args[1], params))
        self._write("INSERT", table_entry=te)
        handle = next(t.handles)
        t.entries[handle] = (match, priority)
        return f"Adding entry to table {t.name}\nEntry has been added with handle {handle}"

    def _by_handle(self, t: _Table, text: str):
        handle = parse_int(text, "entry handle")
        if handle not in t.entries:
            raise CommandError(f"Invalid table operation (INVALID_HANDLE): table {t.name} has no entry with handle "
                               f"{handle} added by this client")
        return handle, self._entry(t, *t.entries[handle])

    def _do_table_modify(self, args):
        if len(args) < 3:
            raise CommandError("usage: table_modify <table name> <action name> <entry handle> [action parameters]")
        t = _resolve(self.tables, args[0], "table")
        _, te = self._by_handle(t, args[2])
        params = args[3:]
        if params and params[0] == "=>":
            params = params[1:]
        te.action.action.CopyFrom(self._action(t, args[1], params))
        self._write("MODIFY", table_entry=te)
        return f"Modifying entry {args[2]} for {t.name} match table"

    def _do_table_delete(self, args):
        if len(args) != 2:
            raise CommandError("usage: table_delete <table name> <entry handle>")
        t = _resolve(self.tables, args[0], "table")
        handle, te = self._by_handle(t, args[1])
        self._write("DELETE", table_entry=te)
        del t.entries[handle]
        return f"Deleting entry {handle} from {t.name}"

    def _do_table_set_default(self, args):
        if len(args) < 2:
            raise CommandError("usage: table_set_default <table name> <action name> <action parameters>")
        t = _resolve(self.tables, args[0], "table")
        te = p4rt.TableEntry(table_id=t.id, is_default_action=True)
        te.action.action.CopyFrom(self._action(t, args[1], args[2:]))
        self._write("MODIFY", table_entry=te)
        return f"Setting default action of {t.name}"

    def _read_entries(self, t: _Table):
        q = p4rt.Entity()
        q.table_entry.table_id = t.id
        return [e.table_entry for e in self.conn.read([q])]

    def _do_table_clear(self, args):
        t = _resolve(self.tables, args[0], "table")
        if entries := self._read_entries(t):
            self.conn.write([p4rt.Update(type=p4rt.Update.DELETE, entity=p4rt.Entity(table_entry=e)) for e in entries])
        t.entries.clear()
        return ""

    def _do_table_num_entries(self, args):
        return str(len(self._read_entries(_resolve(self.tables, args[0], "table"))))

    # ---------------------------------------------------------------- registers, counters
    def _do_register_write(self, args):
        if len(args) != 3:
            raise CommandError("usage: register_write <name> <index> <value>")
        r = _resolve(self.registers, args[0], "register")
        e = p4rt.RegisterEntry(register_id=r.preamble.id)
        e.index.index = parse_int(args[1], "index")
        width = r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth
        e.data.bitstring = codec.to_bytes(parse_int(args[2], "value") & ((1 << width) - 1))
        self._write("MODIFY", register_entry=e)
        return ""

    def _do_register_read(self, args):
        r = _resolve(self.registers, args[0], "register")
        q = p4rt.Entity()
        q.register_entry.register_id = r.preamble.id
        if len(args) > 1:
            q.register_entry.index.index = parse_int(args[1], "index")
        values = [int.from_bytes(e.register_entry.data.bitstring, "big") for e in self.conn.read([q])]
        if len(args) > 1:
            return f"{args[0]}[{args[1]}]= {values[0]}"
        return f"{args[0]}= " + ", ".join(str(v) for v in values)

    def _do_counter_read(self, args):
        if len(args) != 2:
            raise CommandError("usage: counter_read <name> <index>")
        c = _resolve(self.counters, args[0], "counter")
        q = p4rt.Entity()
        q.counter_entry.counter_id = c.preamble.id
        q.counter_entry.index.index = parse_int(args[1], "index")
        [e] = self.conn.read([q])
        d = e.counter_entry.data
        return f"{args[0]}[{args[1]}]= ({d.byte_count} bytes, {d.packet_count} packets)"

    # ---------------------------------------------------------------- multicast
    def _write_group(self, mgrp: int, op: str):
        g = p4rt.MulticastGroupEntry(multicast_group_id=mgrp)
        for h in self.groups.get(mgrp, ()):
            rid, ports = self.nodes[h]
            for port in sorted(ports):
                g.replicas.add(egress_port=port, instance=rid)
        self._write(op, packet_replication_engine_entry=p4rt.PacketReplicationEngineEntry(multicast_group_entry=g))

    def _do_mc_mgrp_create(self, args):
        mgrp = parse_int(args[0], "multicast group id")
        self.groups[mgrp] = []
        try:
            self._write_group(mgrp, "INSERT")
        except P4RuntimeCallError:
            del self.groups[mgrp]
            raise
        return f"Creating multicast group {mgrp}"

    def _do_mc_mgrp_destroy(self, args):
        mgrp = parse_int(args[0], "multicast group id")
        self._write_group(mgrp, "DELETE")
        for h in self.groups.pop(mgrp, []):
            self.node_group.pop(h, None)
        return f"Destroying multicast group {mgrp}"

    def _do_mc_node_create(self, args):
        if len(args) < 1:
            raise CommandError("usage: mc_node_create <rid> <space-separated port list> [ | lag list]")
        rid = parse_int(args[0], "rid")
        ports = frozenset(parse_int(p, "port") for p in args[1:] if p != "|")
        handle = next(self._node_ids)
        self.nodes[handle] = (rid, ports)
        return (f"Creating node with rid {rid} and with port map {port_map_str(ports)}\n"
                f"node was created with handle {handle}")

    def _node(self, text):
        h = parse_int(text, "node handle")
        if h not in self.nodes:
            raise CommandError(f"Invalid PRE operation (INVALID_L1_HANDLE): node {h} does not exist")
        return h

    def _do_mc_node_update(self, args):
        h = self._node(args[0])
        self.nodes[h] = (self.nodes[h][0], frozenset(parse_int(p, "port") for p in args[1:] if p != "|"))
        if h in self.node_group:
            self._write_group(self.node_group[h], "MODIFY")
        return f"Updating node {h}"

    def _do_mc_node_associate(self, args):
        mgrp, h = parse_int(args[0], "multicast group id"), self._node(args[1])
        if mgrp not in self.groups:
            raise CommandError(f"Invalid PRE operation (INVALID_MGID): multicast group {mgrp} does not exist")
        self.groups[mgrp].append(h)
        self.node_group[h] = mgrp
        self._write_group(mgrp, "MODIFY")
        return f"Associating node {h} to multicast group {mgrp}"

    def _do_mc_node_dissociate(self, args):
        mgrp, h = parse_int(args[0], "multicast group id"), self._node(args[1])
        if h in self.groups.get(mgrp, []):
            self.groups[mgrp].remove(h)
            self.node_group.pop(h, None)
            self._write_group(mgrp, "MODIFY")
        return f"Dissociating node {h} from multicast group {mgrp}"

    def _do_mc_node_destroy(self, args):
        h = self._node(args[0])
        mgrp = self.node_group.pop(h, None)
        if mgrp is not None:
            self.groups[mgrp].remove(h)
            self._write_group(mgrp, "MODIFY")
        del self.nodes[h]
        return f"Destroying node {h}"


def _family(command: str) -> str:
    return {"mc": "PRE", "register": "register", "counter": "counter"}.get(command.split("_")[0], "table")

