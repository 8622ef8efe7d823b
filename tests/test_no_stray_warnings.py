"""Plotting prints no warning: matplotlib, pyplot, 3-D axes and a whole report under
`-W error` in a fresh interpreter of this venv. Debian's site-packages beside the venv once
put a second mpl_toolkits on the path and every plot warned "Unable to import Axes3D ...
multiple versions of Matplotlib" (the Makefile now keeps them out); the control case puts
such a foreign mplot3d first on the path and must fail the same check."""
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "results_fixture" / "sweep-bw"

PLOT = """
import matplotlib
import matplotlib.pyplot as plt
import matplotlib.projections          # imports mpl_toolkits.mplot3d, or warns
from analysis.report import make_report
fig = plt.figure()
fig.add_subplot(projection="3d")
plt.close(fig)
print(make_report({folder!r}, ["png"]))
"""


def plot_with_warnings_as_errors(folder: Path, pythonpath: str | None = None):
    env = {"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg", "HOME": str(folder)}
    env["PYTHONPATH"] = f"{pythonpath}:{REPO}" if pythonpath else str(REPO)
    return subprocess.run([sys.executable, "-W", "error", "-c", PLOT.format(folder=str(folder))],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=300)


def test_plotting_a_report_raises_no_warning(tmp_path):
    folder = tmp_path / "sweep"
    shutil.copytree(FIXTURE, folder, ignore=shutil.ignore_patterns("figures", "report.md"))
    p = plot_with_warnings_as_errors(folder)
    assert "multiple versions" not in p.stderr
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == str(folder / "report.md")


def test_a_foreign_mplot3d_on_the_path_is_caught(tmp_path):
    foreign = tmp_path / "dist-packages" / "mpl_toolkits" / "mplot3d"
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text("raise ImportError('built for another matplotlib')\n")
    folder = tmp_path / "sweep"
    shutil.copytree(FIXTURE, folder, ignore=shutil.ignore_patterns("figures", "report.md"))
    p = plot_with_warnings_as_errors(folder, pythonpath=str(tmp_path / "dist-packages"))
    assert p.returncode != 0 and "multiple versions of Matplotlib" in p.stderr
