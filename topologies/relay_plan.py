"""Relay link emulation (link_emulation mode ``relay``): how a relay is spliced into a link.

Used when the kernel has no netem and the switch cannot delay frames itself (BMv2). A link
u-v with delay, jitter or loss becomes two veth pairs with a relay process between them
(``python3 -m softswitch.linkem``: the softswitch's delay line and loop, forwarding every
frame out of its other interface):

    node u's interface  <veth>  relay's interface A  [relay]  relay's interface B  <veth>  node v's interface

The relay reads what u sends on A, passes it through the u->v delay line (delay, jitter,
loss) and writes it into B; B's egress carries htb at the link's rate, so a frame is
delayed first and then queued for the link, the order of the other modes. v->u likewise,
B to A.

Names keep the testbed's contract that the egress of ``interface_name(n, peer)`` (``n-ethP``)
carries direction n -> peer with its htb: in relay mode that name is the relay's interface
that delivers to the peer (B above is ``u-ethP``, A is ``v-ethQ``), so the bandwidth
schedule, link failures, link counters and WAN byte counts address the same names in every
mode. The switch's own port P is ``u-swP`` (no shaping on it). A host keeps its ``h-eth0``
in its namespace (shaped there, as in the other modes: on an access link the host->switch
direction meets its rate before its delay line); the relay's interface toward the switch
is then ``h-rl0``, unshaped.

One relay per link, carrying both directions in one process: each frame crosses one
Python process per link (a relay per direction and link end would cross two), and a run has
one relay per impaired link, not two. A relay forwards on the order of 10^4 frames/s (the
softswitch's loop): beyond that, use time dilation as for the softswitch.

Pure: no commands run here (testbed/relay_run.py starts the relays).
"""
from __future__ import annotations

from dataclasses import dataclass

from topologies.ports import interface_name

SWITCH_PORT_TAG = "-sw"     # a switch's own port in relay mode: <switch>-sw<port>
HOST_SIDE_NAME = "-rl0"     # the relay's interface toward the switch on an access link


@dataclass(frozen=True)
class RelayEnd:
    """One end of a relayed link: a node's own interface and its veth peer, the relay's."""
    node: str
    port: int            # the node's port number in Mininet (0 for a host)
    is_host: bool
    node_intf: str       # the node's own interface (a host's is in the host's namespace)
    relay_intf: str      # its veth peer, in the root namespace, read and written by the relay


@dataclass(frozen=True)
class RelaySpec:
    """The relay of one link u-v: a is u's end, b is v's; a_to_b and b_to_a are the delay
    lines of u->v and v->u (LinkEmuConfig's fields)."""
    edge: tuple[str, str]
    a: RelayEnd
    b: RelayEnd
    a_to_b: dict
    b_to_a: dict

    @property
    def name(self) -> str:
        return f"{self.edge[0]}-{self.edge[1]}"

    def root_intfs(self) -> list[str]:
        """Interfaces of this relay's wiring in the root namespace (created, then deleted)."""
        return [e.relay_intf for e in (self.a, self.b)] + \
            [e.node_intf for e in (self.a, self.b) if not e.is_host]


def node_intf(graph, node: str, peer: str) -> str:
    """A node's own interface on a relayed link (its Mininet port)."""
    if graph.nodes[node]["role"] == "host":
        return interface_name(graph, node, peer)
    return f"{node}{SWITCH_PORT_TAG}{graph.edges[node, peer]['ports'][node]}"


def relay_intf_toward(graph, node: str, peer: str) -> str:
    """The relay's interface whose egress delivers to ``node``: it carries peer -> node, so it
    bears the peer's ``interface_name`` (a host peer's name stays on its own interface)."""
    if graph.nodes[peer]["role"] == "host":
        return f"{peer}{HOST_SIDE_NAME}"
    return interface_name(graph, peer, node)


def relay_for_edge(graph, u: str, v: str, u_to_v: dict, v_to_u: dict) -> RelaySpec:
    """The wiring of link u-v's relay with the delay lines of its two directions."""
    ends = []
    for n, peer in ((u, v), (v, u)):
        is_host = graph.nodes[n]["role"] == "host"
        port = 0 if is_host else graph.edges[u, v]["ports"][n]
        ends.append(RelayEnd(n, port, is_host, node_intf(graph, n, peer), relay_intf_toward(graph, n, peer)))
    if ends[0].is_host and ends[1].is_host:
        raise ValueError(f"link {u}-{v} joins two hosts: the testbed's links have a switch on one end")
    return RelaySpec((u, v), ends[0], ends[1], dict(u_to_v), dict(v_to_u))
