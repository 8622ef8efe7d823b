"""Copies of the live Python state in C: tables and multicast groups.

The control plane (CLI, P4Runtime) changes only the Python SwitchState; every change bumps
the object's `version`. `StateMirror.sync()` compares versions and rebuilds the C copy of
whatever changed. The caller runs it before each packet (in-process) or each batch (the C
packet loop), on the packet thread, so C never reads a half-built table.
"""
from __future__ import annotations

import ctypes

from softswitch.native.cgen_program import MAX_ARGS
from softswitch.runtime.state_tables import HANDLE_SLOT_MASK

u64p = ctypes.POINTER(ctypes.c_uint64)
i32p = ctypes.POINTER(ctypes.c_int32)


class MirrorError(RuntimeError):
    """The C side could not allocate a table or the multicast groups."""


def declare(lib) -> None:
    """Argument types of the C functions this module calls."""
    lib.ss_table_at.restype = ctypes.c_void_p
    lib.ss_table_at.argtypes = (ctypes.c_void_p, ctypes.c_int)
    lib.ss_table_load.restype = ctypes.c_int
    lib.ss_table_load.argtypes = (ctypes.c_void_p, ctypes.c_int, u64p, u64p, i32p, i32p, u64p, i32p)
    lib.ss_table_set_default.restype = None
    lib.ss_table_set_default.argtypes = (ctypes.c_void_p, ctypes.c_int32, u64p)
    lib.ss_pre_of.restype = ctypes.c_void_p
    lib.ss_pre_of.argtypes = (ctypes.c_void_p,)
    lib.ss_pre_load.restype = ctypes.c_int
    lib.ss_pre_load.argtypes = (ctypes.c_void_p, ctypes.c_int, i32p, i32p, i32p, i32p)
    lib.ss_mirror_load.restype = None
    lib.ss_mirror_load.argtypes = (ctypes.c_void_p, ctypes.c_int, i32p, i32p)


def _prefix_mask(width: int, plen: int) -> int:
    return ((1 << plen) - 1) << (width - plen)


def _args(values) -> list[int]:
    return list(values) + [0] * (MAX_ARGS - len(values))


def table_image(info) -> tuple:
    """(n, vals, masks, plens, actions, args, slots) flat lists of one table's entries, as
    ss_table_load takes them (slots: each entry's handle slot, where its direct counter
    cells are)."""
    t = info.table
    index = {name: i for i, name in enumerate(info.actions)}
    vals, masks, plens, actions, args, slots = [], [], [], [], [], []
    entries = t.entries_in_lookup_order()
    for e in entries:
        for k, m in zip(t.keys, e.match):
            full = (1 << k.width) - 1
            if info.kind == "ternary":
                if k.match_kind == "exact":
                    v, mask = m, full
                elif k.match_kind == "lpm":
                    v, mask = m[0], _prefix_mask(k.width, m[1])
                elif k.match_kind == "range":       # (low, high), compared whole by C
                    vals.append(m[0])
                    masks.append(m[1])
                    continue
                else:
                    v, mask = m
                vals.append(v & mask)
                masks.append(mask)
            else:
                vals.append(m[0] if k.match_kind == "lpm" else m)
        if info.kind == "lpm":
            plens.append(next(m[1] for k, m in zip(t.keys, e.match) if k.match_kind == "lpm"))
        else:
            plens.append(0)
        actions.append(index.get(e.action.name, -1))
        args += _args(e.args)
        slots.append(e.handle & HANDLE_SLOT_MASK)
    return len(entries), vals, masks, plens, actions, args, slots


def _array(ctype, values):
    return (ctype * max(1, len(values)))(*values)


class StateMirror:
    def __init__(self, lib, ctx, tables, pre, mirroring=None):
        self.lib, self.ctx = lib, ctx
        self.tables = tables                 # [cgen_program.TableInfo]
        self.pre = pre
        self.mirroring = mirroring           # clone sessions (None: the program never clones)
        self._mirroring_seen = None
        self._seen = [None] * len(tables)
        self._pre_seen = None
        self.rebuilds = 0                    # how many C copies were rebuilt (for tests)

    def sync(self) -> None:
        for i, info in enumerate(self.tables):
            if info.table.version != self._seen[i]:
                self._load_table(info)
                self._seen[i] = info.table.version
        if self.pre.version != self._pre_seen:
            self._load_pre()
            self._pre_seen = self.pre.version
        if self.mirroring is not None and self.mirroring.version != self._mirroring_seen:
            self._load_mirroring()
            self._mirroring_seen = self.mirroring.version

    def _load_mirroring(self) -> None:
        ids = sorted(self.mirroring.sessions)
        ports = [self.mirroring.sessions[i] for i in ids]
        self.lib.ss_mirror_load(self.ctx, len(ids), _array(ctypes.c_int32, ids), _array(ctypes.c_int32, ports))
        self.rebuilds += 1

    def _load_table(self, info) -> None:
        lib = self.lib
        ptr = lib.ss_table_at(self.ctx, info.index)
        n, vals, masks, plens, actions, args, slots = table_image(info)
        rc = lib.ss_table_load(ptr, n, _array(ctypes.c_uint64, vals), _array(ctypes.c_uint64, masks),
                               _array(ctypes.c_int32, plens), _array(ctypes.c_int32, actions),
                               _array(ctypes.c_uint64, args), _array(ctypes.c_int32, slots))
        if rc != 0:
            raise MirrorError(f"out of memory copying table {info.table.name} ({n} entries) to the "
                              f"compiled data path")
        t = info.table
        default = info.actions.index(t.default_action.name) if t.default_action.name in info.actions else -1
        lib.ss_table_set_default(ptr, default, _array(ctypes.c_uint64, _args(t.default_args)))
        self.rebuilds += 1

    def _load_pre(self) -> None:
        groups = sorted(self.pre.groups)
        counts, ports, rids = [], [], []
        for g in groups:
            reps = self.pre.replicas(g)
            counts.append(len(reps))
            ports += [p for p, _ in reps]
            rids += [r for _, r in reps]
        rc = self.lib.ss_pre_load(self.lib.ss_pre_of(self.ctx), len(groups), _array(ctypes.c_int32, groups),
                                  _array(ctypes.c_int32, counts), _array(ctypes.c_int32, ports),
                                  _array(ctypes.c_int32, rids))
        if rc != 0:
            raise MirrorError("out of memory copying the multicast groups to the compiled data path")
        self.rebuilds += 1
