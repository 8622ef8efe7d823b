"""A simulated network of in-process switches and sans-I/O worker clients.

Discrete-event, virtual time: each link delivers after its delay plus a random
extra delay (reordering), and may lose or duplicate any packet, in both directions,
WAN included. Switches are anything with execute(cmd) and process(port, frame)
(the softswitch or tests/agg_model.ModelSwitch), programmed with the real control
plane output (control/routes.py + control/agg_entries.py). A tree rooted at a host (InArt's
parameter server) has its root run there by schemes/inart/root_engine.RootEngine, with the
children per slot range the control plane gives (agg_tree.root_slot_ranges). A switch may
have a timer loop (docs/protocol.md, "Lossless links between aggregation points"): what it
sends on LOOP_PORT comes back to it on that port after the loop's delay, never lost.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from control import routes
from control.agg_entries import TimerLoop, push, switch_commands
from control.agg_tree import AggTree, hosted_by_switch, root_slot_ranges
from schemes.inart.root_engine import RootEngine
from workers import agg_packet as ap
from workers.ina_client import ClientConfig, Send
from workers.ina_core import make_client


LOOP_PORT = 300              # the timer loop's port on a switch that has one


@dataclass
class Faults:
    loss: float = 0.0          # probability a packet is lost on a link
    dup: float = 0.0           # probability it is delivered twice
    reorder_ms: float = 0.0    # uniform extra delay 0..reorder_ms per delivery
    seed: int = 0
    kinds: tuple = ("access", "uplink", "wan")   # link kinds the faults apply to
    # A bottleneck: links of these kinds serialize rate_pps packets per second per
    # direction behind a drop-tail queue of queue_pkts packets (0 = no bottleneck).
    rate_pps: float = 0.0
    queue_pkts: int = 0
    queue_kinds: tuple = ("wan",)


@dataclass
class SimStats:
    delivered: int = 0
    lost: int = 0
    duplicated: int = 0
    switch_packets: int = 0
    queue_drops: int = 0        # tail drops at a full bottleneck queue


@dataclass
class Sim:
    g: nx.Graph
    switches: dict
    clients: dict                       # (job, host) -> InaClient (or its C core)
    faults: Faults
    servers: dict = field(default_factory=dict)   # host -> [RootEngine] it runs
    loops: dict = field(default_factory=dict)     # switch -> its timer loop's delay (s)
    # drop(frm, to, frame) -> True: lose this packet (a deterministic loss, beside faults)
    drop: object = None
    now: float = 0.0
    stats: SimStats = field(default_factory=SimStats)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.faults.seed)
        self.queue = []
        self.tie = itertools.count()
        self.port_peer = {}             # (switch, port) -> neighbour
        for u, v, a in self.g.edges(data=True):
            for sw, p in a["ports"].items():
                self.port_peer[(sw, p)] = v if sw == u else u
        self.host_ip = {n: a["ip"] for n, a in self.g.nodes(data=True) if a["role"] == "host"}
        self.link_free = {}             # (frm, to) -> when the bottleneck's line is idle again

    # ---------------------------------------------------------------- links
    def _send(self, frm: str, to: str, frame: bytes, faults: bool = True):
        if self.drop is not None and self.drop(frm, to, frame):
            self.stats.lost += 1
            return
        a = self.g.edges[frm, to]
        start = self.now
        if self.faults.rate_pps and a["kind"] in self.faults.queue_kinds:
            free = max(self.now, self.link_free.get((frm, to), 0.0))
            if (free - self.now) * self.faults.rate_pps >= self.faults.queue_pkts:
                self.stats.queue_drops += 1
                return
            start = self.link_free[(frm, to)] = free + 1 / self.faults.rate_pps
        copies = 1
        faults = faults and a["kind"] in self.faults.kinds
        if faults and self.rng.random() < self.faults.loss:
            self.stats.lost += 1
            return
        if faults and self.rng.random() < self.faults.dup:
            copies, self.stats.duplicated = 2, self.stats.duplicated + 1
        for _ in range(copies):
            delay = a["delay_ms"] + (self.rng.uniform(0, self.faults.reorder_ms) if faults else 0)
            heapq.heappush(self.queue, (start + delay / 1000, next(self.tie), frm, to, frame))

    def _host_send(self, host: str, sends):
        a = self.g.nodes[host]
        sw = next(iter(self.g.neighbors(host)))
        for s in sends:
            frame = ap.udp_frame(a["mac"], a["gateway_mac"], a["ip"], s.dst_ip, s.payload)
            self._send(host, sw, frame)

    def _deliver(self, frm: str, to: str, frame: bytes):
        self.stats.delivered += 1
        if self.g.nodes[to]["role"] == "host":
            parsed = ap.udp_payload(frame)
            if parsed is None or parsed[1] != self.host_ip[to]:
                return
            for engine in self.servers.get(to, ()):
                self._host_send(to, [Send(dst, out) for dst, out in engine.handle(parsed[2], parsed[0])])
            for (job, host), c in self.clients.items():
                if host == to:
                    f = ap.decode(parsed[2])
                    if f is not None and f.job == job:
                        self._host_send(to, c.on_packet(parsed[2], self.now))
            return
        self.stats.switch_packets += 1
        in_port = LOOP_PORT if frm == to else self.g.edges[frm, to]["ports"][to]
        for port, out in self.switches[to].process(in_port, frame):
            if port == LOOP_PORT and to in self.loops:
                heapq.heappush(self.queue, (self.now + self.loops[to], next(self.tie), to, to, out))
            else:
                self._send(to, self.port_peer[(to, port)], out)

    # ---------------------------------------------------------------- run
    def start(self, tensors: dict, exponent=0):
        """tensors: (job, host) -> int32 array; exponent: one, one per chunk, or a dict by key."""
        for key, values in tensors.items():
            e = exponent[key] if isinstance(exponent, dict) else exponent
            self._host_send(key[1], self.clients[key].start(values, self.now, e))

    def run(self, until: float = 600.0):
        while not all(c.done for c in self.clients.values()):
            deadlines = [(d, key) for key, c in self.clients.items()
                         if (d := c.next_deadline()) is not None]
            t_timer = min(deadlines)[0] if deadlines else float("inf")
            t_pkt = self.queue[0][0] if self.queue else float("inf")
            if min(t_timer, t_pkt) > until:
                raise TimeoutError(f"simulation did not finish by t={until}s "
                                   f"({sum(c.done for c in self.clients.values())}/{len(self.clients)} done)")
            if t_pkt <= t_timer:
                self.now, _, frm, to, frame = heapq.heappop(self.queue)
                self._deliver(frm, to, frame)
            else:
                self.now = t_timer
                for d, key in deadlines:
                    if d <= self.now:
                        self._host_send(key[1], self.clients[key].on_timer(self.now))
        return {key: c.result() for key, c in self.clients.items()}

    def drain(self, until: float = 600.0):
        """Deliver what is still in flight (late duplicates) without new timers."""
        while self.queue and self.queue[0][0] <= until:
            self.now, _, frm, to, frame = heapq.heappop(self.queue)
            self._deliver(frm, to, frame)


def build_sim(g: nx.Graph, make_switch, trees: list[AggTree], faults: Faults = Faults(),
              k: int = 32, loops: dict | None = None, backoff_mask: int = 7,
              **client_opts) -> Sim:
    """Program every switch with routes + aggregation entries; one client per (job, worker);
    a root engine at the host of every tree rooted at one. The clients are the reference
    InaClient unless client_opts name another `core` (workers/ina_core.make_client).
    loops: {switch: delay in s} gives those switches a timer loop (repair timeout)."""
    loops = loops or {}
    route_cmds = routes.table_commands(g)
    agg_cmds = switch_commands(g, trees, loops={sw: TimerLoop(LOOP_PORT, LOOP_PORT,
                                                              backoff_mask=backoff_mask)
                                                for sw in loops})
    switches = {}
    for sw in route_cmds:
        s = make_switch(sw)
        push(s, route_cmds[sw] + agg_cmds.get(sw, []))
        switches[sw] = s
    clients = {}
    for t in trees:
        for host, b in t.workers.items():
            cfg = ClientConfig.for_worker(t, host, k=k, **{"core": "python", **client_opts})
            clients[(t.job, host)] = make_client(cfg)
    servers: dict = {}
    for t in trees:
        root = t.points[t.root]
        if not hosted_by_switch(g, root):
            servers.setdefault(root.switch, []).append(
                RootEngine.with_ranges(t.job, t.window, root_slot_ranges(t), k))
    return Sim(g, switches, clients, faults, servers, loops)


def random_tensors(trees, length: int, seed: int, bound: int = 2**31 // 64):
    rng = np.random.default_rng(seed)
    return {(t.job, h): rng.integers(-bound, bound, size=length, dtype=np.int64).astype(np.int32)
            for t in trees for h in t.workers}


def expected_sums(trees, tensors):
    """numpy's integer sum per job (int64, so a wrong wrap-around would show)."""
    return {t.job: np.sum([tensors[(t.job, h)].astype(np.int64) for h in t.workers], axis=0)
            for t in trees}
