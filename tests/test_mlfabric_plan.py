"""mlfabric's validation and placement: asp only (bsp and ssp refused with the field and
what to set), bad options named by their field path, the replica in another datacenter,
the primary marked as replaced on death so its kill does not end the run."""
from __future__ import annotations

from pathlib import Path

import pytest

import schemes
from testbed.scenario import ScenarioError, load_scenario
from topologies.graph import build_graph

REPO = Path(__file__).resolve().parent.parent
GEO = str(REPO / "scenarios" / "geo-3dc.yaml")
ASP = ["scheme=mlfabric", "training.mode=asp"]


def problems(*overrides: str) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        load_scenario(GEO, list(overrides))
    return [str(p) for p in e.value.problems]


@pytest.mark.parametrize("overrides,expect", [
    (["scheme=mlfabric"], "training.mode: scheme mlfabric runs asp only, not bsp (schemes that run bsp: "),
    (["scheme=mlfabric"], "set training.mode: asp or change the scheme"),
    (["scheme=mlfabric", "training.mode=ssp", "training.staleness=1"],
     "training.mode: scheme mlfabric runs asp only, not ssp"),
    ([*ASP, "scheme_options.tau_max=-1"], "scheme_options.tau_max"),
    ([*ASP, "scheme_options.on_late=ignore"], "scheme_options.on_late"),
    ([*ASP, "scheme_options.d_rep=0"], "scheme_options.d_rep"),
    ([*ASP, "scheme_options.slots=0"], "scheme_options.slots"),
    ([*ASP, "scheme_options.verify=true"], "scheme_options.verify: verify checks bsp's sum"),
    ([*ASP, "scheme_options.shards=2"], "scheme_options.shards: unknown option 'shards' for scheme mlfabric"),
])
def test_bad_settings_name_the_field(overrides, expect):
    found = problems(*overrides)
    assert any(expect in p for p in found), found


def plan_of(*overrides):
    scn = load_scenario(GEO, [*ASP, *overrides])
    g = build_graph(scn)
    s = schemes.get("mlfabric")
    return g, s.plan(g, scn, s.parse_options(scn.scheme_options))


def test_primary_and_replica_in_two_datacenters_every_host_a_worker():
    g, p = plan_of()
    primary, replica = p.servers
    assert (primary.name, replica.name) == ("primary", "replica")
    assert g.nodes[primary.host]["dc_index"] != g.nodes[replica.host]["dc_index"]
    assert primary.replaced_on_death and replica.ends_by_signal and not replica.replaced_on_death
    assert sorted(p.workers) == sorted(n for n, a in g.nodes(data=True) if a["role"] == "host")
    c = p.comm[p.workers[0]]
    assert c["primary"] == [g.nodes[primary.host]["ip"], 7100]
    assert c["replica"] == [g.nodes[replica.host]["ip"], 7101]
    assert f"{c['replica'][0]}:7101" in primary.args and "--d-rep" in primary.args
    assert p.communicator == "schemes.mlfabric.communicator:MlfabricCommunicator"


def test_no_replica_when_replication_is_off_and_its_datacenter_must_differ():
    _, p = plan_of("scheme_options.replicate=false")
    assert [s.name for s in p.servers] == ["primary"] and not p.servers[0].replaced_on_death
    assert all(c["replica"] is None for c in p.comm.values())
    with pytest.raises(ValueError, match="scheme_options.replica_dc: the replica must be in another"):
        plan_of("scheme_options.server_dc=2", "scheme_options.replica_dc=2")


def test_aggregation_places_aggregators_and_hands_the_ps_emulated_bandwidths():
    import json
    g, p = plan_of("scheme_options.aggregation=true", "time_dilation=2")
    aggs = [s for s in p.servers if s.module == "schemes.mlfabric.aggregator"]
    hosts = sorted(n for n, a in g.nodes(data=True) if a["role"] == "host")
    dcs = sorted({g.nodes[h]["dc"] for h in hosts})
    assert sorted(s.name for s in aggs) == sorted([f"agg-{h}" for h in hosts] + [f"gw-{d}" for d in dcs])
    assert all(s.ends_by_signal and s.replaced_on_death for s in aggs)   # a death: groups fall back
    ports = [int(s.args[s.args.index("--port") + 1]) for s in aggs]
    assert sorted(ports) == list(range(7102, 7102 + len(aggs)))
    args = p.servers[0].args
    spec = json.loads(args[args.index("--aggregation") + 1])
    assert float(args[args.index("--agg-timeout") + 1]) == 4.0           # 2 s x dilation 2
    assert spec["ps"] == p.servers[0].host and spec["workers"] == p.workers
    a, b = p.workers[0], p.workers[-1]
    from schemes.mlfabric.placement import path_bandwidth
    assert spec["bandwidth"][a][b] == path_bandwidth(g, a, b) / 2
    c = p.comm[a]
    assert [x[0] for x in c["aggregators"]] == [x["name"] for x in spec["candidates"]]
    assert c["agg_timeout_s"] == 4.0
    gw = [x for x in spec["candidates"] if x["worker"] is None]
    assert len(gw) == len(dcs) and all(x["address"][1] in ports for x in spec["candidates"])


def test_aggregator_kinds_are_chosen_and_off_by_default():
    _, p = plan_of("scheme_options.aggregation=true", "scheme_options.aggregators=[gateways]")
    assert all(s.name.startswith("gw-") for s in p.servers[2:]) and len(p.servers) == 2 + 3
    _, p = plan_of()
    assert len(p.servers) == 2 and "--aggregation" not in p.servers[0].args
    assert "aggregators" not in p.comm[p.workers[0]]
    assert any("scheme_options.aggregators" in x for x in problems(*ASP, "scheme_options.aggregators=[]"))
    assert any("scheme_options.aggregators" in x for x in problems(*ASP, "scheme_options.aggregators=[switch]"))
