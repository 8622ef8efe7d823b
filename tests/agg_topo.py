"""Small topologies for the aggregation tests, built by the real scenario -> graph path."""
from testbed.scenario import parse_scenario
from topologies.graph import build_graph


def scenario_text(dcs, racks=2, workers=2, delays=None, scheme="geo-ina"):
    """dcs: list of (name, lat, lon); delays: {(i, j): one-way ms} WAN overrides (1-based)."""
    lines = ["name: aggtest", "seed: 1", "datacenters:"]
    for name, lat, lon in dcs:
        lines.append(f"  - {{name: {name}, lat: {lat}, lon: {lon}, racks: {racks}, "
                     f"workers_per_rack: {workers}}}")
    lines += ["wan:", "  topology: full-mesh", "  default: {bandwidth_mbps: 100, delay_ms: 20}"]
    if delays:
        lines.append("  edges:")
        for (i, j), d in delays.items():
            lines.append(f"    - {{a: {dcs[i - 1][0]}, b: {dcs[j - 1][0]}, delay_ms: {d}}}")
    lines += ["intra_dc:", "  access: {bandwidth_mbps: 100, delay_ms: 0.05}",
              "  uplink: {bandwidth_mbps: 100, delay_ms: 0.1}", f"scheme: {scheme}", "iterations: 1"]
    return "\n".join(lines) + "\n"


DCS3 = [("east", 40.0, -75.0), ("west", 37.0, -122.0), ("euro", 50.0, 8.0)]


def graph(n_dcs=2, racks=2, workers=2, delays=None, prefix=""):
    scn = parse_scenario(scenario_text(DCS3[:n_dcs], racks, workers, delays), "<aggtest>")
    return build_graph(scn, prefix=prefix)
