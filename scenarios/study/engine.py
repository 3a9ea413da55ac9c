"""Running a study's cells in parallel on Ray, locally or on a cluster.

``workers`` study-worker actors (one CPU each) take cells one at a time. A
worker runs each cell's parties as objects in its own process (new objects for
every cell, so no state leaks between cells; the wire, transcript and ledger are
those of any run), or, with ``party_hosts="actors"``, in party host actors it
keeps across cells; and it receives each data set's parsed table from the
object store, where the driver put it once for the whole study. A cell whose
worker dies is run again on a fresh worker, up to ``Study.max_attempts`` times;
a cell that fails records its error in its row; the study goes on either way.
A worker runs its cell in a folder of its own node and returns the folder's
files with the row; the driver writes them under ``cells/`` (a worker may run
on another machine, where the driver's paths do not exist). The driver rewrites
``results.csv`` after every finished row, so an interrupted study resumes where
it stopped; rows of cells the study no longer has (its base, fixed or grid
values, its seed or its repeats changed) are moved to ``results-stale.csv``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import ray
from tqdm import tqdm

from parley.parties.ray.cluster import ensure_ray
from parley.parties.ray.hosts import start_hosts
from parley.parties.run_secrets import RunSecrets
from parley.protocols.errors import ConfigError, InternalError, ParleyError
from parley.scenarios.datasets import Table, dataset_of, load_table
from parley.scenarios.out_folder import write_study_marker
from parley.scenarios.spec import Scenario
from parley.scenarios.study.plan import ROW_FIELDS, Cell, Study, load_results, save_results

__all__ = ["StudyRun", "run_study", "StudyWorker", "draw_run_report"]

WORKER_DIED = "worker died while running the cell ({error}); gave up after {attempts} attempts"
BAD_WORKERS = "--workers must be at least 1, got {workers}"
BAD_PARTY_HOSTS = "--party-hosts must be one of {allowed}, got {value!r}"
#: Where a cell's parties run: inside its study worker's process, or each in a party host actor of its own.
PARTY_HOSTS = ("worker", "actors")
#: Key of a worker's row that carries the cell's run folder, file by file, back to the driver.
FILES_KEY = "_files"
#: Key of a worker's row that carries the worker's clock readings for :attr:`StudyRun.timeline`.
TIMELINE_KEY = "_timeline"
#: When this module was imported (in a study worker: part of the worker's start-up).
_IMPORTED_AT = time.time()


def _process_started_at() -> float | None:
    """The wall-clock time this process started (Linux ``/proc``), or None where it cannot be read."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


class StudyWorker:
    """Runs cells: their parties in this process (``party_hosts="worker"``) or in party host actors.

    With ``"actors"`` the worker keeps its party hosts between cells unless ``reuse_hosts`` is False.
    """

    def __init__(self, party_hosts: str = "worker", reuse_hosts: bool = True) -> None:
        from parley.scenarios.runner import PARTY_SLOTS

        self._clock: dict[str, Any] = {"worker": f"{os.getpid()}@{os.uname().nodename}",
                                       "process_started": _process_started_at(), "imported": _IMPORTED_AT,
                                       "init_started": time.time()}
        self.in_process = party_hosts == "worker"
        # Boot every party host now, in parallel, rather than one by one inside the first cell.
        self.hosts: dict[str, Any] | None = (start_hosts(list(PARTY_SLOTS)) if reuse_hosts and not self.in_process
                                             else None)
        self._clock["ready"] = time.time()

    def run_cell(self, cell: Cell, table: Table | None, keep_run: bool, secrets: RunSecrets,
                 reports: bool = True) -> dict[str, Any]:
        """Run one cell in a folder of this node's own; the row, with the folder's files if ``keep_run``.

        The worker may be on another machine than the driver: it writes nothing at the driver's
        paths, it returns the run folder's files (``FILES_KEY``) and the driver writes them.
        ``reports``: a kept run folder has its ``report.md`` and ``report.html`` (False: ``result.json``
        and the transcript only; :func:`draw_run_report` draws them later).
        """
        from parley.scenarios.runner import run

        started = time.perf_counter()
        cell_started, cpu_started = time.time(), time.process_time()
        row: dict[str, Any] = {"node": ray.get_runtime_context().get_node_id()[:12], "status": "ok", "failure": ""}
        folder = Path(tempfile.mkdtemp(prefix=f"parley-cell-{cell.cell}-r{cell.repeat}-"))
        try:
            try:
                result = run(Scenario.from_dict(cell.scenario), out=folder, table=table, hosts=self.hosts,
                             fresh=True, in_process=self.in_process, reports=keep_run and reports,
                             secrets=secrets)
                row.update(result.metrics)
            except ParleyError as exc:
                row.update(status="error", failure=f"{type(exc).__name__}: {exc}")
            except Exception as exc:  # a bug in one cell must not stop the study; the row says so
                row.update(status="error", failure=f"bug: {type(exc).__name__}: {exc}")
            if keep_run:
                row[FILES_KEY] = {str(path.relative_to(folder)): path.read_bytes()
                                  for path in sorted(folder.rglob("*")) if path.is_file()}
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        row["cell_wall_s"] = round(time.perf_counter() - started, 3)
        row[TIMELINE_KEY] = {**self._clock, "cell_started": cell_started, "cell_ended": time.time(),
                             "cell_cpu_s": time.process_time() - cpu_started}
        return row


def draw_run_report(run_dir: str | Path) -> Path:
    """Draw ``report.md`` and ``report.html`` of a run folder kept without them; the path of ``report.html``.

    From its ``result.json`` and its transcript (verified as the report draws it), as the run would have
    drawn them; a folder that has its report is drawn again, the same report.
    """
    from parley.scenarios.report import write_report
    from parley.scenarios.report_html import write_html_report

    run_dir = Path(run_dir)
    record = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    write_report(record, run_dir)
    return write_html_report(record, run_dir)


def _write_run(folder: Path, files: dict[str, bytes]) -> None:
    """Write a cell's run folder from the files its worker returned (replacing an earlier attempt's)."""
    shutil.rmtree(folder, ignore_errors=True)
    for name, data in files.items():
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise InternalError(f"bug: a cell's file {name!r} would land outside its run folder")
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


_RemoteWorker = ray.remote(num_cpus=1, max_restarts=0)(StudyWorker)


@dataclass
class StudyRun:
    """What :func:`run_study` did: rows run now, rows found done, and the folder."""

    out: Path
    ran: int
    skipped: int
    failed: int
    wall_s: float
    results: pd.DataFrame
    #: Where the time went, in seconds since :func:`run_study` began (wall clock of each process):
    #: ``ray_up``, ``tables_put``, ``cells_done``, ``outputs_written`` and ``workers``, per worker
    #: (``pid@node``) its ``process_started``, ``imported`` (the engine module), ``ready`` (its party hosts
    #: booted, if any)
    #: and its ``cells`` as ``[cell, repeat, started, ended, cpu_s]``, ``cpu_s`` the CPU time the worker's
    #: process spent on the row (party host processes not counted). Benchmarks read it; not written to disk.
    timeline: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: the study, rows run, done and failed, the leakage's range, the folder."""
        from parley.scenarios.notebook import study_repr

        return study_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's view: the counts, the first rows of the results, the study's figures inline."""
        from parley.scenarios.notebook import study_html

        return study_html(self)


def _table_key(params: Any) -> str | None:
    """Cells whose data sets parse to the same table share one object-store copy."""
    if dataset_of(params).seeded:
        return None  # generated from each cell's own seed (synthetic data)
    key: str = params.model_dump_json(exclude={"audit_size", "train_size"})  # a pydantic model's JSON
    return key


def _put_tables(cells: list[Cell]) -> dict[str | None, Any]:
    refs: dict[str | None, Any] = {}
    for cell in cells:
        params = Scenario.from_dict(cell.scenario).dataset
        key = _table_key(params)
        if key is not None and key not in refs:
            refs[key] = ray.put(load_table(params))
    return refs


def _row(cell: Cell, outcome: dict[str, Any], attempts: int, keep: tuple[str, ...] | None) -> dict[str, Any]:
    metrics = {k: v for k, v in outcome.items() if k not in ROW_FIELDS}
    if keep is not None:
        metrics = {k: v for k, v in metrics.items() if k in keep}
    fixed = {"cell": cell.cell, "repeat": cell.repeat, "seed": cell.seed, "status": outcome.get("status", "ok"),
             "failure": outcome.get("failure", ""), "attempts": attempts, "node": outcome.get("node", ""),
             "cell_wall_s": outcome.get("cell_wall_s")}
    values = {k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in cell.assignment.items()}
    return {**fixed, **values, **metrics}


def run_study(study: Study, out: str | Path, workers: int | None = None, address: str | None = None,
              keep_runs: bool = True, progress: bool = True, reuse_hosts: bool = True,
              on_row: Callable[[dict[str, Any]], None] | None = None, party_hosts: str = "worker",
              secrets: RunSecrets | str | Path | None = None, reports: bool = True) -> StudyRun:
    """Run every cell of ``study`` not yet in ``out/results.csv``; write the table, summary and plots.

    Parameters
    ----------
    study : Study
        The grid.
    out : path-like
        Study folder: ``study.json`` (the study's name and spec fingerprint, see
        :mod:`parley.scenarios.out_folder`), ``results.csv``, ``summary.md``, the plots, and ``cells/``
        (one run folder per row).
    workers : int, optional
        Parallel workers (default: the CPUs Ray reports, at least 1).
    address : str, optional
        Ray cluster to join; local Ray if omitted.
    keep_runs : bool
        Keep each cell's run folder (transcript, result.json) under ``cells/``.
    progress : bool
        Show a progress bar with ETA on stderr.
    reuse_hosts : bool
        With ``party_hosts="actors"``: keep party host actors across a worker's cells (default); False
        starts fresh actors per cell.
    on_row : callable, optional
        Called with each finished row (tests use it to act mid-study).
    party_hosts : {"worker", "actors"}
        Where a cell's parties run. ``"worker"`` (default): as objects inside the study worker's own
        process (itself a Ray actor), so a worker starts one process, not five; ``"actors"``: each in a
        :class:`~parley.parties.ray.hosts.PartyHost` actor of its own, restored after a crash of its process
        (what a campaign that kills party processes needs). The wire is the same either way (signed,
        verified, logged envelopes, the same ledger), and so are the results.
    secrets : RunSecrets or path-like, optional
        The study's secrets (:mod:`parley.parties.run_secrets`); each row's run gets its own, derived from
        them and the row. None: fresh from OS entropy (the rows' noise cannot be reproduced); a secrets file:
        the same rows replay the same releases.
    reports : bool
        With ``keep_runs``: draw each kept run's ``report.md`` and ``report.html`` (default). False keeps
        ``result.json`` and the transcript and draws no report (a third of a small cell's CPU); a folder's
        report is drawn when asked for, by :func:`draw_run_report`.
    """
    from parley.scenarios.study.report import write_outputs

    started = time.perf_counter()
    began = time.time()
    timeline: dict[str, Any] = {"workers": {}}

    def mark(event: str) -> None:
        timeline[event] = round(time.time() - began, 3)

    def clock(reading: dict[str, Any], cell: Cell) -> None:
        worker = timeline["workers"].setdefault(reading["worker"], {"cells": []})
        for key in ("process_started", "imported", "init_started", "ready"):
            if reading.get(key) is not None:
                worker[key] = round(reading[key] - began, 3)
        worker["cells"].append([cell.cell, cell.repeat, round(reading["cell_started"] - began, 3),
                                round(reading["cell_ended"] - began, 3), round(reading["cell_cpu_s"], 3)])

    if workers is not None and workers < 1:
        raise ConfigError(BAD_WORKERS.format(workers=workers))
    if party_hosts not in PARTY_HOSTS:
        raise ConfigError(BAD_PARTY_HOSTS.format(allowed=", ".join(map(repr, PARTY_HOSTS)), value=party_hosts))
    out = Path(out)
    study_secrets = RunSecrets.resolve(secrets)
    out.mkdir(parents=True, exist_ok=True)
    write_study_marker(out, study.name, study.model_dump(mode="json"))  # the folder knows its study
    results_path = out / "results.csv"
    plan = study.cells()
    done = load_results(results_path)
    planned = {(c.cell, c.repeat, c.seed) for c in plan}
    current = pd.Series([(r.cell, int(r.repeat), int(r.seed)) in planned for r in done.itertuples()], dtype=bool,
                        index=done.index)
    if (~current).any():  # rows of another version of the study (grid, seed, repeats): kept aside
        stale = out / "results-stale.csv"
        save_results(pd.concat([load_results(stale), done[~current]], ignore_index=True), stale)
        done = done[current]
        save_results(done, results_path)
    ok = done[done["status"] == "ok"]
    finished = set(zip(ok["cell"], ok["repeat"].astype(int), strict=True))
    cells = [c for c in plan if c.key not in finished]
    rows = ok.to_dict("records")
    failed = 0
    if cells:
        ensure_ray(address)
        mark("ray_up")
        if workers is None:
            cluster_resources: Callable[[], dict[str, float]] = ray.cluster_resources  # unannotated in ray
            workers = max(1, int(cluster_resources().get("CPU", 1)))
        # The workers boot while the tables load.
        pool: list[Any] = [_RemoteWorker.remote(party_hosts, reuse_hosts) for _ in range(min(workers, len(cells)))]
        refs = _put_tables(cells)
        mark("tables_put")
        cells_dir = out / "cells"
        queue = deque((cell, 1) for cell in cells)
        in_flight: dict[Any, tuple[Any, Cell, int]] = {}

        def submit(worker: Any) -> None:
            if queue:
                cell, attempt = queue.popleft()
                key = _table_key(Scenario.from_dict(cell.scenario).dataset)
                table = refs.get(key) if key is not None else None
                in_flight[worker.run_cell.remote(cell, table, keep_runs,
                                                 study_secrets.child(f"{cell.cell}-r{cell.repeat}"), reports)] = \
                    (worker, cell, attempt)

        for worker in pool:
            submit(worker)
        interactive = sys.stderr.isatty()  # in a log file, one line every 10 s rather than a redrawn bar
        bar = tqdm(total=len(cells), desc=f"study {study.name}", unit="cell", disable=not progress,
                   dynamic_ncols=interactive, mininterval=0.5 if interactive else 10.0)
        try:  # the bar ends its line even when Ctrl-C stops the study, so messages start on their own
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                worker, cell, attempt = in_flight.pop(ready[0])
                try:
                    outcome = ray.get(ready[0])
                except ray.exceptions.RayActorError as exc:
                    worker = _RemoteWorker.remote(party_hosts, reuse_hosts)  # replace the dead worker
                    pool.append(worker)
                    if attempt < study.max_attempts:
                        queue.appendleft((cell, attempt + 1))
                        submit(worker)
                        continue
                    failure = WORKER_DIED.format(error=type(exc).__name__, attempts=attempt)
                    outcome = {"status": "error", "failure": failure}
                files = outcome.pop(FILES_KEY, None)
                reading = outcome.pop(TIMELINE_KEY, None)
                if reading is not None:
                    clock(reading, cell)
                if files is not None:
                    _write_run(cells_dir / f"{cell.cell}-r{cell.repeat}", files)
                row = _row(cell, outcome, attempt, study.outputs.metrics)
                failed += row["status"] != "ok"
                rows = [r for r in rows if (r["cell"], int(r["repeat"])) != cell.key] + [row]
                save_results(pd.DataFrame(rows), results_path)
                bar.update(1)
                if on_row is not None:
                    on_row(row)
                submit(worker)
        finally:
            bar.close()
        mark("cells_done")
        for worker in pool:
            ray.kill(worker)
    results = load_results(results_path)
    write_outputs(study, results, out, study_secrets)
    mark("outputs_written")
    return StudyRun(out=out, ran=len(cells), skipped=len(finished), failed=failed,
                    wall_s=round(time.perf_counter() - started, 3), results=results, timeline=timeline)
