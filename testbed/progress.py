"""Live progress of a run: per-worker iterations and bytes, elapsed time, ETA (rich)."""
from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.table import Table


def eta_s(done: int, total: int | None, elapsed_s: float,
          duration_s: float | None = None) -> float | None:
    """Seconds left: by iterations when known (slowest worker), else by duration."""
    if total:
        if done <= 0:
            return None
        return max(0.0, elapsed_s * (total - done) / done)
    if duration_s:
        return max(0.0, duration_s - elapsed_s)
    return None


def fmt_s(s: float | None) -> str:
    if s is None:
        return "?"
    s = int(round(s))
    return f"{s // 60}:{s % 60:02d}"


def render(progress, elapsed_s: float, duration_s: float | None, title: str) -> Table:
    slowest = min((p.iterations for p in progress), default=0)
    total = progress[0].total if progress else None
    eta = eta_s(slowest, total, elapsed_s, duration_s)
    heading = f"{title}  elapsed {fmt_s(elapsed_s)}  ETA {fmt_s(eta)}"
    t = Table(title=heading, expand=False, min_width=len(heading) + 2)
    for col in ("worker", "iterations", "MB", "state"):
        t.add_column(col, justify="right" if col in ("iterations", "MB") else "left")
    for p in progress:
        its = f"{p.iterations}/{p.total}" if p.total else str(p.iterations)
        state = "error: " + p.error[:40] if p.error else ("done" if p.finished else "running")
        t.add_row(p.worker, its, f"{p.bytes / 1e6:.2f}", state)
    return t


class ProgressView:
    """Context manager; ``update(progress)`` redraws at most 4 times a second."""

    def __init__(self, title: str, duration_s: float | None = None, console: Console | None = None):
        self.title = title
        self.duration_s = duration_s
        self.console = console or Console(stderr=True)
        self.t0 = time.monotonic()
        self.live = None

    def __enter__(self):
        self.live = Live(console=self.console, refresh_per_second=4, transient=False)
        self.live.__enter__()
        return self

    def update(self, progress) -> None:
        self.live.update(render(progress, time.monotonic() - self.t0, self.duration_s, self.title))

    def __exit__(self, *exc):
        out = self.live.__exit__(*exc)
        if not self.console.is_terminal:   # rich ends a non-terminal render without a newline
            self.console.file.write("\n")
            self.console.file.flush()
        return out
