"""Scenario model: good files load; a bad file gives every one of its problems, each exact
and actionable, and no follow-up errors of them."""
from pathlib import Path

import pytest

import schemes
import yaml

from testbed.scenario import ScenarioError, dump_scenario, load_scenario, parse_scenario
from testbed.validate import validate_files

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "tests" / "data" / "bad_scenarios"
SHIPPED = sorted(p for p in (ROOT / "scenarios").glob("*.yaml")
                 if "axes:" not in p.read_text())    # sweep files: tests/test_sweep.py

# file -> exact error text after "<path>: "
BAD_CASES = {
    "missing_name.yaml": "name: required field is missing",
    "missing_dc_name.yaml": "datacenters.1.name: required field is missing",
    "wrong_type_racks.yaml": "datacenters.0.racks: must be an integer (got 'two')",
    "unit_in_value.yaml": "wan.default.bandwidth_mbps: must be a number (got '10Mbps'); "
                          "the unit (Mbps) is in the field name, write the number alone",
    "unit_missing_in_name.yaml": "wan.default.bandwidth: unknown field 'bandwidth' in wan.default; "
                                 "did you mean 'bandwidth_mbps'? (units are part of field names) "
                                 "(fields: bandwidth_mbps, delay_ms, jitter_ms, loss_pct, queue_bdp)",
    "negative_bandwidth.yaml": "wan.default.bandwidth_mbps: must be > 0 (got -5)",
    "unknown_region.yaml": "datacenters.1.region: unknown region 'mars-1' (known: ibm:us-south, "
                           "ibm:ca-tor, ibm:us-east, ibm:eu-de, ibm:eu-gb, ibm:eu-es, ibm:jp-osa, "
                           "ibm:au-syd, ibm:jp-tok, ibm:br-sao, aws:us-east-1, aws:us-west-2, "
                           "aws:eu-west-1, aws:eu-central-1, aws:ap-northeast-1, aws:ap-southeast-1, "
                           "aws:ap-south-1, aws:sa-east-1, gcp:us-central1, gcp:europe-west4, "
                           "gcp:asia-east1, azure:eastus, azure:westeurope, azure:southeastasia)",
    "unknown_scheme.yaml": "scheme: unknown scheme 'allreduce' (known: " + ", ".join(schemes.NAMES) + ")",
    "too_many_workers.yaml": "datacenters: 35 workers in total (a: 4x5, b: 3x5); at most 32 fit on "
                             "this machine: lower racks or workers_per_rack",
    "one_datacenter.yaml": "datacenters: 1 datacenter given; this testbed supports 2 to 12",
    "too_many_datacenters.yaml": "datacenters: 13 datacenters given; this testbed supports 2 to 12",
    "bad_yaml.yaml": "invalid YAML at line 5, column 1: expected ',' or '}', but got '<scalar>' "
                     "(while parsing a flow mapping at line 4)",
    "over_htb_limit.yaml": "wan.default.bandwidth_mbps: 2500 Mbps / time_dilation 1 = 2500 Mbps "
                           "emulated, above the 1000 Mbps Mininet's htb can apply (it would silently "
                           "ignore it); set time_dilation >= 2.5 to emulate this rate",
    "unknown_edge_dc.yaml": "wan.edges.0.b: unknown datacenter 'c' (datacenters: a, b)",
    "both_iterations_and_duration.yaml": "iterations: set exactly one of iterations or duration_s (both are set)",
    "unknown_compute_model.yaml": "compute_time.model: unknown model 'weibull' "
                                  "(known: constant, normal, shifted_exp, pareto)",
    "region_and_coordinates.yaml": "datacenters.0: give either region or lat/lon, not both",
    "loss_over_100.yaml": "wan.edges.0.loss_pct: must be <= 100 (got 150)",
    "random_schedule_reversed.yaml": "wan.bandwidth_schedule: max_mbps (50) must be >= min_mbps (100)",
    "disconnected_edges.yaml": "wan.edges: the WAN is not connected: c, d cannot reach a; add edges",
    "straggler_unknown_worker.yaml": "stragglers.persistent.0.worker: worker index 5 out of range "
                                     "(workers are 0..1)",
    "not_a_mapping.yaml": "the top level must be a mapping of fields (got list)",
}


def test_every_bad_file_has_a_case():
    assert sorted(p.name for p in BAD.glob("*.yaml")) == sorted(BAD_CASES)


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_scenario_exact_error(name):
    path = BAD / name
    with pytest.raises(ScenarioError) as ei:
        load_scenario(path)
    msg = str(ei.value)
    assert msg == f"{path}: {BAD_CASES[name]}"
    assert "\n" not in msg                              # one problem: one line, no count
    assert ei.value.problems == [BAD_CASES[name]]
    assert ei.value.source == str(path)


GOOD = """
name: t
datacenters:
  - {name: a, region: "aws:us-east-1"}
  - {name: b, region: "aws:eu-west-1", racks: 2, workers_per_rack: 3}
scheme: ps
duration_s: 5
"""

SET_CASES = [
    ("wan.bogus=1", "--set wan.bogus=1: no field 'bogus' in wan (fields: topology, hub, default, "
                    "edges, bandwidth_schedule)"),
    ("bogus=1", "--set bogus=1: no field 'bogus' in the scenario (fields: name, seed, time_dilation, "
                "datacenters, wan, intra_dc, switch, link_emulation, tcp, scheme, scheme_options, workload, "
                "compute_time, stragglers, background, failures, iterations, duration_s, repetitions, "
                "training, output)"),
    ("datacenters.5.racks=2", "--set datacenters.5.racks=2: datacenters has 2 entries (indices 0..1); no index 5"),
    ("datacenters.x.racks=2", "--set datacenters.x.racks=2: datacenters is a list: use an index, e.g. datacenters.0"),
    ("datacenters.0.racks.x=2", "--set datacenters.0.racks.x=2: datacenters.0.racks is a value, it has no field 'x'"),
    ("wan.default.bandwidth_mbps", "--set wan.default.bandwidth_mbps: expected key=value, e.g. "
                                   "wan.default.bandwidth_mbps=50"),
    ("wan.default.bandwidth_mbps=-1", "wan.default.bandwidth_mbps: must be > 0 (got -1)"),
    ("workload.kind=model", "workload.name: required field is missing"),
]


@pytest.mark.parametrize("ov,expected", SET_CASES)
def test_set_override_errors(ov, expected):
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(GOOD, "x.yaml", [ov])
    assert str(ei.value) == f"x.yaml: {expected}"


def test_set_overrides_apply_with_yaml_typed_values():
    scn = parse_scenario(GOOD, "x.yaml", [
        "datacenters.0.racks=2",
        "wan.default.bandwidth_mbps=50",           # field absent in the file: created
        "wan.default.jitter_ms=1.5",
        "switch.defines.K=64",                      # free-form mapping
        "scheme=geo-ina",
        "workload={kind: model, name: mlp}",
        "workload.lr=0.01",                         # resolved through the tagged union
        "compute_time={model: pareto, scale_ms: 10, shape: 2}",
        "compute_time.shape=3",
        "wan.bandwidth_schedule=[{t_s: 0, mbps: 10}, {t_s: 5, mbps: 20}]",
        "name=renamed",
    ])
    assert scn.datacenters[0].racks == 2
    assert scn.wan.default.bandwidth_mbps == 50 and scn.wan.default.jitter_ms == 1.5
    assert scn.switch.defines == {"K": 64}
    assert scn.scheme == "geo-ina" and scn.name == "renamed"
    assert scn.workload.kind == "model" and scn.workload.name == "mlp" and scn.workload.lr == 0.01
    assert scn.compute_time.model == "pareto" and scn.compute_time.shape == 3
    assert [p.mbps for p in scn.wan.bandwidth_schedule] == [10, 20]


def test_overrides_do_not_modify_the_input():
    raw = yaml.safe_load(GOOD)
    from testbed.scenario import apply_overrides
    apply_overrides(raw, ["datacenters.0.racks=3"], "x")
    assert "racks" not in raw["datacenters"][0]


def test_defaults():
    scn = parse_scenario(GOOD)
    assert scn.time_dilation == 1 and scn.seed == 0 and scn.repetitions == 1
    assert scn.wan.topology == "full-mesh" and scn.wan.default.delay_ms is None
    assert scn.switch.backend == "softswitch" and scn.switch.program == "p4/forward.p4"
    assert scn.link_emulation.mode == "auto"
    assert scn.output.folder == "results"
    assert scn.workload.kind == "synthetic" and scn.compute_time.model == "constant"
    assert scn.total_workers == 1 + 6


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_scenarios_load_and_round_trip(path):
    scn = load_scenario(path)
    text = dump_scenario(scn)
    again = parse_scenario(text, "dump")
    assert again == scn
    assert dump_scenario(again) == text


def test_quickstart_shape():
    scn = load_scenario(ROOT / "scenarios" / "quickstart.yaml")
    assert len(scn.datacenters) == 2 and scn.scheme == "ps" and scn.iterations == 5
    assert all(dc.racks == 1 and dc.workers_per_rack == 2 for dc in scn.datacenters)
    assert scn.duration_s is None and scn.workload.kind == "model"


def test_datacenter_and_worker_limits():
    """12 datacenters and 32 workers are the emulation's limits on this machine (measured:
    docs/runtime.md); run.py predict (emulation_limits=False) goes beyond them."""
    from testbed.schema_models import MAX_DATACENTERS, MAX_WORKERS_TOTAL
    assert (MAX_DATACENTERS, MAX_WORKERS_TOTAL) == (12, 32)

    def text(n, per_dc=1):
        dcs = "\n".join(f"  - {{name: d{i}, lat: {5 * i}, lon: {10 * i}, workers_per_rack: {per_dc}}}"
                        for i in range(n))
        return f"name: t\ndatacenters:\n{dcs}\nscheme: ps\niterations: 1\n"
    assert len(parse_scenario(text(12), "x").datacenters) == 12
    assert parse_scenario(text(8, 4), "x").total_workers == 32
    with pytest.raises(ScenarioError, match="13 datacenters given; this testbed supports 2 to 12"):
        parse_scenario(text(13), "x")
    with pytest.raises(ScenarioError, match="36 workers in total"):
        parse_scenario(text(12, 3), "x")
    assert parse_scenario(text(13), "x", emulation_limits=False).total_workers == 13


def test_time_dilation_lifts_the_htb_limit():
    scn = parse_scenario(GOOD, "x", ["wan.default.bandwidth_mbps=2500", "time_dilation=2.5"])
    assert scn.wan.default.bandwidth_mbps == 2500
    with pytest.raises(ScenarioError, match="time_dilation: must be >= 1"):
        parse_scenario(GOOD, "x", ["time_dilation=0.5"])


def test_schedule_rates_checked_against_htb_limit():
    with pytest.raises(ScenarioError, match=r"wan\.bandwidth_schedule\.1\.mbps: 1500 Mbps"):
        parse_scenario(GOOD, "x", ["wan.bandwidth_schedule=[{t_s: 0, mbps: 10}, {t_s: 1, mbps: 1500}]"])
    with pytest.raises(ScenarioError, match=r"wan\.bandwidth_schedule\.max_mbps: 1200 Mbps"):
        parse_scenario(GOOD, "x", ["wan.bandwidth_schedule={min_mbps: 10, max_mbps: 1200, every_s: 1}"])


def test_edge_override_must_be_in_topology():
    text = GOOD.replace("scheme: ps", """  - {name: c, region: "aws:ap-south-1"}
  - {name: d, region: "aws:sa-east-1"}
wan:
  topology: ring
  edges: [{a: a, b: c, bandwidth_mbps: 5}]
scheme: ps""")
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(text, "x")
    assert str(ei.value) == ("x: wan.edges.0: edge a-c is not in the ring topology; "
                             "use topology: edges to list edges explicitly")


def test_star_hub_must_exist():
    with pytest.raises(ScenarioError, match=r"wan\.hub: unknown datacenter 'z' \(datacenters: a, b\)"):
        parse_scenario(GOOD, "x", ["wan.topology=star", "wan.hub=z"])


def test_explicit_coordinates_need_both():
    with pytest.raises(ScenarioError, match=r"datacenters\.0: explicit coordinates need both lat and lon"):
        parse_scenario(GOOD, "x", ["datacenters.0={name: a, lat: 10}"])
    scn = parse_scenario(GOOD, "x", ["datacenters.0={name: a, lat: 10, lon: 20}"])
    assert scn.datacenters[0].region is None and scn.datacenters[0].lon == 20


def test_straggler_needs_one_target():
    with pytest.raises(ScenarioError, match=r"stragglers\.persistent\.0: give exactly one of worker or dc"):
        parse_scenario(GOOD, "x", ["stragglers.persistent=[{factor: 2}]"])
    with pytest.raises(ScenarioError, match=r"unknown worker 'h9r1w1'"):
        parse_scenario(GOOD, "x", ["stragglers.persistent=[{worker: h9r1w1, factor: 2}]"])
    scn = parse_scenario(GOOD, "x", ["stragglers.persistent=[{worker: h2r2w3, factor: 2}, {dc: a, factor: 3}]"])
    assert len(scn.stragglers.persistent) == 2


def test_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read the file"):
        load_scenario(tmp_path / "nope.yaml")


def test_empty_file(tmp_path):
    p = tmp_path / "e.yaml"
    p.write_text("")
    with pytest.raises(ScenarioError, match="the file is empty"):
        load_scenario(p)


def test_validate_files_reports_each_file():
    good = ROOT / "scenarios" / "quickstart.yaml"
    bad = BAD / "negative_bandwidth.yaml"
    out = validate_files([good, bad])
    assert out[0] == (str(good), None)
    assert out[1] == (str(bad), f"{bad}: {BAD_CASES['negative_bandwidth.yaml']}")


@pytest.mark.parametrize("ov,expected", [
    ("datacenters.0.racks=true", "datacenters.0.racks: must be an integer (got True)"),
    ("datacenters.0.racks=2.5", "datacenters.0.racks: must be an integer (got 2.5)"),
    ("wan.default.loss_pct=yes", "wan.default.loss_pct: must be a number (got True)"),
    ("seed=abc", "seed: must be an integer (got 'abc')"),
    ("name=my run", "name: use only letters, digits, '_', '.' and '-' (it names the results folder; "
                    "got 'my run')"),
    ("wan.topology=tree", "wan.topology: unknown topology 'tree' (known: full-mesh, ring, star, edges)"),
    ("stragglers.transient={probability: 0.1, distribution: uniform}",
     "stragglers.transient: distribution 'uniform' needs low and high"),
    ("wan.bandwidth_schedule=5", "wan.bandwidth_schedule: must be a list of {t_s, mbps} or a mapping "
                                 "{min_mbps, max_mbps, every_s} (got 5)"),
    ("workload={kind: model, name: resnet}", "workload.name: unknown name 'resnet' (known: logreg, mlp, cnn)"),
    ("workload.kind=video", "workload.kind: unknown kind 'video' (known: synthetic, model, sparse)"),
])
def test_type_and_choice_errors(ov, expected):
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(GOOD, "x.yaml", [ov])
    assert str(ei.value) == f"x.yaml: {expected}"


def test_validate_cli_exit_status(capsys):
    from testbed.validate import main
    good = str(ROOT / "scenarios" / "quickstart.yaml")
    assert main([good]) == 0
    assert capsys.readouterr().out == f"{good}: ok\n"
    assert main([good, str(BAD / "unknown_scheme.yaml")]) == 1
    assert "scheme: unknown scheme 'allreduce'" in capsys.readouterr().out


@pytest.mark.parametrize("ov,expected", [
    ("datacenters.0.region=7", "datacenters.0.region: must be a string (got 7); quote it in YAML"),
    ("stragglers.persistent=[{worker: 1.5, factor: 2}]",
     "stragglers.persistent.0.worker: must be a worker index (from 0) or a host id like h1r1w2 (got 1.5)"),
])
def test_string_and_worker_type_errors(ov, expected):
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(GOOD, "x.yaml", [ov])
    assert str(ei.value) == f"x.yaml: {expected}"


# ---------------------------------------------------------------- every problem at once
SEVERAL = """
name: t
colour: red
datacenters:
  - {name: a, region: "aws:us-east-1", racks: 0}
  - {name: b, region: "aws:eu-west-1"}
  - {name: c, region: "mars-1"}
wan:
  default: {bandwidth_mbps: -5}
  edges:
    - {a: a, b: zz}
scheme: ps
scheme_options: {shards: 0, bogus: 1}
iterations: 10
duration_s: 5
"""


def test_every_independent_problem_is_reported_with_the_count():
    """Schema problems in several fields and entries, and the whole-scenario checks on the
    parts that did validate (the edge's names, though datacenters and wan have problems)."""
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(SEVERAL, "s.yaml")
    e = ei.value
    assert e.problems == [
        "datacenters.0.racks: must be >= 1 (got 0)",
        "datacenters.2.region: unknown region 'mars-1' (known: " + ", ".join(
            yaml.safe_load((ROOT / "topologies" / "regions.yaml").read_text())["regions"]) + ")",
        "wan.default.bandwidth_mbps: must be > 0 (got -5)",
        "colour: unknown field 'colour' in the scenario (fields: name, seed, time_dilation, "
        "datacenters, wan, intra_dc, switch, link_emulation, tcp, scheme, scheme_options, workload, "
        "compute_time, stragglers, background, failures, iterations, duration_s, repetitions, training, output)",
        "iterations: set exactly one of iterations or duration_s (both are set)",
        "wan.edges.0.b: unknown datacenter 'zz' (datacenters: a, b, c)",
        "scheme_options.shards: Input should be greater than or equal to 1 (got 0)",
        "scheme_options.bogus: unknown option 'bogus' for scheme ps (options: verify, base_port, "
        "timeout_s, server_dc, shards, dedicated_servers, push)",
    ]
    lines = str(e).splitlines()
    assert lines == [f"s.yaml: {p}" for p in e.problems] + ["s.yaml: 8 problems"]
    assert (e.source, e.field, e.problem) == ("s.yaml", "datacenters.0.racks", "must be >= 1 (got 0)")


def test_whole_scenario_checks_report_every_problem_of_a_schema_valid_file():
    text = GOOD.replace("scheme: ps", """  - {name: a, region: "aws:ap-south-1"}
wan:
  topology: ring
  hub: a
stragglers:
  persistent: [{dc: mars, factor: 2}, {worker: 99, factor: 2}, {worker: h9r9w9, factor: 2}]
scheme: ps""").replace("duration_s: 5", "duration_s: 5\niterations: 3")
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(text, "x", ["wan.default.bandwidth_mbps=1500"])
    assert ei.value.problems == [
        "datacenters.2.name: duplicate datacenter name 'a'",
        "iterations: set exactly one of iterations or duration_s (both are set)",
        "wan.hub: hub only applies to topology 'star' (topology is 'ring')",
        "stragglers.persistent.0.dc: unknown datacenter 'mars' (datacenters: a, b, a)",
        "stragglers.persistent.1.worker: worker index 99 out of range (workers are 0..7)",
        "stragglers.persistent.2.worker: unknown worker 'h9r9w9' (host ids look like h1r1w1; "
        "see docs/addressing.md)",
        "wan.default.bandwidth_mbps: 1500 Mbps / time_dilation 1 = 1500 Mbps emulated, above the "
        "1000 Mbps Mininet's htb can apply (it would silently ignore it); set time_dilation >= 1.5 "
        "to emulate this rate",
    ]


def test_every_bad_override_is_reported_and_the_file_is_not_judged_without_them():
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(SEVERAL, "s.yaml", ["wan.bogus=1", "datacenters.9.racks=2", "iterations"])
    assert ei.value.problems == [
        "--set wan.bogus=1: no field 'bogus' in wan (fields: topology, hub, default, edges, "
        "bandwidth_schedule)",
        "--set datacenters.9.racks=2: datacenters has 3 entries (indices 0..2); no index 9",
        "--set iterations: expected key=value, e.g. wan.default.bandwidth_mbps=50",
    ]


EDGES = """
name: t
datacenters:
  - {name: a, region: "aws:us-east-1"}
  - {name: b, region: "aws:eu-west-1"}
  - {name: c, region: "aws:ap-south-1"}
wan: {topology: edges, edges: [{a: a, b: bb}, {a: b, b: c}]}
scheme: ps
iterations: 3
"""


@pytest.mark.parametrize("text, overrides, root_cause", [
    # a misspelled end: the WAN would also look disconnected (a cannot reach b, c)
    (EDGES, [], "wan.edges.0.b: unknown datacenter 'bb' (datacenters: a, b, c)"),
    # a misspelled required field is not reported a second time as missing
    (GOOD.replace("name: t", "nmae: t"), [],
     "nmae: unknown field 'nmae' in the scenario; did you mean 'name'? (fields: name, seed, "
     "time_dilation, datacenters, wan, intra_dc, switch, link_emulation, tcp, scheme, "
     "scheme_options, workload, compute_time, stragglers, background, failures, iterations, "
     "duration_s, repetitions, training, output)"),
    # with racks unknown the worker count is unknown: index 7 is not judged out of range
    (GOOD, ["datacenters.1.racks=two", "stragglers.persistent=[{worker: 7, factor: 2}]"],
     "datacenters.1.racks: must be an integer (got 'two')"),
    # the rates are emulated rates only through a valid time dilation
    (GOOD, ["time_dilation=0.5", "wan.default.bandwidth_mbps=2500"],
     "time_dilation: must be >= 1 (got 0.5)"),
    # an unknown hub leaves the star's edges unknown: the edge override is not judged
    (EDGES.replace("{topology: edges,", "{topology: star, hub: zz,").replace("bb", "c"), [],
     "wan.hub: unknown datacenter 'zz' (datacenters: a, b, c)"),
    # two datacenters named b: which one an edge names is ambiguous, the WAN's shape too
    (EDGES.replace("{name: c,", "{name: b,").replace(", {a: b, b: c}", "").replace("bb", "b"), [],
     "datacenters.2.name: duplicate datacenter name 'b'"),
    # zero datacenters: no WAN to judge
    (EDGES.replace("  - {name: a, region: \"aws:us-east-1\"}\n  - {name: b, region: \"aws:eu-west-1\"}\n"
                   "  - {name: c, region: \"aws:ap-south-1\"}\n", "  []\n"), [],
     "datacenters: 0 datacenters given; this testbed supports 2 to 12"),
])
def test_a_cascade_reports_the_root_cause_only(text, overrides, root_cause):
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(text, "x", overrides)
    assert ei.value.problems == [root_cause]
    assert str(ei.value) == f"x: {root_cause}"


def test_the_same_problem_is_reported_once():
    from testbed.problems import FileProblems, Problem
    e = FileProblems("f", problems=[Problem("a", "bad"), Problem("b", "bad"), Problem("a", "bad")])
    assert e.problems == ["a: bad", "b: bad"] and str(e) == "f: a: bad\nf: b: bad\nf: 2 problems"


def test_the_valid_parts_of_a_scenario_with_schema_problems():
    """What the whole-scenario checks may read when the schema failed (schema_partial)."""
    from pydantic import ValidationError
    from testbed.scenario import Scenario
    from testbed.schema_partial import is_valid, valid_part
    raw = yaml.safe_load(SEVERAL)
    with pytest.raises(ValidationError) as ei:
        Scenario.model_validate(raw)
    part, valid = valid_part(raw, ei.value.errors())
    for ok in ("datacenters.name", "wan.edges", "wan.topology", "scheme", "scheme_options",
               "iterations", "stragglers", "time_dilation", "name"):
        assert is_valid(ok, valid), ok
    for bad in ("datacenters", "datacenters.racks", "datacenters.region", "wan", "wan.default"):
        assert not is_valid(bad, valid), bad
    assert [dc.name for dc in part.datacenters] == ["a", "b", "c"]
    assert [(e.a, e.b) for e in part.wan.edges] == [("a", "zz")] and part.scheme == "ps"
    # an entry that fails as a whole (region and coordinates) leaves none of its fields known
    raw["datacenters"][1]["lat"] = 1.0
    raw["datacenters"][1]["lon"] = 2.0
    with pytest.raises(ValidationError) as ei:
        Scenario.model_validate(raw)
    part, valid = valid_part(raw, ei.value.errors())
    assert not is_valid("datacenters.name", valid) and is_valid("wan.edges", valid)
