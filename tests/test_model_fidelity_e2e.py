"""Every scheme held to its model, end to end in Mininet (issue 10): one small
bandwidth-bound point, measured time per iteration (the pace, iteration_period_s) over the
model's (schemes/<name>/model.py), as summary.json's `model.measured_over_model` reports it.

Needs root and Mininet (skipped otherwise); node names carry the prefix 'mf'.

The point: 2 datacenters x 2 workers, WAN 20 Mbps with 20 ms one way, LAN 1 Gbps, zero
compute time, 1 MiB gradients (INA: k = 64; the seed schemes' own defaults), time dilation 2,
4 iterations (the first is warm-up; mlfabric 8: ITERATIONS_OF), every registered scheme
(mlfabric in asp, its only mode). Every model is bandwidth-bound here (`run.py predict`, seconds per iteration at 4
iterations): ps and mxnet-ps 1.15, hier-ps 0.62, ring 0.90, alltoall 2.21, ina 1.07, geo-ina
0.55, l3dml 0.65, netstorm 1.06, libra 1.26, inart 0.65, mlfabric 2.45 (2.64 at its 8); each worker's transfer is about ten
bandwidth-delay products, so TCP's per-iteration window dynamics weigh little (docs/model.md
says what happens at a few BDPs). Measured alone (2026-11-28, one run each, in that order):
with 6 iterations 0.98, 0.95, 0.98, 1.02, 1.22, 1.01, 1.00, 1.13, 1.03, 1.06, 0.98, 1.12 x
the model, and in CI 0.96, 0.95, 0.95, 0.79 (ring's fast regime, KNOWN_GAPS), 1.27, 1.02,
1.00, 1.14, 1.03, 1.04, 0.98, 1.19; with 4 iterations 0.95, 0.92, 0.93, 1.01, 1.12, 1.02,
1.00, 1.00, 1.03, 1.01, 0.98, 1.10; with the hosts' send-time noise in the segment-level
simulation (ps, mxnet-ps, hier-ps, ring, alltoall: alltoall's model 1.81 -> 2.21 s), 4
iterations, 0.93, 0.97, 0.93, 0.95, 1.11, 1.03, 1.00, 1.00, 1.03, 1.01, 0.98, 1.24.

The loss point: the same network with 1 % loss per WAN direction, reno (clock-free under
dilation), 256 KiB gradients, 6 iterations, for the schemes whose model simulates TCP
under loss (ring, ps, hier-ps: schemes/model_chain.py).

Margin. The band is [0.9, 1.2]; the test allows MARGIN = 0.1 more on each side for this
shared 2-core machine (iterations of one run vary by about +-10%). It is a fidelity check,
not a timing benchmark: an implementation with slack (push and pull one after the other,
timeouts) lands far outside. Schemes measured outside here are known gaps (KNOWN_GAPS):
they must complete and stay under a ceiling, and are then reported as an xfail with the
measured ratio and reason (pytest -ra lists them).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import schemes
from testbed.fidelity import BAND
from testbed.lifecycle import RunOptions, run_scenario

pytestmark = pytest.mark.mininet

MARGIN = 0.1
ITERATIONS = 4
# mlfabric's asp pace is the span between its first and last iteration ends over the
# iterations between: one transfer's queue losses move an end by about a second, so over
# 3 intervals four runs gave 0.79-1.24 x (2026-11-28: 1.93, 2.37, 2.80, 2.95 s, model 2.45 s;
# the workload itself took 26.4-28.1 s in each); 8 iterations spread that over 7: three runs
# 2.92, 2.81, 2.97 s against the model's 2.64 s at 8 iterations (1.07-1.13 x)
ITERATIONS_OF = {"mlfabric": 8}
# Measured at this point with nothing else on the machine (8 iterations; 2026-11-23;
# docs/model.md "Where the emulation stands against the model"): ina 1.20 and inside band +
# margin twice more, geo-ina 1.82; with other work on the cores ina 1.82, geo-ina 2.44. With
# every switch on the compiled data path (2026-11-24, other work on the cores): ina 1.02,
# geo-ina 1.03 (geo-ina's gap was the Python switches' CPU per frame). The TCP schemes were
# 1.12-1.47 x their closed forms here (the reverse queue: ACKs wait behind the other
# direction's data); with their streams simulated through the links' queues
# (schemes/model_packets.py; 2026-11-25, alone, two runs each) ps 0.96 and 0.95, hier-ps 0.88
# and 0.90, ring 0.88 and 0.95, and they are off the list; with the kernel's cubic, HyStart
# and RTO code in that simulation (models 1.12 / 0.61 / 0.90 s) two runs gave 0.96 / 0.88 / 0.90
# and 0.96 / 0.91 / 0.94; with the kernel's record of a cwnd-limited window and its ACK stamp
# (2026-11-28; models 1.18 / 0.59 / 0.90 s) the same runs are 0.92 / 0.91 / 0.90 and
# 0.91 / 0.93 / 0.94.
#
# Known gaps: scheme -> (lowest, highest ratio seen here, why). Such a scheme must complete,
# stay at or above the physical floor (its model's slowest link serializing the iteration's
# bytes: no run can beat it) and under a ceiling of 1.5 x the highest ratio seen (a regression
# fails); inside band + margin it passes, between that and the floor or ceiling it is an
# xfail that prints the ratio and the reason (pytest -ra lists it). An entry comes off when
# its scheme passes here repeatedly.
KNOWN_GAPS: dict[str, tuple[float, float, str]] = {
    "ina": (1.02, 1.82, "paced INA at s = 2, sensitive to load on the two cores (docs/model.md)"),
    # two regimes, each steady over a whole run: about 0.90 s per iteration (1.02, 0.88-0.95 x)
    # or 0.71 s (0.79 x, near the closed form's 0.67 s; 2026-11-28, in CI). The simulated
    # windows lose at the queue every iteration; in the fast regime the kernel's did not
    "ring": (0.79, 1.02, "two regimes of the ring's windows, one near the closed form "
                         "(docs/model.md, ring)"),
    # 28-29 Nov 2026, lossless: 1.13 and 1.00 alone, 1.14 in CI; 29 Nov 1.31 in CI, then
    # 1.22 and 1.00 alone, the model 0.649 s (serialization 0.609 + propagation 0.04)
    "l3dml": (1.00, 1.31, "run-to-run spread at this point, not examined (docs/model.md, "
                          "ten-BDP table)"),
}


def serialization_floor_s(model: dict) -> float:
    """The model's largest serialization limit ('serialization at <link>'): the time the
    slowest link takes to carry the iteration's bytes, which no run can beat."""
    return max((v for k, v in model["limits"].items() if k.startswith("serialization at")), default=0.0)


def scenario(scheme: str, path: Path, loss_pct: float = 0.0) -> str:
    scn = {"name": f"fidelity-{scheme}", "seed": 5, "time_dilation": 2,
           "datacenters": [{"name": "a", "lat": 0, "lon": 0, "racks": 1, "workers_per_rack": 2},
                           {"name": "b", "lat": 0, "lon": 10, "racks": 1, "workers_per_rack": 2}],
           "wan": {"default": {"bandwidth_mbps": 20, "delay_ms": 20}},
           "intra_dc": {"access": {"bandwidth_mbps": 1000, "delay_ms": 0},
                        "uplink": {"bandwidth_mbps": 1000, "delay_ms": 0}},
           "scheme": scheme, "workload": {"kind": "synthetic", "parameters": 262144},
           "compute_time": {"model": "constant", "value_ms": 0},
           "iterations": ITERATIONS_OF.get(scheme, ITERATIONS)}
    modes = schemes.get(scheme).modes
    if "bsp" not in modes:      # mlfabric runs asp only
        scn["training"] = {"mode": modes[0]}
    if scheme in ("ina", "geo-ina"):
        scn["switch"] = {"program": "p4/aggregation.p4", "defines": {"AGG_K": 64}}
    if loss_pct:
        # reno: its response to loss does not depend on the clock, so s = 2 is a real
        # cluster's behaviour (docs/model.md); 256 KiB so that an iteration takes ~1 s
        scn["wan"]["default"]["loss_pct"] = loss_pct
        scn["tcp"] = {"congestion_control": "reno"}
        scn["workload"]["parameters"] = 65536
        scn["iterations"] = 6
    p = path / f"fidelity-{scheme}.yaml"
    p.write_text(yaml.safe_dump(scn))
    return str(p)


@pytest.mark.parametrize("scheme", schemes.NAMES)
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
    inside = BAND[0] - MARGIN <= ratio <= BAND[1] + MARGIN
    if scheme in KNOWN_GAPS and not inside:
        low, high, why = KNOWN_GAPS[scheme]
        floor = serialization_floor_s(m)
        assert floor > 0 and measured >= 0.95 * floor, f"{scheme}: {measured:.3f} s, faster than its link allows"
        assert ratio <= 1.5 * high, f"{scheme}: {ratio:.2f} x, beyond its known gap"
        pytest.xfail(f"known gap, {ratio:.2f} x the model (measured before: {low}-{high} x): {why}")
    assert inside


@pytest.mark.parametrize("scheme", ["ring", "ps", "hier-ps"])
def test_under_random_loss_the_simulated_model_holds(tmp_path, scheme):
    # the point with 1 % loss per WAN direction, reno, 256 KiB gradients: the model
    # simulates the scheme's TCP streams (schemes/model_chain.py): ring 1.06 s, ps 0.95 s,
    # hier-ps 0.85 s per iteration; measured (2026-11-25, two runs each) 1.09 and 1.11 x,
    # 1.12 and 0.96 x, 0.99 and 0.89 x (INA and geo-INA, not tested here: 1.05, 0.97 x)
    (d,) = run_scenario(RunOptions(scenario(scheme, tmp_path, loss_pct=1.0), [], str(tmp_path),
                                   prefix="mf", show_progress=False, timeout_s=240),
                        log=lambda *a, **k: None)
    s = json.loads((d / "summary.json").read_text())
    assert s["complete"], s.get("reason")
    m = s["model"]
    ratio = m["measured_over_model"]
    print(f"{scheme} at 1 % loss: measured {s['metrics']['iteration_period_s']:.3f} s, model "
          f"{m['model_iteration_time_s']:.3f} s, ratio {ratio:.3f}; model terms {m['terms']}")
    assert any(k.startswith(("ring under loss", "streams under loss")) for k in m["terms"])
    le = s["link_emulation"]          # the loss happened: about 1 % of the WAN frames
    assert 0.005 < le["lost"] / le["submitted"] < 0.02, le
    assert BAND[0] - MARGIN <= ratio <= BAND[1] + MARGIN
