"""Import layering: which room may import which, and no import cycles between modules.

The table is the one place the allowed directions are written down. Every import counts,
also those inside functions (a lazy import is still a dependency)."""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# room -> rooms it may import (besides itself)
ALLOWED = {
    "softswitch": set(),                                   # the P4 target stands alone
    "topologies": set(),                                   # the WAN model and Mininet builder
    "workers": set(),                                      # what runs in hosts
    "control": {"topologies", "workers"},                  # routes, trees, switch entries
    "schemes": {"control", "topologies", "workers"},       # one folder per scheme
    "testbed": {"analysis", "control", "schemes", "softswitch", "topologies", "workers"},
    "analysis": {"control", "schemes", "testbed", "topologies", "workers"},
    "bench": {"analysis", "control", "schemes", "softswitch", "testbed", "topologies", "workers"},
}
# The command line (`gdml`, testbed/cli.py) runs the benchmarks as a program (python3 -m
# bench), so no module, the command line included, imports the bench room.


def allowed(module: str) -> set[str]:
    return ALLOWED[module.split(".")[0]]


def modules() -> dict[str, Path]:
    out = {}
    for room in ALLOWED:
        for p in (REPO / room).rglob("*.py"):
            rel = p.relative_to(REPO)
            if "tests" in rel.parts[1:-1] or "__pycache__" in rel.parts:
                continue
            name = ".".join(rel.with_suffix("").parts)
            out[name.removesuffix(".__init__")] = p
    return out


def imports(name: str, path: Path, known) -> set[str]:
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            found |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            base = ".".join(pkg[:len(pkg) - n.level + 1] if n.level else [])
            mod = ".".join(x for x in (base, n.module or "") if x)
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in n.names}
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports(m, p, mods) for m, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in g:
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter[0]; counter[0] += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_room_imports_a_room_above_it():
    bad = [f"{m} -> {d}" for m, deps in graph().items() for d in deps
           if d.split(".")[0] != m.split(".")[0] and d.split(".")[0] not in allowed(m)]
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


def test_nothing_imports_the_command_line_or_the_benchmarks():
    g = graph()
    assert "testbed.cli" in g and "bench.ina" in g
    assert not [m for m, deps in g.items() if "testbed.cli" in deps]
    assert not [f"{m} -> {d}" for m, deps in g.items() for d in deps
                if d.split(".")[0] == "bench" and m.split(".")[0] != "bench"]


def test_gdml_bench_offers_every_benchmark_the_bench_program_runs():
    from bench.__main__ import BENCHES
    from testbed import cli
    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    what = next(a for a in sub.choices["bench"]._actions if a.dest == "what")
    assert tuple(what.choices) == tuple(BENCHES)


def test_no_import_cycles():
    assert not cycles(graph())


def test_the_checker_sees_cycles_and_upward_imports():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    mods = modules()
    assert "workers.worker" in mods and "schemes.ps.plan" in mods
    g = graph()
    assert "workers.events" in g["workers.worker"]            # absolute imports are seen
    assert "schemes.ps.plan" in g["schemes.ps"]               # from-imports of a package
