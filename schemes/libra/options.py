"""Options of scheme libra: the switch part's (ina's, all of them), the parameter server's
placement and ports, and the hot set's."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from schemes.ina.options import InaOptions


class LibraOptions(InaOptions):
    # the switch part's tree: "flat" (every worker a child of one switch: Libra's single
    # switch; on several datacenters that switch sits in one datacenter, `root`) or "geo"
    # (geo-ina's tree by rack, datacenter, global)
    tree: Literal["flat", "geo"] = "flat"
    # hot rows in the switch: "auto" fills the job's slots (window x k values, less the
    # dense part), or a number of rows (the window grows to hold them when it is "auto")
    hot_rows: Literal["auto"] | int = Field("auto", union_mode="left_to_right")
    # where the id frequencies are counted: "sample" (a seeded sample_fraction of the
    # training set) or "warmup" (every worker's minibatches of the first warmup_iterations)
    hot_source: Literal["sample", "warmup"] = "sample"
    sample_fraction: float = Field(0.05, gt=0, le=1)
    warmup_iterations: int = Field(5, ge=1)
    # order of the hot rows in the switch vector: by frequency, or ids that co-occur in
    # the same packet (README.md: no effect on bytes with this protocol)
    order: Literal["frequency", "cooccurrence"] = "frequency"
    # the parameter server of the cold rows: its datacenter (default: the switch tree's
    # root's), first TCP port, real-world seconds of silence before a peer counts as dead
    server_dc: str | int | None = None
    base_port: int = Field(7100, ge=1024, le=65000)
    timeout_s: float = Field(120.0, gt=0)

    @field_validator("hot_rows", mode="before")
    @classmethod
    def _hot_rows(cls, v):
        if v != "auto" and not (type(v) is int and v >= 0):
            raise ValueError('must be "auto" or an integer >= 0')
        return v

    def emulated_timeout_s(self, scenario) -> float:
        return self.timeout_s * scenario.time_dilation

    def ina_options(self, window: int | str | None = None) -> InaOptions:
        """The switch part's options as ina takes them."""
        keep = {k: getattr(self, k) for k in InaOptions.model_fields}
        if window is not None:
            keep["window"] = window
        return InaOptions(**keep)
