"""The scenario's `training` section: modes, ssp's bound, schemes that cannot run a mode,
and what ps plans for ssp and asp (pure: no network)."""
from __future__ import annotations

from pathlib import Path

import pytest

from testbed.scenario import ScenarioError, load_scenario

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = str(REPO / "scenarios" / "quickstart.yaml")


def problems(*overrides: str) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        load_scenario(QUICKSTART, overrides)
    return [str(p) for p in e.value.problems]


def test_default_is_bsp_and_ssp_takes_its_bound():
    assert load_scenario(QUICKSTART).training.model_dump() == {"mode": "bsp", "staleness": None}
    t = load_scenario(QUICKSTART, ["training={mode: ssp, staleness: 0}"]).training
    assert (t.mode, t.staleness) == ("ssp", 0)
    assert load_scenario(QUICKSTART, ["training.mode=asp"]).training.staleness is None


@pytest.mark.parametrize("overrides,expect", [
    (["training.mode=async"], "training.mode: unknown mode 'async' (known: bsp, ssp, asp)"),
    (["training.mode=ssp"], "training.staleness: ssp needs its bound"),
    (["training.mode=ssp", "training.staleness=-1"], "training.staleness: must be >= 0 (got -1)"),
    (["training.mode=ssp", "training.staleness=true"], "training.staleness: must be an integer"),
    (["training.mode=asp", "training.staleness=2"], "training.staleness: only ssp has a staleness bound"),
    (["training.staleness=1"], "training.staleness: only ssp has a staleness bound (bsp has 0)"),
    (["scheme=ring", "training.mode=asp"],
     "training.mode: scheme ring runs bsp only, not asp (schemes that run asp: ps, mlfabric); set training.mode: bsp"),
    (["scheme=geo-ina", "training.mode=ssp", "training.staleness=1"], "training.mode: scheme geo-ina runs bsp only"),
    (["training.mode=ssp", "training.staleness=1", "scheme_options.shards=2"],
     "scheme_options.shards: ssp runs one server holding the whole model (got 2 shards); set shards: 1"),
    (["training.mode=asp", "scheme_options.push=touched_rows"], "scheme_options.push: asp pushes dense"),
    (["training.mode=asp", "scheme_options.verify=true"], "scheme_options.verify: verify checks bsp's sum"),
])
def test_bad_training_sections_name_the_field(overrides, expect):
    found = problems(*overrides)
    assert any(expect in p for p in found), found


def test_every_problem_at_once_and_none_from_an_invalid_option():
    found = problems("training.mode=ssp", "training.staleness=1", "scheme_options.shards=2",
                     "scheme_options.verify=true")
    assert len(found) == 2 and found[0].startswith("scheme_options.shards") and \
        found[1].startswith("scheme_options.verify")
    # an option the schema refuses is reported once, not again by the mode check
    found = problems("training.mode=asp", "scheme_options.shards=0")
    assert len(found) == 1 and found[0].startswith("scheme_options.shards")


def test_ps_plans_one_async_server_with_the_mode_and_its_bound():
    import schemes
    from topologies.graph import build_graph
    for mode, bound in (("ssp", 2), ("asp", None)):
        over = [f"training.mode={mode}"] + ([f"training.staleness={bound}"] if bound is not None else [])
        scn = load_scenario(QUICKSTART, over + ["scheme_options.base_port=7300"])
        s = schemes.get("ps")
        plan = s.plan(build_graph(scn), scn, s.parse_options(scn.scheme_options))
        (srv,) = plan.servers
        assert srv.module == "schemes.ps.async_server" and plan.communicator.endswith(":AsyncPSCommunicator")
        args = dict(zip(srv.args[::2], srv.args[1::2]))
        assert args["--children"] == "4" and args["--port"] == "7300" and args["--lr"] == "0.1"
        assert args.get("--staleness") == (None if bound is None else str(bound))
        assert [c["child_rank"] for c in plan.comm.values()] == [0, 1, 2, 3]
        assert all(c["mode"] == mode and c["servers"] == [[args["--host"], 7300]] for c in plan.comm.values())
        assert plan.info["training"] == {"mode": mode, "staleness": bound}
    scn = load_scenario(QUICKSTART)
    plan = s.plan(build_graph(scn), scn, s.parse_options(scn.scheme_options))
    assert plan.communicator is None and plan.servers[0].module == "schemes.ps.server"


def test_worker_configs_carry_the_mode_and_the_plans_communicator(tmp_path):
    import schemes
    from testbed.scheme_app import worker_configs
    from topologies.graph import build_graph
    from workers.worker import WorkerConfig
    scn = load_scenario(QUICKSTART, ["training.mode=ssp", "training.staleness=3"])
    s = schemes.get("ps")
    opts = s.parse_options(scn.scheme_options)
    g = build_graph(scn)
    cfgs = worker_configs(g, scn, s, opts, s.plan(g, scn, opts), tmp_path, tmp_path / "go", 5, None)
    for c in cfgs.values():
        cfg = WorkerConfig(**c)
        assert cfg.training == {"mode": "ssp", "staleness": 3}
        assert cfg.communicator == "schemes.ps.async_communicator:AsyncPSCommunicator"
