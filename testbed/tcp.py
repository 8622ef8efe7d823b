"""The scenario's `tcp` section applied to the emulated hosts.

Socket buffers and slow start after idle are per-network-namespace sysctls: every host
gets them at bring-up. The congestion control algorithm is set per socket
(setsockopt TCP_CONGESTION, workers/framing.py) on every socket the schemes open: a
namespace's default may only name an algorithm the root namespace allows
(tcp_allowed_congestion_control), and the testbed does not change the machine's own
settings. The defaults are a stock Linux host's (testbed/schema_models.Tcp)."""
from __future__ import annotations

from pathlib import Path

from testbed.fidelity import configured_loss
from workers.framing import TCP_CONGESTION_ENV

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def sysctl_commands(tcp) -> list[str]:
    rmem, wmem = (" ".join(map(str, v)) for v in (tcp.rmem_bytes, tcp.wmem_bytes))
    return [f"sysctl -q -w net.ipv4.tcp_slow_start_after_idle={int(tcp.slow_start_after_idle)}",
            f"sysctl -q -w net.ipv4.tcp_rmem='{rmem}'", f"sysctl -q -w net.ipv4.tcp_wmem='{wmem}'"]


def check_available(tcp, available: Path = AVAILABLE) -> None:
    """The congestion control must be one the kernel has loaded (the error says how to load it)."""
    try:
        have = available.read_text().split()
    except OSError:
        return   # not Linux's /proc: the socket option will say it if it fails
    if tcp.congestion_control not in have:
        raise ValueError(f"tcp.congestion_control: {tcp.congestion_control!r} is not available in "
                         f"this kernel (available: {', '.join(have)}); load it with "
                         f"`modprobe tcp_{tcp.congestion_control}` or choose one of those")


def process_env(tcp) -> dict[str, str]:
    """What every scheme process in a host gets in its environment."""
    return {TCP_CONGESTION_ENV: tcp.congestion_control}


def dilation_warnings(scn, kernel_tcp: bool = True) -> list[str]:
    """Cubic grows its window with the time since its last cut on the kernel's clock; under
    time dilation s that clock runs the emulated seconds, so after a loss cubic regrows
    far faster per round trip than on a real host, and lossy TCP streams run faster than a
    real cluster's would (docs/model.md). Reno's growth is per round trip: clock-free.
    kernel_tcp: the scheme talks kernel TCP (INA's workers run their own cubic on a
    real-world clock: workers/congestion.py, so nothing to warn of)."""
    s, law, loss = scn.time_dilation, scn.tcp.congestion_control, configured_loss(scn)
    if not kernel_tcp or s <= 1 or law != "cubic" or loss <= 0:
        return []
    return [f"TCP cubic under time dilation {s:g} with {100 * loss:g}% WAN loss: cubic regrows on "
            f"the emulated clock, faster per round trip than on a real host, so lossy TCP streams run "
            f"faster here than on a real cluster; for a real cluster's numbers set "
            f"tcp.congestion_control: reno (clock-free) or time_dilation: 1 (docs/model.md)"]
