"""Options of schemes ina and geo-ina (all optional)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from schemes.base import Options


class InaTransportOptions(Options):
    """The worker side's transport: values per packet, job id, timeouts, congestion control
    (every scheme whose workers run workers/ina_client.py has them)."""
    k: Literal[32, 64] | None = None     # values per packet (default: the switch's AGG_K, else 32)
    job: int = Field(1, ge=0, le=255)    # job id; jobs share switch memory by slot ranges
    # initial retransmission timeout before RTT samples exist, real-world ms (x dilation)
    timeout_ms: float = Field(1000.0, gt=0)
    # lower bound of the retransmission timeout, emulated ms: on a shared 2-core machine
    # processes stall for tens of ms; bench/ina.py measured 0 against 5894 spurious
    # retransmissions per 15k packets at 5 ms
    min_rto_ms: float = Field(100.0, gt=0)
    # the timeout is at least SRTT + this (emulated ms); "auto": half the longest
    # worker-root round trip, at least 100 ms (docs/ina.md: RFC 6298's 4 x RTTVAR decays to
    # ~0 on a steady stream and the timer hugs SRTT)
    rto_margin_ms: Literal["auto"] | float = Field("auto", union_mode="left_to_right")
    max_retransmissions: int = Field(50, ge=1)   # per chunk before the worker gives up
    # true: AIMD congestion window below the slots (workers/congestion.py); false: every
    # worker keeps `window` chunks in flight (bursts window x fan-in packets into the WAN)
    congestion_control: bool = True
    # the window's law above ssthresh and on a loss: "reno" (halve, +1 per round trip) or
    # "cubic" (x0.7, regrow in real-world seconds whatever the round trip; RFC 8312)
    congestion_law: Literal["reno", "cubic"] = "cubic"
    # what a loss does to the window: "cut" (every loss, as TCP Reno/CUBIC) or "backlog"
    # (only a loss with a queue behind it, TCP Veno's test: cwnd x (SRTT - min RTT) / SRTT
    # >= 3 segments' bytes; a random loss is re-sent without a cut). docs/ina.md
    loss_response: Literal["cut", "backlog"] = "cut"
    # the client state machine's implementation (workers/ina_core.py): "auto" its C core when
    # gcc builds it, else Python (one warning); "python" or "c" to force one. docs/ina.md
    client_core: Literal["auto", "python", "c"] = "auto"

    _margin = field_validator("rto_margin_ms", mode="before")(lambda cls, v: auto_or_positive(v))


class InaOptions(InaTransportOptions):
    # datacenter name or 1-based index of the global aggregation point (default: best total RTT)
    root: str | int | None = None
    # slots per aggregation point = most packets in flight per worker: an integer, or "auto":
    # the bandwidth-delay product of the slowest WAN link and the longest worker-root-worker
    # round trip, in packets, a power of two in 64..1024 within the switch's slots
    # (plan.auto_window). The congestion window decides how much of it is used.
    window: Literal["auto"] | int = Field("auto", union_mode="left_to_right")

    _window = field_validator("window", mode="before")(lambda cls, v: check_window(v))


def auto_or_positive(v):
    """An option that is "auto" or a number > 0 (a duration in ms)."""
    if v != "auto" and not (type(v) in (int, float) and v > 0):
        raise ValueError('must be "auto" or a number > 0')
    return v


def check_window(v):
    """A `window` option: "auto" or a slot count the header's 15-bit slot field can name."""
    if v != "auto" and not (type(v) is int and 1 <= v < 2**15):
        raise ValueError('must be "auto" or an integer in 1..32767')
    return v
