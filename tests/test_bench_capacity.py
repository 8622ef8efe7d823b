"""bench capacity's pure parts: the scenario it runs and what counts as sustained."""
from __future__ import annotations

from bench.capacity import gradient_mbps, scenario, summarize, workers_of
from testbed.scenario import parse_scenario

import yaml


def test_the_scenario_is_geo_3dc_at_s1_with_a_fixed_wan_rate_and_a_pinned_datapath():
    scn = scenario("geo-ina", 50, 0.5, 4, "python")
    parsed = parse_scenario(yaml.safe_dump(scn), "<capacity>")     # a valid scenario
    assert parsed.time_dilation == 1 and parsed.switch.datapath == "python"
    assert parsed.switch.program == "p4/aggregation.p4" and workers_of(scn) == 12
    assert scn["wan"]["default"]["bandwidth_mbps"] == 50 and "bandwidth_schedule" not in scn["wan"]
    # one gradient takes ~0.5 s over a 50 Mbps link: 50e6 / 8 * 0.5 / 4 values, a multiple of 64
    assert scn["workload"]["parameters"] % 64 == 0 and abs(scn["workload"]["parameters"] - 781250) < 64
    assert gradient_mbps(scn, 1.0) == 12 * 4 * scn["workload"]["parameters"] * 8 / 1e6


def test_sustained_needs_the_ratio_and_no_switch_limited_warning():
    rows = [{"wan_mbps": 25, "ratio": 1.1, "limited": False, "gradient_mbps": 90.0},
            {"wan_mbps": 50, "ratio": 1.4, "limited": False, "gradient_mbps": 100.0},
            {"wan_mbps": 100, "ratio": 1.3, "limited": True, "gradient_mbps": 105.0},
            {"wan_mbps": 200, "ratio": 5.9, "limited": False, "gradient_mbps": 26.0},
            {"wan_mbps": 400, "ratio": None, "limited": True, "gradient_mbps": None}]
    assert summarize(rows) == {"max_wan_mbps": 50, "gradient_mbps": 100.0, "in_band_wan_mbps": 25}
    assert summarize(rows[3:]) == {"max_wan_mbps": None, "gradient_mbps": None, "in_band_wan_mbps": None}
