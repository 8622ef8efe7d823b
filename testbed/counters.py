"""Link counters sampled every 100 ms into counters.csv, and the "switch-limited" check.

Each network namespace's interface statistics are read from /proc/<pid>/net/dev, which
the kernel renders for the namespace of <pid> (same numbers as /sys/class/net/*/statistics
inside that namespace, without entering it): the root namespace for switch interfaces,
each host's shell PID for host interfaces. One reader thread, no forks per sample.
"""
from __future__ import annotations

import csv
import re
import threading
import time
from dataclasses import dataclass

from workers.worker import runqueue_wait_s

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

    def __init__(self, path, sources: list[Source], period_s: float = 0.1,
                 load: "SwitchLoad | None" = None):
        self.path = path
        self.sources = sources
        self.period_s = period_s
        self.load = load
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
        if self.load is not None:
            self.load.observe(t, self.last)

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


class SwitchLoad:
    """Per-second windows of each switch's CPU share and its busiest shaped egress.

    switch_pids: switch -> PID of its process; shaped: switch -> {intf: rate_mbps} (a live
    dict: the schedule driver updates rates as it changes them). A window counts as
    switch-limited when the process wanted >= cpu_threshold % of a core (ran, or waited
    runnable for a CPU: /proc/PID/schedstat) while no shaped egress of that switch ran
    above util_threshold of its rate. Why the wait: with a switch per datacenter and a
    dozen workers on 2 cores, no switch ever gets 90 % of a core, yet one that is always
    runnable is what holds the packets back (bench capacity: geo-ina at 6 x its model with
    every switch below 50 % CPU).
    """

    def __init__(self, switch_pids: dict[str, int], shaped: dict[str, dict[str, float]],
                 window_s: float = 1.0):
        self.switch_pids = switch_pids
        self.shaped = shaped
        self.window_s = window_s
        self._prev = None       # (t, {switch: cpu_s}, {intf: tx_bytes}, {switch: wait_s})
        # (t, switch, cpu %, util, runnable-but-waiting % of the window)
        self.windows: list[tuple[float, str, float, float, float]] = []

    def observe(self, t: float, last: dict) -> None:
        if self._prev is not None and t - self._prev[0] < self.window_s:
            return
        cpu = {sw: cpu_seconds(pid) for sw, pid in self.switch_pids.items()}
        wait = {sw: runqueue_wait_s(str(pid)) for sw, pid in self.switch_pids.items()}
        tx = {intf: row[4] for (node, intf), row in last.items()}
        if self._prev is not None:
            t0, cpu0, tx0, wait0 = self._prev
            dt = t - t0
            for sw, c in cpu.items():
                if c is None or cpu0.get(sw) is None:
                    continue
                util = 0.0
                for intf, rate in self.shaped.get(sw, {}).items():
                    if rate and intf in tx and intf in tx0:
                        util = max(util, 8 * (tx[intf] - tx0[intf]) / dt / (rate * 1e6))
                w = wait.get(sw) is not None and wait0.get(sw) is not None
                self.windows.append((t, sw, 100.0 * (c - cpu0[sw]) / dt, util,
                                     100.0 * (wait[sw] - wait0[sw]) / dt if w else 0.0))
        self._prev = (t, cpu, tx, wait)

    def max_util(self) -> dict[str, float]:
        """Per switch, the highest utilisation any of its shaped egress links reached."""
        out: dict[str, float] = {}
        for _, sw, _, util, _ in self.windows:
            out[sw] = max(out.get(sw, 0.0), util)
        return out

    def peaks(self, cpu_threshold: float = 90.0, util_threshold: float = 0.8):
        """Per switch: (peak CPU %, utilisation in that window, limited window count, peak
        CPU + wait %: the share of a core it wanted). Limited: CPU + wait >= cpu_threshold
        with every shaped egress below util_threshold."""
        out = {}
        for t, sw, cpu, util, wait in self.windows:
            peak, putil, n, want = out.get(sw, (0.0, 0.0, 0, 0.0))
            if cpu + wait >= cpu_threshold and util < util_threshold:
                n += 1
            if cpu > peak:
                peak, putil = cpu, util
            out[sw] = (peak, putil, n, max(want, cpu + wait))
        return out


# ---------------------------------------------------------------- analysis (pure)

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


def switch_limited_warnings(peaks: dict[str, tuple[float, float, int, float]],
                            min_windows: int = 2) -> list[str]:
    """Say when a switch's packet rate, not the links, limited the run.

    peaks: from SwitchLoad.peaks(): per switch (peak CPU %, egress utilisation in that
    window, number of 1 s windows wanting >= 90 % of a core, running or waiting for one,
    with every shaped egress below 80 %, peak CPU + wait %).
    """
    warnings = []
    for sw, (cpu, util, n, want) in sorted(peaks.items()):
        if n < min_windows:
            continue
        if cpu >= 90:
            why = f"at >= 90% of a CPU core (peak {cpu:.0f}%)"
            fix = "raise time_dilation so the switch can keep up with the emulated rates"
        else:
            why = (f"runnable >= 90% of the time but running at most {cpu:.0f}% (waiting for a "
                   f"CPU the rest: the machine's cores are shared by too many processes)")
            fix = ("raise time_dilation, or run fewer workers per core (fewer datacenters or "
                   "workers, a machine with more cores)")
        warnings.append(f"switch {sw} limited the run, not the links: {n} s {why} while its "
                        f"shaped links ran below 80% of their rate; {fix}")
    return warnings


_RX_RE = re.compile(r"'rx_packets': (\d+)")
_DROP_RE = re.compile(r"'rx_socket_drops': (\d+)")


def softswitch_rx_drops(log_text: str) -> tuple[int, int] | None:
    """(frames received, frames the kernel dropped because the switch fell behind) from
    the softswitch's last "stopping:" log line; None when the log has no such line."""
    lines = [l for l in log_text.splitlines() if " stopping: " in l]
    if not lines:
        return None
    last = lines[-1]
    return (sum(int(x) for x in _RX_RE.findall(last)), sum(int(x) for x in _DROP_RE.findall(last)))


_DATAPATH_RE = re.compile(r" datapath: (compiled|python)(?: \((.*)\))?$")


def softswitch_datapath(log_text: str) -> str | None:
    """Where a softswitch ran its packets, from its "datapath:" log line: "compiled", or
    "python: <why>" (the construct or option the compiled path lacks); None without one
    (BMv2, or a switch that did not start)."""
    for line in reversed(log_text.splitlines()):
        m = _DATAPATH_RE.search(line)
        if m:
            return "compiled" if m.group(1) == "compiled" else f"python: {m.group(2) or 'asked for'}"
    return None


_LINK_EMU_FIELDS = ("submitted", "sent", "lost", "overflow", "queued")


def link_emu_counters(log_text: str, relay: bool = False) -> dict[int, dict] | None:
    """Per delay line {port: {submitted, sent, lost, overflow, queued}} from the last
    "stopping:" line of a softswitch log (its link-emu part) or of a link relay's log
    (relay=True: the whole dict; port 2 carries a->b, port 1 b->a). None without one."""
    import ast
    lines = [l for l in log_text.splitlines() if " stopping: " in l]
    if not lines:
        return None
    last = lines[-1]
    if relay:
        text = last.split(" stopping: ", 1)[1].strip()
    else:
        m = re.search(r"link-emu (\{.*\}), unknown egress", last)
        if m is None:
            return None
        text = m.group(1)
    try:
        raw = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return {int(port): {k: int(c.get(k, 0)) for k in _LINK_EMU_FIELDS} for port, c in raw.items()}


def capacity_drop_warnings(drops: dict[str, tuple[int, int]], max_util: dict[str, float],
                           min_fraction: float = 0.001, util_threshold: float = 0.8) -> list[str]:
    """Warn for switches that dropped received frames (socket overrun: the switch process
    could not keep up) while none of their shaped links ran near its rate."""
    out = []
    for sw, (rx, dropped) in sorted(drops.items()):
        total = rx + dropped
        util = max_util.get(sw, 0.0)
        if total and dropped / total >= min_fraction and util < util_threshold:
            out.append(f"switch {sw} limited the run, not the links: it dropped {dropped} of "
                       f"{total} arriving frames ({100 * dropped / total:.1f}%) for lack of "
                       f"CPU while its busiest shaped link peaked at {100 * util:.0f}% of its "
                       f"rate; raise time_dilation (or run fewer switches per core)")
    return out


def qdisc_root_stats(tc_json: str, devs=None) -> dict[str, dict]:
    """Root qdisc counters per device from ``tc -s -j qdisc show``: the htb root counts the
    frames its leaf queue dropped (queue full at the bottleneck), which the interface
    statistics do not."""
    import json
    out = {}
    for q in json.loads(tc_json or "[]"):
        dev = q.get("dev")
        if not q.get("root") or dev is None or (devs is not None and dev not in devs):
            continue
        out[dev] = {"kind": q.get("kind"), "sent_bytes": q.get("bytes", 0),
                    "sent_packets": q.get("packets", 0), "drops": q.get("drops", 0),
                    "overlimits": q.get("overlimits", 0)}
    return out
