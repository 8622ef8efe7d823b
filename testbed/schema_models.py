"""The scenario file's schema as pydantic v2 models (extra fields are errors).

Units are in field names (mbps, ms, pct, s). Checks that need the whole scenario
(datacenter names in edges, worker counts, rate limits) live in testbed/scenario.py so
that each error can name the exact field path.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, Strict as StrictType, Tag,
                      field_validator, model_validator)

import schemes
from topologies import catalog
from workers import datasets, models, presets
from workers.ctr_data import CtrSpec
from workers.training_modes import MODES
from workers.workload import (SPARSE_BATCH, SPARSE_LR, check_dataset, check_scale, check_sparse_size,
                              synthetic_size)

SCHEMES = schemes.NAMES             # the registry, schemes/__init__.py

# Limits of this machine (2 cores, 24 GiB) and of the addressing plan (docs/addressing.md).
# Measured (docs/runtime.md, "Measured on this machine"): 12 datacenters x 1 worker build in
# 6.7 s and ~0.4 GiB; 12 datacenters with 32 workers (hier-ps) run to completion with a peak
# of 2.4 GiB and a load of 22 on 2 cores: the CPUs, not memory, bound the workers.
MIN_DATACENTERS, MAX_DATACENTERS = 2, 12
MAX_WORKERS_TOTAL = 32
# Mininet's TCLink/htb silently ignores rates above this (it only logs), so we reject them.
HTB_MAX_MBPS = 1000.0


# YAML already types numbers; strict types stop `true` passing as 1 and "10" as 10.
Int = Annotated[int, StrictType()]
Float = Annotated[float, StrictType()]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


def _tagged(choices: dict[str, type], key: str, default: str):
    """A union chosen by the value of `key`; tags look like '<kind=x>' so that error
    paths can drop them (see scenario._format_loc)."""
    def pick(v: Any) -> str | None:
        value = v.get(key, default) if isinstance(v, dict) else getattr(v, key, None)
        return f"<{key}={value}>" if value in choices else None
    return Annotated[Union[tuple(Annotated[cls, Tag(f"<{key}={name}>")]
                                 for name, cls in choices.items())],
                     Discriminator(pick, custom_error_type="unknown_choice",
                                   custom_error_message=f"{key}: unknown value",
                                   custom_error_context={"key": key,
                                                         "known": ", ".join(choices)})]


# ---------------------------------------------------------------- datacenters
class Datacenter(Strict):
    name: str = Field(min_length=1, max_length=32)
    region: Optional[str] = None
    lat: Optional[Float] = Field(default=None, ge=-90, le=90)
    lon: Optional[Float] = Field(default=None, ge=-180, le=180)
    racks: Int = Field(default=1, ge=1)
    workers_per_rack: Int = Field(default=1, ge=1)
    compute_speed: Float = Field(default=1.0, gt=0)   # relative: 2.0 computes twice as fast

    @field_validator("region")
    @classmethod
    def _known_region(cls, v):
        if v is not None and v not in catalog.load_catalog().regions:
            raise ValueError(f"unknown region {v!r} (known: {', '.join(catalog.region_ids())})")
        return v

    @model_validator(mode="after")
    def _region_or_coordinates(self):
        has_coords = self.lat is not None or self.lon is not None
        if self.region is None and not has_coords:
            raise ValueError("give a region (catalog id, e.g. aws:us-east-1) or both lat and lon")
        if self.region is not None and has_coords:
            raise ValueError("give either region or lat/lon, not both")
        if self.region is None and (self.lat is None or self.lon is None):
            raise ValueError("explicit coordinates need both lat and lon")
        return self


# ---------------------------------------------------------------- bandwidth schedules
class SchedulePoint(Strict):
    t_s: Float = Field(ge=0)
    mbps: Float = Field(gt=0)
    # only the direction leaving this datacenter (an end of the edge); None: both
    from_dc: Optional[str] = None


class RandomSchedule(Strict):
    """NetStorm-style: redraw the rate uniformly in [min_mbps, max_mbps] every every_s."""
    min_mbps: Float = Field(gt=0)
    max_mbps: Float = Field(gt=0)
    every_s: Float = Field(gt=0)
    seed: Optional[Int] = None   # default: the scenario seed
    per_direction: bool = False  # draw each direction of a link on its own (NetStorm's script
                                 # sets `tc htb` per direction); false: both directions equal
    integer: bool = False        # whole Mbps, min..max inclusive (Python's random.randint)

    @model_validator(mode="after")
    def _ordered(self):
        if self.max_mbps < self.min_mbps:
            raise ValueError(f"max_mbps ({self.max_mbps:g}) must be >= min_mbps ({self.min_mbps:g})")
        if self.integer and not (float(self.min_mbps).is_integer() and float(self.max_mbps).is_integer()):
            raise ValueError(f"integer draws need whole min_mbps and max_mbps "
                             f"(got {self.min_mbps:g} and {self.max_mbps:g})")
        return self


def _schedule_kind(v: Any) -> str | None:
    if isinstance(v, (list, tuple)):
        return "<explicit>"
    if isinstance(v, (dict, RandomSchedule)):
        return "<random>"
    return None


BandwidthSchedule = Annotated[
    Union[Annotated[list[SchedulePoint], Tag("<explicit>")],
          Annotated[RandomSchedule, Tag("<random>")]],
    Discriminator(_schedule_kind, custom_error_type="schedule_shape",
                  custom_error_message="must be a list of {t_s, mbps} or a mapping "
                                       "{min_mbps, max_mbps, every_s}")]


# ---------------------------------------------------------------- links
# The drop-tail queue in front of a link, in bandwidth-delay products of its round trip
# (topologies/linkemu.py: at least 20 ms and 64 full frames). 1: the classic router rule;
# smaller: Appenzeller et al.'s BDP / sqrt(n) for n long flows, or a shallow-buffered WAN.
QueueBdp = Annotated[float, Field(gt=0, le=100)]


class LinkSpec(Strict):
    bandwidth_mbps: Float = Field(default=1000.0, gt=0)
    delay_ms: Float = Field(default=0.05, ge=0)
    jitter_ms: Float = Field(default=0.0, ge=0)
    loss_pct: Float = Field(default=0.0, ge=0, le=100)
    queue_bdp: QueueBdp = 1.0


class WanLink(Strict):
    bandwidth_mbps: Float = Field(default=100.0, gt=0)
    delay_ms: Optional[Float] = Field(default=None, ge=0)   # None: catalog RTT / 2
    jitter_ms: Float = Field(default=0.0, ge=0)
    loss_pct: Float = Field(default=0.0, ge=0, le=100)
    queue_bdp: QueueBdp = 1.0


class WanEdge(Strict):
    """An edge between two datacenters (by name). With topology 'edges' these define the
    WAN; otherwise each one overrides the default on an edge of the topology."""
    a: str
    b: str
    bandwidth_mbps: Optional[Float] = Field(default=None, gt=0)
    delay_ms: Optional[Float] = Field(default=None, ge=0)
    jitter_ms: Optional[Float] = Field(default=None, ge=0)
    loss_pct: Optional[Float] = Field(default=None, ge=0, le=100)
    queue_bdp: Optional[QueueBdp] = None
    bandwidth_schedule: Optional[BandwidthSchedule] = None


class Wan(Strict):
    topology: Literal["full-mesh", "ring", "star", "edges"] = "full-mesh"
    hub: Optional[str] = None          # star only; default: the first datacenter
    default: WanLink = WanLink()
    edges: list[WanEdge] = []
    bandwidth_schedule: Optional[BandwidthSchedule] = None   # for every WAN edge


class IntraDc(Strict):
    access: LinkSpec = LinkSpec()      # host - rack switch
    uplink: LinkSpec = LinkSpec()      # rack switch - datacenter gateway


# ---------------------------------------------------------------- switches, emulation
class SwitchCfg(Strict):
    backend: Literal["softswitch", "bmv2", "auto"] = "softswitch"
    # how the testbed writes the switches' entries: the simple_switch_CLI port, or P4Runtime
    # (gRPC; softswitch backend) with the same commands translated (softswitch/p4runtime)
    control: Literal["cli", "p4runtime"] = "cli"
    # where a softswitch runs its packets: compiled C (auto: when the program allows),
    # or the Python reference path (docs/softswitch.md)
    datapath: Literal["auto", "compiled", "python"] = "auto"
    program: str = "p4/forward.p4"
    defines: dict[str, Union[int, str]] = {}
    # switches (names without the run's prefix, e.g. g1) that write a pcap per port and
    # direction into the run's pcap/ folder (analysis/root_arrivals.py reads the root's)
    pcap: list[str] = []


class LinkEmulation(Strict):
    mode: Literal["auto", "netem", "userspace", "relay"] = "auto"


# The defaults of a stock Linux host (kernel 5.x/6.x: net/ipv4/tcp_ipv4.c and
# Documentation/networking/ip-sysctl.rst), not of the machine the testbed runs on: its root
# namespace may differ (these machines default to bbr), and hosts would inherit that.
STOCK_TCP_RMEM = [4096, 131072, 6291456]
STOCK_TCP_WMEM = [4096, 16384, 4194304]


class Tcp(Strict):
    """TCP of the emulated hosts, as a user of a real cluster would set it."""
    congestion_control: str = Field(default="cubic", pattern=r"^[a-z0-9_]+$")   # per socket
    slow_start_after_idle: bool = True       # net.ipv4.tcp_slow_start_after_idle
    rmem_bytes: list[Int] = Field(default_factory=lambda: list(STOCK_TCP_RMEM),
                                  min_length=3, max_length=3)   # net.ipv4.tcp_rmem min default max
    wmem_bytes: list[Int] = Field(default_factory=lambda: list(STOCK_TCP_WMEM),
                                  min_length=3, max_length=3)   # net.ipv4.tcp_wmem

    @field_validator("rmem_bytes", "wmem_bytes")
    @classmethod
    def _ordered(cls, v):
        if not 0 < v[0] <= v[1] <= v[2]:
            raise ValueError(f"must be [min, default, max] bytes with 0 < min <= default <= max (got {v})")
        return v


# ---------------------------------------------------------------- workload
class SyntheticWorkload(Strict):
    kind: Literal["synthetic"] = "synthetic"
    preset: Optional[Literal[presets.NAMES]] = None  # layers of a published model (workers/presets.py)
    scale: Float = Field(default=1.0, gt=0, le=1)  # preset: every layer shrunk by this factor
    parameters: Optional[Int] = Field(default=None, gt=0)   # N gradient values per iteration;
                                                   # with a preset, its size (the resolved file says it)
    clip: Float = Field(default=4.0, gt=0)         # elementwise gradient clipping bound, agreed
                                                   # by all workers (INA quantizes within it)

    @field_validator("scale")
    @classmethod
    def _scale(cls, v, info):
        return check_scale(info.data.get("preset"), v)

    @field_validator("parameters")
    @classmethod
    def _size(cls, v, info):
        return synthetic_size(info.data.get("preset"), info.data.get("scale"), v)


class ModelWorkload(Strict):
    kind: Literal["model"]
    name: Literal[models.NAMES]
    dataset: Literal[datasets.NAMES] = "synthetic"
    batch_size: Int = Field(default=32, gt=0)
    lr: Float = Field(default=0.1, gt=0)
    clip: Float = Field(default=4.0, gt=0)         # as in the synthetic workload

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, v, info):
        return check_dataset(info.data.get("name"), v)


class SparseWorkload(Strict):
    """A CTR model with an embedding table over Zipf-distributed ids (workers/ctr_data.py,
    workers/ctr_model.py); defaults: CtrSpec's."""
    kind: Literal["sparse"]
    fields: Int = Field(default=CtrSpec.fields, ge=1, le=64)          # categorical fields per sample
    vocabulary: Int = Field(default=CtrSpec.vocabulary, ge=2)         # ids, one embedding row each
    zipf_exponent: Float = Field(default=CtrSpec.zipf_exponent, gt=0)  # s: P(rank r) ~ r^-s
    embedding_dim: Int = Field(default=CtrSpec.embedding_dim, ge=1, le=256)
    hidden: Int = Field(default=CtrSpec.hidden, ge=1, le=1024)       # tanh units of the dense part
    batch_size: Int = Field(default=SPARSE_BATCH, gt=0)
    lr: Float = Field(default=SPARSE_LR, gt=0)
    clip: Float = Field(default=4.0, gt=0)         # as in the synthetic workload

    @field_validator("embedding_dim")
    @classmethod
    def _table_fits(cls, v, info):
        if "vocabulary" in info.data:
            check_sparse_size(info.data["vocabulary"], v)
        return v


Workload = _tagged({"synthetic": SyntheticWorkload, "model": ModelWorkload, "sparse": SparseWorkload},
                   "kind", "synthetic")


# ---------------------------------------------------------------- compute time (ms)
class ConstantCompute(Strict):
    model: Literal["constant"] = "constant"
    value_ms: Float = Field(default=100.0, ge=0)


class NormalCompute(Strict):
    model: Literal["normal"]
    mean_ms: Float = Field(gt=0)
    std_ms: Float = Field(ge=0)


class ShiftedExpCompute(Strict):
    """shift_ms + Exponential(mean = scale_ms)."""
    model: Literal["shifted_exp"]
    shift_ms: Float = Field(ge=0)
    scale_ms: Float = Field(gt=0)


class ParetoCompute(Strict):
    """Pareto with minimum scale_ms and tail index shape (heavier tail when smaller)."""
    model: Literal["pareto"]
    scale_ms: Float = Field(gt=0)
    shape: Float = Field(gt=0)


ComputeTime = _tagged({"constant": ConstantCompute, "normal": NormalCompute,
                       "shifted_exp": ShiftedExpCompute, "pareto": ParetoCompute},
                      "model", "constant")


# ---------------------------------------------------------------- stragglers
class PersistentStraggler(Strict):
    """A slow worker (global index, or host id like h1r1w2) or a whole datacenter (by name)."""
    worker: Optional[Union[Int, str]] = None
    dc: Optional[str] = None
    factor: Float = Field(ge=1)      # compute time multiplier

    @model_validator(mode="after")
    def _one_target(self):
        if (self.worker is None) == (self.dc is None):
            raise ValueError("give exactly one of worker or dc")
        return self


class TransientStragglers(Strict):
    """Each iteration each worker straggles with this probability, by a drawn factor."""
    probability: Float = Field(ge=0, le=1)
    distribution: Literal["constant", "uniform", "pareto"] = "constant"
    factor: Float = Field(default=2.0, ge=1)        # constant
    low: Optional[Float] = Field(default=None, ge=1)    # uniform
    high: Optional[Float] = Field(default=None, ge=1)   # uniform
    shape: Optional[Float] = Field(default=None, gt=0)  # pareto (minimum is `factor`)

    @model_validator(mode="after")
    def _params(self):
        if self.distribution == "uniform":
            if self.low is None or self.high is None:
                raise ValueError("distribution 'uniform' needs low and high")
            if self.high < self.low:
                raise ValueError(f"high ({self.high:g}) must be >= low ({self.low:g})")
        if self.distribution == "pareto" and self.shape is None:
            raise ValueError("distribution 'pareto' needs shape")
        return self


class Stragglers(Strict):
    persistent: list[PersistentStraggler] = []
    transient: Optional[TransientStragglers] = None


# ---------------------------------------------------------------- disturbances
# Times are real-world seconds from the start of the workload phase (the origin of
# bandwidth schedules); the run multiplies them, like every time, by time_dilation.
class BackgroundFlow(Strict):
    """Traffic that shares the WAN with the job: iperf3 from datacenter src's first host to
    dst's first host (testbed/disturbances.py), from start_s to stop_s (None: the run's
    end); with on_s and off_s, on for on_s, off for off_s, repeated. rate_mbps is the
    entry's total over its `flows` parallel streams: required for udp (iperf3 sends at that
    rate whatever arrives); for tcp optional (None: as fast as congestion control allows)."""
    src: str
    dst: str
    proto: Literal["tcp", "udp"] = "tcp"
    rate_mbps: Optional[Float] = Field(default=None, gt=0)
    flows: Int = Field(default=1, ge=1, le=16)
    start_s: Float = Field(default=0.0, ge=0)
    stop_s: Optional[Float] = Field(default=None, gt=0)
    on_s: Optional[Float] = Field(default=None, gt=0)
    off_s: Optional[Float] = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _consistent(self):
        problems = []
        if self.proto == "udp" and self.rate_mbps is None:
            problems.append("a udp flow needs rate_mbps (iperf3 sends UDP at a set rate)")
        if self.stop_s is not None and self.stop_s <= self.start_s:
            problems.append(f"stop_s ({self.stop_s:g}) must be after start_s ({self.start_s:g})")
        if (self.on_s is None) != (self.off_s is None):
            problems.append("an on/off pattern needs both on_s and off_s")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Failure(Strict):
    """One timed failure: at at_s kill a process of the scheme (`kill`: "server:<name>",
    "worker:<host id>", or the bare name when only one process has it), or take the WAN
    link between two datacenters down (`link_down: [a, b]`) until up_at_s (None: down
    for the rest of the run)."""
    at_s: Float = Field(ge=0)
    kill: Optional[str] = Field(default=None, min_length=1)
    link_down: Optional[list[str]] = Field(default=None, min_length=2, max_length=2)
    up_at_s: Optional[Float] = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_kind(self):
        if (self.kill is None) == (self.link_down is None):
            raise ValueError("give exactly one of kill or link_down")
        if self.up_at_s is not None and self.link_down is None:
            raise ValueError("up_at_s only applies to link_down")
        if self.up_at_s is not None and self.up_at_s <= self.at_s:
            raise ValueError(f"up_at_s ({self.up_at_s:g}) must be after at_s ({self.at_s:g})")
        return self


class Output(Strict):
    folder: str = "results"


# ---------------------------------------------------------------- training mode
class Training(Strict):
    """How workers synchronize (workers/training_modes.py, docs/training-modes.md): bsp (every
    iteration waits for every worker's gradient), ssp (a worker may run at most `staleness`
    clocks ahead of the slowest; 0 is bsp's schedule) or asp (no bound). The scheme must
    run the mode (schemes.base.Scheme.modes; testbed/scenario_checks.py)."""
    mode: Literal[MODES] = "bsp"
    staleness: Optional[Int] = Field(default=None, ge=0)   # ssp's bound s, in clocks

    @field_validator("staleness")
    @classmethod
    def _bound_for_ssp_only(cls, v, info):
        mode = info.data.get("mode")
        if mode == "ssp" and v is None:
            raise ValueError("ssp needs its bound: set training.staleness to s >= 0 "
                             "(clocks a worker may run ahead of the slowest; 0 is bsp's schedule)")
        if mode in ("bsp", "asp") and v is not None:
            raise ValueError(f"only ssp has a staleness bound ({mode} has "
                             f"{'none' if mode == 'asp' else '0'}); drop it or set training.mode: ssp")
        return v


# ---------------------------------------------------------------- the scenario
class Scenario(Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    seed: Int = 0
    time_dilation: Float = Field(default=1.0, ge=1)
    datacenters: list[Datacenter]
    wan: Wan = Wan()
    intra_dc: IntraDc = IntraDc()
    switch: SwitchCfg = SwitchCfg()
    link_emulation: LinkEmulation = LinkEmulation()
    tcp: Tcp = Tcp()
    scheme: Literal[SCHEMES]
    scheme_options: dict[str, Any] = {}
    workload: Workload = SyntheticWorkload()
    compute_time: ComputeTime = ConstantCompute()
    stragglers: Stragglers = Stragglers()
    background: list[BackgroundFlow] = []
    failures: list[Failure] = []
    iterations: Optional[Int] = Field(default=None, gt=0)
    duration_s: Optional[Float] = Field(default=None, gt=0)
    repetitions: Int = Field(default=1, ge=1)
    training: Training = Training()
    output: Output = Output()

    @model_validator(mode="after")
    def _scheme_program(self):
        """A scheme that needs its own switch program (ina, geo-ina: p4/aggregation.p4) gets
        it when the scenario does not name a program itself (a named one runs as given, e.g.
        a variant of aggregation.p4). scheme_options.k sets AGG_K."""
        program = schemes.get(self.scheme).program
        if program:
            update = {}
            if "program" not in self.switch.model_fields_set:
                update["program"] = program
            k = (self.scheme_options or {}).get("k")
            if k is not None and "AGG_K" not in self.switch.defines:
                update["defines"] = {**self.switch.defines, "AGG_K": k}
            if update:
                self.switch = self.switch.model_copy(update=update)
        return self

    @property
    def total_workers(self) -> int:
        return sum(dc.racks * dc.workers_per_rack for dc in self.datacenters)

    def dc_index(self, name: str) -> int:
        """1-based index of a datacenter by name (its D in node ids and addresses)."""
        for i, dc in enumerate(self.datacenters, start=1):
            if dc.name == name:
                return i
        raise KeyError(name)
