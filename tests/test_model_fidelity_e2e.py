"""Every scheme held to its model, end to end in Mininet (issue 10): one small
bandwidth-bound point, measured time per iteration (the pace, iteration_period_s) over the
model's (schemes/<name>/model.py), as summary.json's `model.measured_over_model` reports it.

Needs root and Mininet (skipped otherwise); node names carry the prefix 'mf'.

The point: 2 datacenters x 2 workers, WAN 20 Mbps with 20 ms one way, LAN 1 Gbps, zero
compute time, 1 MiB gradients (INA: k = 64), time dilation 2, 8 iterations (the first is
warm-up). Every model is serialization-bound here (`run.py predict`): ps 0.95 s, hier-ps
0.50 s, ring 0.67 s, geo-ina 0.65 s, each worker's transfer about ten bandwidth-delay
products, so TCP's per-iteration window dynamics weigh little (docs/model.md says what
happens at a few BDPs).

Margin. The band is [0.9, 1.2]; the test allows MARGIN = 0.1 more on each side for this
shared 2-core machine (iterations of one run vary by about +-10%). It is a fidelity check,
not a timing benchmark: an implementation with slack (push and pull one after the other,
timeouts) lands far outside. A scheme that is still outside here is marked xfail
with the reason measured (KNOWN_GAPS): it still runs, and XPASS in the summary says the
mark can come off.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from testbed.fidelity import BAND
from testbed.lifecycle import RunOptions, run_scenario

pytestmark = pytest.mark.mininet

MARGIN = 0.1
# Measured at this point (8 iterations, one run each, 2026-11-23; docs/model.md "Where the
# emulation stands against the model"): ps 1.19 (passes), hier-ps 1.47, ring 1.34, ina
# 1.25-1.82, geo-ina 1.99-2.44. Non-strict: a known gap runs and shows XFAIL, or XPASS in
# the -ra summary the day it is fixed, without turning the suite red on a lucky run.
KNOWN_GAPS: dict[str, str] = {
    "hier-ps": "1.47 x: the pull's ACKs wait behind the push in the WAN queue (docs/model.md)",
    "ring": "1.34 x: bidirectional TCP over the WAN's drop-tail queues (docs/model.md)",
    "ina": "1.25-1.82 x at s = 2: paced INA on two shared cores (docs/ina.md)",
    "geo-ina": "2.0-2.4 x at s = 2; inside the band at bench schemes' point (docs/ina.md)",
}


def scenario(scheme: str, path: Path) -> str:
    scn = {"name": f"fidelity-{scheme}", "seed": 5, "time_dilation": 2,
           "datacenters": [{"name": "a", "lat": 0, "lon": 0, "racks": 1, "workers_per_rack": 2},
                           {"name": "b", "lat": 0, "lon": 10, "racks": 1, "workers_per_rack": 2}],
           "wan": {"default": {"bandwidth_mbps": 20, "delay_ms": 20}},
           "intra_dc": {"access": {"bandwidth_mbps": 1000, "delay_ms": 0},
                        "uplink": {"bandwidth_mbps": 1000, "delay_ms": 0}},
           "scheme": scheme, "workload": {"kind": "synthetic", "parameters": 262144},
           "compute_time": {"model": "constant", "value_ms": 0}, "iterations": 8}
    if scheme in ("ina", "geo-ina"):
        scn["switch"] = {"program": "p4/aggregation.p4", "defines": {"AGG_K": 64}}
    p = path / f"fidelity-{scheme}.yaml"
    p.write_text(yaml.safe_dump(scn))
    return str(p)


def _param(scheme: str):
    marks = [pytest.mark.xfail(strict=False, reason=KNOWN_GAPS[scheme])] if scheme in KNOWN_GAPS else []
    return pytest.param(scheme, marks=marks)


@pytest.mark.parametrize("scheme", [_param(s) for s in ("ps", "hier-ps", "ring", "ina", "geo-ina")])
def test_measured_time_per_iteration_is_within_the_band_of_the_model(tmp_path, scheme):
    (d,) = run_scenario(RunOptions(scenario(scheme, tmp_path), [], str(tmp_path), prefix="mf",
                                   show_progress=False, timeout_s=240), log=lambda *a, **k: None)
    s = json.loads((d / "summary.json").read_text())
    assert s["complete"], s.get("reason")
    m = s["model"]
    measured = s["metrics"]["iteration_period_s"]
    ratio = m["measured_over_model"]
    print(f"{scheme}: measured {measured:.3f} s per iteration, model {m['model_iteration_time_s']:.3f} s, "
          f"ratio {ratio:.3f} (band {BAND}, margin {MARGIN}); model terms {m['terms']}")
    assert ratio == pytest.approx(measured / m["model_iteration_time_s"], rel=1e-3)
    assert BAND[0] - MARGIN <= ratio <= BAND[1] + MARGIN
