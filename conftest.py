"""Shared pytest setup: end-to-end tests marked `mininet` need root and Mininet.

They are skipped, with the reason, where those are missing (never reported as passed).
Tests marked `bmv2` skip where simple_switch/p4c are absent, except when GDML_REQUIRE_BMV2=1
(CI with a reference build on PATH, .ci/run): there a skip is a failure, so a broken BMv2 set-up
cannot pass as green.
"""
import os
import shutil

import pytest


def _mininet_missing_reason():
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth, tc)"
    if shutil.which("mnexec") is None:
        return "Mininet is not installed (apt-get install mininet, or run `make test`)"
    try:
        import mininet  # noqa: F401
    except ImportError:
        return "Mininet's Python module is not importable (use the .venv made by `make setup`)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _mininet_missing_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"mininet test skipped: {reason}")
    for item in items:
        if "mininet" in item.keywords:
            item.add_marker(skip)


REQUIRE_BMV2 = "GDML_REQUIRE_BMV2"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and os.environ.get(REQUIRE_BMV2) == "1" and item.get_closest_marker("bmv2"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = (f"{REQUIRE_BMV2}=1 (a reference BMv2 is expected on PATH) but this bmv2 "
                        f"test skipped: {reason}; check .ci/p4ref-env.sh's output")
