"""Match-action tables: the live, runtime-changeable part of a P4 table.

Semantics follow BMv2 (bm_sim match units and lookup structures):

* exact tables: one dict keyed by the key tuple;
* lpm tables (one lpm key, other keys exact): one dict per prefix length,
  searched longest first;
* ternary / range / optional tables (lpm keys allowed among them): a scan over
  the entries sorted by (priority, handle). **The numerically lowest priority
  wins** (BMv2's ``EntryList::lookup`` keeps the entry with the minimum
  priority value; on a tie the entry with the lowest handle, i.e. the one
  first in the list, wins). simple_switch_CLI takes that number verbatim as
  the last argument of ``table_add``. (P4Runtime uses the opposite convention;
  its BMv2 server converts. We follow simple_switch_CLI.)
* two entries are duplicates when their (masked) match and, for ternary-like
  tables, their priority are equal (BMv2 ``DUPLICATE_ENTRY``).
* entry handles are ``version << 24 | slot``: the lowest free slot is reused
  and its version bumped on delete, as BMv2's HANDLE_SET does, so a stale
  handle is reported as ``EXPIRED_HANDLE`` instead of silently hitting a new
  entry.

The packet path calls ``Table.lookup(key_tuple)``; it returns a tuple
prepared when the entry (or the default action) was written, so a lookup
allocates nothing beyond the caller's key tuple.
"""
from __future__ import annotations

from bisect import bisect, bisect_left
from heapq import heappop, heappush

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")
HANDLE_VERSION_SHIFT = 24
HANDLE_SLOT_MASK = (1 << HANDLE_VERSION_SHIFT) - 1
DEFAULT_TABLE_SIZE = 1024   # p4c's default when a table declares no size


class TableError(Exception):
    """A refused table operation. ``code`` is BMv2's TableOperationErrorCode
    name where one exists (DUPLICATE_ENTRY, TABLE_FULL, INVALID_HANDLE, ...),
    so replies can read like simple_switch_CLI's."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class ActionSpec:
    """An action as the runtime sees it. ``fn`` is installed by the compiler;
    what calling it means is the compiler's business."""
    __slots__ = ("name", "params", "fn", "id")

    def __init__(self, name: str, params=(), fn=None, id: int = 0):
        self.name = name
        self.params = [(str(n), int(w)) for n, w in params]
        self.fn = fn
        self.id = id

    def __repr__(self):
        return f"ActionSpec({self.name!r}, {self.params!r})"


class KeySpec:
    __slots__ = ("name", "match_kind", "width")

    def __init__(self, name: str, match_kind: str, width: int):
        if match_kind not in MATCH_KINDS:
            raise ValueError(f"key {name}: match kind {match_kind!r} is not one of "
                             f"{', '.join(MATCH_KINDS)}")
        self.name = name
        self.match_kind = match_kind
        self.width = int(width)

    def __repr__(self):
        return f"KeySpec({self.name!r}, {self.match_kind!r}, {self.width})"


class Entry:
    """One table entry. ``match`` holds per key: exact -> value,
    lpm -> (value, prefix_len), ternary/optional -> (value, mask),
    range -> (lo, hi). ``packets``/``bytes`` are the direct counter,
    ``meter`` the direct meter cell (or None)."""
    __slots__ = ("handle", "match", "action", "args", "priority", "packets",
                 "bytes", "meter", "result", "_checks", "_ranges")

    def __init__(self, handle, match, action, args, priority, meter=None):
        self.handle = handle
        self.match = match
        self.action = action
        self.args = args
        self.priority = priority
        self.packets = 0
        self.bytes = 0
        self.meter = meter
        self.result = (True, action, args, self)
        self._checks = ()
        self._ranges = ()

    def __repr__(self):
        return (f"Entry(handle={self.handle}, match={self.match!r}, "
                f"action={self.action.name}, args={self.args!r}, priority={self.priority})")


def _cell_entry_class(packets, nbytes):
    """An Entry whose direct-counter cells are `packets[slot]` and `nbytes[slot]` (slot: the
    handle's slot, below the table's size) instead of its own attributes: the compiled data
    path counts into those arrays, and every reader and writer of `entry.packets` (CLI,
    P4Runtime, resets) sees and changes the same memory. No slots of its own, so an existing
    Entry can switch to it in place."""
    def cell(cells):
        return property(lambda e: cells[e.handle & HANDLE_SLOT_MASK],
                        lambda e, v: cells.__setitem__(e.handle & HANDLE_SLOT_MASK, v))
    return type("CellEntry", (Entry,), {"__slots__": (), "packets": cell(packets), "bytes": cell(nbytes)})


def _scan_order(e):
    # BMv2 EntryList: lowest priority value first; on a tie, the lowest handle slot
    return e.priority, e.handle & HANDLE_SLOT_MASK


def _prefix_mask(width: int, plen: int) -> int:
    return ((1 << plen) - 1) << (width - plen)


class Table:
    """``lookup(key)`` takes a tuple of unsigned ints, one per key, each
    within its key's width (the compiler masks signed and bool keys)."""

    def __init__(self, name: str, keys, actions, size: int | None = None,
                 default_action: ActionSpec | None = None, default_args=(),
                 const_default: bool = False, const_entries: bool = False,
                 default_only=(), table_only=(), direct_meter=None, id: int = 0):
        self.name = name
        self.id = id
        self.keys = list(keys)
        self.actions = {a.name: a for a in actions}
        self.size = DEFAULT_TABLE_SIZE if size is None else int(size)
        self.const_default = const_default
        self.const_entries = const_entries
        # @defaultonly actions cannot be table entries, @tableonly ones cannot be default
        self.default_only = set(default_only)
        self.table_only = set(table_only)
        self.direct_meter = direct_meter  # state_externs.DirectMeter or None
        kinds = [k.match_kind for k in self.keys]
        lpm_count = kinds.count("lpm")
        if lpm_count > 1:
            raise ValueError(f"table {name}: more than one lpm key (BMv2 allows one)")
        if any(k in ("ternary", "range", "optional") for k in kinds):
            self.match_type = "range" if "range" in kinds else "ternary"
        elif lpm_count:
            self.match_type = "lpm"
        else:
            self.match_type = "exact"
        self.needs_priority = self.match_type in ("ternary", "range")
        self._lpm_index = kinds.index("lpm") if self.match_type == "lpm" else -1
        # lpm and ternary-like tables pack the key tuple into one int (first key
        # highest), so a lookup step is one `&` and one dict probe or compare
        self._shifts = []
        off = 0
        for k in reversed(self.keys):
            self._shifts.insert(0, off)
            off += k.width
        if len(self.keys) > 1:
            expr = " | ".join(f"(k[{i}] << {sh})" if sh else f"k[{i}]" for i, sh in enumerate(self._shifts))
            self._pack = eval(f"lambda k: {expr}")   # built once per table from integers only
        if self.match_type == "exact":
            self.lookup = self._lookup_exact
        elif self.match_type == "lpm":
            self.lookup = self._lookup_lpm_single if len(self.keys) == 1 else self._lookup_lpm_multi
        elif "range" in kinds:
            self.lookup = self._lookup_scan
        else:
            self.lookup = self._lookup_packed_single if len(self.keys) == 1 else self._lookup_packed
        if default_action is None:
            default_action = ActionSpec("NoAction")
        self.default_action = default_action
        self.default_args = tuple(default_args)
        self._initial_default = (default_action, self.default_args)
        self._miss = (False, default_action, self.default_args, None)
        self._slots: list[Entry | None] = []
        self._free: list[int] = []     # heap of free slots: BMv2 hands out the lowest
        self._versions: list[int] = []
        self._count = 0
        self._entry_cls = Entry      # CellEntry once adopt_counter_cells gave arrays
        self._clear_indexes()
        # bumped by every change of entries or default: a copy of the table elsewhere (the
        # compiled data path's) knows to rebuild itself before the next packet
        self.version = 0

    # ---------- packet path ----------
    def _lookup_exact(self, key):
        return self._exact.get(key, self._miss)

    def _lookup_lpm_single(self, key):
        v = key[0]
        for mask, get in self._lpm_levels:
            r = get(v & mask)
            if r is not None:
                return r
        return self._miss

    def _lookup_lpm_multi(self, key):
        k = self._pack(key)
        for mask, get in self._lpm_levels:
            r = get(k & mask)
            if r is not None:
                return r
        return self._miss

    def _lookup_packed_single(self, key):
        k = key[0]
        for v, m, r in self._flat:
            if k & m == v:
                return r
        return self._miss

    def _lookup_packed(self, key):
        k = self._pack(key)
        for v, m, r in self._flat:
            if k & m == v:
                return r
        return self._miss

    def _lookup_scan(self, key):
        for e in self._sorted:
            for i, v, m in e._checks:
                if key[i] & m != v:
                    break
            else:
                for i, lo, hi in e._ranges:
                    if not lo <= key[i] <= hi:
                        break
                else:
                    return e.result
        return self._miss

    def adopt_counter_cells(self, packets, nbytes) -> None:
        """Make two arrays of `size` cells (e.g. ctypes arrays the compiled data path counts
        into, indexed by the handle's slot) the storage of every entry's direct counter,
        current counts copied in; entries added later use them too (Register.adopt's idea
        for direct counters)."""
        for cells in (packets, nbytes):
            if len(cells) != self.size:
                raise ValueError(f"table {self.name}: counter storage of {len(cells)} cells for size {self.size}")
        cls = _cell_entry_class(packets, nbytes)
        for e in self.entries():
            p, b = e.packets, e.bytes
            e.__class__ = cls
            e.packets, e.bytes = p, b
        self._entry_cls = cls

    # ---------- control path ----------
    def num_entries(self) -> int:
        return self._count

    def entries_in_lookup_order(self) -> list[Entry]:
        """Ternary-like tables: the entries in the order a lookup tries them (lowest
        priority value first, then lowest handle slot); other tables: slot order."""
        return list(self._sorted) if self.needs_priority else self.entries()

    def entries(self) -> list[Entry]:
        return [e for e in self._slots if e is not None]   # slot order, as BMv2 iterates handles

    def get_entry(self, handle: int) -> Entry:
        slot = handle & HANDLE_SLOT_MASK
        if handle < 0 or slot >= len(self._slots) or self._slots[slot] is None:
            raise TableError("INVALID_HANDLE", f"table {self.name} has no entry with handle {handle}")
        e = self._slots[slot]
        if e.handle != handle:
            raise TableError("EXPIRED_HANDLE",
                             f"handle {handle} of table {self.name} was deleted "
                             f"(slot now holds handle {e.handle})")
        return e

    def action(self, action_name: str) -> ActionSpec:
        """By full name or unambiguous dot-suffix ("drop" -> "MyIngress.drop")."""
        a = self.actions.get(action_name)
        if a is not None:
            return a
        c = sorted(n for n in self.actions if n.endswith("." + action_name))
        if len(c) == 1:
            return self.actions[c[0]]
        if c:   # the wording is simple_switch_CLI's (the runtime replies with it)
            raise TableError("INVALID_ACTION_NAME",
                             f"Action name {action_name} is ambiguous in table {self.name}: {', '.join(c)}")
        raise TableError("INVALID_ACTION_NAME",
                         f"Table {self.name} has no action {action_name}; "
                         f"its actions are: {', '.join(sorted(self.actions))}")

    def _check_args(self, action: ActionSpec, args) -> tuple:
        args = tuple(int(a) for a in args)
        if len(args) != len(action.params):
            raise TableError("BAD_ACTION_DATA",
                             f"action {action.name} needs {len(action.params)} parameters "
                             f"({', '.join(n for n, _ in action.params) or 'none'}), got {len(args)}")
        for (pname, width), a in zip(action.params, args):
            if a < 0 or a >> width:
                raise TableError("BAD_ACTION_DATA",
                                 f"value {a} does not fit parameter {pname} of action "
                                 f"{action.name} (bit<{width}>)")
        return args

    def _normalize_match(self, match) -> tuple:
        """Validate per-key match data and canonicalise it (ternary values
        masked, lpm values cut to the prefix) as BMv2 does before storing."""
        match = tuple(match)
        if len(match) != len(self.keys):
            raise TableError("BAD_MATCH_KEY",
                             f"table {self.name} has {len(self.keys)} match keys, got {len(match)}")
        out = []
        for k, m in zip(self.keys, match):
            full = (1 << k.width) - 1

            def fits(v, what):
                if not isinstance(v, int) or v < 0 or v > full:
                    raise TableError("BAD_MATCH_KEY",
                                     f"{what} {v} of key {k.name} does not fit bit<{k.width}>")
            if k.match_kind == "exact":
                fits(m, "value")
                out.append(m)
            elif k.match_kind == "lpm":
                v, plen = m
                fits(v, "value")
                if not isinstance(plen, int) or not 0 <= plen <= k.width:
                    raise TableError("BAD_MATCH_KEY",
                                     f"prefix length {plen} of key {k.name} is not within 0..{k.width}")
                out.append((v & _prefix_mask(k.width, plen), plen))
            elif k.match_kind in ("ternary", "optional"):
                v, mask = m
                fits(v, "value")
                fits(mask, "mask")
                if k.match_kind == "optional" and mask not in (0, full):
                    raise TableError("BAD_MATCH_KEY",
                                     f"optional key {k.name} takes a value or a wildcard, not mask {mask:#x}")
                out.append((v & mask, mask))
            else:  # range
                lo, hi = m
                fits(lo, "low bound")
                fits(hi, "high bound")
                if lo > hi:
                    raise TableError("BAD_MATCH_KEY",
                                     f"range {lo}->{hi} of key {k.name} is empty (low > high)")
                out.append((lo, hi))
        return tuple(out)

    def find(self, match, priority: int | None = None) -> Entry:
        """The entry with exactly this match (and priority, for ternary-like
        tables): table_dump_entry_from_key."""
        e = self._existing(self._normalize_match(match), priority)
        if e is None:
            raise TableError("BAD_MATCH_KEY", f"table {self.name} has no entry with this match key"
                             + (f" and priority {priority}" if self.needs_priority else ""))
        return e

    def _existing(self, match, priority) -> Entry | None:
        """The entry with this normalised match (and priority, for ternary-like tables)."""
        if self.match_type == "exact":
            r = self._exact.get(match)
        elif self.match_type == "lpm":
            plen, k = self._index_key(match)
            r = self._lpm.get(plen, {}).get(k)
        else:
            return self._by_key.get((match, priority))
        return r[3] if r is not None else None

    def _index_key(self, match):
        """Where an entry with this (normalised) match lives in the indexes."""
        if self.match_type == "exact":
            return match
        if self.match_type == "lpm":
            i = self._lpm_index
            v, plen = match[i]
            if len(self.keys) == 1:
                return plen, v
            packed = 0
            for j, (m, sh) in enumerate(zip(match, self._shifts)):
                packed |= (v if j == i else m) << sh
            return plen, packed
        return None

    def _mutable(self, what: str):
        if self.const_entries:
            raise TableError("CONST_ENTRIES",
                             f"table {self.name} has const entries (declared in the P4 program); "
                             f"{what} is not allowed: change the program instead")

    def add(self, match, action_name: str, args=(), priority: int | None = None) -> int:
        self._mutable("table_add")
        return self._add(match, action_name, args, priority)

    def add_const(self, match, action_name: str, args=(), priority: int | None = None) -> int:
        """For the compiler: install one of the program's `const entries`
        (the table is immutable to the runtime, not to its loader)."""
        return self._add(match, action_name, args, priority)

    def _add(self, match, action_name, args, priority) -> int:
        action = self.action(action_name)
        if action.name in self.default_only:
            raise TableError("INVALID_ACTION_NAME",
                             f"action {action.name} is @defaultonly in table {self.name}: "
                             f"use table_set_default")
        args = self._check_args(action, args)
        match = self._normalize_match(match)
        if self.needs_priority:
            if priority is None:
                raise TableError("BAD_MATCH_KEY",
                                 f"table {self.name} is a {self.match_type} table: an entry needs a priority "
                                 f"(lowest number wins)")
            if not isinstance(priority, int) or not 0 <= priority < 2 ** 31:
                raise TableError("BAD_MATCH_KEY", f"priority {priority} is not within 0..2^31-1")
        else:
            priority = None
        self._check_duplicate(match, priority)
        if self._count >= self.size:
            raise TableError("TABLE_FULL", f"table {self.name} is full ({self.size} entries, its declared size)")
        if self._free:
            slot = heappop(self._free)
        else:
            slot = len(self._slots)
            self._slots.append(None)
            self._versions.append(0)
        handle = (self._versions[slot] << HANDLE_VERSION_SHIFT) | slot
        meter = self.direct_meter.new_cell(slot) if self.direct_meter is not None else None
        e = self._entry_cls(handle, match, action, args, priority, meter)   # counts start at 0
        self._slots[slot] = e
        self._count += 1
        self._index(e)
        self.version += 1
        return handle

    def _check_duplicate(self, match, priority):
        e = self._existing(match, priority)
        if e is not None:
            raise TableError("DUPLICATE_ENTRY",
                             f"table {self.name} already has an entry with this match key"
                             f"{' and priority' if self.needs_priority else ''} "
                             f"(handle {e.handle}): use table_modify")

    def _index(self, e: Entry):
        if self.match_type == "exact":
            self._exact[e.match] = e.result
        elif self.match_type == "lpm":
            plen, k = self._index_key(e.match)
            level = self._lpm.get(plen)
            if level is None:
                level = self._lpm[plen] = {}
                self._rebuild_lpm_levels()
            level[k] = e.result
        else:
            checks, ranges = [], []
            for i, (k, m) in enumerate(zip(self.keys, e.match)):
                full = (1 << k.width) - 1
                if k.match_kind == "exact":
                    checks.append((i, m, full))
                elif k.match_kind == "lpm":
                    checks.append((i, m[0], _prefix_mask(k.width, m[1])))
                elif k.match_kind in ("ternary", "optional"):
                    if m[1]:
                        checks.append((i, m[0], m[1]))
                else:
                    if m != (0, full):
                        ranges.append((i, m[0], m[1]))
            e._checks = tuple(checks)
            e._ranges = tuple(ranges)
            # same position in both lists: O(n) per add, not a rebuild
            i = bisect(self._sorted, _scan_order(e), key=_scan_order)
            self._sorted.insert(i, e)
            self._flat.insert(i, self._packed(e))
            self._by_key[(e.match, e.priority)] = e

    def _unindex(self, e: Entry):
        if self.match_type == "exact":
            del self._exact[e.match]
        elif self.match_type == "lpm":
            plen, k = self._index_key(e.match)
            level = self._lpm[plen]
            del level[k]
            if not level:
                del self._lpm[plen]
                self._rebuild_lpm_levels()
        else:
            i = bisect_left(self._sorted, _scan_order(e), key=_scan_order)
            assert self._sorted[i] is e
            del self._sorted[i]
            del self._flat[i]
            del self._by_key[(e.match, e.priority)]

    def _packed(self, e: Entry):
        """(value, mask, result) over the packed key, for the packed scans."""
        v = m = 0
        for i, ev, em in e._checks:
            v |= ev << self._shifts[i]
            m |= em << self._shifts[i]
        return v, m, e.result

    def _rebuild_lpm_levels(self):
        i = self._lpm_index
        w = self.keys[i].width
        # exact keys compare whole, the lpm key its prefix (packed layout for multi-key)
        others = sum(((1 << k.width) - 1) << sh for j, (k, sh) in enumerate(zip(self.keys, self._shifts)) if j != i)
        # (mask, bound dict.get) per present prefix length, longest first
        self._lpm_levels = [((_prefix_mask(w, p) << self._shifts[i]) | others, self._lpm[p].get)
                            for p in sorted(self._lpm, reverse=True)]

    def modify(self, handle: int, action_name: str, args=()):
        self._mutable("table_modify")
        e = self.get_entry(handle)
        action = self.action(action_name)
        if action.name in self.default_only:
            raise TableError("INVALID_ACTION_NAME",
                             f"action {action.name} is @defaultonly in table {self.name}")
        args = self._check_args(action, args)
        self._unindex(e)
        e.action, e.args = action, args
        e.result = (True, action, args, e)
        self._index(e)
        self.version += 1

    def delete(self, handle: int):
        self._mutable("table_delete")
        e = self.get_entry(handle)
        self._unindex(e)
        slot = handle & HANDLE_SLOT_MASK
        self._slots[slot] = None
        heappush(self._free, slot)
        self._versions[slot] = (self._versions[slot] + 1) & 0xFF
        self._count -= 1
        self.version += 1

    def _clear_indexes(self):
        self._exact = {}
        self._lpm = {}
        self._lpm_levels = []
        self._sorted = []
        self._flat = []
        self._by_key = {}      # (match, priority) -> entry: BMv2's duplicate rule

    def clear(self):
        self._mutable("table_clear")
        self._drop_all()

    def _drop_all(self):
        for slot, e in enumerate(self._slots):
            if e is not None:
                self._versions[slot] = (self._versions[slot] + 1) & 0xFF
        self._slots = [None] * len(self._slots)
        self._free = list(range(len(self._slots)))   # sorted, hence a valid heap
        self._count = 0
        self._clear_indexes()
        self.version += 1

    def set_default(self, action_name: str, args=()):
        if self.const_default:
            raise TableError("DEFAULT_ACTION_IS_CONST",
                             f"table {self.name} has a const default_action "
                             f"({self.default_action.name}); it cannot be changed at runtime")
        action = self.action(action_name)
        if action.name in self.table_only:
            raise TableError("INVALID_ACTION_NAME",
                             f"action {action.name} is @tableonly in table {self.name}: "
                             f"it cannot be the default action")
        args = self._check_args(action, args)
        self.default_action, self.default_args = action, args
        self._miss = (False, action, args, None)
        self.version += 1

    def reset_default(self):
        action, args = self._initial_default
        self.default_action, self.default_args = action, args
        self._miss = (False, action, args, None)
        self.version += 1

    def reset(self):
        """reset_state: runtime entries go, the program's default returns.
        Const entries are part of the program and stay."""
        if not self.const_entries:
            self._drop_all()
        else:
            for e in self._slots:
                if e is not None:
                    e.packets = e.bytes = 0
        self.reset_default()

    def __repr__(self):
        return f"Table({self.name!r}, {self.match_type}, {self._count}/{self.size} entries)"
