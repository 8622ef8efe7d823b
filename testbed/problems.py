"""Problems found in an input file (scenario, sweep) and how a file's problems read.

Validation collects every problem of a file before it reports, so that fixing a file takes
one run, not one run per mistake. A problem is one line, field path first
(`wan.default.bandwidth_mbps: must be > 0 (got -5)`); the report names the file on every
line, like a compiler, and ends with the count when there is more than one:

    scenarios/x.yaml: datacenters.2.racks: must be >= 1 (got 0)
    scenarios/x.yaml: wan.default.bandwidth_mbps: must be > 0 (got -5)
    scenarios/x.yaml: 2 problems
"""
from __future__ import annotations

from typing import NamedTuple, Sequence, Union

import yaml


class Problem(NamedTuple):
    path: str    # field path (`datacenters.0.racks`), "" for the file as a whole
    text: str    # what is wrong and what to do

    def __str__(self) -> str:
        return f"{self.path}: {self.text}" if self.path else self.text


def unique(problems: Sequence) -> list:
    """The problems in order, each once (the same mistake found twice is one problem)."""
    out: list = []
    for p in problems:
        if p not in out:
            out.append(p)
    return out


def report(source: str, lines: Sequence[str]) -> str:
    """Every problem of a file, one line each with the file first, then the count."""
    out = [f"{source}: {line}" for line in lines]
    if len(lines) > 1:
        out.append(f"{source}: {len(lines)} problems")
    return "\n".join(out)


class FileProblems(ValueError):
    """Every problem found in one file. `problems` holds one `field.path: problem` line per
    problem; str() is report(); `field` and `problem` are the first one's (for callers that
    show one). Raise it with one problem as (source, field, problem), with several as
    (source, problems=[...])."""

    def __init__(self, source: str, field: str = "", problem: str = "", *,
                 problems: Sequence[Union[Problem, str]] = ()):
        found = unique(list(problems)) or [Problem(field, problem)]
        first = found[0]
        self.source = source
        self.field, self.problem = first if isinstance(first, Problem) else ("", first)
        self.problems = [str(p) for p in found]
        super().__init__(report(source, self.problems))


def error_lines(e: BaseException) -> str:
    """How a command shows an error (no traceback: the message says what to do): a file's
    problems one `error:` line each; any other error its first line after `error:`, then
    the rest as it is (e.g. a switch's log tail: it says why)."""
    msg = str(e).strip().splitlines()
    if getattr(e, "problems", None):
        return "\n".join(f"error: {line}" for line in msg)
    return "\n".join([f"error: {msg[0] if msg else type(e).__name__}"] + msg[1:])


def yaml_problem(e: yaml.YAMLError) -> str:
    """A YAML syntax error as one problem with its line and column (1-based), and where the
    construct it breaks began when that is another line."""
    mark = getattr(e, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    ctx_mark = getattr(e, "context_mark", None)
    if ctx_mark is not None and getattr(e, "context", None) and mark is not None \
            and ctx_mark.line != mark.line:
        problem += f" ({e.context} at line {ctx_mark.line + 1})"
    return f"invalid YAML{where}: {problem}"
