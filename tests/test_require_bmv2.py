"""conftest.py's GDML_REQUIRE_BMV2: in CI with a reference BMv2 on PATH (.ci/run sets it), a
bmv2 test that skips fails instead, so a broken BMv2 set-up cannot pass as green; elsewhere
such a test skips with its reason."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TESTS = '''
import pytest

@pytest.mark.bmv2
def test_skips_in_body():
    pytest.skip("simple_switch not on PATH")

@pytest.mark.bmv2
@pytest.mark.skipif(True, reason="p4c not on PATH")
def test_skips_by_mark():
    pass

def test_unmarked_skip():
    pytest.skip("not a bmv2 test")

@pytest.mark.bmv2
def test_runs():
    assert True
'''


def _pytest(tmp_path, require):
    shutil.copy(REPO / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n  bmv2: b\n  mininet: m\n")
    (tmp_path / "test_x.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "GDML_REQUIRE_BMV2"}
    if require:
        env["GDML_REQUIRE_BMV2"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_bmv2_skips_fail_when_bmv2_is_required(tmp_path):
    p = _pytest(tmp_path, require=True)
    assert p.returncode == 1, p.stdout
    assert "GDML_REQUIRE_BMV2=1" in p.stdout and "simple_switch not on PATH" in p.stdout
    assert "p4c not on PATH" in p.stdout
    last = p.stdout.strip().splitlines()[-1]
    # the body's skip fails in the call phase, the mark's in set-up (pytest calls that an error)
    assert last.startswith("1 failed, 1 passed, 1 skipped, 1 error"), last


def test_bmv2_skips_skip_otherwise(tmp_path):
    p = _pytest(tmp_path, require=False)
    assert p.returncode == 0, p.stdout
    last = p.stdout.strip().splitlines()[-1]
    assert "1 passed" in last and "3 skipped" in last and "failed" not in last, last
