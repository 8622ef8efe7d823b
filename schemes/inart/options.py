"""Options of InArt's planning (phase 1 split, phase 2 routing): the testbed's interpretation
choices, each named where README_plan.md explains it. Defaults follow the group's public
code (RRIAR, Fangjin98/distributed-training-INA @19c6836) where it has the knob, else the
reading seeds.md section 3.3 proposes. `InartOptions` are the scheme's: the planning ones,
the workers' transport (ina's) and where the parameter servers run."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from control.agg_entries import DEFAULT_SLOTS
from control.agg_tree import MAX_FAN_IN
from schemes.base import Options
from schemes.ina.options import InaTransportOptions, check_window
from schemes.inart.paths import KEEP, MAX_HOPS, PATH_LIMIT


class InartPlanOptions(Options):
    # ---- phase 2: candidate paths
    max_hops: int = Field(MAX_HOPS, ge=1)   # simple paths of at most this many links (RRIAR: 8)
    path_limit: int = Field(PATH_LIMIT, ge=1)   # more paths than this for one pair = explosion ...
    keep_paths: int = Field(KEEP, ge=1)     # ... then the pair keeps its k shortest
    path_rank: Literal["hops", "delay"] = "hops"   # what "shortest" means there
    max_lp_paths: int = Field(200_000, ge=1)   # refuse an LP with more path variables
    # ---- phase 2: which switches aggregate and how much
    aggregate_at: Literal["all", "rack_switch", "gateway"] = "all"   # switches that may
                                            # aggregate: every one (RRIAR), or one role
    slots: int = Field(DEFAULT_SLOTS, ge=1)   # aggregator slots per switch (p4/aggregation.p4)
    window: int = Field(64, ge=1)           # slots one aggregation point takes (one per PS)
    fan_in: int = Field(MAX_FAN_IN, ge=1)   # children per aggregation point (the bitmap's width)
    switch_streams: float | None = Field(None, ge=0)   # per-switch budget in worker streams
                                            # (None: none beyond slots and fan-in)
    budget_counts: Literal["inputs", "saved"] = "inputs"   # the budget bounds the streams a
                                            # switch takes in, or (RRIAR's V) those it saves
    # ---- phase 2: the LP
    objective: Literal["arriving", "direct"] = "arriving"   # streams arriving at the PS
                                            # (direct + aggregated), or RRIAR's direct ones only
    server_weight: Literal["share", "ingress_time"] = "share"   # PS k's streams weigh alpha_k
                                            # (bytes) or alpha_k / B_k (seconds at its ingress)
    prefer_short_paths: bool = True         # among optimal plans, fewest stream-hops (2nd LP)
    demand_mbps: float | None = Field(None, gt=0)   # rate of one worker's whole gradient
                                            # (None: the slowest worker access link)
    capacity: Literal["elastic", "strict"] = "elastic"   # infeasible at that rate: plan for
                                            # the highest rate the links carry, or refuse
    # ---- phase 2: randomized rounding
    fractional_direct: Literal["draw", "largest_switch"] = "draw"   # a worker whose direct
                                            # share is fractional draws like any other, or
                                            # (RRIAR) takes the switch with the largest x_s
    repair: bool = True                     # move workers off a switch the draw overfilled
    # ---- phase 1 and the iteration
    ingress: Literal["access", "max_flow"] = "access"   # B_k: PS k's access links, or the
                                            # max flow the network delivers to it from the workers
    streams_from: Literal["relaxed", "expected", "rounded"] = "relaxed"   # d_k steering the
                                            # iteration: the LP's, its expectation under the
                                            # draws, or the rounded plan's
    rounds: int = Field(3, ge=1)            # phase 1 -> 2 rounds at most (seeds.md: 2-3)
    tolerance: float = Field(0.01, ge=0)    # stop when no share moves by more than this
    step: float = Field(0.5, gt=0, le=1)    # the next round routes with this step towards
                                            # phase 1's answer (1: all the way)
    # ---- re-planning
    replan_threshold: float = Field(0.2, ge=0)   # a used path's bottleneck moved by more than
                                            # this fraction: the plan must change


class InartOptions(InartPlanOptions, InaTransportOptions):
    """Options of scheme inart (README.md). PS k's tree is job `job + k`."""
    # parameter server hosts (dedicated: they run no worker); None: `num_servers` hosts
    # chosen by placement.server_hosts (the last host of each datacenter in turn)
    servers: list[str] | None = None
    num_servers: int = Field(2, ge=1, le=32)
    # hosts that run nothing: keeps the workers the same when variants place fewer servers
    # (a single-PS baseline beside K PSs)
    idle_hosts: list[str] = []
    # phase 2's router: "lp" (InArt: LP + randomized rounding), "shortest_path" (the
    # paper's INA-with-shortest-path baseline), "none" (multi-PS without INA)
    routing: Literal["lp", "shortest_path", "none"] = "lp"
    # "planned": /32 routes make every stream follow the plan's path (control/path_routes.py);
    # "shortest": the data path keeps the minimum-delay routes whatever the plan chose
    paths: Literal["planned", "shortest"] = "planned"
    # switch memory: "ps" plans as if a switch could serve every PS, then a point gets the
    # slots left at its switch and the rest of the window falls back to the PS (ATP-like,
    # p4's agg_point_bypass: docs/protocol.md); "refuse": the plan's budget keeps every point
    # whole (slots // window points per switch), nothing falls back
    fallback: Literal["ps", "refuse"] = "ps"
    # slots per aggregation point (one point per PS a switch serves): an integer, or "auto":
    # ina's rule (the bandwidth-delay product of the slowest WAN link over the longest
    # worker-server round trip, a power of two in 64..1024), no more than lets a switch hold a
    # point for every PS (plan.auto_window)
    window: Literal["auto"] | int = Field("auto", union_mode="left_to_right")
    # re-planning while the job runs (README.md, "Re-planning at run time"): every this many
    # emulated seconds the controller reads the WAN and uplink rates back from the kernel;
    # None: the run keeps its first plan. On, the plan reserves a second bank of jobs, slots,
    # groups and replication ids on every switch for the next plan
    replan_interval_s: float | None = Field(None, gt=0)
    # a new plan takes effect this many iterations after the furthest worker's current one
    replan_ahead: int = Field(2, ge=2)

    _window = field_validator("window", mode="before")(lambda cls, v: check_window(v))
