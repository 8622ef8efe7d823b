"""Link counters sampled every 100 ms into counters.csv, and the "switch-limited" check.

Each network namespace's interface statistics are read from /proc/<pid>/net/dev, which
the kernel renders for the namespace of <pid> (same numbers as /sys/class/net/*/statistics
inside that namespace, without entering it): the root namespace for switch interfaces,
each host's shell PID for host interfaces. One reader thread, no forks per sample.
"""
from __future__ import annotations

import csv
import threading
import time
from dataclasses import dataclass

FIELDS = ("t_mono", "node", "intf", "rx_bytes", "rx_packets", "rx_dropped",
          "tx_bytes", "tx_packets", "tx_dropped")


def parse_net_dev(text: str) -> dict[str, tuple[int, int, int, int, int, int]]:
    """/proc/net/dev -> {intf: (rx_bytes, rx_packets, rx_drop, tx_bytes, tx_packets, tx_drop)}."""
    out = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        f = rest.split()
        if len(f) < 16:
            continue
        out[name.strip()] = (int(f[0]), int(f[1]), int(f[3]), int(f[8]), int(f[9]), int(f[11]))
    return out


@dataclass(frozen=True)
class Source:
    """Where to read: the namespace of ``pid``, keeping only ``intfs`` (name -> node)."""
    pid: int | str          # a PID or 'self' for the root namespace
    intfs: dict[str, str]


class CounterSampler:
    """Background sampler; ``stop()`` flushes and closes the CSV (safe to call twice)."""

    def __init__(self, path, sources: list[Source], period_s: float = 0.1):
        self.path = path
        self.sources = sources
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread = None
        self._file = None
        self.samples = 0
        self.last: dict[tuple[str, str], tuple] = {}
        self.first: dict[tuple[str, str], tuple] = {}

    def start(self) -> "CounterSampler":
        self._file = open(self.path, "w", newline="")
        self._writer = csv.writer(self._file)
        self._writer.writerow(FIELDS)
        self._thread = threading.Thread(target=self._loop, name="counters", daemon=True)
        self._thread.start()
        return self

    def sample_once(self) -> None:
        t = time.monotonic()
        for src in self.sources:
            try:
                with open(f"/proc/{src.pid}/net/dev") as f:
                    stats = parse_net_dev(f.read())
            except OSError:
                continue   # namespace gone (teardown in progress)
            for intf, node in src.intfs.items():
                row = stats.get(intf)
                if row is None:
                    continue
                self._writer.writerow((f"{t:.6f}", node, intf) + row)
                self.first.setdefault((node, intf), (t,) + row)
                self.last[(node, intf)] = (t,) + row
        self.samples += 1

    def _loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_t += self.period_s
            delay = next_t - time.monotonic()
            if delay < 0:            # fell behind: do not try to catch up in a burst
                next_t = time.monotonic()
                delay = 0
            self._stop.wait(delay)

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        self._file.flush()
        self._file.close()

    def totals(self) -> dict[str, dict]:
        """Per interface: bytes/packets/drops moved during sampling."""
        out = {}
        for key, last in self.last.items():
            first = self.first[key]
            names = FIELDS[3:]
            out[f"{key[0]}:{key[1]}"] = {n: last[i + 1] - first[i + 1] for i, n in enumerate(names)}
        return out


# ---------------------------------------------------------------- analysis (pure)

def rates_bps(rows: list[dict], intf: str, field: str = "tx_bytes") -> list[tuple[float, float]]:
    """(t, bits/s) between consecutive samples of one interface's counter."""
    pts = [(float(r["t_mono"]), int(r[field])) for r in rows if r["intf"] == intf]
    pts.sort()
    return [(t1, 8 * (b1 - b0) / (t1 - t0)) for (t0, b0), (t1, b1) in zip(pts, pts[1:]) if t1 > t0]


def read_csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process in seconds, None when it is gone."""
    import os
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def switch_limited_warnings(switch_cpu_pct: dict[str, float], egress_util: dict[str, float],
                            switch_drops: dict[str, int], cpu_threshold: float = 90.0,
                            util_threshold: float = 0.8) -> list[str]:
    """Say when a switch, not the links, limited the run.

    switch_cpu_pct: peak 1 s CPU share of each switch process (100 = one core);
    egress_util: per switch, the highest utilisation of its shaped egress links in that
    window (0..1); switch_drops: packets a switch dropped for lack of capacity.
    """
    warnings = []
    for sw in sorted(set(switch_cpu_pct) | set(switch_drops)):
        cpu = switch_cpu_pct.get(sw, 0.0)
        util = egress_util.get(sw, 0.0)
        drops = switch_drops.get(sw, 0)
        if (cpu >= cpu_threshold or drops > 0) and util < util_threshold:
            warnings.append(
                f"switch {sw} limited the run, not the links: CPU {cpu:.0f}% of a core, "
                f"{drops} capacity drops, busiest shaped egress at {100 * util:.0f}% of its "
                f"rate; raise time_dilation to emulate these rates faithfully")
    return warnings
