"""Re-planning at run time, the pure parts: job banks, what the controller polls and how it
decides, at which iteration a new plan takes effect, and the workers' side of the hand-over.

Banks. Two plans live side by side during a switch-over: the old one finishes its
iteration while the new one is installed. Each gets its own bank of job ids (bank 0: jobs
job .. job+K-1, bank 1: job+K .. job+2K-1; plans alternate) and its own half of every
switch's aggregation slots, multicast groups and replication ids (`bank_layout`), reserved
when the first plan is made, so the new entries never collide with the old ones and the old
ones can be removed by handle once every worker moved on.

Measurement. The rates the network offers, read back from the kernel as an SDN controller
reads port statistics: the htb rate of every switch-switch interface (WAN and uplinks, each
end shapes its own direction), `tc class show dev X`. Offered, not achieved: the job's own
throughput on a link is bounded by what the plan sends there, so a link the plan uses
lightly would look slow and one it avoids would look idle; the LP's capacities are offered
rates. Host access links are not polled (their sending side lives in the host's namespace;
nothing changes them during a run) and keep the plan's rates.

Hand-over. The controller writes `plan-<n>.json` ({seq, from_iteration, comm: {worker:
comm}}) into the run's switch-over folder; every worker's communicator looks for the next
file when it starts an iteration's aggregation and switches to its configuration at exactly
`from_iteration` (`PlanFollower`). BSP keeps the workers within one iteration of each
other, so an iteration two past the furthest worker's current one is still ahead of all.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import networkx as nx

from control.agg_entries import FIRST_GROUP
from topologies.linkemu import parse_htb_rate_bps
from topologies.ports import interface_name

BANKS = 2
MAX_JOB = 255            # the aggregation header's job byte
GROUP_SPAN = 256         # multicast groups per bank (one per point: at most agg_points' 256)
RID_SPAN = 512           # replication ids per bank (agg_children holds 1024 entries)
PLAN_FILE = "plan-{seq}.json"


@dataclass(frozen=True)
class BankLayout:
    bank: int
    jobs: tuple[int, ...]     # PS k's tree is jobs[k]
    slot_base: int            # first aggregation slot of the bank on every switch
    slots: int                # slots the bank may use on one switch
    first_group: int
    first_rid: int


def check_banks(job: int, k: int) -> None:
    """Both banks' job ids fit the header's byte."""
    if job + BANKS * k - 1 > MAX_JOB:
        raise ValueError(f"scheme_options.job: re-planning needs {BANKS} banks of {k} jobs from "
                         f"job {job}, up to {job + BANKS * k - 1} > {MAX_JOB}: lower job or "
                         "the number of servers")


def bank_layout(job: int, k: int, total_slots: int, bank: int) -> BankLayout:
    """Bank `bank`'s jobs and its half of a switch's slots, groups and replication ids."""
    if bank not in range(BANKS):
        raise ValueError(f"bank must be 0..{BANKS - 1}, got {bank}")
    check_banks(job, k)
    half = total_slots // BANKS
    return BankLayout(bank, tuple(range(job + bank * k, job + (bank + 1) * k)), bank * half, half,
                      FIRST_GROUP + bank * GROUP_SPAN, 1 + bank * RID_SPAN)


def next_bank(bank: int) -> int:
    return (bank + 1) % BANKS


# ---------------------------------------------------------------- measurement and decision

def polled_interfaces(graph: nx.Graph) -> dict[tuple[str, str], str]:
    """(u, v) -> u's interface toward v, for every switch-switch link in both directions:
    its htb class shapes the traffic leaving u toward v."""
    out = {}
    for u, v in graph.edges():
        if graph.nodes[u]["role"] != "host" and graph.nodes[v]["role"] != "host":
            out[(u, v)] = interface_name(graph, u, v)
            out[(v, u)] = interface_name(graph, v, u)
    return out


def rates_from_tc(outputs: Mapping[tuple[str, str], str]) -> dict[tuple[str, str], float]:
    """(u, v) -> Mbps from each interface's `tc class show` text; an interface whose class
    cannot be read is left out (the plan keeps its last known rate)."""
    out = {}
    for arc, text in outputs.items():
        bps = parse_htb_rate_bps(text)
        if bps is not None:
            out[arc] = bps / 1e6
    return out


def same_plan(a, b) -> bool:
    """Two RoutingPlans that send every stream the same way with the same split: switching
    between them would change nothing the data path sees."""
    return (a.servers == b.servers and dict(a.node) == dict(b.node)
            and dict(a.worker_path) == dict(b.worker_path)
            and dict(a.switch_path) == dict(b.switch_path)
            and all(abs(x - y) <= 1e-9 for x, y in zip(a.shares, b.shares)))


# ---------------------------------------------------------------- when the switch happens

def furthest_started(events: Mapping[str, list[dict]]) -> int:
    """The highest iteration any worker has started (-1: none yet)."""
    return max((e["iteration"] for es in events.values() for e in es
                if e.get("event") == "iteration_start"), default=-1)


def switchover_iteration(events: Mapping[str, list[dict]], ahead: int,
                         iterations: int | None) -> int | None:
    """The iteration a plan announced now takes effect at: `ahead` past the furthest
    worker's (so no worker has reached it: BSP keeps them within one iteration); None when
    that is past the run's last iteration."""
    if ahead < 2:
        raise ValueError(f"replan_ahead must be at least 2 iterations, got {ahead}")
    i = max(furthest_started(events), 0) + ahead
    return None if iterations is not None and i >= iterations else i


def all_moved_on(events: Mapping[str, list[dict]], workers, iteration: int) -> bool:
    """Every worker has the sum of the iteration before `iteration` (or has ended): the old
    plan's trees and root servers are needed no more."""
    for w in workers:
        es = events.get(w, [])
        done = any(e.get("event") in ("worker_end", "worker_error") for e in es)
        got = any(e.get("event") == "last_result" and e.get("iteration", -1) >= iteration - 1
                  for e in es)
        if not (done or got):
            return False
    return True


# ---------------------------------------------------------------- the workers' side

def write_plan_file(folder: Path, seq: int, from_iteration: int, comm: Mapping[str, dict],
                    jobs) -> Path:
    """plan-<seq>.json, atomically (a worker never reads half a file)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PLAN_FILE.format(seq=seq)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"seq": seq, "from_iteration": from_iteration,
                               "jobs": list(jobs), "comm": dict(comm)}))
    os.replace(tmp, path)
    return path


class PlanFollower:
    """A worker's view of the switch-over folder: `at(i)` is called as iteration i's
    aggregation starts and returns this worker's new configuration exactly at the
    iteration the next plan takes effect, else None."""

    def __init__(self, folder, worker: str):
        self.folder, self.worker = Path(folder), worker
        self.seq = 0                  # plans taken so far (the first plan is 0)
        self.pending: dict | None = None

    def at(self, iteration: int) -> dict | None:
        if self.pending is None:
            path = self.folder / PLAN_FILE.format(seq=self.seq + 1)
            if path.exists():
                data = json.loads(path.read_text())
                if data["from_iteration"] < iteration:
                    raise RuntimeError(
                        f"{path}: plan {data['seq']} takes effect at iteration "
                        f"{data['from_iteration']} but {self.worker} is already at {iteration}; "
                        "raise scheme_options.replan_ahead")
                if self.worker not in data["comm"]:
                    raise RuntimeError(f"{path}: no configuration for worker {self.worker}")
                self.pending = data
        if self.pending is not None and self.pending["from_iteration"] == iteration:
            comm, self.pending = self.pending["comm"][self.worker], None
            self.seq += 1
            return comm
        return None
