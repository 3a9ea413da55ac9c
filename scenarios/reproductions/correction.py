"""The reconstruction-correction paper's tables.

The authors' configuration, the forest, CorrelationRemover, hidden fairness and the tolerances.
"""

from __future__ import annotations

import ast
import json

import pandas as pd

from parley.scenarios.reproductions.table import Table, _exponents, _g, _n, _num, _ok, _signed, _study

CORRECTION_ROOTS = ("parley.parties.attacks.reconstruction_correction", "parley.parties.attacks.solvers",
                    "parley.protocols.mechanisms.fairness_certificate", "parley.parties.learners.fair_targets",
                    "parley.scenarios.datasets")


CORRECTION_RUNS = (("authors (`correction-authors`)", "correction-authors"),
                   ("parley default (`correction-seeds`)", "correction-seeds"))


def _correction_authors(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| configuration | baseline | corrected | gain | corrected > baseline | balanced: baseline → corrected "
             "| exponents chosen |", "|---|---|---|---|---|---|---|"]
    longest = []
    for label, run in CORRECTION_RUNS:
        rows = _ok(results, run=run)
        if rows.empty:
            lines.append(f"| {label} | not recorded | | | | | |")
            continue
        base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy", "improvement"))
        lines.append(f"| {label} | {base.mean():.2f} ± {base.std(ddof=1):.2f} | {corr.mean():.2f} ± "
                     f"{corr.std(ddof=1):.2f} | {_signed(gain.mean())} ± {gain.std(ddof=1):.2f} "
                     f"| {int((gain > 0).sum())} of {len(gain)} | {_num(rows, 'baseline_leakage').mean():.1f} → "
                     f"{_num(rows, 'leakage').mean():.1f} | {_exponents(_num(rows, 'exponent'))} |")
        optimal = (rows["solver_status"].astype(str) == "optimal").all()
        longest.append(f"{label.split(' (')[0]} {_num(rows, 'solve_s').max():.1f} s"
                       + ("" if optimal else " (not every solve optimal)"))
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", "Longest correction solve (every one optimal unless said): " + ", ".join(longest) + ".", "",
                    f"The paper: {claim}."]


FORESTS = ((64, 2, 2, "parley default (unlimited depth, split 2, leaf 2)"),
           (6, 2, 2, "depth 6 (split 2, leaf 2)"),
           (6, 10, 1, "the authors' (depth 6, split 10, leaf 1)"))


def _forest_depth(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| forest | cells | baseline (%) | corrected (%) | mean gain | corrected ≥ baseline | better / unchanged "
             "/ worse | lowest gain | changes that were right |", "|---|---|---|---|---|---|---|---|---|"]
    for depth, split, leaf, label in FORESTS:
        rows = _ok(results, attack__max_depth=depth, attack__min_samples_split=split, attack__min_samples_leaf=leaf)
        base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy", "improvement"))
        changed, right = _num(rows, "changed").sum(), _num(rows, "changed_correctly").sum()
        eps = 1e-9
        share = f"{100 * right / changed:.1f} % ({_n(right)} of {_n(changed)})" if changed else "–"
        lines.append(f"| {label} | {len(rows)} | {base.mean():.1f} | {corr.mean():.1f} | {_signed(gain.mean())} "
                     f"| {int((gain >= -eps).sum())} of {len(gain)} | {int((gain > eps).sum())} / "
                     f"{int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} | {_signed(gain.min())} "
                     f"| {share} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


def _valid(rows: pd.DataFrame) -> pd.Series:
    """Whether each row's estimated constraint holds on the training set (its unfairness there <= the tolerance)."""
    def one(row: pd.Series) -> bool:
        measured = pd.to_numeric(row.get(f"target_train_{row['constraint_metric']}"), errors="coerce")
        return bool(measured <= float(row["constraint_tolerance"]) + 1e-12)
    return rows.apply(one, axis=1) if len(rows) else pd.Series(dtype=bool)


def _counts(values: pd.Series) -> str:
    counts = values.astype(str).str.upper().value_counts()
    return ", ".join(f"{name} ×{count}" for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


REMOVER_SETS = (("adult", "Adult (sex)"), ("compas", "COMPAS (race)"), ("german", "German (sex)"))


BASELINES = (("xy", "A1"), ("xy-yhat", "A2"))


def _correction_remover(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | adversary | runs | baseline (%) | corrected (%) | gain | better / unchanged / worse "
             "| declined | metric estimated | tolerance estimated | estimate valid on the training set "
             "| target: accuracy, SP |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    eps = 1e-9
    for dataset, label in REMOVER_SETS:
        for baseline, adversary in BASELINES:
            rows = _ok(results, dataset__name=dataset, attack__baseline=baseline)
            if rows.empty:
                lines.append(f"| {label} | {adversary} | not recorded | | | | | | | | | |")
                continue
            base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy",
                                                              "improvement"))
            tol = _num(rows, "constraint_tolerance")
            declined = int((rows["solver_status"].astype(str) == "declined").sum())
            lines.append(
                f"| {label} | {adversary} | {len(rows)} | {base.mean():.2f} ± {base.std(ddof=1):.2f} "
                f"| {corr.mean():.2f} ± {corr.std(ddof=1):.2f} | {_signed(gain.mean())} ± {gain.std(ddof=1):.2f} "
                f"| {int((gain > eps).sum())} / {int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} "
                f"| {declined} | {_counts(rows['constraint_metric'])} | {tol.mean():.4f} ({tol.min():.4f}–"
                f"{tol.max():.4f}) | {int(_valid(rows).sum())} of {len(rows)} "
                f"| {100 * _num(rows, 'target_train_accuracy').mean():.1f} %, "
                f"{_num(rows, 'target_train_sp').mean():.3f} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


def _target(cell: str) -> tuple[str, str, str]:
    """(learner, metric trained, tolerance) of a results row's ``learner`` cell (a JSON table)."""
    spec = json.loads(cell.replace("'", '"'))
    name = str(spec["name"])
    metric = str(spec.get("metric", "sp" if name == "exponentiated-gradient" else "–"))
    tolerance = _g(float(spec.get("tolerance", 0.0))) if name == "exponentiated-gradient" else \
        ("0 (aimed at)" if name == "threshold-optimizer" else "none")
    return name, metric, tolerance


HIDDEN_TARGETS = {"exponentiated-gradient": "ExponentiatedGradient", "threshold-optimizer": "ThresholdOptimizer",
                  "correlation-remover": "CorrelationRemover"}


def _correction_hidden(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | target | trained: metric, tolerance | certified | corrected − baseline, certificate "
             "| estimated: metric, tolerance | estimate valid | corrected − baseline, estimated |",
             "|---|---|---|---|---|---|---|---|"]
    done = _ok(results)
    tally: dict[str, list[int]] = {}
    for dataset, label in REMOVER_SETS:
        rows = done[done["dataset.name"] == dataset]
        for cell in dict.fromkeys(rows["learner"].astype(str)):
            name, metric, tolerance = _target(cell)
            cert = rows[(rows["learner"].astype(str) == cell) & (rows["attack.fairness"] == "certificate")]
            est = rows[(rows["learner"].astype(str) == cell) & (rows["attack.fairness"] == "estimated")]
            if cert.empty or est.empty:
                lines.append(f"| {label} | {HIDDEN_TARGETS[name]} | {metric.upper()}, {tolerance} | not recorded "
                             "| | | | |")
                continue
            c, e = cert.iloc[0], est.iloc[0]
            valid = bool(_valid(est).iloc[0])
            found = str(e["constraint_metric"]) == metric
            counts = tally.setdefault(HIDDEN_TARGETS[name], [0, 0, 0, 0])
            counts[0] += 1
            counts[1] += int(found)
            counts[2] += int(valid)
            counts[3] += int(float(e["improvement"]) >= -1e-9)
            certified = f"{str(c['constraint_metric']).upper()} {float(c['certificate_value']):.4f}"
            lines.append(f"| {label} | {HIDDEN_TARGETS[name]} | {metric.upper()}, {tolerance} | {certified} "
                         f"| {_signed(100 * float(c['improvement']))} | {str(e['constraint_metric']).upper()}, "
                         f"{float(e['constraint_tolerance']):.4f} | {'yes' if valid else 'no'} "
                         f"| {_signed(100 * float(e['improvement']))} |")
    lines += ["", "| target | cells | estimate names the metric trained under | estimate valid on the training set "
                  "| estimated correction ≥ baseline |", "|---|---|---|---|---|"]
    for target, (cells, named_right, holds, kept) in tally.items():
        named = "– (optimises none)" if target == "CorrelationRemover" else f"{named_right} of {cells}"
        lines.append(f"| {target} | {cells} | {named} | {holds} of {cells} | {kept} of {cells} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


def _forest_search(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | forest | runs | baseline (%) | corrected (%) | gain | better / unchanged / worse "
             "| cross-validated accuracy of the search | depths chosen |", "|---|---|---|---|---|---|---|---|---|"]
    eps = 1e-9
    for dataset, label in REMOVER_SETS:
        for forest, name in (("fixed", "fixed (parley default)"), ("search", "searched (20 candidates, 3 folds)")):
            rows = _ok(results, dataset__name=dataset, attack__forest=forest)
            if rows.empty:
                lines.append(f"| {label} | {name} | not recorded | | | | | | |")
                continue
            base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy",
                                                              "improvement"))
            chosen = [ast.literal_eval(str(cell)) for cell in rows["attack_forest"].dropna()] \
                if "attack_forest" in rows else []
            depths = pd.Series([str(c.get("max_depth") or "unlimited") for c in chosen if isinstance(c, dict)])
            score = _num(rows, "attack_forest_cv_score") if "attack_forest_cv_score" in rows else pd.Series()
            lines.append(
                f"| {label} | {name} | {len(rows)} | {base.mean():.2f} ± {base.std(ddof=1):.2f} "
                f"| {corr.mean():.2f} ± {corr.std(ddof=1):.2f} | {_signed(gain.mean())} "
                f"| {int((gain > eps).sum())} / {int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} "
                f"| {f'{100 * score.mean():.1f} %' if len(score) else '–'} "
                f"| {', '.join(f'{d} (×{c})' if c > 1 else d for d, c in depths.value_counts().items()) or '–'} |")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + ["", f"The paper: {claim}."]


def _tolerance_49(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set, metric | tolerance | certified value | baseline (%) | corrected (%) | gain |",
             "|---|---|---|---|---|---|"]
    done = _ok(results)
    summary = []
    for (dataset, metric), rows in done.groupby(["dataset.name", "learner.metric"], sort=True):
        rows = rows.sort_values("learner.tolerance", key=lambda c: pd.to_numeric(c, errors="coerce"))
        for _, row in rows.iterrows():
            lines.append(f"| {dataset} {str(metric).upper()} | {_g(float(row['learner.tolerance']))} "
                         f"| {float(row['certificate_value']):.4f} | {100 * float(row['baseline_accuracy']):.2f} "
                         f"| {100 * float(row['corrected_accuracy']):.2f} "
                         f"| {_signed(100 * float(row['improvement']))} |")
        gain, tol = 100 * _num(rows, "improvement"), _num(rows, "learner.tolerance")
        tight, loose = gain[tol <= 0.01], gain[tol > 0.05]
        summary.append(f"{dataset} {str(metric).upper()}: {len(rows)} tolerances, better in "
                       f"{int((gain > 1e-9).sum())}, unchanged in {int((gain.abs() <= 1e-9).sum())}, worse in "
                       f"{int((gain < -1e-9).sum())}; mean gain {_signed(gain.mean())} points, "
                       f"{_signed(tight.mean())} at tolerances up to 0.01 ({len(tight)}), {_signed(loose.mean())} "
                       f"above 0.05 ({len(loose)}); median wall time of a cell {_num(rows, 'wall_s').median():.1f} s")
    claim = "; ".join(f"{r['claim']} ({r['source']})" for _, r in paper.iterrows())
    return lines + [""] + [f"- {line}." for line in summary] + ["", f"The paper: {claim}."]


TABLES = (
    Table("correction-authors", (
        _study("correction-authors", workers=1), _study("correction-seeds", workers=1)),
          CORRECTION_ROOTS, _correction_authors,
          ("scenarios/catalog/studies/correction-authors.toml", "scenarios/catalog/studies/correction-seeds.toml",
           "scenarios/catalog/adult-correction-authors.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-forest-depth", (_study("correction-forest-depth"),), CORRECTION_ROOTS, _forest_depth,
          ("scenarios/catalog/studies/correction-forest-depth.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-remover", (_study("correction-remover"),),
          CORRECTION_ROOTS + ("parley.parties.learners.correlation_remover",), _correction_remover,
          ("scenarios/catalog/studies/correction-remover.toml", "scenarios/catalog/adult-correction-remover.toml")),
    Table("correction-hidden", (_study("correction-hidden"),),
          CORRECTION_ROOTS + ("parley.parties.learners.correlation_remover",), _correction_hidden,
          ("scenarios/catalog/studies/correction-hidden.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-forest-search", (_study("correction-forest-search"),),
          CORRECTION_ROOTS + ("parley.parties.attacks.correction_search",), _forest_search,
          ("scenarios/catalog/studies/correction-forest-search.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-tolerance-49",
          (_study("correction-tolerance-49", "correction-tolerance-49-adult-sp",
                  extra=" --set 'grid.dataset.name,dataset.protected,dataset.audit_size=[[\"adult\",\"sex\",15074]]'"
                        " --set 'grid.learner.metric,protocol.metric=[[\"sp\",\"sp\"]]'"),),
          CORRECTION_ROOTS, _tolerance_49,
          ("scenarios/catalog/studies/correction-tolerance-49.toml", "scenarios/catalog/adult-correction.toml")),
)
