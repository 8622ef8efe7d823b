"""Expected failures: which tests of a corpus a target is known not to pass, and why.

The file is YAML:

    target: softswitch
    corpus: p4c 6d61ead0 testdata/p4_16_samples, *-bmv2.stf
    expected:
      header-union-bmv2.p4: "refused: unsupported: header_union (...)"

A run matches the list when the tests that did not pass are exactly the listed ones among the
tests that ran (listed tests that were not run are ignored, so one test can be run alone). A
listed test that fails for another reason than the one written still matches; the difference
is shown so the list can be kept truthful.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import yaml


class ExpectedFileError(ValueError):
    """`FILE: problem; what to do`."""


@dataclass
class Comparison:
    unexpected_failures: list = field(default_factory=list)   # (name, outcome line)
    unexpected_passes: list = field(default_factory=list)     # (name, listed reason)
    changed_reasons: list = field(default_factory=list)       # (name, listed reason, outcome line)

    @property
    def matches(self) -> bool:
        return not self.unexpected_failures and not self.unexpected_passes

    def report(self) -> str:
        lines = []
        for name, line in self.unexpected_failures:
            lines.append(f"unexpected failure: {name}: {line}")
        for name, reason in self.unexpected_passes:
            lines.append(f"unexpected pass: {name} (listed as: {reason}); remove it from the list")
        for name, reason, line in self.changed_reasons:
            lines.append(f"note: {name} is listed as '{reason}' but now gives '{line}'")
        return "\n".join(lines)


def load_expected(path) -> dict[str, str]:
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise ExpectedFileError(f"{path}: cannot read it ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise ExpectedFileError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("expected", {}), dict):
        raise ExpectedFileError(f"{path}: expected: must be a mapping of NAME.p4 to the reason it fails")
    out = {}
    for name, reason in (data.get("expected") or {}).items():
        if not isinstance(reason, str) or not reason.strip():
            raise ExpectedFileError(f"{path}: expected.{name}: give the reason as a non-empty string")
        out[str(name)] = reason.strip()
    return out


def compare(results: dict, expected: dict[str, str]) -> Comparison:
    c = Comparison()
    for name in sorted(results):
        out = results[name]
        listed = expected.get(name)
        if out.status == "pass":
            if listed is not None:
                c.unexpected_passes.append((name, listed))
        elif listed is None:
            c.unexpected_failures.append((name, out.line()))
        elif listed != out.line():
            c.changed_reasons.append((name, listed, out.line()))
    return c


def dump_expected(results: dict, target: str, corpus: str) -> str:
    """The YAML of an expected-failures file listing every test of `results` that did not pass."""
    failing = {name: out.line() for name, out in sorted(results.items()) if out.status != "pass"}
    head = ("# Tests that do not pass on this target, and why (python3 -m softswitch.stf --expected).\n"
            "# Regenerate with --write-expected after a change, and review the difference.\n")
    body = yaml.safe_dump({"target": target, "corpus": corpus, "expected": failing},
                          sort_keys=False, allow_unicode=True, width=1000)
    return head + body
