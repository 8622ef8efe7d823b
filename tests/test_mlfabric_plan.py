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
