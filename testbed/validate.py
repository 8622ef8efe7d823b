"""`python3 run.py validate FILE...`: check scenario files without starting anything."""
from __future__ import annotations

from typing import Iterable

from testbed.scenario import ScenarioError, load_scenario
from topologies.graph import build_graph


def validate_file(path, overrides: Iterable[str] = ()) -> str | None:
    """None if the scenario is valid (it loads and its topology builds), else every problem
    of the file, one line each, then their count. The topology is built only from a scenario
    that loads (the build reads every field). A sweep file (testbed/sweep_model.py) is valid
    when it and every point's scenario are."""
    from testbed.sweep_model import SweepError, is_sweep_file, validate_sweep
    if is_sweep_file(path):
        try:
            validate_sweep(path)
        except SweepError as e:
            return str(e)
        return None
    try:
        build_graph(load_scenario(path, overrides))
    except ScenarioError as e:
        return str(e)
    except ValueError as e:   # topology-level problems (e.g. interface names)
        return f"{path}: {e}"
    return None


def validate_files(paths: Iterable, overrides: Iterable[str] = ()) -> list[tuple[str, str | None]]:
    overrides = list(overrides)
    return [(str(p), validate_file(p, overrides)) for p in paths]


def main(paths: list[str]) -> int:
    """Print `FILE: ok` or the file's problems, per file; exit status 0 only if all are valid."""
    results = validate_files(paths)
    for path, err in results:
        print(f"{path}: ok" if err is None else err)
    return 0 if all(err is None for _, err in results) else 1


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
