"""Live switch state: everything the runtime can change while packets flow.

Plain objects, no locking: one thread runs both packets and control. The
compiled pipeline reads them directly (``Register.values``,
``Counter.packets``/``.bytes``, ``Table.lookup``, ``PRE.replicas``). Register and
counter cells are Python lists, except when the compiled data path (softswitch.native)
runs the program: then they are C-visible arrays it hands over with ``adopt``, which
both sides use in place; the
runtime (softswitch.control.commands) changes them through the methods here, which validate
and raise ``StateError``/``TableError`` with a message naming the problem.

Semantics follow BMv2's simple_switch:

* tables: see state_tables.py (lowest priority number wins, handles with
  versions, DUPLICATE_ENTRY, TABLE_FULL);
* meters: BMv2's two-rate three-color meter (bm_sim/meters.cpp, RFC 2698).
  Rates are given as ``[(CIR, CBS), (PIR, PBS)]``, rate in units (packets or
  bytes) per microsecond, burst in units, CIR <= PIR. Buckets start full and
  refill from the time origin. Per packet the peak bucket is checked first:
  short of tokens -> RED (2), nothing debited; else it is debited and the
  committed bucket checked: short -> YELLOW (1); else debited -> GREEN (0).
  An unconfigured meter returns GREEN.
* PRE: simple_pre. A group holds nodes in association order; a node holds a
  replication id and a port set; ``replicas(g)`` lists (port, rid) node by
  node, ports ascending.
* names: as simple_switch_CLI, every resource is reachable by its full name
  ("MyIngress.ipv4_lpm") or by any dot-suffix that names one resource only
  ("ipv4_lpm").
"""
from __future__ import annotations

from softswitch.runtime.state_tables import ActionSpec, Entry, KeySpec, Table, TableError  # noqa: F401  (re-exported)
from softswitch.runtime.state_tables import HANDLE_SLOT_MASK

GREEN, YELLOW, RED = 0, 1, 2
MAX_PORT = 511            # BMv2's drop port; real ports are below it


class StateError(Exception):
    """A refused runtime operation on registers, counters, meters, PRE or
    mirroring. ``code`` mirrors BMv2's error code names where one exists."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _check_index(kind: str, name: str, index, size: int):
    if not isinstance(index, int) or not 0 <= index < size:
        raise StateError("INVALID_INDEX",
                         f"index {index} is out of range for {kind} {name} (valid: 0..{size - 1})")


# ---------------------------------------------------------------- registers
class Register:
    def __init__(self, name: str, size: int, width: int, signed: bool = False, id: int = 0):
        self.name, self.size, self.width, self.signed, self.id = name, int(size), int(width), signed, id
        self.values = [0] * self.size

    def wrap(self, value: int) -> int:
        """Width masking as a bit<W> (or int<W>) store does."""
        v = int(value) & ((1 << self.width) - 1)
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v

    def read(self, index: int) -> int:
        _check_index("register", self.name, index, self.size)
        return self.values[index]

    def write(self, index: int, value: int):
        _check_index("register", self.name, index, self.size)
        self.values[index] = self.wrap(value)

    def reset(self):
        # in place: compiled code may hold a reference to the list
        self.values[:] = [0] * self.size

    def adopt(self, cells) -> None:
        """Make `cells` (a mutable sequence of `size` ints, e.g. a ctypes array the compiled
        data path reads and writes) this register's storage, current values copied in.
        From then on the control plane and the packets share the cells: nothing is copied
        and nothing goes stale. `values` is never rebound after this (reset is in place)."""
        if len(cells) != self.size:
            raise ValueError(f"register {self.name}: storage of {len(cells)} cells for size {self.size}")
        cells[:] = self.values
        self.values = cells


# ---------------------------------------------------------------- counters
class Counter:
    """Indirect counter array. BMv2 always keeps both packets and bytes;
    ``type`` says which the program asked for."""
    direct = False

    def __init__(self, name: str, size: int, type: str = "packets_and_bytes", id: int = 0):
        if type not in ("packets", "bytes", "packets_and_bytes"):
            raise ValueError(f"counter {name}: unknown type {type!r}")
        self.name, self.size, self.type, self.id = name, int(size), type, id
        self.packets = [0] * self.size
        self.bytes = [0] * self.size

    def count(self, index: int, nbytes: int):
        self.packets[index] += 1
        self.bytes[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        """-> (packets, bytes)"""
        _check_index("counter", self.name, index, self.size)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int):
        _check_index("counter", self.name, index, self.size)
        self.packets[index], self.bytes[index] = int(packets), int(nbytes)

    def reset(self):
        for i in range(self.size):
            self.packets[i] = 0
            self.bytes[i] = 0

    def adopt(self, packets, nbytes) -> None:
        """Register.adopt for the two cell arrays (packets, bytes), current counts copied in."""
        for cells in (packets, nbytes):
            if len(cells) != self.size:
                raise ValueError(f"counter {self.name}: storage of {len(cells)} cells for size {self.size}")
        packets[:] = self.packets
        nbytes[:] = self.bytes
        self.packets, self.bytes = packets, nbytes


class DirectCounter:
    """A direct_counter: its cells are the entries' packets/bytes; the
    runtime indexes it by entry handle, as simple_switch_CLI does."""
    direct = True

    def __init__(self, name: str, table: Table, type: str = "packets_and_bytes", id: int = 0):
        self.name, self.table, self.type, self.id = name, table, type, id

    @property
    def size(self) -> int:
        return self.table.size

    def _entry(self, handle):
        try:
            return self.table.get_entry(handle)
        except TableError as e:
            raise StateError("INVALID_INDEX", f"direct counter {self.name}: {e.message}") from None

    def read(self, handle: int) -> tuple[int, int]:
        e = self._entry(handle)
        return e.packets, e.bytes

    def write(self, handle: int, packets: int, nbytes: int):
        e = self._entry(handle)
        e.packets, e.bytes = int(packets), int(nbytes)

    def reset(self):
        for e in self.table.entries():
            e.packets = e.bytes = 0


# ---------------------------------------------------------------- meters
class MeterCell:
    """One two-rate three-color meter instance (BMv2 semantics, see top)."""
    __slots__ = ("rates", "origin_us")

    def __init__(self):
        self.rates = None          # list of [info_rate, burst, tokens, tokens_last] or None
        self.origin_us = None

    def set_rates(self, rates):
        (cir, cbs), (pir, pbs) = rates
        # checked in this order: peak (miss -> red), then committed (miss -> yellow)
        self.rates = [[float(pir), int(pbs), int(pbs), 0, RED],
                      [float(cir), int(cbs), int(cbs), 0, YELLOW]]
        self.origin_us = None      # set by the first packet: buckets start full

    def get_rates(self):
        return [] if self.rates is None else [(r[0], r[1]) for r in reversed(self.rates)]

    def execute(self, amount: int, now_us: int) -> int:
        rates = self.rates
        if rates is None:
            return GREEN
        if self.origin_us is None:
            self.origin_us = now_us
        elapsed = now_us - self.origin_us
        for r in rates:
            # tokens since origin, not since last packet: no accumulated rounding (as BMv2)
            since_origin = int(elapsed * r[0])
            new = since_origin - r[3]
            if new > 0:
                r[3] = since_origin
                r[2] = min(r[2] + new, r[1])
            if r[2] < amount:
                return r[4]
            r[2] -= amount
        return GREEN


class MeterCellView(MeterCell):
    """A MeterCell whose state lives in a record the compiled data path updates per packet
    (fields configured, has_origin, origin and b[2], each bucket rate, burst, tokens, last,
    color, in MeterCell.rates' order: peak first). `rates` and `origin_us` read and write
    the record, so set_rates/get_rates/reset and the packets act on one state."""
    __slots__ = ("_rec",)

    def __init__(self, rec, state=None):
        self._rec = rec
        self.rates = state.rates if state is not None else None
        self.origin_us = state.origin_us if state is not None else None

    @property
    def rates(self):
        rec = self._rec
        if not rec.configured:
            return None
        return [[b.rate, b.burst, b.tokens, b.last, b.color] for b in rec.b]

    @rates.setter
    def rates(self, rates):
        rec = self._rec
        rec.configured = rates is not None
        for b, r in zip(rec.b, rates or ()):
            b.rate, b.burst, b.tokens, b.last, b.color = r

    @property
    def origin_us(self):
        return self._rec.origin if self._rec.has_origin else None

    @origin_us.setter
    def origin_us(self, v):
        self._rec.has_origin = v is not None
        self._rec.origin = v or 0

    def execute(self, amount: int, now_us: int) -> int:
        """MeterCell.execute on a copy, written back (the record is not a list)."""
        cell = MeterCell()
        cell.rates, cell.origin_us = self.rates, self.origin_us
        color = cell.execute(amount, now_us)
        self.rates, self.origin_us = cell.rates, cell.origin_us
        return color


def _validate_rates(kind, name, rates):
    rates = list(rates)
    if len(rates) != 2:
        raise StateError("BAD_RATES_LIST",
                         f"{kind} {name} is a two-rate meter: give 2 rate:burst pairs "
                         f"(committed, then peak), got {len(rates)}")
    for r, b in rates:
        if r < 0:
            raise StateError("INVALID_INFO_RATE_VALUE", f"{kind} {name}: rate {r} is negative")
        if b < 0 or int(b) != b:
            raise StateError("INVALID_BURST_SIZE_VALUE", f"{kind} {name}: burst {b} is not a whole number >= 0")
    if rates[0][0] > rates[1][0]:
        raise StateError("INVALID_INFO_RATE_VALUE",
                         f"{kind} {name}: committed rate {rates[0][0]} is above peak rate {rates[1][0]} "
                         f"(order is committed then peak)")
    return rates


class Meter:
    direct = False

    def __init__(self, name: str, size: int, type: str = "bytes", id: int = 0):
        if type not in ("packets", "bytes"):
            raise ValueError(f"meter {name}: unknown type {type!r}")
        self.name, self.size, self.type, self.id = name, int(size), type, id
        self.cells = [MeterCell() for _ in range(self.size)]

    def execute(self, index: int, nbytes: int, now_us: int) -> int:
        """-> color (0 green, 1 yellow, 2 red)."""
        return self.cells[index].execute(1 if self.type == "packets" else nbytes, now_us)

    def set_rates(self, index, rates):
        """index None -> every cell. rates [(cir_per_us, cburst), (pir_per_us, pburst)]."""
        rates = _validate_rates("meter", self.name, rates)
        if index is None:
            for c in self.cells:
                c.set_rates(rates)
        else:
            _check_index("meter", self.name, index, self.size)
            self.cells[index].set_rates(rates)

    def get_rates(self, index):
        _check_index("meter", self.name, index, self.size)
        return self.cells[index].get_rates()

    def adopt(self, records) -> None:
        """Make `size` records (see MeterCellView; e.g. a ctypes array the compiled data
        path meters with) the cells' storage, current state copied in."""
        if len(records) != self.size:
            raise ValueError(f"meter {self.name}: storage of {len(records)} cells for size {self.size}")
        self.cells = [MeterCellView(rec, old) for rec, old in zip(records, self.cells)]

    def reset(self):
        for c in self.cells:
            c.rates = None


class DirectMeter:
    """A direct_meter: one cell per entry (``Entry.meter``), indexed by
    handle from the runtime."""
    direct = True

    def __init__(self, name: str, type: str = "bytes", table: Table | None = None, id: int = 0):
        self.name, self.type, self.table, self.id = name, type, table, id
        self._records = None       # set by adopt (the compiled data path)

    @property
    def size(self) -> int:
        return self.table.size if self.table else 0

    def new_cell(self, slot: int = 0) -> MeterCell:
        """The cell of a new entry in handle slot `slot` (unconfigured)."""
        if self._records is not None:
            return MeterCellView(self._records[slot])
        return MeterCell()

    def adopt(self, records) -> None:
        """Meter.adopt for a direct meter: a record per entry handle slot (table size)."""
        if len(records) != self.size:
            raise ValueError(f"direct meter {self.name}: storage of {len(records)} cells for size {self.size}")
        self._records = records
        for e in self.table.entries():
            e.meter = MeterCellView(records[e.handle & HANDLE_SLOT_MASK], e.meter)

    def execute_entry(self, entry: Entry, nbytes: int, now_us: int) -> int:
        if entry is None or entry.meter is None:
            return GREEN   # miss: BMv2 leaves the color untouched (reads as green)
        return entry.meter.execute(1 if self.type == "packets" else nbytes, now_us)

    def _entry(self, handle):
        try:
            return self.table.get_entry(handle)
        except TableError as e:
            raise StateError("INVALID_INDEX", f"direct meter {self.name}: {e.message}") from None

    def set_rates(self, handle, rates):
        rates = _validate_rates("meter", self.name, rates)
        if handle is None:
            for e in self.table.entries():
                e.meter.set_rates(rates)
        else:
            self._entry(handle).meter.set_rates(rates)

    def get_rates(self, handle):
        return self._entry(handle).meter.get_rates()

    def reset(self):
        for e in self.table.entries():
            if e.meter is not None:
                e.meter.rates = None


# ---------------------------------------------------------------- PRE
class PRE:
    """BMv2 simple_pre: multicast groups of (rid, port set) nodes."""

    def __init__(self, max_port: int = MAX_PORT):
        self.max_port = max_port
        self.reset()

    def reset(self):
        # bumped by every change of what replicas() returns (see Table.version)
        self.version = getattr(self, "version", 0) + 1
        self.groups: dict[int, list[int]] = {}        # mgrp -> node handles, association order
        self.nodes: dict[int, tuple[int, frozenset]] = {}  # handle -> (rid, ports)
        self.node_group: dict[int, int] = {}           # handle -> mgrp it is associated with
        self._replicas: dict[int, list[tuple[int, int]]] = {}

    def replicas(self, mgrp: int) -> list[tuple[int, int]]:
        """(port, rid) per copy; [] for an unknown group. Cached per group."""
        r = self._replicas.get(mgrp)
        if r is None:
            r = []
            for h in self.groups.get(mgrp, ()):
                rid, ports = self.nodes[h]
                r.extend((p, rid) for p in sorted(ports))
            if mgrp in self.groups:
                self._replicas[mgrp] = r
        return r

    def _touch(self, mgrp):
        self._replicas.pop(mgrp, None)
        self.version += 1

    def mgrp_create(self, mgrp: int):
        if not isinstance(mgrp, int) or not 0 <= mgrp < 1 << 16:
            raise StateError("INVALID_MGID", f"multicast group id {mgrp} is not within 0..65535")
        if mgrp in self.groups:
            raise StateError("INVALID_MGID", f"multicast group {mgrp} already exists")
        self.groups[mgrp] = []

    def mgrp_destroy(self, mgrp: int):
        self._group(mgrp)
        for h in self.groups.pop(mgrp):
            self.node_group.pop(h, None)
        self._touch(mgrp)

    def _group(self, mgrp):
        if mgrp not in self.groups:
            raise StateError("INVALID_MGID", f"multicast group {mgrp} does not exist: create it with mc_mgrp_create")
        return self.groups[mgrp]

    def _node(self, handle):
        if handle not in self.nodes:
            raise StateError("INVALID_L1_HANDLE", f"multicast node handle {handle} does not exist")
        return self.nodes[handle]

    def node_create(self, rid: int, ports) -> int:
        if not isinstance(rid, int) or not 0 <= rid < 1 << 16:
            raise StateError("ERROR", f"replication id {rid} is not within 0..65535")
        ports = self._port_set(ports)
        handle = next(i for i in range(len(self.nodes) + 1) if i not in self.nodes)
        self.nodes[handle] = (rid, ports)
        return handle

    def _port_set(self, ports) -> frozenset:
        ports = frozenset(ports)
        bad = [p for p in ports if not isinstance(p, int) or not 0 <= p < self.max_port]
        if bad:
            raise StateError("ERROR", f"port {bad[0]} is not within 0..{self.max_port - 1}")
        return ports

    def node_update(self, handle: int, ports):
        rid, _ = self._node(handle)
        self.nodes[handle] = (rid, self._port_set(ports))
        if handle in self.node_group:
            self._touch(self.node_group[handle])

    def node_destroy(self, handle: int):
        self._node(handle)
        g = self.node_group.pop(handle, None)
        if g is not None:
            self.groups[g].remove(handle)
            self._touch(g)
        del self.nodes[handle]

    def associate(self, mgrp: int, handle: int):
        members = self._group(mgrp)
        self._node(handle)
        if handle in self.node_group:
            raise StateError("ERROR", f"node {handle} is already associated with group {self.node_group[handle]}: "
                                      f"dissociate it first")
        members.append(handle)
        self.node_group[handle] = mgrp
        self._touch(mgrp)

    def dissociate(self, mgrp: int, handle: int):
        members = self._group(mgrp)
        self._node(handle)
        if self.node_group.get(handle) != mgrp:
            raise StateError("ERROR", f"node {handle} is not associated with group {mgrp}")
        members.remove(handle)
        del self.node_group[handle]
        self._touch(mgrp)


# ---------------------------------------------------------------- mirroring
class Mirroring:
    """clone session id -> egress port (mirroring_add <id> <port>)."""

    def __init__(self):
        self.sessions: dict[int, int] = {}
        self.version = 0       # bumped by every change: the compiled path's copy rebuilds

    def add(self, session: int, port: int):
        if not isinstance(session, int) or not 0 <= session < 1 << 15:
            raise StateError("INVALID_SESSION", f"mirroring session id {session} is not within 0..32767")
        if not isinstance(port, int) or not 0 <= port <= MAX_PORT:
            raise StateError("ERROR", f"egress port {port} is not within 0..{MAX_PORT}")
        self.sessions[session] = port
        self.version += 1

    def delete(self, session: int):
        if session not in self.sessions:
            raise StateError("SESSION_NOT_FOUND", f"mirroring session {session} does not exist")
        del self.sessions[session]
        self.version += 1

    def get(self, session: int) -> int:
        if session not in self.sessions:
            raise StateError("SESSION_NOT_FOUND", f"mirroring session {session} does not exist")
        return self.sessions[session]

    def reset(self):
        self.sessions.clear()
        self.version += 1


# ---------------------------------------------------------------- names
class NameIndex(dict):
    """Resources by full runtime name, plus simple_switch_CLI's suffix lookup:
    every dot-suffix of a name resolves to it unless two names share it."""

    def __init__(self, kind: str, items=()):
        super().__init__()
        self.kind = kind
        for name, obj in dict(items).items():
            self[name] = obj

    def candidates(self, name: str) -> list[str]:
        if name in self:
            return [name]
        return sorted(full for full in self if full.endswith("." + name))

    def resolve(self, name: str):
        """-> the object; KeyError whose message names the problem."""
        c = self.candidates(name)
        if len(c) == 1:
            return self[c[0]]
        if not c:
            known = ", ".join(sorted(self)) or "none"
            raise KeyError(f"Invalid {self.kind} name ({name}): the program's {self.kind}s are: {known}")
        raise KeyError(f"Invalid {self.kind} name ({name}): ambiguous, could be {', '.join(c)}; use the full name")


class SwitchState:
    def __init__(self, tables=(), registers=(), counters=(), meters=(), actions=(), device_id: int = 0):
        """Each argument is an iterable of the objects; they are indexed by
        their ``.name``. ``actions`` defaults to the union of the tables'."""
        self.device_id = device_id
        self.tables = NameIndex("table", {t.name: t for t in tables})
        self.registers = NameIndex("register", {r.name: r for r in registers})
        self.counters = NameIndex("counter", {c.name: c for c in counters})
        self.meters = NameIndex("meter", {m.name: m for m in meters})
        acts = {a.name: a for t in self.tables.values() for a in t.actions.values()}
        for t in self.tables.values():
            acts.setdefault(t.default_action.name, t.default_action)
        acts.update({a.name: a for a in actions})
        self.actions = NameIndex("action", acts)
        self.pre = PRE()
        self.mirroring = Mirroring()
        self.declared_ids: dict[str, int] = {}   # runtime name -> @id(N), for P4Runtime ids

    def add_table(self, t: Table):
        self.tables[t.name] = t
        for a in list(t.actions.values()) + [t.default_action]:
            self.actions.setdefault(a.name, a)

    def table(self, name: str) -> Table:
        return self.tables.resolve(name)

    def register(self, name: str) -> Register:
        return self.registers.resolve(name)

    def counter(self, name: str):
        return self.counters.resolve(name)

    def meter(self, name: str):
        return self.meters.resolve(name)

    def reset(self):
        """simple_switch's reset_state: tables emptied (const entries stay),
        defaults restored, registers/counters zeroed, meters unconfigured,
        PRE and mirroring emptied. Register lists are cleared in place so code
        holding them sees the reset."""
        for t in self.tables.values():
            t.reset()
        for r in self.registers.values():
            r.reset()
        for c in self.counters.values():
            c.reset()
        for m in self.meters.values():
            m.reset()
        self.pre.reset()
        self.mirroring.reset()
