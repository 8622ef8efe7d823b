"""bench switch's BMv2 part (bench/bmv2_switch.py): which builds it measures, and, with BMv2
on PATH, each build started on the benchmark's veths, programmed with the workload's entries,
forwarding the workload's frames (the rate only has to be positive: timing is the bench's job)."""
import os
import tempfile

import pytest

from bench.bmv2_switch import bmv2_starters
from softswitch.bench import veth
from softswitch.bench.workloads import aggregation_workload, forward_workload
from testbed.bmv2 import missing_tools


def which_of(present):
    return lambda name: f"/opt/bm/{name}" if name in present else None


def test_builds_measured_are_those_on_path():
    base = {"simple_switch", "simple_switch_CLI", "p4c-bm2-ss"}
    assert bmv2_starters("/tmp", which_of(set())) == {}
    assert bmv2_starters("/tmp", which_of(base - {"simple_switch_CLI"})) == {}
    assert list(bmv2_starters("/tmp", which_of(base))) == ["bmv2"]
    assert list(bmv2_starters("/tmp", which_of(base | {"simple_switch_nolog"}))) == ["bmv2", "bmv2nolog"]


@pytest.mark.mininet
@pytest.mark.bmv2
def test_each_build_forwards_both_workloads_on_the_bench_veths(tmp_path):
    missing = missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH (CI puts a reference BMv2 there: .ci/p4ref-env.sh)")
    starters = bmv2_starters(str(tmp_path))
    bed = veth.VethBed(f"xt{os.getpid() % 100000}")
    try:
        bed.up()
        for label, start in starters.items():
            for wl in (forward_workload(), aggregation_workload(32)):
                proc = start(bed, wl, os.path.join(tempfile.gettempdir(), f"{bed.prefix}-{label}.log"))
                try:
                    assert proc.poll() is None
                    pps, offered = veth.measure_veth_rate(bed, wl.frames, 0.3, 1.0, wl.fresh_generations)
                finally:
                    veth._stop(proc)
                assert offered > 0 and pps > 0, (label, wl.name)
    finally:
        bed.down()
    assert bed.leftovers() == []
