"""bench schemes' pure parts: the scenario it runs (loss included) and its argument checks."""
from __future__ import annotations

import pytest
import yaml

from bench.schemes import main, scenario
from testbed.scenario import parse_scenario


@pytest.mark.parametrize("scheme", ["ps", "geo-ina"])
def test_the_scenario_is_three_datacenters_with_the_loss_asked_for(scheme):
    scn = parse_scenario(yaml.safe_dump(scenario(scheme, 50, 262144, 6, 10, 1.0)), "<bench>")
    assert [d.name for d in scn.datacenters] == ["wdc", "fra", "tok"]
    assert scn.wan.default.loss_pct == 1.0 and scn.wan.default.bandwidth_mbps == 50
    assert scn.time_dilation == 10 and scn.iterations == 6
    assert (scn.switch.program == "p4/aggregation.p4") == (scheme == "geo-ina")
    lossless = parse_scenario(yaml.safe_dump(scenario(scheme, 50, 262144, 6, 10)), "<bench>")
    assert lossless.wan.default.loss_pct == 0


def test_every_registered_scheme_gets_a_valid_scenario_in_a_mode_it_runs():
    import schemes
    for name in schemes.NAMES:
        scn = parse_scenario(yaml.safe_dump(scenario(name, 50, 262144, 6, 10)), "<bench>")
        assert scn.scheme == name and scn.training.mode in schemes.get(name).modes


@pytest.mark.parametrize("argv, says", [(["--loss", "100"], "--loss 100"), (["--loss", "-1"], "--loss -1"),
                                        (["--iterations", "1"], "--iterations"),
                                        (["--schemes", "ring"], "must include ps")])
def test_bad_arguments_are_refused_before_any_run(argv, says):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert says in str(e.value)
