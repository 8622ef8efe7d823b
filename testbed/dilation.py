"""Time dilation by a factor s >= 1 (pure).

Software switches cannot carry real WAN rates at gradient packet sizes, so the testbed
emulates a slowed-down world: every link rate is divided by s and every delay, jitter and
compute time multiplied by s. The bandwidth-delay product in packets is unchanged
((rate / s) * (delay * s)), so windows, timeouts and queueing behave as at full scale,
and the run takes s times longer. Loss is a per-packet probability: unchanged.
Measured results go back to real-world time with to_real_seconds / to_real_rate.
"""
from __future__ import annotations

import networkx as nx

from testbed.schema_models import HTB_MAX_MBPS


def _check(s: float) -> float:
    s = float(s)
    if not s >= 1.0:
        raise ValueError(f"time dilation factor must be >= 1 (got {s:g})")
    return s


def dilate_graph(g: nx.Graph, s: float | None = None) -> nx.Graph:
    """A copy of a real-world graph with emulation values. s defaults to the scenario's.
    The real values stay on each edge as real_bandwidth_mbps, real_delay_ms, real_jitter_ms."""
    if g.graph.get("dilated", 1.0) != 1.0:
        raise ValueError(f"graph is already dilated by {g.graph['dilated']:g}; dilate the real-world graph")
    s = _check(g.graph.get("time_dilation", 1.0) if s is None else s)
    out = g.copy()
    for u, v, a in out.edges(data=True):
        a["real_bandwidth_mbps"], a["real_delay_ms"], a["real_jitter_ms"] = \
            a["bandwidth_mbps"], a["delay_ms"], a["jitter_ms"]
        a["bandwidth_mbps"] = a["bandwidth_mbps"] / s
        a["delay_ms"] = a["delay_ms"] * s
        a["jitter_ms"] = a["jitter_ms"] * s
        if a["bandwidth_mbps"] > HTB_MAX_MBPS:
            raise ValueError(f"link {u}-{v}: {a['real_bandwidth_mbps']:g} Mbps / {s:g} = "
                             f"{a['bandwidth_mbps']:g} Mbps is above Mininet htb's "
                             f"{HTB_MAX_MBPS:g} Mbps; use time_dilation >= "
                             f"{a['real_bandwidth_mbps'] / HTB_MAX_MBPS:g}")
    out.graph["dilated"] = s
    return out


def load_factor(load1: float, cores: int) -> float:
    """How much slower other work makes the software switches: load1 / cores when the
    one-minute load average exceeds the cores, else 1. More runnable processes than cores
    share them, so a switch runs that much less often and carries that much fewer packets;
    multiplying a scenario's time dilation by this factor keeps its rates within reach."""
    return max(1.0, float(load1) / max(1, int(cores)))


def to_real_seconds(emulated_s: float, s: float) -> float:
    """An emulated duration (iteration time, elapsed) back in real-world time."""
    return emulated_s / _check(s)


def to_real_rate(emulated_per_s: float, s: float) -> float:
    """An emulated rate (bytes/s, goodput, pps) back in real-world terms."""
    return emulated_per_s * _check(s)
