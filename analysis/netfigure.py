"""The figure of an emulated network: `gdml show SCENARIO` and every run's report.

    describe(graph, scenario, plan)   what to draw and where, pure (analysis/netdescribe.py)
    render(drawing)                   a matplotlib Figure of it (analysis/netrender.py)
    main(scenario, overrides, out, formats)   network-<name>.pdf|png for a scenario file
    describe_run(run_dir)             the same from a run's results folder (its scenario.yaml;
                                      runs do not record the graph, so it is rebuilt), or why not
"""
from __future__ import annotations

from pathlib import Path

from analysis.netdescribe import NetDrawing, describe, rate_text
from analysis.netrender import render, save_drawing

__all__ = ["NetDrawing", "describe", "rate_text", "render", "save_drawing", "plan_of", "main",
           "describe_run", "FORMATS"]

FORMATS = ("pdf", "png", "svg")


def plan_of(graph, scenario):
    """(the scheme's Plan on this graph, None) or (None, why it has none)."""
    import schemes
    try:
        scheme = schemes.get(scenario.scheme)
        return scheme.plan(graph, scenario, scheme.parse_options(scenario.scheme_options)), None
    except Exception as e:   # a plan that refuses the scenario says why in its first line
        return None, (str(e).strip().splitlines() or [type(e).__name__])[0]


def parse_formats(formats: str) -> tuple[str, ...]:
    out = tuple(f.strip().lower() for f in formats.split(",") if f.strip())
    bad = [f for f in out if f not in FORMATS]
    if bad or not out:
        raise ValueError(f"--format {formats}: use pdf, png or svg, comma-separated")
    return out


def main(scenario: str, overrides: list[str], out: str | None, formats: str) -> int:
    """Write <out or .>/network-<scenario name>.<format> for each format; print the paths."""
    from testbed.scenario import load_scenario
    from testbed.sweep_model import is_sweep_file, load_sweep
    from topologies.graph import build_graph
    fmts = parse_formats(formats)
    if is_sweep_file(scenario):   # a sweep: its base with its fixed overrides and first point
        sw = load_sweep(scenario)
        first = sw.points()[0]
        print(f"{scenario} is a sweep: drawing its first point {first.params}")
        scenario, overrides = sw.base, [*sw.fixed, *first.overrides(), *overrides]
    scn = load_scenario(scenario, overrides, emulation_limits=False)
    graph = build_graph(scn)
    plan, err = plan_of(graph, scn)
    if err:
        print(f"warning: scheme {scn.scheme} has no placement on this scenario: {err}")
    print(f"drawing {scn.name}: {len(scn.datacenters)} datacenters, {scn.scheme} ...")
    d = describe(graph, scn, plan, err)
    for p in save_drawing(d, Path(out or ".") / f"network-{scn.name}", fmts):
        print(p)
    return 0


def describe_run(run_dir) -> tuple[NetDrawing | None, str]:
    """(the network figure of a run, '') or (None, why there is none). Runs record their
    resolved scenario (scenario.yaml) and node prefix (manifest.json), not the graph: the
    graph and the scheme's plan are rebuilt from them with today's code, and a placement
    that differs from the one the run recorded (summary.json "app") is said."""
    import json

    from testbed.scenario import ScenarioError, parse_scenario
    from topologies.graph import build_graph
    p = Path(run_dir)
    f = p / "scenario.yaml"
    if not f.is_file():
        return None, f"{f}: missing (the run did not record its scenario)"
    try:
        scn = parse_scenario(f.read_text(), str(f), emulation_limits=False)
    except ScenarioError as e:
        return None, f"{e} (this run's scenario copy does not load with today's scenario schema)"
    try:
        prefix = json.loads((p / "manifest.json").read_text()).get("node_prefix") or ""
    except (OSError, ValueError):
        prefix = ""
    graph = build_graph(scn, prefix=prefix)
    plan, err = plan_of(graph, scn)
    d = describe(graph, scn, plan, err)
    differs = _recorded_differences(p, plan)
    notes = d.notes + ("Rebuilt from the run's scenario.yaml with today's code.",)
    if differs:
        notes += (f"The run recorded another placement ({differs}); the figure shows today's plan.",)
    return _with_notes(d, notes), ""


def _with_notes(d: NetDrawing, notes) -> NetDrawing:
    from dataclasses import replace
    return replace(d, notes=tuple(notes))


def _recorded_differences(run_dir: Path, plan) -> str:
    """What the run's summary.json says the plan placed differently (servers' hosts, root)."""
    import json
    try:
        app = json.loads((run_dir / "summary.json").read_text()).get("app") or {}
    except (OSError, ValueError):
        return ""
    if plan is None:
        return ""
    diffs = []
    now = {s.name: s.host for s in plan.servers}
    for name, rec in (app.get("servers") or {}).items():
        host = rec.get("host") if isinstance(rec, dict) else None
        if host is not None and now.get(name) != host:
            diffs.append(f"server {name} on {host}, now {now.get(name, 'none')}")
    if app.get("root") is not None and plan.info.get("root") not in (None, app["root"]):
        diffs.append(f"root {app['root']}, now {plan.info['root']}")
    return "; ".join(diffs)
