"""Switch configuration for aggregation trees: simple_switch_CLI commands per switch.

For every aggregation point hosted by a switch (docs/protocol.md, "Control plane"):
  table_add MyIngress.agg_points MyIngress.agg_point <job> <address> =>
            <is_root> <slot_base> <num_slots> <fan_in> <mcast_grp> <parent_addr> <my_index> <parent_fan_in>
  mc_mgrp_create <grp>; per child: mc_node_create <rid> <port>; mc_node_associate <grp> $n<i>
  table_add MyEgress.agg_children MyEgress.set_child <rid> => <child address> <child mac>
  register_write MyIngress.r_gen <i> 0   for both copies of every slot of the point
A point holding fewer slots than its job's window (control/agg_tree.py, point_slots) gets
MyIngress.agg_point_bypass instead, the same parameters plus <bypass_base> <bypass_fan_in>,
and only its own slots of the switch's registers.
A switch given a timer loop (TimerLoop: docs/protocol.md, "Lossless links between
aggregation points") repairs the links from its non-root points to their parents:
  mirroring_add <session> <loop out port>                        once per switch
  table_add MyIngress.agg_repair MyIngress.repair_point <job> <address> => <loop in port> <session> <backoff_mask>
plus /32 routes toward each global aggregation address (rack and datacenter addresses
lie inside the /24s that control/routes.py already routes to their switch). A point run by
a host (a server at the root of an InArt tree) gets no switch commands: its parent-facing
switch points name the host's IP, which is routed already.

Multicast node handles are assigned by the switch, so node commands refer to them
as `$n<i>` (the i-th mc_node_create of that switch's list); `push` substitutes the
handles from the replies. Pure functions except `push`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx

from control.agg_tree import AggTree, bypass_fan_in, hosted_by_switch
from control.routes import entries_towards

DEFAULT_SLOTS = 2048     # AGG_SLOTS of p4/aggregation.p4
AGG_TABLE, AGG_ACTION = "MyIngress.agg_points", "MyIngress.agg_point"
BYPASS_ACTION = "MyIngress.agg_point_bypass"
CHILD_TABLE, CHILD_ACTION = "MyEgress.agg_children", "MyEgress.set_child"
GEN_REGISTER = "MyIngress.r_gen"
FIRST_GROUP = 1
_NODE_REF = re.compile(r"\$n(\d+)")
_HANDLE = re.compile(r"handle (\d+)")
_ENTRY_HANDLE = re.compile(r"added with handle (\d+)")
REPAIR_TABLE, REPAIR_ACTION = "MyIngress.agg_repair", "MyIngress.repair_point"
EVENTS_COUNTER = "MyIngress.agg_events"
# Indices of that counter (EV_* in p4/aggregation.p4), by name
EVENT_NAMES = ("new", "add", "complete", "up", "mcast", "dup_answer", "dup_resend",
               "dup_drop", "stale", "result_store", "result_drop", "bad", "bypass", "timer_done",
               "repair", "repair_giveup")
_PACKETS = re.compile(r"= \(\d+ bytes, (\d+) packets\)")


def event_reads() -> list[str]:
    """The commands that read every agg_events counter (parse_events reads the replies)."""
    return [f"counter_read {EVENTS_COUNTER} {i}" for i in range(len(EVENT_NAMES))]


def parse_events(replies: list[str]) -> dict[str, int]:
    """{event name: packets} from the replies to event_reads (simple_switch_CLI's and the
    softswitch's `MyIngress.agg_events[i]= (B bytes, N packets)`)."""
    out = {}
    for name, reply in zip(EVENT_NAMES, replies):
        m = _PACKETS.search(reply)
        if not m:
            raise ValueError(f"no packet count in the reply to counter_read {EVENTS_COUNTER} "
                             f"({name}): {reply.strip()!r}")
        out[name] = int(m.group(1))
    return out
TIMER_SESSION = 250          # clone session of the timer loop (any id the switch has free)


@dataclass(frozen=True)
class TimerLoop:
    """A switch's repair timer loop: a frame leaving on out_port comes back on in_port
    after the repair timeout (the loop's delay, set where the loop is built). After the
    re-sends on passes 1, 2, 4, ..., a waiting copy is re-sent every backoff_mask + 1
    passes (0: every pass), so a parent that waits for a straggler sees few duplicates."""
    out_port: int
    in_port: int
    session: int = TIMER_SESSION
    backoff_mask: int = 7

    def __post_init__(self):
        for name in ("out_port", "in_port"):
            if not 0 <= getattr(self, name) < 511:
                raise ValueError(f"timer loop {name} must be a switch port 0..510 "
                                 f"(got {getattr(self, name)})")
        m = self.backoff_mask
        if not 0 <= m <= 127 or m & (m + 1):
            raise ValueError(f"backoff_mask must be 2^c - 1 with c in 0..7 (re-send every 2^c "
                             f"passes), got {m}")


def _port_toward(g: nx.Graph, switch: str, node: str) -> int:
    nxt = node if g.has_edge(switch, node) else nx.shortest_path(g, switch, node, weight="delay_ms")[1]
    return g.edges[switch, nxt]["ports"][switch]


def switch_commands(g: nx.Graph, trees: list[AggTree], slots: int = DEFAULT_SLOTS,
                    reset_registers: bool = True, slot_base: int = 0,
                    first_group: int = FIRST_GROUP, first_rid: int = 1,
                    loops: dict[str, TimerLoop] | None = None) -> dict[str, list[str]]:
    """Commands per switch for all jobs' trees together (slot ranges, groups and
    replication ids must not collide between jobs on one switch). The points take slots
    slot_base .. slot_base + slots - 1, groups from first_group, replication ids from
    first_rid: a second set of trees installed beside a first one (InArt's re-planning)
    passes ranges the first does not use. loops: the switches with a timer loop, whose
    non-root points repair the link to their parent."""
    loops = loops or {}
    jobs = [t.job for t in trees]
    if len(set(jobs)) != len(jobs):
        raise ValueError(f"job ids must be unique, got {jobs}")
    out: dict[str, list[str]] = {}
    next_base: dict[str, int] = {}
    next_group: dict[str, int] = {}
    rids: dict[str, dict[tuple[str, str], int]] = {}
    nodes_created: dict[str, int] = {}
    for tree in trees:
        for p in sorted(tree.points.values(), key=lambda p: p.id):
            if not hosted_by_switch(g, p):
                continue        # a server at the root (InArt) runs its point itself
            cmds = out.setdefault(p.switch, [])
            base = next_base.get(p.switch, slot_base)
            held = tree.slots_at(p)
            if base + held > slot_base + slots:
                raise ValueError(f"switch {p.switch} has {slots} aggregation slots for these trees "
                                 f"but its points need {base - slot_base + held}: lower "
                                 "scheme_options.window or compile "
                                 "p4/aggregation.p4 with a larger -DAGG_SLOTS (below a server, "
                                 "a point may hold fewer slots: agg_tree's point_slots)")
            next_base[p.switch] = base + held
            grp = next_group.get(p.switch, first_group)
            next_group[p.switch] = grp + 1
            parent = tree.points[p.parent] if p.parent else None
            params = (f"{p.job} {p.address} => {int(p.is_root)} {base} {held} {p.fan_in} {grp} "
                      f"{parent.address if parent else '0.0.0.0'} {p.index_at_parent} "
                      f"{parent.fan_in if parent else 0}")
            if held < tree.window:
                if parent is None or hosted_by_switch(g, parent):
                    raise ValueError(f"aggregation point {p.id} holds {held} of {tree.window} slots "
                                     "but only a point whose parent is a server host can bypass "
                                     "the rest: give it the whole window")
                cmds.append(f"table_add {AGG_TABLE} {BYPASS_ACTION} {params} {p.bypass_base} "
                            f"{bypass_fan_in(tree, p)}")
            else:
                cmds.append(f"table_add {AGG_TABLE} {AGG_ACTION} {params}")
            loop = loops.get(p.switch)
            if loop and parent is not None:
                if f"mirroring_add {loop.session} {loop.out_port}" not in cmds:
                    cmds.append(f"mirroring_add {loop.session} {loop.out_port}")
                cmds.append(f"table_add {REPAIR_TABLE} {REPAIR_ACTION} {p.job} {p.address} => "
                            f"{loop.in_port} {loop.session} {loop.backoff_mask}")
            cmds.append(f"mc_mgrp_create {grp}")
            sw_rids = rids.setdefault(p.switch, {})
            for c in p.children:
                key = (c.address, c.mac)
                if key not in sw_rids:
                    sw_rids[key] = len(sw_rids) + first_rid
                    cmds.append(f"table_add {CHILD_TABLE} {CHILD_ACTION} {sw_rids[key]} => {c.address} {c.mac}")
                n = nodes_created.get(p.switch, 0)
                nodes_created[p.switch] = n + 1
                cmds.append(f"mc_node_create {sw_rids[key]} {_port_toward(g, p.switch, c.node)}")
                cmds.append(f"mc_node_associate {grp} $n{n}")
            if reset_registers:
                cmds.extend(f"register_write {GEN_REGISTER} {i} 0"
                            for i in range(2 * base, 2 * (base + held)))
    seen = set()
    for tree in trees:
        root = tree.points[tree.root]
        if not hosted_by_switch(g, root):
            continue            # a host's IP is routed already (control/routes.py)
        for e in entries_towards(g, f"{root.address}/32", root.switch):
            if (e.switch, e.prefix) not in seen:
                seen.add((e.switch, e.prefix))
                out.setdefault(e.switch, []).append(e.command())
    return out


PATH_TABLE, PATH_ACTION = "MyIngress.agg_path", "MyIngress.ipv4_forward"


def slot_path_commands(g: nx.Graph, tree: AggTree, point_id: str,
                       ranges: list[tuple[int, int, list[str]]],
                       loop: TimerLoop | None = None) -> dict[str, list[str]]:
    """Entries that carry a point's partial sums to its parent by slot range: for each
    (lo, hi, path), path = [point's switch, ..., parent's switch] (switch nodes), the slots
    lo..hi leave each switch of the path toward the next one. At the point's switch they
    match the ports its partial sums are sent from (its children's, and its timer loop's
    re-sends); at a transit switch the port facing the previous hop, so no switch steers
    streams other than this one. Ranges must be disjoint; a slot in none follows the route."""
    p = tree.points[point_id]
    parent = tree.points[p.parent] if p.parent else None
    if parent is None:
        raise ValueError(f"aggregation point {point_id} is the root: it has no parent to route to")
    taken = []
    for lo, hi, path in ranges:
        if not 0 <= lo <= hi < tree.window:
            raise ValueError(f"slot range {lo}..{hi} is not inside the window 0..{tree.window - 1}")
        if any(lo <= b and a <= hi for a, b in taken):
            raise ValueError(f"slot range {lo}..{hi} overlaps another of point {point_id}")
        taken.append((lo, hi))
        if len(path) < 2 or path[0] != p.switch or path[-1] != parent.switch or \
                len(set(path)) != len(path) or \
                any(not g.has_edge(a, b) for a, b in zip(path, path[1:])):
            raise ValueError(f"path {path} does not lead from {p.switch} to {parent.switch} "
                             "over links of the topology without a loop")
    out: dict[str, list[str]] = {}
    own_ports = sorted({_port_toward(g, p.switch, c.node) for c in p.children}
                       | ({loop.in_port} if loop else set()))
    for lo, hi, path in ranges:
        for i, (sw, nxt) in enumerate(zip(path, path[1:])):
            ports = own_ports if i == 0 else [g.edges[sw, path[i - 1]]["ports"][sw]]
            for port in ports:
                out.setdefault(sw, []).append(
                    f"table_add {PATH_TABLE} {PATH_ACTION} {p.job} {parent.address} {lo}->{hi} "
                    f"{port}&&&0x1ff => {g.nodes[nxt]['mac']} {g.edges[sw, nxt]['ports'][sw]} 1")
    return out


def fit_slots(g: nx.Graph, trees: list[AggTree], slots: int = DEFAULT_SLOTS) -> list[dict[str, int]]:
    """Per tree, the switches whose point cannot have the whole window when the trees share
    switches of `slots` slots each, and the slots each can have: {switch: slots}, to pass as
    build_server_tree's point_slots. Trees take slots in the order given (as switch_commands
    allots them), so the first trees' points are served whole."""
    used: dict[str, int] = {}
    out = []
    for tree in trees:
        short = {}
        for p in sorted(tree.points.values(), key=lambda p: p.id):
            if not hosted_by_switch(g, p):
                continue
            free = max(0, slots - used.get(p.switch, 0))
            n = min(tree.window, free)
            used[p.switch] = used.get(p.switch, 0) + n
            if n < tree.window:
                short[p.switch] = n
        out.append(short)
    return out


def removal_commands(commands: list[str], replies: list[str]) -> list[str]:
    """What undoes `commands` once `push` ran them and returned `replies`: every table entry
    deleted by its handle, every multicast node dissociated and destroyed, every group
    destroyed (both backends' syntax; register writes need no undo). Nodes go before their
    groups, and groups before the entries that name them."""
    if len(commands) != len(replies):
        raise ValueError(f"{len(commands)} commands but {len(replies)} replies: pass push's "
                         "replies for exactly the commands pushed")
    nodes: list[int] = []
    tables, unlink, groups = [], [], []
    for cmd, reply in zip(commands, replies):
        words = cmd.split()
        if words[0] == "mc_node_create":
            m = _HANDLE.search(reply)
            if not m:
                raise ValueError(f"no node handle in the reply to `{cmd}`: {reply.strip()}")
            nodes.append(int(m.group(1)))
        elif words[0] == "mc_node_associate":
            ref = _NODE_REF.fullmatch(words[2])
            node = nodes[int(ref.group(1))] if ref else int(words[2])
            unlink += [f"mc_node_dissociate {words[1]} {node}", f"mc_node_destroy {node}"]
        elif words[0] == "mc_mgrp_create":
            groups.append(f"mc_mgrp_destroy {words[1]}")
        elif words[0] == "mirroring_add":
            groups.append(f"mirroring_delete {words[1]}")
        elif words[0] == "table_add":
            m = _ENTRY_HANDLE.search(reply)
            if not m:
                raise ValueError(f"no entry handle in the reply to `{cmd}`: {reply.strip()}")
            tables.append(f"table_delete {words[1]} {m.group(1)}")
    return unlink + groups + tables


# Error replies of the simple_switch_CLI language as in-process stand-ins give them (the
# softswitch's RuntimeAPI and the tests' model switch: "Error: ..."; BMv2's
# "Invalid ... operation (...)", "Invalid match key: ..."). Runtime clients over a real
# switch check their replies themselves (execute_many(check=True)).
_ERROR_REPLY = re.compile(r"^(Error|Invalid |\*\*\* Unknown syntax)", re.M)


class _Rejected(RuntimeError):
    def __init__(self, command: str, reply: str):
        super().__init__(f"runtime command failed: {command!r}: {reply.strip()}")
        self.command, self.reply = command, reply


def _execute_each(client):
    """execute_many(cmds, check) for an object that only has execute(cmd) -> str."""
    def run(cmds, check=False):
        replies = []
        for c in cmds:
            replies.append(client.execute(c))
            if check and _ERROR_REPLY.search(replies[-1]):
                raise _Rejected(c, replies[-1])
        return replies
    return run


def push(client, commands: list[str]) -> list[str]:
    """Run commands through a runtime client (a RuntimeClient, or anything with
    execute(cmd) -> str), substituting multicast node handles; return the replies.

    Commands go in as few batches as the handles allow: a batch ends only where a command
    names a node whose handle is still unknown (the reply to its mc_node_create), so the
    thousands of register resets go in one batch, and a BMv2 client runs everything in its
    one simple_switch_CLI session. An error reply, the softswitch's or simple_switch_CLI's
    (`Error: ...`, `Invalid table operation (...)`, `Invalid match key: ...`, ...), raises
    RuntimeError naming the first rejected command (commands before it have run)."""
    run = client.execute_many if hasattr(client, "execute_many") else _execute_each(client)
    handles: list[int] = []
    replies: list[str] = []
    pending: list[str] = []

    def flush():
        try:
            got = run(pending, check=True)
        except RuntimeError as e:       # RuntimeCommandError (a client's check) or _Rejected
            if not hasattr(e, "command"):
                raise
            raise RuntimeError(f"switch rejected `{e.command}`: {e.reply.strip()}; check that it "
                               "runs p4/aggregation.p4 and has room for these entries") from None
        for line, reply in zip(pending, got):
            if line.startswith("mc_node_create"):
                m = _HANDLE.search(reply)
                if not m:
                    raise RuntimeError(f"no node handle in the reply to `{line}`: {reply.strip()}; "
                                       "is the switch's runtime a simple_switch_CLI one?")
                handles.append(int(m.group(1)))
        replies.extend(got)
        pending.clear()

    created = 0            # mc_node_create commands seen so far (handles known or pending)
    for cmd in commands:
        refs = [int(r) for r in _NODE_REF.findall(cmd)]
        if any(r >= created for r in refs):
            raise ValueError(f"`{cmd}` names node $n{max(refs)} before its mc_node_create")
        if any(r >= len(handles) for r in refs):
            flush()
        pending.append(_NODE_REF.sub(lambda m: str(handles[int(m.group(1))]), cmd))
        created += cmd.startswith("mc_node_create")
    if pending:
        flush()
    return replies
