"""``parley compare``: every protocol against every applicable attack on one data set, with its cost.

The grid of :mod:`parley.scenarios.compare.plan` runs as one study (the study runner's
Ray workers, progress bar and resumable ``results.csv``), together with the
passive-observer scenarios with and without confidential payloads. The
whole-scenario privacy audit (:mod:`parley.scenarios.compare.audit`) bounds epsilon of
every auditable protocol configuration from the adversary's view. The results
are reduced to the matrix (leakage mean ± std per protocol and attack, or the
reason an attack does not apply), the frontier (worst-case leakage against
utility) and the recommendations; :mod:`parley.scenarios.compare.report` writes them.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from parley.parties.confidential import is_sealed
from parley.parties.run_secrets import RunSecrets
from parley.parties.transcript import read_transcript
from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import resolve_scenario
from parley.scenarios.compare.audit import MECHANISM_DRAWS, audit_scenario
from parley.scenarios.compare.plan import UTILITY, Plan, plan
from parley.scenarios.compare.utility import RELEASES, UTILITY_FILE, UTILITY_LABEL, utilities
from parley.scenarios.exchanges import EXCHANGES
from parley.scenarios.spec import Scenario
from parley.scenarios.study import Study

__all__ = ["Comparison", "CONFIDENTIALITY_SCENARIOS", "INVOCATION_FILE", "compare", "matrix", "frontier", "pareto",
           "confidentiality", "report_from_files", "NO_SAVED_RESULTS", "workers_at_this_niceness"]

#: The passive-observer scenarios run with and without confidential payloads.
CONFIDENTIALITY_SCENARIOS = ("adult-observer-honest", "adult-raw-double-query")
AUDIT_ALPHA = 0.05
#: The audit of ``parley compare``: "two-level" (mechanism draws, wiring runs) or "runs" (every draw a run).
AUDIT_MODE = "two-level"
#: Whole-scenario wiring runs per neighbour of the two-level audit (full run, quick run).
WIRING_RUNS = (100, 25)
#: The figures of the invocation that wrote a report (wall time, rows run and found done), for rewriting it.
INVOCATION_FILE = "invocation.json"
#: report_from_files found neither the study's rows nor the tables written from them.
NO_SAVED_RESULTS = ("cannot rewrite the comparison report in {out}: it needs study/results.csv, or matrix_long.csv, "
                    "frontier.csv and confidentiality.csv of an earlier run (missing: {missing})")
#: How a signed refusal reads in a failure (parley.protocols.errors.RefusedError),
#: e.g. a metric the protocol does not answer.
REFUSED = "refused ("
#: Linked grid axis of the comparison study: every cell sets these scenario fields.
FIELDS = ("name", "threat_model", "dataset", "model", "protocol", "attack", "observer", "learner", "audit_metrics",
          "confidential", "backend", "composition")
#: The value of a field a scenario's ``to_dict`` leaves out (its default), where None is not a value.
_FIELD_DEFAULTS: dict[str, Any] = {"confidential": False, "composition": "sequential"}


@dataclass
class Comparison:
    """What :func:`compare` measured: the study rows, the audit rows, and where it wrote them."""

    plan: Plan
    results: pd.DataFrame  # one row per cell and repeat, with ``row``, ``column`` (or ``confidentiality``) labels
    audits: pd.DataFrame
    confidentiality: pd.DataFrame
    out: Path
    wall_s: float
    ran: int = 0  # study rows run by this invocation
    skipped: int = 0  # study rows found done in OUT/study
    audit_reused: bool = False
    phases: dict[str, float] | None = None  # wall seconds per phase of this invocation (report: "Where the time went")

    def __repr__(self) -> str:
        """One line: the data set, runs, audits, the leakage's range, the folder."""
        from parley.scenarios.notebook import comparison_repr

        return comparison_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's view: the counts, mean leakage by row and column, the report's figures inline."""
        from parley.scenarios.notebook import comparison_html

        return comparison_html(self)


def _cell_values(data: dict[str, Any]) -> list[Any]:
    """The cell's value of every field of the linked axis (absent optional tables as None, clear payloads)."""
    full = Scenario.from_dict(data).to_dict()
    return [full.get(f, _FIELD_DEFAULTS.get(f)) for f in FIELDS]


def _confidentiality_cells(p: Plan) -> dict[tuple[str, bool], dict[str, Any]]:
    sizes = EXCHANGES["metric-query"].sizes[1 if p.quick else 0]
    cells = {}
    for name in CONFIDENTIALITY_SCENARIOS:
        data = Scenario.from_toml(resolve_scenario(name)).to_dict()
        data["dataset"] = {**data["dataset"], "name": p.dataset, **sizes}
        data["dataset"].pop("protected", None)
        for sealed in (False, True):
            cells[(name, sealed)] = {**data, "confidential": sealed, "backend": p.backend}
    return cells


def build_study(p: Plan) -> tuple[Study, list[dict[str, Any]]]:
    """One study over every applicable cell and the confidentiality runs; the label of each grid point."""
    values: list[list[Any]] = []
    labels: list[dict[str, Any]] = []
    for (row, column), data in p.cells.items():
        values.append(_cell_values(data))
        labels.append({"row": row, "column": column})
    for (name, sealed), data in _confidentiality_cells(p).items():
        values.append(_cell_values(data))
        labels.append({"confidentiality": name, "sealed": sealed})
    base = next(iter(p.cells.values()))
    study = Study.from_dict({
        "name": f"compare-{p.dataset}{'-quick' if p.quick else ''}", "scenario": base,
        "grid": {",".join(FIELDS): values}, "repeats": p.repeats, "seed": 0,
    })
    return study, labels


def _labelled(study: Study, labels: list[dict[str, Any]], results: pd.DataFrame) -> pd.DataFrame:
    by_cell = dict(zip(study.cell_ids(), labels, strict=True))
    meta = pd.DataFrame([by_cell.get(c, {}) for c in results["cell"]], index=results.index)
    return pd.concat([meta, results.drop(columns=[c for c in meta.columns if c in results])], axis=1)


def _mean_std(values: pd.Series) -> tuple[float, float, int]:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return float("nan"), float("nan"), 0
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0, int(len(values))


def _cell_outcome(part: pd.DataFrame) -> dict[str, Any]:
    """Leakage of one cell over its repeats, and the leakage bound of the epsilon its runs spent.

    A run that attacked nobody (an honest exchange overheard) counts as chance, 50 %; an attack that gave up
    (e.g. exact-answer decoders on noisy answers) is reported with its message and not counted.
    ``leakage_bound`` is the mean over the counted runs of (e^eps + delta)/(1 + e^eps) in % at the
    (epsilon, delta) each spent (:func:`parley.scenarios.runner.leakage_bound`), ``bound_gap`` the bound
    minus the mean leakage, in points; both None without a finite epsilon.
    """
    ok = part[part["status"] == "ok"]
    leak = pd.to_numeric(ok["leakage"], errors="coerce") if "leakage" in ok else pd.Series(dtype=float)
    nobody = pd.to_numeric(ok.get("attacked", pd.Series(dtype=float)), errors="coerce").fillna(-1) == 0
    values = leak.where(~(leak.isna() & nobody), 50.0).dropna()
    mean, std, n = _mean_std(values)
    out: dict[str, Any] = {"leakage_mean": mean if n else None, "leakage_std": std if n else None, "n": n}
    bound, _, counted = _mean_std(ok.loc[values.index, "leakage_bound"]) if "leakage_bound" in ok and n \
        else (float("nan"), 0.0, 0)
    out["leakage_bound"] = bound if counted else None
    out["bound_gap"] = bound - mean if counted else None
    if n and bool(nobody.all()):
        out["reason"] = "revealed nobody: counted as chance (50 %)"
    if not n:
        failures = part["failure"].dropna().astype(str)
        failure = failures.iloc[0] if len(failures) else "no run finished"
        out["reason"] = ("refused: " if REFUSED in failure else "gave up: ") + failure
    return out


def matrix(p: Plan, results: pd.DataFrame) -> pd.DataFrame:
    """Long form: one row per (protocol row, attack column): leakage mean, std, n, or the reason it is empty."""
    out = []
    for row in p.rows:
        for column in p.columns:
            key = (row.label, column.label)
            entry: dict[str, Any] = {"protocol": row.label, "attack": column.label, "threat_model": column.threat_model,
                                     "leakage_mean": None, "leakage_std": None, "n": 0, "reason": "",
                                     "leakage_bound": None, "bound_gap": None}
            if key in p.reasons:
                entry["reason"] = "does not apply: " + p.reasons[key]
            else:
                part = results[(results.get("row") == row.label) & (results.get("column") == column.label)]
                entry.update(_cell_outcome(part))
            out.append(entry)
    return pd.DataFrame(out)


def matrix_wide(p: Plan, long: pd.DataFrame) -> pd.DataFrame:
    """Rows protocols, columns attacks; a cell is ``mean ± std (n)`` of leakage in %, or its reason."""
    def text(r: pd.Series) -> str:
        if r["n"]:
            note = f"; {r['reason']}" if r["reason"] else ""
            return f"{r['leakage_mean']:.1f} ± {r['leakage_std']:.1f} (n={r['n']}{note})"
        reason: str = r["reason"]
        return reason

    wide = long.assign(cell=long.apply(text, axis=1)).pivot(index="protocol", columns="attack", values="cell")
    return wide.loc[[r.label for r in p.rows], [c.label for c in p.columns]]


def _utility_value(flow: str, ok: pd.DataFrame) -> tuple[float, float | None]:
    spec = UTILITY[flow]
    if spec.honest_threat is not None and "threat_model" in ok and (ok["threat_model"] == spec.honest_threat).any():
        ok = ok[ok["threat_model"] == spec.honest_threat]
    util, _, _ = _mean_std(ok[spec.key]) if spec.key in ok else (float("nan"), 0, 0)
    if spec.transform == "one-minus":
        util = 1.0 - util
    fair = None
    if spec.fairness_key and spec.fairness_key in ok:
        fair, _, _ = _mean_std(ok[spec.fairness_key])
    return util, fair


def frontier(p: Plan, results: pd.DataFrame, long: pd.DataFrame, utility: pd.DataFrame | None = None
             ) -> pd.DataFrame:
    """Per protocol row: its utility (as its flow defines it), fairness, and worst-case leakage per threat model.

    ``utility`` (:func:`parley.scenarios.compare.utility.utilities`) gives the utility of the metric-query rows:
    the error of the honest audit answer over many releases; without it they take their runs' mean query error.
    """
    rows = []
    for row in p.rows:
        part = results[(results.get("row") == row.label) & (results["status"] == "ok")]
        util, fair = _utility_value(row.flow, part)
        measured = long[(long["protocol"] == row.label) & (long["n"] > 0)]
        entry: dict[str, Any] = {"protocol": row.label, "name": re.sub(r" [εm]=.*$", "", row.label), "flow": row.flow,
                                 "family": row.protocol["name"], "epsilon": row.protocol.get("epsilon"),
                                 "utility": util, "utility_p90": None, "utility_label": UTILITY[row.flow].label,
                                 "higher_is_better": UTILITY[row.flow].higher_is_better, "unfairness": fair,
                                 "worst_leakage": measured["leakage_mean"].max() if len(measured) else None,
                                 "worst_attack": measured.loc[measured["leakage_mean"].idxmax(), "attack"]
                                 if len(measured) else None}
        for threat, group in measured.groupby("threat_model"):
            entry[f"worst_{threat}"] = group["leakage_mean"].max()
        epsilon = pd.to_numeric(part.get("epsilon_spent"), errors="coerce") if "epsilon_spent" in part else None
        entry["epsilon_spent_max"] = float(epsilon.max()) if epsilon is not None and epsilon.notna().any() else None
        rows.append(entry)
    front = pd.DataFrame(rows)
    return with_utility(front, utility) if utility is not None else front.assign(on_frontier=pareto(front))


def with_utility(front: pd.DataFrame, utility: pd.DataFrame) -> pd.DataFrame:
    """``front`` with the metric-query rows' utility from ``utility`` and ``on_frontier`` recomputed.

    The utility is the mean over audit metrics of the median error, its 90th percentile beside it;
    other exchanges keep theirs.
    """
    front = front.copy()
    if "utility_p90" not in front:
        front.insert(int(front.columns.get_loc("utility")) + 1, "utility_p90", None)
    front["utility_p90"] = front["utility_p90"].astype(object)
    by_row = utility.groupby("protocol")[["median_error", "p90_error"]].mean()
    releases = int(utility["releases"].iloc[0]) if len(utility) else RELEASES
    for i in front.index[front["flow"] == "metric-query"]:
        label = front.at[i, "protocol"]
        measured = label in by_row.index
        front.at[i, "utility"] = float(by_row.at[label, "median_error"]) if measured else float("nan")
        front.at[i, "utility_p90"] = float(by_row.at[label, "p90_error"]) if measured else None
        front.at[i, "utility_label"] = UTILITY_LABEL.format(releases=releases)
    front["on_frontier"] = pareto(front)
    return front


def pareto(front: pd.DataFrame) -> pd.Series:
    """Whether each configuration is on the leakage-utility frontier of its exchange.

    A configuration is dominated when another of the same exchange leaks no more (worst-case leakage, below
    chance ranked as chance, as in the recommendations) and is at least as useful, strictly better in one.
    Configurations without a measured leakage or utility are not on the frontier.
    """
    from parley.scenarios.compare.report import CHANCE

    leak = pd.to_numeric(front["worst_leakage"], errors="coerce").clip(lower=CHANCE)
    util = pd.to_numeric(front["utility"], errors="coerce")
    sign = front["flow"].map(lambda f: 1.0 if UTILITY[f].higher_is_better else -1.0)
    gain = util * sign  # higher is better for every exchange
    out = []
    for i in front.index:
        if pd.isna(leak[i]) or pd.isna(gain[i]):
            out.append(False)
            continue
        peers = (front["flow"] == front.at[i, "flow"]) & leak.notna() & gain.notna()
        dominated = peers & (leak <= leak[i]) & (gain >= gain[i]) & ((leak < leak[i]) | (gain > gain[i]))
        out.append(not bool(dominated.any()))
    return pd.Series(out, index=front.index, dtype=bool)


def _wire_view(run_dir: Path) -> dict[str, Any]:
    """What a passive observer still sees of a run: envelope kinds, payload sizes, timing."""
    envelopes = read_transcript(run_dir / "transcript.jsonl", verify=False)
    times = np.array([e.timestamp for e in envelopes], dtype=np.float64) / 1e9
    sealed = sum(is_sealed(e.payload) for e in envelopes)
    return {"envelopes": len(envelopes), "kinds_seen": ", ".join(sorted({e.kind for e in envelopes})),
            "sealed_payloads": int(sealed), "span_s": float(times.max() - times.min()) if times.size else 0.0}


def confidentiality(results: pd.DataFrame, cells_dir: Path) -> pd.DataFrame:
    """Per confidentiality scenario, without and with sealed payloads: the observer's leakage and its view."""
    rows = []
    part = results[results.get("confidentiality").notna() & (results["status"] == "ok")] \
        if "confidentiality" in results else results.iloc[0:0]
    for (name, sealed), group in part.groupby(["confidentiality", "sealed"], sort=False):
        first = group.iloc[0]
        # The scenario's adversary is the observer, or an observer overhears a curious data center.
        passive = Scenario.from_toml(resolve_scenario(name)).threat_model == "passive-observer"
        leak_key = "leakage" if passive else "observer_leakage"
        mean, std, n = _mean_std(group[leak_key]) if leak_key in group else (float("nan"), 0.0, 0)
        revealed_key = "observer_revealed" if leak_key == "observer_leakage" else "attacked"
        revealed = _mean_std(group[revealed_key])[0] if revealed_key in group else float("nan")
        view = _wire_view(cells_dir / f"{first['cell']}-r{int(first['repeat'])}")
        rows.append({"scenario": name, "confidential": bool(sealed), "observer_leakage": mean if n else None,
                     "individuals_revealed": int(revealed) if np.isfinite(revealed) else None,
                     "messages": int(first["messages"]), "wire_bytes": int(first["bytes"]),
                     **view})
    return pd.DataFrame(rows)


def _audit_task(protocol: dict[str, Any], dataset: dict[str, Any], runs: int, seed: int,
                learner: dict[str, Any] | None = None, secrets: RunSecrets | None = None,
                mode: str = AUDIT_MODE, wiring_runs: int = WIRING_RUNS[0]) -> dict[str, Any]:
    """One row's audit; the row records its wall time and the niceness it ran at (its Ray worker's)."""
    import os

    started = time.perf_counter()
    audit = audit_scenario(protocol, dataset, runs=runs, alpha=AUDIT_ALPHA, seed=seed, learner=learner,
                           secrets=secrets, mode=mode, wiring_runs=wiring_runs)
    return {**audit.row(), "audit_size": dataset["audit_size"], "wall_s": round(time.perf_counter() - started, 1),
            "niceness": os.nice(0)}


def run_audits(p: Plan, address: str | None = None, progress: bool = True,
               secrets: RunSecrets | None = None, mode: str = AUDIT_MODE) -> pd.DataFrame:
    """The whole-scenario audit of the plan's audit rows, one Ray task per row (each runs its scenarios locally).

    Each row's runs get secrets of their own, derived from ``secrets`` (fresh from OS entropy if omitted).
    ``mode``: ``"two-level"`` (default; mechanism-level draws and :data:`WIRING_RUNS` wiring runs per
    neighbour) or ``"runs"`` (the earlier audit: ``4 * p.audit_runs + 1`` whole-scenario runs per row).
    The tasks run in Ray's workers, at the niceness of the study's (:func:`workers_at_this_niceness`: the
    comparison's own, when it starts Ray); each row records it (``niceness``).
    """
    secrets = RunSecrets.resolve(secrets)
    import ray

    from parley.parties.ray.cluster import ensure_ray

    rows = [r for r in p.rows if r.label in p.audit_rows]
    ensure_ray(address)
    task = ray.remote(num_cpus=1, max_retries=0)(_audit_task)
    wiring = WIRING_RUNS[1 if p.quick else 0]
    pending = {task.remote(r.protocol, p.audit_dataset, p.audit_runs, 0, r.learner,
                           secrets.child(f"audit:{r.label}"), mode, wiring): r.label for r in rows}
    what = (f"{4 * p.audit_runs + 1} runs" if mode == "runs" else
            f"{MECHANISM_DRAWS:,} draws and {2 * wiring + 1} runs")
    bar = tqdm(total=len(rows), desc=f"privacy audit ({what} per protocol)", unit="protocol",
               disable=not progress, mininterval=0.5 if sys.stderr.isatty() else 10.0)
    done: dict[str, dict[str, Any]] = {}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        label = pending.pop(ready[0])
        done[label] = {**ray.get(ready[0]), "protocol": label}
        bar.update(1)
    bar.close()
    code = code_digest()
    out = [{**done[r.label], "code": code} for r in rows]
    for row in p.rows:
        if row.label in done:
            continue
        note = EXCHANGES[row.flow].not_audited.format(name=row.flow)
        out.append({"protocol": row.label, "epsilon_lower": None, "note": note})
    return pd.DataFrame(out)


#: Ray reads it when it starts an instance: the niceness of its worker processes (Ray's default 15).
WORKER_NICENESS_ENV = "RAY_worker_niceness"


@contextmanager
def workers_at_this_niceness(address: str | None) -> Iterator[None]:
    """While a comparison runs: a private Ray instance it starts has its workers at this process's niceness.

    The study's cells and the audit's rows then run at the niceness of the rest of the comparison (the
    driver's utilities and report), not at Ray's 15, at which a shared machine left the audit 14-39 % of
    a core. A value the user set in the environment wins; a running Ray instance or a cluster
    (``address``) keeps the niceness its workers have. The environment is restored on leaving.
    """
    import os

    import ray

    if address is not None or ray.is_initialized() or WORKER_NICENESS_ENV in os.environ:
        yield
        return
    os.environ[WORKER_NICENESS_ENV] = str(os.nice(0))
    try:
        yield
    finally:
        os.environ.pop(WORKER_NICENESS_ENV, None)


def code_digest() -> str:
    """SHA-256 of parley's source files (protocols, parties, scenarios): an audit measured by other code is stale."""
    import hashlib

    from parley import parties, protocols, scenarios

    digest = hashlib.sha256()
    for package in (protocols, parties, scenarios):
        root = Path(package.__path__[0])
        for source in sorted(root.rglob("*.py")):
            digest.update(f"{package.__name__}/{source.relative_to(root).as_posix()}\0".encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _saved_audits(p: Plan, path: Path) -> pd.DataFrame | None:
    """The audit table of an earlier run of the same plan by the same code, if there is one.

    The audit is seeded: rerunning the same code gives the same rows; after a change of any protocol
    or party it is measured again.
    """
    if not path.is_file():
        return None
    saved = pd.read_csv(path)
    if "code" not in saved or set(saved["code"].dropna().astype(str)) != {code_digest()}:
        return None
    audited = saved[pd.to_numeric(saved.get("runs"), errors="coerce").notna()] if "runs" in saved else saved.iloc[0:0]
    same_rows = sorted(audited["protocol"]) == sorted(p.audit_rows)
    if "mode" in audited and len(audited) and (audited["mode"] == "two-level").any():  # the two-level audit
        wiring = pd.to_numeric(audited["wiring_runs"], errors="coerce")
        same_runs = bool((audited["mode"] == AUDIT_MODE).all()
                         and (audited["mechanism_draws"].astype(int) == MECHANISM_DRAWS).all()
                         and wiring.isin([1, WIRING_RUNS[1 if p.quick else 0]]).all())  # 1: cov-threshold
    else:  # the audit of every draw a run (mode "runs", or a table from before the two-level audit)
        same_runs = (audited["runs"].astype(int) == p.audit_runs).all() if len(audited) else False
    same_set = (audited["audit_size"].astype(int) == p.audit_dataset["audit_size"]).all() \
        if "audit_size" in audited and len(audited) else False
    return saved if same_rows and same_runs and same_set else None


def compare(dataset: str = "adult", out: str | Path = "compare", quick: bool = False, address: str | None = None,
            workers: int | None = None, progress: bool = True, audit: bool = True,
            rows: tuple[str, ...] | None = None, attacks: tuple[str, ...] | None = None,
            backend: str = "ray", releases: int = RELEASES,
            secrets: RunSecrets | str | Path | None = None) -> Comparison:
    """Run the comparison on ``dataset`` and write the matrix, frontier, audit and report into ``out``.

    Parameters
    ----------
    dataset : str
        adult, german or compas.
    out : path-like
        Report folder (``study/`` inside it holds the resumable study).
    quick : bool
        Small sizes, few cells, one repeat, a short audit (3 minutes on 2 cores).
    address : str, optional
        Ray cluster to join, as ``parley study --address``.
    workers : int, optional
        Parallel study workers (default: the CPUs Ray reports).
    progress : bool
        Progress bars on stderr.
    audit : bool
        Run the whole-scenario privacy audit (tests switch it off to stay short).
    rows, attacks : tuple of str, optional
        Only these protocol rows (labels such as ``"laplace ε=1"``) and attacks (names).
    backend : {"ray", "local"}
        Where each cell's parties live: Ray actors, or inside the study worker.
    releases : int
        Releases of the honest audit query per metric-query row, for its utility (``utility.csv``).
    secrets : RunSecrets or path-like, optional
        The comparison's secrets (:mod:`parley.parties.run_secrets`) for its study rows and audit runs;
        default: fresh from OS entropy.
    """
    from parley.scenarios.compare.report import write_report
    from parley.scenarios.study.engine import run_study

    started = time.perf_counter()
    p = plan(dataset, quick, rows, attacks, backend)  # a bad data set, row or attack is refused before any folder
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    secrets = RunSecrets.resolve(secrets)
    study, labels = build_study(p)
    phases: dict[str, float] = {}
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[name] = round(now - mark, 1)
        mark = now

    phase("plan")
    with workers_at_this_niceness(address):
        # Every cell's run folder is kept (the confidentiality table reads its transcript) without the report a
        # cell would draw: the comparison's report links to none, and draw_run_report draws one when asked.
        done = run_study(study, out / "study", workers=workers, address=address, keep_runs=True,
                         progress=progress, secrets=secrets.child("study"), reports=False)
        phase("study")
        results = _labelled(study, labels, done.results)
        long = matrix(p, results)
        utility = utilities(p, releases)
        utility.to_csv(out / UTILITY_FILE, index=False)
        front = frontier(p, results, long, utility)
        conf = confidentiality(results, out / "study" / "cells")
        phase("tables and utility")
        audits = _saved_audits(p, out / "audit.csv") if audit else pd.DataFrame()
        reused = audits is not None and not audits.empty
        if audit and not reused:
            audits = run_audits(p, address, progress, secrets.child("audit"))
        phase("audit")
    comparison = Comparison(plan=p, results=results, audits=audits, confidentiality=conf, out=out,
                            wall_s=round(time.perf_counter() - started, 1), ran=done.ran, skipped=done.skipped,
                            audit_reused=reused, phases=dict(phases))
    write_report(comparison, long, front)
    phase("report")  # in invocation.json only: the report shows the phases before it
    # where the seconds went (docs/compare.md, Cost); the report's wall time is the total before the report
    invocation = {"dataset": dataset, "quick": quick, "rows": rows, "attacks": attacks, "backend": backend,
                  "wall_s": comparison.wall_s, "ran": comparison.ran, "skipped": comparison.skipped,
                  "audit_reused": reused, "phases_s": phases}
    (out / INVOCATION_FILE).write_text(json.dumps(invocation, ensure_ascii=False) + "\n", encoding="utf-8")
    return comparison


def _saved_utility(p: Plan, path: Path, releases: int | None) -> pd.DataFrame | None:
    """The utility table of an earlier run of the same plan rows (and ``releases``, if given): it is seeded."""
    if not path.is_file():
        return None
    saved = pd.read_csv(path)
    wanted = sorted(r.label for r in p.rows if r.flow == "metric-query")
    same_rows = sorted(set(saved.get("protocol", pd.Series(dtype=str)))) == wanted
    same_k = len(saved) > 0 and (releases is None or bool((saved["releases"] == releases).all()))
    return saved if same_rows and same_k else None


def _saved_tables(out: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The matrix (long), frontier and confidentiality tables an earlier run wrote (its study rows not kept)."""
    names = ("matrix_long.csv", "frontier.csv", "confidentiality.csv")
    missing = [name for name in names if not (out / name).is_file()]
    if missing:
        raise ConfigError(NO_SAVED_RESULTS.format(out=out, missing=", ".join(["study/results.csv", *missing])))
    long = pd.read_csv(out / names[0])
    long["reason"] = long["reason"].fillna("").astype(str)
    return long, pd.read_csv(out / names[1]), pd.read_csv(out / names[2])


def report_from_files(out: str | Path, releases: int | None = None) -> Comparison:
    """Rewrite the report of an earlier comparison in ``out`` from its files, running no scenario.

    Reads the invocation of :data:`INVOCATION_FILE` (the plan's arguments, wall time, rows run and
    found done) and ``audit.csv``; the leakage comes from ``study/results.csv``, or, where the study's rows
    are not kept (a checked-in report), from the ``matrix_long.csv``, ``frontier.csv`` and
    ``confidentiality.csv`` written from them. The metric-query utility is ``utility.csv`` when it holds the
    plan's rows (and ``releases``, if given), else it is measured again (seconds, no Ray). Every file of
    :func:`compare` is written again: for a change of the report's code, without the minutes of the study
    and the audit.
    """
    from parley.scenarios.compare.report import write_report

    out = Path(out)
    figures = json.loads((out / INVOCATION_FILE).read_text(encoding="utf-8"))
    p = plan(figures["dataset"], figures["quick"], None if figures["rows"] is None else tuple(figures["rows"]),
             None if figures["attacks"] is None else tuple(figures["attacks"]), figures["backend"])
    utility = _saved_utility(p, out / UTILITY_FILE, releases)
    if utility is None:
        utility = utilities(p, releases if releases is not None else RELEASES)
        utility.to_csv(out / UTILITY_FILE, index=False)
    if (out / "study" / "results.csv").is_file():
        study, labels = build_study(p)
        results = _labelled(study, labels, pd.read_csv(out / "study" / "results.csv"))
        long = matrix(p, results)
        front = frontier(p, results, long, utility)
        conf = confidentiality(results, out / "study" / "cells")
    else:
        long, saved_front, conf = _saved_tables(out)
        results = pd.DataFrame()
        front = with_utility(saved_front, utility)
    try:
        audits = pd.read_csv(out / "audit.csv")
    except (FileNotFoundError, pd.errors.EmptyDataError):  # a comparison run without its audit
        audits = pd.DataFrame()
    comparison = Comparison(plan=p, results=results, audits=audits, confidentiality=conf, out=out,
                            wall_s=figures["wall_s"], ran=figures["ran"], skipped=figures["skipped"],
                            audit_reused=figures["audit_reused"],
                            phases={k: v for k, v in figures.get("phases_s", {}).items() if k != "report"} or None)
    write_report(comparison, long, front)
    return comparison
