"""Run a sweep: every point in order, one results folder per point, one table of all points.

    results/<sweep>[-quick]/
      sweep.yaml              the sweep file as run (a copy)
      points/<point-id>/point.json     params, seed, status (ok | failed | interrupted),
                                       error, run folder, metrics; written when the point ends
      points/<point-id>/<scenario>/<run-id>/   the run's results (testbed/results.py)
      table.csv, table.sqlite  one row per point: parameters + summary metrics
      sweep.log               what the runs printed

The function that runs one point is injectable (`runner`): the default is the run
lifecycle; tests pass a fake that writes fixture results. Where points run is the
executor's business (testbed/executors.py: `local`, here one after another; `ray`, on a
cluster): this module alone decides which points run, records each one as it finishes,
resumes and writes the table. A point that raises is recorded with its error and the sweep
goes on; Ctrl-C records the points in flight as interrupted, writes the table and stops;
`resume=True` skips the points whose point.json says ok; `repetitions` runs only those
repetitions' points (same ids and seeds as in the whole sweep: one repetition on each of
two days, then `gdml merge` makes one table of them).
"""
from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import shutil
import signal
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from testbed.executor_choice import make_executor
from testbed.executors import Executor, LocalExecutor, Outcome, PointJob, Runner
from testbed.executors import one_line as _one_line
from testbed.sweep_model import Point, Sweep, SweepError, check_points_valid, load_sweep

BASE_COLUMNS = ("point_id", "index", "repetition", "seed", "status", "error")
TAIL_COLUMNS = ("run_dir",)


class SweepInterrupted(Exception):
    """Ctrl-C (or SIGTERM) during a sweep; finished points and the table are kept."""


def lifecycle_runner(scenario: Path, overrides: list[str], out_root: Path, log, prefix: str = "") -> Path:
    """One run through the testbed's lifecycle (needs root); prefix: node-name prefix."""
    from testbed.lifecycle import RunInterrupted, RunOptions, run_once
    from testbed.scenario import load_scenario
    scn = load_scenario(scenario, overrides)
    opts = RunOptions(str(scenario), list(overrides), out=str(out_root), show_progress=False,
                      prefix=prefix)
    try:
        return run_once(opts, scn, 0, log=log)
    except RunInterrupted as e:
        raise KeyboardInterrupt(str(e)) from None


# ---------------------------------------------------------------- the table

def _cell(v):
    """A table cell: lists/mappings as JSON, nan as empty, floats to 6 significant digits."""
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True)
    if isinstance(v, float):
        return None if v != v else float(f"{v:.6g}")   # 6 significant digits: readable CSV
    return v


def table_rows(sw: Sweep, records: list[dict]) -> tuple[list[str], list[dict]]:
    """(columns, rows) from point records in run order; one row per point."""
    metric_cols: list[str] = []
    for r in records:   # the measured row, then the model beside it (record "model")
        for k in list(r.get("metrics") or {}) + list(r.get("model") or {}):
            if k not in metric_cols and k not in sw.axes and k not in BASE_COLUMNS + TAIL_COLUMNS:
                metric_cols.append(k)
    cols = list(BASE_COLUMNS) + list(sw.axes) + metric_cols + list(TAIL_COLUMNS)
    rows = []
    for r in sorted(records, key=lambda r: r["index"]):
        row = {c: None for c in cols}
        row.update({c: r.get(c) for c in BASE_COLUMNS + TAIL_COLUMNS})
        row.update({k: v for k, v in (r.get("metrics") or {}).items() if k in metric_cols})
        row.update({k: v for k, v in (r.get("model") or {}).items() if k in metric_cols})
        row.update(r["params"])
        rows.append({c: _cell(row[c]) for c in cols})
    return cols, rows


def write_csv(path: Path, cols: list[str], rows: list[dict]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    os.replace(tmp, path)


def _sql_type(values) -> str:
    vs = [v for v in values if v is not None]
    if vs and all(isinstance(v, (bool, int)) for v in vs):
        return "INTEGER"
    if vs and all(isinstance(v, (bool, int, float)) for v in vs):
        return "REAL"
    return "TEXT"


def write_sqlite(path: Path, cols: list[str], rows: list[dict]) -> None:
    """Table `points` (column names as in the CSV, quoted: axis names contain dots)."""
    tmp = path.with_suffix(".sqlite.tmp")
    if tmp.exists():
        tmp.unlink()
    con = sqlite3.connect(tmp)
    try:
        q = lambda c: '"' + c.replace('"', '""') + '"'
        decl = ", ".join(f"{q(c)} {_sql_type(r[c] for r in rows)}" for c in cols)
        con.execute(f"CREATE TABLE points ({decl})")
        con.executemany(f"INSERT INTO points VALUES ({', '.join('?' * len(cols))})",
                        [tuple(r[c] for c in cols) for r in rows])
        con.commit()
    finally:
        con.close()
    os.replace(tmp, path)


def read_records(folder: Path) -> dict[str, dict]:
    out = {}
    for f in sorted((folder / "points").glob("*/point.json")):
        try:
            rec = json.loads(f.read_text())
        except ValueError:
            continue   # torn write of an interrupted point: it runs again
        out[rec["point_id"]] = rec
    return out


def write_table(sw: Sweep, folder: Path) -> tuple[Path, Path]:
    cols, rows = table_rows(sw, list(read_records(folder).values()))
    write_csv(folder / "table.csv", cols, rows)
    write_sqlite(folder / "table.sqlite", cols, rows)
    return folder / "table.csv", folder / "table.sqlite"


# ---------------------------------------------------------------- one point

def _record(p: Point, status: str, error: str | None, run_dir: Path | None, folder: Path,
            elapsed_s: float, metrics: dict | None) -> dict:
    return {"point_id": p.point_id, "index": p.index, "params": p.params, "repetition": p.repetition,
            "seed": p.seed, "key": p.key(), "status": status, "error": error,
            "run_dir": str(run_dir.relative_to(folder)) if run_dir and run_dir.is_relative_to(folder)
            else (str(run_dir) if run_dir else None),
            "elapsed_s": round(elapsed_s, 3),
            "finished_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(), "metrics": metrics or {}}


def _write_record(folder: Path, rec: dict) -> None:
    d = folder / "points" / rec["point_id"]
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / "point.json.tmp"
    tmp.write_text(json.dumps(rec, indent=2, default=str) + "\n")   # key order = table order
    os.replace(tmp, d / "point.json")


def point_job(sw: Sweep, p: Point, folder: Path) -> PointJob:
    return PointJob(p, sw.base, sw.fixed + p.overrides(), folder / "points" / p.point_id)


def record_outcome(sw: Sweep, folder: Path, o: Outcome) -> dict:
    """The point's record from what its executor reported, written to point.json: a failure
    is recorded, not raised; so are results that do not parse or a run that ended
    incomplete. Every executor's points go through here, so their records are alike."""
    p = o.job.point
    if o.interrupted or o.error is not None or o.run_dir is None:
        status = "interrupted" if o.interrupted else "failed"
        rec = _record(p, status, o.error or status, None, folder, o.elapsed_s, None)
    else:
        rec = _record_run(sw, p, Path(o.run_dir), folder, o.elapsed_s)
    if o.node is not None:
        rec["node"] = o.node
    _write_record(folder, rec)
    return rec


def _record_run(sw: Sweep, p: Point, run_dir: Path, folder: Path, elapsed_s: float) -> dict:
    from analysis.rundata import RunData
    try:
        run = RunData.load(run_dir)
        metrics = run.metrics(sw.target_accuracy)
        # the model's time and the ratio, beside the measured row (model output)
        from testbed.fidelity import model_columns
        model = model_columns(run.summary, metrics, run_dir / "scenario.yaml")
        status = "ok" if run.summary.get("complete") else "failed"
        error = None if status == "ok" else f"run incomplete: {run.summary.get('reason', 'no summary.json')}"
    except Exception as e:   # results that do not parse are the point's failure, not the sweep's
        metrics, model, status, error = None, None, "failed", f"results unreadable: {_one_line(e)}"
    rec = _record(p, status, error, run_dir, folder, elapsed_s, metrics)
    rec["model"] = model or {}
    return rec


# ---------------------------------------------------------------- the sweep

def sweep_folder(sw: Sweep, out: str | os.PathLike | None = None) -> Path:
    return Path(out or sw.output) / sw.folder_name()


def plan(sw: Sweep) -> list[Point]:
    from testbed.scenario import load_scenario
    return sw.points(load_scenario(sw.base, sw.fixed).seed)


def run_sweep(sw: Sweep, out: str | os.PathLike | None = None, *, resume: bool = False,
              runner: Runner = lifecycle_runner, progress: bool = True, validate: bool = True,
              executor: Executor | None = None, repetitions: list[int] | None = None) -> Path:
    """All points of a sweep (of the given repetitions only, when given); returns the sweep
    folder. The executor (default: local, one
    point after another here) runs the points; each is recorded and the table rewritten as
    it finishes, in the order they finish. Raises SweepInterrupted on Ctrl-C (after
    recording the points in flight as interrupted and writing the table), SweepError
    before anything runs when the folder holds an earlier sweep and resume is off, or when
    the sweep file changed under a resume; ExecutorError when the executor cannot start."""
    points = plan(sw)
    if repetitions is not None:
        wrong = sorted(set(repetitions) - set(range(sw.repetitions)))
        if wrong:
            raise SweepError(sw.source, "repetitions", f"the sweep has repetitions 0-{sw.repetitions - 1}, "
                             f"not {', '.join(map(str, wrong))}: give numbers in that range")
        chosen = set(repetitions)
        points = [p for p in points if p.repetition in chosen]
    if validate:
        check_points_valid(sw, points)
    folder = sweep_folder(sw, out)
    done = read_records(folder) if folder.exists() else {}
    if done and not resume:
        raise SweepError(sw.source, "", f"{folder} already holds {len(done)} point(s) of an earlier "
                         f"run: add --resume to continue it, or move that folder away")
    by_id = {p.point_id: p for p in points}
    for pid, rec in done.items():
        if pid in by_id and rec.get("key") != by_id[pid].key():
            raise SweepError(sw.source, "", f"the sweep changed since {folder} was started (point "
                             f"{pid} was {rec.get('params')}, now {by_id[pid].params}); run it "
                             f"into a new folder (--out) instead of resuming")
    todo = [p for p in points if done.get(p.point_id, {}).get("status") != "ok"]
    executor = executor if executor and todo else LocalExecutor()   # nothing to run: no cluster
    with executor:   # a remote executor connects here: a cluster that cannot run points writes nothing
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sw.source, folder / "sweep.yaml")
        with open(folder / "sweep.log", "a") as logf:
            def log(msg: str) -> None:
                logf.write(f"{_dt.datetime.now(_dt.timezone.utc).strftime('%H:%M:%S')} {msg}\n")
                logf.flush()

            log(f"sweep {sw.folder_name()}: {len(points)} points, {len(points) - len(todo)} already "
                f"done, executor {executor.name}")
            _run_points(sw, folder, todo, executor, runner, log,
                        SweepProgress(len(points), len(points) - len(todo), enabled=progress))
    return folder


def _run_points(sw: Sweep, folder: Path, todo: list[Point], executor: Executor, runner: Runner,
                log, bar: "SweepProgress") -> None:
    def started(p: Point) -> None:
        bar.start_point(p)
        log(f"point {p.point_id} {p.params} seed {p.seed}: start")

    interrupted: list[str] = []
    outcomes = executor.run([point_job(sw, p, folder) for p in todo], runner, log, started)
    ctrl_c = False    # Ctrl-C came while a finished point was recorded: hand it to the executor
    try:
        with bar:
            while True:
                try:
                    o = outcomes.throw(KeyboardInterrupt()) if ctrl_c else next(outcomes)
                except StopIteration:
                    break
                except KeyboardInterrupt:   # the executor stopped at once: nothing more to record
                    interrupted.append("")
                    break
                ctrl_c = False
                try:
                    with _ctrl_c_deferred():
                        rec = record_outcome(sw, folder, o)
                        log(f"point {rec['point_id']}: {rec['status']}" + (f" on {o.node}" if o.node else "")
                            + (f" ({rec['error']})" if rec["error"] else ""))
                        bar.end_point(rec)
                        write_table(sw, folder)
                except KeyboardInterrupt:
                    ctrl_c = True
                if o.interrupted:
                    interrupted.append(rec["point_id"])
    except KeyboardInterrupt:   # anywhere else: close() cancels what is in flight
        interrupted.append("")
    finally:
        outcomes.close()
        write_table(sw, folder)
    if interrupted or ctrl_c:
        log("interrupted")
        raise SweepInterrupted(", ".join(sorted(i for i in interrupted if i)))


@contextmanager
def _ctrl_c_deferred():
    """Ctrl-C while a finished point is recorded takes effect right after the record is
    written (a record is never half-written, a finished run never dropped): the handler
    in place then gets the signal (by default, KeyboardInterrupt)."""
    old = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or old in (signal.SIG_IGN, None):
        yield
        return
    got = []
    signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if got:
        if callable(old):
            old(signal.SIGINT, None)
        else:
            raise KeyboardInterrupt


def predict_sweep(sw: Sweep, out: str | os.PathLike | None = None, log=print) -> Path:
    """Model mode (`gdml sweep SWEEP --model`): every point's prediction, no emulation,
    no root. One row per point (repetitions coincide: the model is deterministic apart
    from seeded compute draws) in <sweep>-model/model_table.csv; every column is model
    output and named model_*, so it cannot be read as a measurement."""
    from testbed.fidelity import predict_scenario
    from testbed.scenario import load_scenario
    points = [p for p in plan(sw) if p.repetition == 0]
    folder = Path(out or sw.output) / f"{sw.folder_name()}-model"
    folder.mkdir(parents=True, exist_ok=True)
    axes = list(points[0].params) if points else []
    rows = []
    for i, p in enumerate(points, 1):
        row = {"point_id": p.point_id, **p.params, "kind": "model"}
        try:
            scn = load_scenario(sw.base, sw.fixed + p.overrides(), emulation_limits=False)
            pred = predict_scenario(scn)
            term, secs = pred.largest_term()
            row.update(model_iteration_time_s=pred.iteration_s, model_comm_time_s=pred.comm_s,
                       model_compute_time_s=pred.compute_s,
                       model_wan_bytes_per_iteration=pred.wan_bytes_per_iteration,
                       model_largest_term=term, model_largest_term_s=secs, error=None)
        except Exception as e:   # a point the scheme's plan refuses (e.g. a fan-in above 32)
            row["error"] = _one_line(e)
        rows.append(row)
        log(f"model {i}/{len(points)} {p.params}: " + (f"{row['model_iteration_time_s']:.4f} s/iteration"
                                                        if row["error"] is None else row["error"]))
    cols = ["point_id", *axes, "kind", "model_iteration_time_s", "model_comm_time_s",
            "model_compute_time_s", "model_wan_bytes_per_iteration", "model_largest_term",
            "model_largest_term_s", "error"]
    write_csv(folder / "model_table.csv", cols, rows)
    return folder


class SweepProgress:
    """Overall bar (rich): points done / total, failures, elapsed, ETA from the mean time of
    the points run in this session (skipped points cost nothing)."""

    def __init__(self, total: int, skipped: int, enabled: bool = True):
        self.total, self.done, self.enabled = total, skipped, enabled
        self.ran, self.failed, self.t0 = 0, 0, time.monotonic()
        self.progress = None

    def eta_s(self) -> float | None:
        if self.ran == 0:
            return None
        return (time.monotonic() - self.t0) / self.ran * (self.total - self.done)

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                                     TextColumn("{task.fields[failed]}"),
                                     console=Console(stderr=True), refresh_per_second=2)
            self.progress.__enter__()
            self.task = self.progress.add_task("sweep", total=self.total, completed=self.done,
                                               eta="?", failed="")
        return self

    def start_point(self, p: Point) -> None:
        if self.progress:
            desc = " ".join(f"{k.rsplit('.', 1)[-1]}={_short(v)}" for k, v in p.params.items())
            self.progress.update(self.task, description=f"{p.point_id} {desc}"[:60])

    def end_point(self, rec: dict) -> None:
        """Counts the point and prints its line (k/N, point id, status, elapsed, machine)."""
        self.done += 1
        self.ran += 1
        self.failed += rec["status"] != "ok"
        if self.progress:
            from testbed.progress import fmt_s
            self.progress.console.print(point_line(self.done, self.total, rec), highlight=False)
            self.progress.update(self.task, completed=self.done, eta=fmt_s(self.eta_s()),
                                 failed=f"{self.failed} failed" if self.failed else "")

    def __exit__(self, *exc):
        if self.progress:
            self.progress.__exit__(*exc)
        return False


def point_line(k: int, total: int, rec: dict) -> str:
    """One finished point: `3/8 p0002-r0 ok 0:41 on host`, plus the error if any."""
    from testbed.progress import fmt_s
    text = f"{k}/{total} {rec['point_id']} {rec['status']} {fmt_s(rec.get('elapsed_s'))}"
    if rec.get("node"):
        text += f" on {rec['node']}"
    return text + (f": {rec['error']}" if rec.get("error") else "")


def _short(v) -> str:
    if isinstance(v, list):
        return f"[{len(v)}]"
    return str(v)


# ---------------------------------------------------------------- CLI

def main(path: str, *, resume: bool = False, quick: bool = False, out: str | None = None,
         runner: Runner | None = None, prefix: str = "", executor: str = "local",
         ray_address: str | None = None, repetitions: list[int] | None = None) -> int:
    """`gdml sweep`: executor `local` (this machine, one point after another) or `ray`
    (a Ray cluster, one point per machine at a time; ray_address: an existing cluster,
    default RAY_ADDRESS, else one started on this machine). The real runner needs root
    where points run."""
    import functools
    ex = make_executor(executor, ray_address=ray_address, require_root=runner is None)
    runner = runner or functools.partial(lifecycle_runner, prefix=prefix)
    sw = load_sweep(path, quick=quick)
    try:
        folder = run_sweep(sw, out, resume=resume, runner=runner, executor=ex, repetitions=repetitions)
    except SweepInterrupted as e:
        f = sweep_folder(sw, out)
        again = (" --quick" if quick else "") + (f" --executor {executor}" if executor != "local" else "") \
            + (f" --ray-address {ray_address}" if ray_address else "") \
            + (f" --repetitions {','.join(map(str, repetitions))}" if repetitions is not None else "")
        print(f"sweep interrupted{f' at point {e}' if str(e) else ''}; table so far: {f / 'table.csv'}; "
              f"continue with: gdml sweep {path}{again} --resume")
        return 130
    recs = read_records(folder)
    failed = [r for r in recs.values() if r["status"] != "ok"]
    print(f"sweep {sw.folder_name()}: {len(recs) - len(failed)} of {len(recs)} points ok; "
          f"table: {folder / 'table.csv'} and {folder / 'table.sqlite'}")
    for r in failed:
        print(f"  {r['point_id']} {r['params']}: {r['status']}: {r['error']}")
    print(f"figures: gdml plot {folder}")
    return 0 if not failed else 1
