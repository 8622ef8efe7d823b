"""Shared pytest setup: end-to-end tests marked `mininet` need root and Mininet.

They are skipped, with the reason, where those are missing (never reported as passed).
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
