"""Cloud region catalog: coordinates and inter-region RTTs (measured where published).

Data lives in regions.yaml next to this file, with the source of every number. Pairs
without a published measurement get an estimate from great-circle distance; the source
string returned by rtt_ms() says which one a value is.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

CATALOG_PATH = Path(__file__).with_name("regions.yaml")
EARTH_RADIUS_KM = 6371.0


@dataclass(frozen=True)
class Region:
    id: str
    provider: str
    city: str
    lat: float
    lon: float


@dataclass(frozen=True)
class Catalog:
    regions: dict[str, Region]
    measured: dict[frozenset, float]      # unordered pair -> RTT ms (mean of both directions)
    measured_source: str
    fibre_km_per_ms: float
    path_inflation: float


@functools.lru_cache(maxsize=None)
def load_catalog(path: Path = CATALOG_PATH) -> Catalog:
    raw = yaml.safe_load(Path(path).read_text())
    regions = {rid: Region(rid, r["provider"], r["city"], float(r["lat"]), float(r["lon"]))
               for rid, r in raw["regions"].items()}
    m = raw["measured"]
    ids, matrix = m["regions"], m["rtt_ms"]
    if len(matrix) != len(ids) or any(len(row) != len(ids) for row in matrix):
        raise ValueError(f"{path}: measured.rtt_ms must be a {len(ids)}x{len(ids)} matrix")
    measured = {}
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if i < j:
                if a not in regions or b not in regions:
                    raise ValueError(f"{path}: measured region {a!r} or {b!r} not in regions")
                measured[frozenset((a, b))] = (matrix[i][j] + matrix[j][i]) / 2.0
    est = raw["estimate"]
    return Catalog(regions, measured, m["source"], float(est["fibre_km_per_ms"]),
                   float(est["path_inflation"]))


def region_ids() -> list[str]:
    return list(load_catalog().regions)


def get_region(region_id: str) -> Region:
    cat = load_catalog()
    try:
        return cat.regions[region_id]
    except KeyError:
        raise KeyError(f"unknown region {region_id!r} (known: {', '.join(cat.regions)})") from None


def great_circle_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Haversine distance on a spherical Earth."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def estimate_rtt_ms(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """RTT estimate: there and back over fibre at ~2/3 c, times the path-inflation factor."""
    cat = load_catalog()
    d = great_circle_km(lat1, lon1, lat2, lon2)
    return 2.0 * d / cat.fibre_km_per_ms * cat.path_inflation


def estimate_source() -> str:
    cat = load_catalog()
    return (f"estimate: great-circle distance at {cat.fibre_km_per_ms:g} km/ms in fibre "
            f"x path inflation {cat.path_inflation:g}")


def is_measured(a: str, b: str) -> bool:
    return frozenset((a, b)) in load_catalog().measured


def rtt_ms(a: str, b: str) -> tuple[float, str]:
    """Round-trip time between two catalog regions and where the number comes from.

    Returns (value_ms, source); source starts with 'measured:' or 'estimate:'.
    """
    cat = load_catalog()
    ra, rb = get_region(a), get_region(b)
    if a == b:
        return 0.0, "same region"
    key = frozenset((a, b))
    if key in cat.measured:
        return cat.measured[key], f"measured: {cat.measured_source}"
    return estimate_rtt_ms(ra.lat, ra.lon, rb.lat, rb.lon), estimate_source()
