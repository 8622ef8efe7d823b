"""The warning that kernel cubic under time dilation and loss flatters TCP schemes
(testbed/tcp.py dilation_warnings): when it fires and what it tells the user to do."""
from __future__ import annotations

import pytest
import yaml

from testbed.scenario import parse_scenario
from testbed.tcp import dilation_warnings

BASE = {"name": "t", "datacenters": [{"name": "a", "lat": 0, "lon": 0, "racks": 1, "workers_per_rack": 1},
                                     {"name": "b", "lat": 0, "lon": 30, "racks": 1, "workers_per_rack": 1}],
        "scheme": "ps", "workload": {"kind": "synthetic", "parameters": 1024}, "iterations": 2}


def scn(dilation=4.0, loss=1.0, law=None, edge_loss=None):
    d = dict(BASE, time_dilation=dilation, wan={"default": {"bandwidth_mbps": 20, "loss_pct": loss}})
    if edge_loss is not None:
        d["wan"]["edges"] = [{"a": "a", "b": "b", "loss_pct": edge_loss}]
    if law:
        d["tcp"] = {"congestion_control": law}
    return parse_scenario(yaml.safe_dump(d), "<test>")


def test_cubic_with_loss_under_dilation_is_warned_with_the_remedy():
    (w,) = dilation_warnings(scn())
    assert "time dilation 4" in w and "1% WAN loss" in w
    assert "tcp.congestion_control: reno" in w and "time_dilation: 1" in w


def test_a_lossy_edge_alone_is_enough():
    (w,) = dilation_warnings(scn(loss=0.0, edge_loss=0.5))
    assert "0.5% WAN loss" in w


@pytest.mark.parametrize("kw", [{"dilation": 1.0}, {"loss": 0.0}, {"law": "reno"}])
def test_no_warning_without_dilation_loss_or_cubic(kw):
    assert dilation_warnings(scn(**kw)) == []


def test_schemes_without_kernel_tcp_are_not_warned():
    # INA's workers run their own cubic on a real-world clock (workers/congestion.py)
    import schemes
    assert dilation_warnings(scn(), kernel_tcp=False) == []
    tcp = {n for n in schemes.NAMES if schemes.get(n).kernel_tcp}
    assert {"ps", "hier-ps", "ring", "libra", "mlfabric"} <= tcp
    assert not {"ina", "geo-ina", "l3dml", "inart"} & tcp
