"""Whole-scenario checks: what needs more than one field (datacenter names in edges and
stragglers, worker counts, the WAN's shape, htb's rate ceiling, scheme options).

Every check returns the problems it finds (pure; none raises), so all of a file's problems
are reported together. No check runs on input that is already invalid: a check that read an
invalid field would report the consequences of that field's problem (an edge naming a
datacenter whose entry failed the schema, a disconnected WAN because an edge names a
misspelled datacenter) as if they were mistakes of their own, and the user would chase
follow-up errors instead of the root cause. So each check names the inputs it reads
(CHECKS; inputs as in testbed/schema_partial.py: `wan.edges`, `datacenters.name`) and runs
only when all of them passed the schema, and inside a check a conclusion that needs other
parts to be valid is drawn only when they are (each place says which).
"""
from __future__ import annotations

import difflib
from typing import Callable

from pydantic import ValidationError

from testbed.problems import Problem
from testbed.schema_partial import is_valid
from testbed.schema_models import (HTB_MAX_MBPS, MAX_DATACENTERS, MAX_WORKERS_TOTAL,
                                   MIN_DATACENTERS, RandomSchedule, Scenario)
from topologies.graph import host_id, wan_edge_pairs

ADDRESSING_MAX_DATACENTERS = 254   # 10.D.x.x: the addressing plan's limit (docs/addressing.md)

Check = Callable[[Scenario, bool], list[Problem]]


def check_scenario(scn: Scenario, emulation_limits: bool = True,
                   valid: set[str] | None = None) -> list[Problem]:
    """Every problem the checks find. valid: the inputs that passed the schema (None: all;
    scn then is a validated Scenario, else the partial one of schema_partial.valid_part).
    emulation_limits=False (run.py predict) skips the limits of this machine's emulation,
    never the others."""
    found: list[Problem] = []
    for inputs, check in CHECKS:
        if valid is None or all(is_valid(name, valid) for name in inputs):
            found += check(scn, emulation_limits)
    return found


# ---------------------------------------------------------------- datacenters, run length
def _datacenter_names(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    found = []
    n = len(scn.datacenters)
    top = MAX_DATACENTERS if emulation_limits else ADDRESSING_MAX_DATACENTERS
    if not MIN_DATACENTERS <= n <= top:
        found.append(Problem("datacenters", f"{n} datacenter{'' if n == 1 else 's'} given; this "
                                            f"testbed supports {MIN_DATACENTERS} to {top}"))
    names = [dc.name for dc in scn.datacenters]
    for i, name in enumerate(names):
        if names.index(name) != i:
            found.append(Problem(f"datacenters.{i}.name", f"duplicate datacenter name {name!r}"))
    return found


def _worker_count(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    total = scn.total_workers
    if emulation_limits and total > MAX_WORKERS_TOTAL:
        per = ", ".join(f"{dc.name}: {dc.racks}x{dc.workers_per_rack}" for dc in scn.datacenters)
        return [Problem("datacenters", f"{total} workers in total ({per}); at most "
                                       f"{MAX_WORKERS_TOTAL} fit on this machine: lower racks "
                                       f"or workers_per_rack")]
    return []


def _run_length(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    if (scn.iterations is None) == (scn.duration_s is None):
        return [Problem("iterations", "set exactly one of iterations or duration_s"
                        + (" (both are set)" if scn.iterations is not None else ""))]
    return []


# ---------------------------------------------------------------- the WAN
def _wan(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    found = []
    names = [dc.name for dc in scn.datacenters]
    if len(names) < MIN_DATACENTERS:   # no WAN to judge: the count is the problem (_datacenter_names)
        return []
    known = ", ".join(names)
    wan = scn.wan
    hub_ok = True
    if wan.hub is not None:
        # a hub on another topology is the mistake; whether it names a datacenter is moot
        if wan.topology != "star":
            found.append(Problem("wan.hub", f"hub only applies to topology 'star' (topology is "
                                            f"{wan.topology!r})"))
        elif wan.hub not in names:
            found.append(Problem("wan.hub", f"unknown datacenter {wan.hub!r} (datacenters: {known})"))
            hub_ok = False
    ends_known = True     # every edge names two datacenters that exist
    usable = []           # edges with two known, different ends: their place in the WAN is judged
    seen = set()
    for k, e in enumerate(wan.edges):
        unknown = [end for end in ("a", "b") if getattr(e, end) not in names]
        for end in unknown:
            found.append(Problem(f"wan.edges.{k}.{end}", f"unknown datacenter {getattr(e, end)!r} "
                                                         f"(datacenters: {known})"))
        if unknown:   # a == b or a repeated pair of misspelled names follow from the typo
            ends_known = False
            continue
        if e.a == e.b:
            found.append(Problem(f"wan.edges.{k}", f"an edge needs two different datacenters "
                                                   f"(got {e.a!r} twice)"))
            continue
        pair = frozenset((e.a, e.b))
        if pair in seen:
            found.append(Problem(f"wan.edges.{k}", f"edge {e.a}-{e.b} is listed twice"))
        seen.add(pair)
        usable.append((k, e))
    # Where the WAN's shape is judged from names, duplicate names make it ambiguous (the
    # duplicate is the problem).
    shape_ok = len(set(names)) == len(names)
    if wan.topology == "edges":
        if not wan.edges:
            found.append(Problem("wan.edges", "topology 'edges' needs a list of edges {a, b}"))
        elif shape_ok and ends_known:
            found += _connected(scn)
    elif shape_ok and hub_ok:
        present = set(wan_edge_pairs(scn))
        for k, e in usable:
            pair = tuple(sorted((scn.dc_index(e.a), scn.dc_index(e.b))))
            if pair not in present:
                found.append(Problem(f"wan.edges.{k}", f"edge {e.a}-{e.b} is not in the "
                                                       f"{wan.topology} topology; use topology: "
                                                       f"edges to list edges explicitly"))
    return found


def _connected(scn: Scenario) -> list[Problem]:
    import networkx as nx
    n = len(scn.datacenters)
    wan = nx.Graph(wan_edge_pairs(scn))
    wan.add_nodes_from(range(1, n + 1))
    reach = nx.node_connected_component(wan, 1)
    if len(reach) == n:
        return []
    cut = [scn.datacenters[i - 1].name for i in range(1, n + 1) if i not in reach]
    return [Problem("wan.edges", f"the WAN is not connected: {', '.join(cut)} cannot reach "
                                 f"{scn.datacenters[0].name}; add edges")]


# ---------------------------------------------------------------- stragglers
def _straggler_datacenters(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    names = [dc.name for dc in scn.datacenters]
    if not names:   # nothing could be named: the count is the problem (_datacenter_names)
        return []
    return [Problem(f"stragglers.persistent.{k}.dc", f"unknown datacenter {s.dc!r} "
                                                     f"(datacenters: {', '.join(names)})")
            for k, s in enumerate(scn.stragglers.persistent)
            if s.dc is not None and s.dc not in names]


def _straggler_workers(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    found = []
    total = scn.total_workers
    hosts = {host_id(d, r, w) for d, dc in enumerate(scn.datacenters, 1)
             for r in range(1, dc.racks + 1) for w in range(1, dc.workers_per_rack + 1)}
    for k, s in enumerate(scn.stragglers.persistent):
        where = f"stragglers.persistent.{k}.worker"
        if isinstance(s.worker, int) and not 0 <= s.worker < total:
            found.append(Problem(where, f"worker index {s.worker} out of range "
                                        f"(workers are 0..{total - 1})"))
        if isinstance(s.worker, str) and s.worker not in hosts:
            found.append(Problem(where, f"unknown worker {s.worker!r} (host ids look like h1r1w1; "
                                        f"see docs/addressing.md)"))
    return found


# ---------------------------------------------------------------- link rates
# Mininet's htb ignores rates above 1000 Mbps (a log line only): they are rejected here,
# part by part, so that a failed part does not hide the others'.
def _rate(path: str, mbps: float | None, s: float) -> list[Problem]:
    if mbps is None or mbps / s <= HTB_MAX_MBPS:
        return []
    return [Problem(path, f"{mbps:g} Mbps / time_dilation {s:g} = {mbps / s:g} Mbps emulated, "
                          f"above the {HTB_MAX_MBPS:g} Mbps Mininet's htb can apply (it would "
                          f"silently ignore it); set time_dilation >= {mbps / HTB_MAX_MBPS:g} to "
                          f"emulate this rate")]


def _schedule_rates(path: str, sched, s: float) -> list[Problem]:
    if isinstance(sched, RandomSchedule):
        return _rate(f"{path}.max_mbps", sched.max_mbps, s)
    return [p for k, point in enumerate(sched or []) for p in _rate(f"{path}.{k}.mbps", point.mbps, s)]


def _limited(check: Check) -> Check:
    """The check only where this machine's emulation limits apply (not for run.py predict)."""
    return lambda scn, emulation_limits: check(scn, emulation_limits) if emulation_limits else []


@_limited
def _access_rate(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    return _rate("intra_dc.access.bandwidth_mbps", scn.intra_dc.access.bandwidth_mbps,
                 scn.time_dilation)


@_limited
def _uplink_rate(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    return _rate("intra_dc.uplink.bandwidth_mbps", scn.intra_dc.uplink.bandwidth_mbps,
                 scn.time_dilation)


@_limited
def _wan_default_rate(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    return _rate("wan.default.bandwidth_mbps", scn.wan.default.bandwidth_mbps, scn.time_dilation)


@_limited
def _wan_schedule_rates(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    return _schedule_rates("wan.bandwidth_schedule", scn.wan.bandwidth_schedule, scn.time_dilation)


@_limited
def _wan_edge_rates(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    s, found = scn.time_dilation, []
    for k, e in enumerate(scn.wan.edges):
        found += _rate(f"wan.edges.{k}.bandwidth_mbps", e.bandwidth_mbps, s)
        found += _schedule_rates(f"wan.edges.{k}.bandwidth_schedule", e.bandwidth_schedule, s)
    return found


def _schedule_directions(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    """A schedule point's from_dc names an end of its edge (so only per-edge schedules)."""
    found = []
    if isinstance(scn.wan.bandwidth_schedule, list):
        found += [Problem(f"wan.bandwidth_schedule.{k}.from_dc",
                          "applies to every WAN link, so it has no single direction: give the "
                          "one-direction change in wan.edges[].bandwidth_schedule of that link")
                  for k, p in enumerate(scn.wan.bandwidth_schedule) if p.from_dc is not None]
    for i, e in enumerate(scn.wan.edges):
        if isinstance(e.bandwidth_schedule, list):
            found += [Problem(f"wan.edges.{i}.bandwidth_schedule.{k}.from_dc",
                              f"{p.from_dc!r} is not an end of the edge {e.a}-{e.b}: name {e.a!r} or "
                              f"{e.b!r}, or leave from_dc out for both directions")
                      for k, p in enumerate(e.bandwidth_schedule)
                      if p.from_dc is not None and p.from_dc not in (e.a, e.b)]
    return found


# ---------------------------------------------------------------- background traffic, failures
def _dc_pair(path: str, a: str, b: str, names: list[str]) -> list[Problem]:
    found = [Problem(f"{path}.{i}", f"unknown datacenter {x!r} (datacenters: {', '.join(names)})")
             for i, x in enumerate((a, b)) if x not in names]
    if not found and a == b:
        found.append(Problem(path, f"needs two different datacenters (got {a!r} twice)"))
    return found


def _background_datacenters(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    names = [dc.name for dc in scn.datacenters]
    if not names:
        return []
    found = []
    for k, f in enumerate(scn.background):
        for end in ("src", "dst"):
            if getattr(f, end) not in names:
                found.append(Problem(f"background.{k}.{end}", f"unknown datacenter "
                                     f"{getattr(f, end)!r} (datacenters: {', '.join(names)})"))
        if f.src == f.dst and f.src in names:
            found.append(Problem(f"background.{k}", f"src and dst are the same datacenter "
                                                    f"({f.src!r}); background traffic crosses the WAN"))
    return found


def _failure_links(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    """link_down names two datacenters joined by a WAN link; the down windows of one link
    do not overlap (a link already down cannot go down again)."""
    names = [dc.name for dc in scn.datacenters]
    if len(names) < MIN_DATACENTERS or len(set(names)) != len(names):
        return []   # the datacenters are the problem (_datacenter_names)
    if all(f.link_down is None for f in scn.failures):
        return []
    # with an edge naming an unknown datacenter the WAN is unknown (_wan reports the edge)
    edges_ok = all(e.a in names and e.b in names for e in scn.wan.edges) and \
        (scn.wan.hub is None or scn.wan.hub in names)
    present = set(wan_edge_pairs(scn)) if edges_ok else None
    windows: dict[frozenset, list[tuple[float, float, int]]] = {}
    found = []
    for k, f in enumerate(scn.failures):
        if f.link_down is None:
            continue
        a, b = f.link_down
        where = f"failures.{k}.link_down"
        bad = _dc_pair(where, a, b, names)
        if bad:
            found += bad
            continue
        if present is not None and tuple(sorted((scn.dc_index(a), scn.dc_index(b)))) not in present:
            found.append(Problem(where, f"no WAN link between {a} and {b} in the {scn.wan.topology} "
                                        f"topology"))
            continue
        end = f.up_at_s if f.up_at_s is not None else float("inf")
        for t0, t1, j in windows.get(frozenset((a, b)), []):
            if f.at_s < t1 and t0 < end:
                found.append(Problem(where, f"link {a}-{b} is already down then (failures.{j}: "
                                            f"from {t0:g} s to {'the end' if t1 == float('inf') else f'{t1:g} s'}); "
                                            f"down windows of one link must not overlap"))
        windows.setdefault(frozenset((a, b)), []).append((f.at_s, end, k))
    return found


def _failure_kills(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    """A kill names a process the scheme runs (its plan on this scenario's topology), once."""
    kills = [(k, f) for k, f in enumerate(scn.failures) if f.kill is not None]
    if not kills:
        return []
    try:   # the plan of a scenario the other checks reject is not judged here: those are its problems
        import schemes
        from testbed.disturbances import process_names
        from topologies.graph import build_graph
        scheme = schemes.get(scn.scheme)
        g = build_graph(scn)
        names = process_names(scheme.plan(g, scn, scheme.parse_options(scn.scheme_options)), g)
    except Exception:
        return []
    from testbed.disturbances import resolve_target
    found, seen = [], {}
    for k, f in kills:
        try:
            target = resolve_target(f.kill, names, f"scheme {scn.scheme}")
        except ValueError as e:
            found.append(Problem(f"failures.{k}.kill", str(e)))
            continue
        if target in seen:
            found.append(Problem(f"failures.{k}.kill", f"{f.kill!r} is already killed by "
                                                       f"failures.{seen[target]}"))
        seen.setdefault(target, k)
    return found


# ---------------------------------------------------------------- scheme options
def _scheme_options(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    """scheme_options against the scheme's own options model (schemes/<name>/options.py):
    every option's problem, one per option."""
    import schemes
    model = schemes.get(scn.scheme).options
    try:
        model.model_validate(scn.scheme_options)
    except ValidationError as e:
        found, paths = [], set()
        for err in e.errors(include_url=False):
            p = _option_problem(err, model, scn.scheme)
            if p.path not in paths:   # a union option fails once per member: its first says it
                paths.add(p.path)
                found.append(p)
        return found
    return []


def _option_problem(err: dict, model, scheme: str) -> Problem:
    loc = [str(p) for p in err["loc"] if not str(p).startswith(("literal[", "function-"))]
    field = loc[0] if loc else ""
    path = ".".join(["scheme_options"] + loc[:1])
    known = ", ".join(model.model_fields)
    if err["type"] == "extra_forbidden":
        close = difflib.get_close_matches(field, list(model.model_fields), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return Problem(path, f"unknown option {field!r} for scheme {scheme}{hint} (options: {known})")
    msg = err["msg"].removeprefix("Value error, ")
    return Problem(path, f"{msg} (got {err.get('input')!r})" if field else f"{msg} (options: {known})")


def _training_mode(scn: Scenario, emulation_limits: bool) -> list[Problem]:
    """training.mode must be one the scheme runs (schemes.base.Scheme.modes), and the scheme's
    options must allow it (Scheme.mode_problems, e.g. ps: one server in ssp/asp)."""
    import schemes
    scheme = schemes.get(scn.scheme)
    mode = scn.training.mode
    if mode not in scheme.modes:
        able = [n for n in schemes.NAMES if mode in schemes.get(n).modes]
        return [Problem("training.mode", f"scheme {scn.scheme} runs {', '.join(scheme.modes)} only, "
                                         f"not {mode} (schemes that run {mode}: "
                                         f"{', '.join(able) or 'none'}); set training.mode: "
                                         f"{scheme.modes[0]} or change the scheme")]
    if scheme.mode_problems is None:
        return []
    try:
        opts = scheme.parse_options(scn.scheme_options)
    except ValidationError:
        return []   # _scheme_options reports it; the mode check needs valid options
    return [Problem(path, problem) for path, problem in scheme.mode_problems(opts, mode)]


# The checks, in the order their problems are reported, and the inputs each reads (see
# the module's docstring).
CHECKS: list[tuple[frozenset[str], Check]] = [
    (frozenset({"datacenters.name"}), _datacenter_names),
    (frozenset({"datacenters.racks", "datacenters.workers_per_rack"}), _worker_count),
    (frozenset({"iterations", "duration_s"}), _run_length),
    (frozenset({"datacenters.name", "wan.topology", "wan.hub", "wan.edges"}), _wan),
    (frozenset({"datacenters.name", "stragglers.persistent"}), _straggler_datacenters),
    (frozenset({"datacenters.racks", "datacenters.workers_per_rack", "stragglers.persistent"}),
     _straggler_workers),
    (frozenset({"time_dilation", "intra_dc.access"}), _access_rate),
    (frozenset({"time_dilation", "intra_dc.uplink"}), _uplink_rate),
    (frozenset({"time_dilation", "wan.default"}), _wan_default_rate),
    (frozenset({"time_dilation", "wan.bandwidth_schedule"}), _wan_schedule_rates),
    (frozenset({"time_dilation", "wan.edges"}), _wan_edge_rates),
    (frozenset({"wan.bandwidth_schedule", "wan.edges"}), _schedule_directions),
    (frozenset({"scheme", "scheme_options"}), _scheme_options),
    (frozenset({"datacenters.name", "background"}), _background_datacenters),
    (frozenset({"datacenters.name", "wan.topology", "wan.hub", "wan.edges", "failures"}),
     _failure_links),
    (frozenset(Scenario.model_fields), _failure_kills),   # the whole scenario: it is planned
    (frozenset({"scheme", "scheme_options", "training"}), _training_mode),
]
