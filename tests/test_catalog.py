"""Region catalog: measured pairs come from the published table, others are estimates."""
import math
import statistics

import pytest
import yaml

from topologies import catalog


def test_at_least_ten_regions_with_measured_rtts():
    cat = catalog.load_catalog()
    assert len(cat.regions) >= 10
    measured_regions = {r for pair in cat.measured for r in pair}
    assert len(measured_regions) >= 10
    # every pair among the measured regions is measured
    n = len(measured_regions)
    assert len(cat.measured) == n * (n - 1) // 2


def test_measured_value_is_mean_of_both_directions_of_the_table():
    raw = yaml.safe_load(catalog.CATALOG_PATH.read_text())["measured"]
    ids, m = raw["regions"], raw["rtt_ms"]
    i, j = ids.index("ibm:us-south"), ids.index("ibm:eu-es")
    v, src = catalog.rtt_ms("ibm:us-south", "ibm:eu-es")
    assert v == (m[i][j] + m[j][i]) / 2 == 120.5
    assert src.startswith("measured: IBM Cloud VPC") and "25 Aug 2024" in src
    assert catalog.rtt_ms("ibm:eu-es", "ibm:us-south") == (v, src)   # symmetric
    assert catalog.is_measured("ibm:jp-tok", "ibm:jp-osa")
    assert catalog.rtt_ms("ibm:jp-tok", "ibm:jp-osa")[0] == 9


def test_estimated_pairs_say_so_and_follow_the_formula():
    v, src = catalog.rtt_ms("aws:us-east-1", "aws:eu-west-1")
    assert src.startswith("estimate:") and not catalog.is_measured("aws:us-east-1", "aws:eu-west-1")
    a, b = catalog.get_region("aws:us-east-1"), catalog.get_region("aws:eu-west-1")
    d = catalog.great_circle_km(a.lat, a.lon, b.lat, b.lon)
    assert v == pytest.approx(2 * d / 200.0 * 1.55)
    # sanity: published figures for this pair are ~65-80 ms
    assert 55 < v < 90


def test_great_circle_known_distances():
    # a quarter of a meridian: pi/2 * R
    assert catalog.great_circle_km(0, 0, 90, 0) == pytest.approx(math.pi / 2 * 6371.0)
    assert catalog.great_circle_km(10, 20, 10, 20) == 0
    # London - New York is about 5570 km
    assert catalog.great_circle_km(51.51, -0.13, 40.71, -74.01) == pytest.approx(5570, rel=0.01)


def test_path_inflation_matches_the_measured_table():
    """The stated inflation factor is the median measured/great-circle ratio of long pairs."""
    cat = catalog.load_catalog()
    ratios = []
    for pair, rtt in cat.measured.items():
        a, b = (cat.regions[r] for r in pair)
        d = catalog.great_circle_km(a.lat, a.lon, b.lat, b.lon)
        if d > 2000:
            ratios.append(rtt / (2 * d / cat.fibre_km_per_ms))
    assert statistics.median(ratios) == pytest.approx(cat.path_inflation, abs=0.03)


def test_unknown_region_lists_known_ones():
    with pytest.raises(KeyError, match="unknown region 'mars-1' .known: ibm:us-south"):
        catalog.rtt_ms("mars-1", "ibm:eu-de")


def test_same_region_is_zero():
    assert catalog.rtt_ms("aws:us-east-1", "aws:us-east-1")[0] == 0


def test_every_provider_is_represented():
    providers = {r.provider for r in catalog.load_catalog().regions.values()}
    assert {"aws", "gcp", "azure", "ibm"} <= providers
    for rid, r in catalog.load_catalog().regions.items():
        assert rid.startswith(r.provider + ":")
        assert -90 <= r.lat <= 90 and -180 <= r.lon <= 180
