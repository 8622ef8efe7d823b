"""Background traffic and failures of a scenario as a timeline of actions (pure).

A scenario's `background` flows and `failures` (testbed/schema_models.py) become one
sorted list of Actions, in emulated seconds since the workload phase started (the origin
of bandwidth schedules), which testbed/disturbance_driver.py carries out:
  background_start  flow k's client starts (one per on-period of an on/off pattern)
  background_stop   flow k's client is ended
  kill              a process of the scheme is killed (SIGKILL, like a crash)
  link_down         both ends of a WAN link are set down (`ip link set ... down`)
  link_up           and up again
At one instant stops and link-ups come first, then kills and link-downs, then starts, so
a period that ends where the next begins never overlaps it.

Where background traffic runs: between the first host (lowest worker index) of the source
datacenter and the first host of the destination, over the job's own addresses and routes
(docs/addressing.md is unchanged). The flow therefore shares those hosts' access links and
CPUs with their workers as well as the WAN path; at the rates a WAN carries here that is
small beside the WAN bottleneck, which is what the flow is for.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from topologies.graph import host_id, hosts_by_dc

# iperf3 servers of background flow k listen on BACKGROUND_BASE_PORT + k (the schemes'
# servers use 7100 and up, schemes/base.py).
BACKGROUND_BASE_PORT = 5201
UDP_PAYLOAD_BYTES = 1400   # datagrams that fit a 1500-byte MTU with their headers
IPERF_MAX_TIME_S = 86400   # iperf3's longest -t; the driver ends clients on time anyway

ORDER = {"background_stop": 0, "link_up": 0, "kill": 1, "link_down": 1, "background_start": 2}


@dataclass(frozen=True)
class Action:
    t_s: float                    # emulated s since the workload phase started
    kind: str                     # see the module docstring
    index: int                    # entry of scenario.background or scenario.failures
    duration_s: float | None = None   # background_start: length of this on-period (None: open)


def timeline(background, failures, dilation: float, horizon_s: float) -> list[Action]:
    """Every action before horizon_s (emulated s), sorted. Scenario times are real-world
    seconds: they are multiplied by the time dilation. An open-ended on/off pattern repeats
    up to the horizon."""
    s = float(dilation)
    out: list[Action] = []
    for k, f in enumerate(background):
        start = f.start_s * s
        stop = horizon_s if f.stop_s is None else min(f.stop_s * s, horizon_s)
        if f.on_s is None:
            if start < stop:
                out.append(Action(start, "background_start", k,
                                  None if f.stop_s is None else stop - start))
                if f.stop_s is not None:
                    out.append(Action(stop, "background_stop", k))
            continue
        on, period = f.on_s * s, (f.on_s + f.off_s) * s
        n = 0
        while start + n * period < stop:
            t = start + n * period
            end = min(t + on, stop)
            out.append(Action(t, "background_start", k, end - t))
            out.append(Action(end, "background_stop", k))
            n += 1
    for k, fail in enumerate(failures):
        if fail.at_s * s >= horizon_s:
            continue
        if fail.kill is not None:
            out.append(Action(fail.at_s * s, "kill", k))
        else:
            out.append(Action(fail.at_s * s, "link_down", k))
            if fail.up_at_s is not None and fail.up_at_s * s < horizon_s:
                out.append(Action(fail.up_at_s * s, "link_up", k))
    return sorted(out, key=lambda a: (a.t_s, ORDER[a.kind], a.index))


# ---------------------------------------------------------------- where things happen
def endpoint(graph, dc: str) -> str:
    """The host that sends or receives a datacenter's background traffic: its first."""
    for hosts in hosts_by_dc(graph).values():
        if graph.nodes[hosts[0]]["dc"] == dc:
            return hosts[0]
    raise ValueError(f"no datacenter {dc!r} in the topology")


def wan_link(graph, a: str, b: str) -> tuple[str, str]:
    """The WAN edge (gateway nodes, lower datacenter first) between datacenters a and b."""
    gw = {d["dc"]: n for n, d in graph.nodes(data=True) if d["role"] == "gateway"}
    u, v = sorted((gw[a], gw[b]), key=lambda n: graph.nodes[n]["dc_index"])
    if not graph.has_edge(u, v) or graph.edges[u, v]["kind"] != "wan":
        raise ValueError(f"no WAN link between {a} and {b}")
    return u, v


def iperf_server_args(k: int) -> list[str]:
    """A server for one on-period of flow k (-1: it exits after one test)."""
    return ["iperf3", "-s", "-1", "-p", str(BACKGROUND_BASE_PORT + k), "-i", "1", "--forceflush"]


def iperf_client_args(flow, k: int, dst_ip: str, duration_s: float | None, dilation: float,
                      congestion_control: str | None = None) -> list[str]:
    """iperf3 client of background flow k for one on-period (emulated s; None: open).
    rate_mbps is the entry's total in real-world Mbps: each of its streams sends
    rate / flows / dilation emulated Mbps (iperf3's -b is per stream)."""
    t = IPERF_MAX_TIME_S if duration_s is None else min(IPERF_MAX_TIME_S, math.ceil(duration_s) + 1)
    args = ["iperf3", "-c", dst_ip, "-p", str(BACKGROUND_BASE_PORT + k), "-t", str(t),
            "-P", str(flow.flows), "-i", "1", "--forceflush"]
    if flow.proto == "udp":
        args += ["-u", "-l", str(UDP_PAYLOAD_BYTES)]
    elif congestion_control:
        args += ["-C", congestion_control]
    if flow.rate_mbps is not None:
        per_stream = flow.rate_mbps / flow.flows / dilation
        args += ["-b", f"{per_stream * 1e6:.0f}"]
    return args


# ---------------------------------------------------------------- processes to kill
def process_names(plan, graph) -> dict[str, tuple[str, str]]:
    """What a failure may kill, by the name a scenario uses: "server:<name>" for each of
    the plan's servers, "worker:<host id>" (h<D>r<R>w<W>, without a node prefix) for each
    worker -> (kind, name in the app's process table)."""
    out = {f"server:{s.name}": ("server", s.name) for s in plan.servers}
    for w in plan.workers:
        a = graph.nodes[w]
        out[f"worker:{host_id(a['dc_index'], a['rack'], a['worker'])}"] = ("worker", w)
    return out


def resolve_target(target: str, names: dict[str, tuple[str, str]],
                   scheme: str = "the scheme") -> tuple[str, str]:
    """A failure's `kill` value -> (kind, name): "kind:name" exactly, or a bare name that
    exactly one process has. ValueError listing what the scheme runs otherwise."""
    if target in names:
        return names[target]
    bare = [key for key in names if key.split(":", 1)[1] == target]
    if len(bare) == 1:
        return names[bare[0]]
    known = ", ".join(names) or "nothing"
    if len(bare) > 1:
        raise ValueError(f"{target!r} names {len(bare)} processes of {scheme} "
                         f"({', '.join(bare)}): write one of them with its kind")
    raise ValueError(f"{scheme} runs no process {target!r} (processes: {known})")
