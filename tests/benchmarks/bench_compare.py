"""``parley compare`` as the issue of its cost found it, against today's: wall time, audit bounds, frontier.

For ``--quick`` (default) or the full grid (``--full``), or both (``--both``), one after the other in this run:

- **old**: the code at ``--old-rev`` (default ``ed89e6b``: every audit draw a whole-scenario run that drew its
  ``report.html``; 1,201 runs per configuration in the full grid, 241 in ``--quick``), checked out with
  ``git worktree add --detach`` in a folder of its own (``/tmp/parley-bench-old-REV``, kept for the next
  run to reuse; ``git worktree remove`` removes it; the working checkout's files are not touched). Its
  comparison runs **without its audit** (``--no-audit``: the study, the utilities, the report, measured),
  and its audit is **extrapolated, not run**: each audit row of its plan runs
  ``audit_scenario(runs=SAMPLE)`` (``4 * SAMPLE + 1`` whole-scenario runs with their reports, in one process
  at this process's niceness); the row's fixed part (up to its first audited run: the claim run,
  cov-threshold's pair) plus ``4 * audit_runs`` runs at the median pace of its sampled runs (after the first) give
  the row's time, and the rows are scheduled longest first on the two Ray workers the old audit ran them on
  (its makespan).
  Running the old audit itself takes from minutes at rest to two hours at load 25 (quick: its rr-release row
  trains the two-step learner in every run), and longer for the full grid.
- **new**: today's ``parley compare`` in full, its audit included (the two-level audit), with the phases of
  its ``invocation.json``.

Both use one secrets file (the same party noise), so a difference in the frontier or the recommendation is a
difference of the code, not of the draws.

Printed: the two wall times, their ratio, the target beside them (``--quick`` <= 90 s, full <= 5 min) and
the floor (the seconds outside ``compare`` -- imports, Ray's start and stop -- plus the study rows alone) when
the target sits below it; the phases of each; the audit's lower bounds per protocol side by side; the
frontier (``on_frontier`` and utility per configuration) and the recommendations side by side, each with
"same" or what differs. The old bounds: the checked-in report's ``audit.csv`` (``docs/compare/adult``: the old
code's audit of the full grid, 1,201 runs a configuration, 300 per neighbour and half; for ``--quick`` rows
that is more runs than the quick audit's 60, a baseline tighter than the old quick one), or with
``--old-bounds runs`` the audit of every draw a run as today's code keeps it on the plan's own sizes
(``mode="runs"``, the old estimator, reports off: about a minute at rest, half an hour at load 25).
``--reuse-old`` / ``--reuse-new`` take a side from an earlier run in ``--work``, ``--reuse-old-compare`` the
old compare without its audit (the audit sampled again); each printed as such. Load
averages (``/proc/loadavg``) are printed before and after every step. The last line is one JSON object.
Usage::

    python -m tests.benchmarks.bench_compare [--full | --both] [--old-rev REV] [--sample-runs 2] [--work DIR]
        [--old-bounds checked-in|runs] [--reuse-old | --reuse-old-compare] [--reuse-new]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
OLD_REV = "ed89e6b"
#: The issue's targets, seconds (quick, full).
TARGETS = {"quick": 90.0, "full": 300.0}
CHECKED_IN = ROOT / "docs" / "compare" / "adult"

#: Run in the old checkout: each audit row's seconds per whole-scenario run (reports on, as the old audit ran).
_SAMPLE = r"""
import json, sys, time
from parley.parties.run_secrets import RunSecrets
from parley.scenarios.compare.audit import audit_scenario
from parley.scenarios.compare.plan import plan
quick, sample = sys.argv[1] == "quick", int(sys.argv[2])
p = plan("adult", quick=quick)
secrets = RunSecrets(bytes(32), source="test")
rows = [r for r in p.rows if r.label in p.audit_rows]
audit_scenario(rows[0].protocol, p.audit_dataset, runs=1, alpha=0.05, seed=0, learner=rows[0].learner,
               secrets=secrets)  # warm-up: imports, the data set's cache, matplotlib's fonts
out = {}
for r in rows:
    marks = [time.perf_counter()]  # the start, then the end of each of the 4 * sample audited runs
    audit_scenario(r.protocol, p.audit_dataset, runs=sample, alpha=0.05, seed=0, learner=r.learner,
                   secrets=secrets.child(r.label), on_run=lambda: marks.append(time.perf_counter()))
    marks.append(time.perf_counter())
    gaps = sorted(b - a for a, b in zip(marks[1:-2], marks[2:-1]))  # one audited run each, after the first
    per_run = gaps[len(gaps) // 2]  # the median: a burst of another job on the machine moves it least
    out[r.label] = {"setup_s": marks[1] - marks[0] - per_run, "per_run_s": per_run, "gaps_s": gaps,
                    "wall_s": marks[-1] - marks[0]}
print(json.dumps({"rows": out, "audit_runs": p.audit_runs}))
"""


def loadavg() -> str:
    """The three load averages of ``/proc/loadavg``."""
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def old_checkout(rev: str) -> Path:
    """A worktree of ``rev`` in a folder of its own, made once (``git worktree add --detach``)."""
    where = Path(tempfile.gettempdir()) / f"parley-bench-old-{rev}"
    if not (where / "parley" / "__init__.py").is_file():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev], check=True,
                       stdout=subprocess.DEVNULL)
    return where


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    return env


def timed_compare(checkout: Path, out: Path, quick: bool, secrets: Path, audit: bool) -> dict[str, Any]:
    """``python -m parley.scenarios.cli compare`` in ``checkout`` (its own code): wall seconds and loads."""
    cmd = [sys.executable, "-m", "parley.scenarios.cli", "compare", "--dataset", "adult", "--out", str(out),
           "--secrets", str(secrets)] + (["--quick"] if quick else []) + ([] if audit else ["--no-audit"])
    before = loadavg()
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=checkout, env=_clean_env(), capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} (in {checkout}) failed:\n{done.stderr[-3000:]}")
    invocation = json.loads((out / "invocation.json").read_text(encoding="utf-8")) \
        if (out / "invocation.json").is_file() else {}
    return {"wall_s": round(wall, 1), "load_before": before, "load_after": loadavg(),
            "phases_s": invocation.get("phases_s", {}), "compare_wall_s": invocation.get("wall_s")}


def old_audit_estimate(checkout: Path, quick: bool, sample: int) -> dict[str, Any]:
    """The old audit's time, extrapolated from ``4 * sample + 1`` runs per row (see the module's docstring)."""
    before = loadavg()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _SAMPLE, "quick" if quick else "full", str(sample)], cwd=checkout,
                          env=_clean_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the old audit's sample failed:\n{done.stderr[-3000:]}")
    sampled = json.loads(done.stdout.strip().splitlines()[-1])
    runs = 4 * sampled["audit_runs"] + 1
    # the row's fixed part (its claim run, cov-threshold's pair) once, then 4 * audit_runs runs at the sampled pace
    rows = {label: r["setup_s"] + r["per_run_s"] * (runs - 1) for label, r in sampled["rows"].items()}
    workers = [0.0, 0.0]  # the old audit: one Ray task per row on two workers; longest first
    for seconds in sorted(rows.values(), reverse=True):
        heapq.heapreplace(workers, workers[0] + seconds)
    return {"rows_s": {k: round(v, 1) for k, v in rows.items()}, "runs_per_row": runs,
            "per_run_s": {k: round(r["per_run_s"], 4) for k, r in sampled["rows"].items()},
            "setup_s": {k: round(r["setup_s"], 3) for k, r in sampled["rows"].items()},
            "makespan_s": round(max(workers), 1), "sample_wall_s": round(time.perf_counter() - started, 1),
            "load_before": before, "load_after": loadavg()}


def old_bounds_runs(quick: bool) -> dict[str, float]:
    """The audit of every draw a run (today's ``mode="runs"``, reports off), seed 0, fixed secrets."""
    from parley.scenarios.compare.audit import audit_scenario
    from parley.scenarios.compare.plan import plan
    from parley.scenarios.compare.run import AUDIT_ALPHA
    from tests.fixed_secrets import run_secrets

    p = plan("adult", quick=quick)
    out = {}
    for r in p.rows:
        if r.label in p.audit_rows:
            audit = audit_scenario(r.protocol, p.audit_dataset, runs=p.audit_runs, alpha=AUDIT_ALPHA, seed=0,
                                   learner=r.learner, secrets=run_secrets(0).child(r.label), mode="runs")
            out[r.label] = float(audit.epsilon_lower)
    return out


def bounds_of(path: Path) -> dict[str, float]:
    """``protocol -> epsilon_lower`` of an ``audit.csv`` (audited rows only)."""
    if not path.is_file():
        return {}
    table = pd.read_csv(path)
    table = table[pd.to_numeric(table["epsilon_lower"], errors="coerce").notna()]
    return {str(r["protocol"]): float(r["epsilon_lower"]) for _, r in table.iterrows()}


def recommendations(report: Path) -> dict[str, str]:
    """The report's "Which protocol under which threat model" lines: threat and use -> the configuration."""
    out: dict[str, str] = {}
    if not report.is_file():
        return out
    section = report.read_text(encoding="utf-8").split("## Which protocol under which threat model", 1)[-1]
    section = section.split("\n## ", 1)[0]
    for line in section.splitlines():
        m = re.match(r"- \*\*(.+?)\*\*: (?:prefer|one configuration,) \*\*(.+?)\*\*", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def frontier_of(path: Path) -> pd.DataFrame:
    """``frontier.csv`` indexed by protocol: on_frontier and utility."""
    table = pd.read_csv(path)
    return table.set_index("protocol")[["on_frontier", "utility"]]


def side_by_side(old: pd.DataFrame, new: pd.DataFrame) -> tuple[list[str], bool]:
    """Lines of the two frontiers side by side, and whether ``on_frontier`` is the same for every shared row."""
    lines = [f"  {'configuration':26s} {'old: on':>7s} {'utility':>10s}   {'new: on':>7s} {'utility':>10s}"]
    same = True
    for label in list(dict.fromkeys([*old.index, *new.index])):
        o = old.loc[label] if label in old.index else None
        n = new.loc[label] if label in new.index else None
        mark = ""
        if o is None or n is None or bool(o["on_frontier"]) != bool(n["on_frontier"]):
            mark = "  <- differs" if o is not None and n is not None else "  (one side only)"
            same = same and (o is None or n is None or bool(o["on_frontier"]) == bool(n["on_frontier"]))
        ov = "-" if o is None else f"{bool(o['on_frontier'])!s:>7s} {o['utility']:10.4g}"
        nv = "-" if n is None else f"{bool(n['on_frontier'])!s:>7s} {n['utility']:10.4g}"
        lines.append(f"  {label:26s} {ov:>18s}   {nv:>18s}{mark}")
    return lines, same


def measure(kind: str, old_rev: str, sample: int, old_bounds: str, work: Path, secrets: Path,
            reuse_old: bool = False, reuse_new: bool = False, reuse_old_compare: bool = False) -> dict[str, Any]:
    """One comparison (``kind`` quick or full): old and new, side by side."""
    quick = kind == "quick"
    checkout = old_checkout(old_rev)
    print(f"\n=== {kind}: old code ({old_rev}) without its audit, then its audit extrapolated; "
          f"load {loadavg()}", flush=True)
    saved = work / f"old-{kind}.json"
    if reuse_old and saved.is_file():  # the old side of an earlier run in this work folder (its loads with it)
        old, estimate = json.loads(saved.read_text(encoding="utf-8"))
        print(f"old side reused from {saved} (measured earlier, not in this run)", flush=True)
    elif reuse_old_compare and saved.is_file():  # its compare without audit reused, its audit sampled again
        old = json.loads(saved.read_text(encoding="utf-8"))[0]
        print(f"old compare --no-audit reused from {saved} (measured earlier, not in this run): {old['wall_s']} s "
              f"(load {old['load_before']} -> {old['load_after']})", flush=True)
        estimate = old_audit_estimate(checkout, quick, sample)
        saved.write_text(json.dumps([old, estimate]), encoding="utf-8")
    else:
        old = timed_compare(checkout, work / f"old-{kind}", quick, secrets, audit=False)
        print(f"old compare --no-audit: {old['wall_s']} s (load {old['load_before']} -> {old['load_after']})",
              flush=True)
        estimate = old_audit_estimate(checkout, quick, sample)
        saved.write_text(json.dumps([old, estimate]), encoding="utf-8")
    print(f"old audit, extrapolated from {4 * sample + 1} runs a row (sampled in {estimate['sample_wall_s']} s, "
          f"load {estimate['load_before']} -> {estimate['load_after']}): {estimate['runs_per_row']} runs a row, "
          f"{sum(estimate['rows_s'].values()):.0f} s of rows, {estimate['makespan_s']} s on two workers", flush=True)
    print(f"=== {kind}: today's code, audit included; load {loadavg()}", flush=True)
    saved_new = work / f"new-{kind}.json"
    if reuse_new and saved_new.is_file():
        new = json.loads(saved_new.read_text(encoding="utf-8"))
        print(f"new side reused from {saved_new} (measured earlier, not in this run)", flush=True)
    else:
        new = timed_compare(ROOT, work / f"new-{kind}", quick, secrets, audit=True)
        saved_new.write_text(json.dumps(new), encoding="utf-8")
    print(f"new compare: {new['wall_s']} s (load {new['load_before']} -> {new['load_after']}); "
          f"phases {new['phases_s']}", flush=True)
    old_total = old["wall_s"] + estimate["makespan_s"]
    outside = new["wall_s"] - sum(new["phases_s"].values())
    floor = outside + new["phases_s"].get("study", 0.0)
    target = TARGETS[kind]

    if old_bounds == "runs":
        print(f"old bounds: the audit of every draw a run (mode 'runs'), load {loadavg()}", flush=True)
        old_eps, old_source = old_bounds_runs(quick), "mode 'runs' of today's code (the old estimator, reports off)"
    else:
        old_eps, old_source = bounds_of(CHECKED_IN / "audit.csv"), f"{CHECKED_IN.relative_to(ROOT)}/audit.csv"
    new_eps = bounds_of(work / f"new-{kind}" / "audit.csv")
    front_lines, same_front = side_by_side(frontier_of(work / f"old-{kind}" / "frontier.csv"),
                                           frontier_of(work / f"new-{kind}" / "frontier.csv"))
    old_rec = recommendations(work / f"old-{kind}" / "report.md")
    new_rec = recommendations(work / f"new-{kind}" / "report.md")

    print(f"\n--- {kind}: wall time")
    print(f"  old ({old_rev}): {old_total:.0f} s = compare without audit {old['wall_s']} s (measured) + audit "
          f"{estimate['makespan_s']} s (EXTRAPOLATED from {4 * sample + 1} sampled runs a row, not run)")
    print(f"  new: {new['wall_s']} s (measured, audit included)")
    print(f"  ratio old / new: {old_total / new['wall_s']:.1f}")
    print(f"  target <= {target:.0f} s: measured {new['wall_s']} s; floor (outside compare {outside:.1f} s + "
          f"study rows {new['phases_s'].get('study', 0.0)} s) {floor:.1f} s"
          + ("  <- the target sits below this floor" if target < floor else ""))
    print(f"--- {kind}: audit lower bounds (old: {old_source}; new: two-level)")
    for label in list(dict.fromkeys([*old_eps, *new_eps])):
        o, n = old_eps.get(label), new_eps.get(label)
        tighter = "" if o is None or n is None else ("  new >= old" if n >= o - 1e-12 else "  new < old")
        print(f"  {label:26s} {'-' if o is None else f'{o:.3f}':>8s} -> {'-' if n is None else f'{n:.3f}':>8s}"
              f"{tighter}")
    print(f"--- {kind}: frontier side by side: {'same' if same_front else 'DIFFERS'}")
    print("\n".join(front_lines))
    same_rec = old_rec == new_rec
    print(f"--- {kind}: recommendations side by side: {'same' if same_rec else 'DIFFER'}")
    for key in list(dict.fromkeys([*old_rec, *new_rec])):
        o, n = old_rec.get(key, "-"), new_rec.get(key, "-")
        print(f"  {key}: {o} | {n}{'' if o == n else '  <- differs'}")
    return {"kind": kind, "old_rev": old_rev, "old_no_audit": old, "old_audit_estimate": estimate,
            "old_total_s": round(old_total, 1), "new": new, "ratio": round(old_total / new["wall_s"], 2),
            "target_s": target, "floor_s": round(floor, 1), "old_bounds": old_eps, "old_bounds_source": old_source,
            "new_bounds": new_eps, "same_frontier": same_front, "same_recommendations": same_rec,
            "old_recommendations": old_rec, "new_recommendations": new_rec}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full grid (default: --quick)")
    parser.add_argument("--both", action="store_true", help="--quick, then the full grid")
    parser.add_argument("--old-rev", default=OLD_REV, help=f"the code as the issue found it (default {OLD_REV})")
    parser.add_argument("--sample-runs", type=int, default=2, help="old audit: runs=N per row, 4N+1 runs (2)")
    parser.add_argument("--old-bounds", choices=("runs", "checked-in"), default="checked-in",
                        help="old bounds: the checked-in audit.csv (default) or today's mode 'runs' on the plan")
    parser.add_argument("--reuse-old", action="store_true",
                        help="take the old side from an earlier run in --work (printed as such)")
    parser.add_argument("--reuse-old-compare", action="store_true",
                        help="take the old compare without audit from an earlier run in --work, sample its audit again")
    parser.add_argument("--reuse-new", action="store_true",
                        help="take the new side from an earlier run in --work (printed as such)")
    parser.add_argument("--work", type=Path, help="folder for the four report folders (default: a temporary one)")
    args = parser.parse_args()
    kinds = ["quick", "full"] if args.both else ["full" if args.full else "quick"]
    work = args.work or Path(tempfile.mkdtemp(prefix="parley-bench-compare-"))
    work.mkdir(parents=True, exist_ok=True)
    secrets = work / "secrets.key"
    from parley.parties.run_secrets import RunSecrets

    if not secrets.is_file():
        RunSecrets.from_file(secrets)  # writes fresh secrets there: both codes read the same file
    print(f"work folder {work}; load average {loadavg()}", flush=True)
    results = [measure(k, args.old_rev, args.sample_runs, args.old_bounds, work, secrets, args.reuse_old,
                       args.reuse_new, args.reuse_old_compare) for k in kinds]
    print(json.dumps({"benchmark": "compare", "results": results}, ensure_ascii=False, default=str))


if __name__ == "__main__":
    main()
